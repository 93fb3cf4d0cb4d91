"""Finding and loading a local transformers model for the ``hf`` backend.

A model name is a local folder when it looks like a path (``/abs``, ``./rel``, ``../rel``,
``~/home``) or names a folder that exists, or a GGUF file (a path ending in ``.gguf``:
transformers reads it with ``gguf_file=``, de-quantised, which needs the ``gguf`` package,
and takes the tokenizer and its chat template from the file too); anything else is a
Hugging Face Hub id
(``Qwen/Qwen2.5-0.5B-Instruct``). Loading never waits on a network it cannot have: a hub id
that is not in the local cache while the hub is offline (``HF_HUB_OFFLINE=1``) fails at
once with :class:`~jurist.errors.ModelLoadError`, naming the model and how to fix the call.

torch and transformers are imported here, at module import; this module is itself imported
only when the ``hf`` provider is used.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jurist.errors import MissingDependencyError, ModelLoadError

try:
    import huggingface_hub
    import torch
    import transformers
except ImportError as _exc:  # pragma: no cover - depends on the environment
    _missing = getattr(_exc, "name", None) or "transformers"
    raise MissingDependencyError(
        _missing if _missing in ("torch", "transformers") else "transformers",
        "hf",
        "The hf backend",
    ) from _exc

__all__ = [
    "DTYPES",
    "LoadedModel",
    "ModelSource",
    "attention_for",
    "default_dtype",
    "load_model",
    "on_cuda",
    "resolve_device",
    "resolve_source",
    "wrap_loaded",
]

DTYPES: dict[str, Any] = {
    "auto": "auto",
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
}

_FIX = (
    "To fix it, point to a model folder on disk with --model hf:/path/to/model "
    "(get_model('hf:/path/to/model')), download the model where the hub can be reached "
    "(`hf download {name}`) and copy the cache, or use an API model such as "
    "--model openai:gpt-4o-mini (with --base-url http://HOST:PORT/v1 for a local "
    "OpenAI-compatible server)."
)


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from: a local folder (``path``) or a hub id (``repo_id``)."""

    name: str
    path: Path | None = None
    repo_id: str | None = None
    gguf_file: str | None = None
    """A GGUF file's name inside ``path`` (the model is that one file)."""

    @property
    def is_local(self) -> bool:
        return self.path is not None

    @property
    def display(self) -> str:
        """The resolved absolute folder (or GGUF file) for local models, the hub id
        otherwise."""
        if self.path is not None and self.gguf_file is not None:
            return str(self.path / self.gguf_file)
        return str(self.path) if self.path is not None else str(self.repo_id)

    def from_pretrained_args(self) -> tuple[str, dict[str, Any]]:
        """What ``from_pretrained`` is given for this source: where, and ``gguf_file``."""
        if self.gguf_file is not None:
            return str(self.path), {"gguf_file": self.gguf_file}
        return self.display, {}


@dataclass
class LoadedModel:
    """A tokenizer and model ready to run, with the facts the backend needs about them."""

    tokenizer: Any
    model: Any
    device: Any
    eos_ids: tuple[int, ...]
    pad_id: int
    has_chat_template: bool
    added_tokens: tuple[str, ...] = ()
    seam_cache: dict[tuple[str, tuple[str, ...]], list[list[int]]] = field(default_factory=dict)


def _looks_like_path(name: str) -> bool:
    return (
        name.startswith(("/", "./", "../", "~", ".\\", "..\\"))
        or name in (".", "..")
        or os.path.isabs(name)
    )


def resolve_source(name: str) -> ModelSource:
    """Decide whether ``name`` is a local folder or a hub id; check a folder exists.

    >>> resolve_source("Qwen/Qwen2.5-0.5B-Instruct").repo_id
    'Qwen/Qwen2.5-0.5B-Instruct'
    >>> resolve_source("/no/such/jurist/model")
    Traceback (most recent call last):
    ...
    jurist.errors.ModelLoadError: hf model folder '/no/such/jurist/model' does not exist ...
    """
    expanded = Path(name).expanduser()
    if name.lower().endswith(".gguf") and (_looks_like_path(name) or expanded.exists()):
        file = expanded.resolve()
        if not file.is_file():
            raise ModelLoadError(
                f"hf GGUF file {name!r} does not exist (resolved to {str(file)!r}); pass "
                "the path of a .gguf file or of a model folder",
                model=f"hf:{name}",
            )
        return ModelSource(name=name, path=file.parent, gguf_file=file.name)
    if _looks_like_path(name) or expanded.is_dir():
        path = expanded.resolve()
        if not path.exists():
            raise ModelLoadError(
                f"hf model folder {name!r} does not exist (resolved to {str(path)!r}); "
                "pass the folder that holds config.json and the tokenizer files",
                model=f"hf:{name}",
            )
        if not path.is_dir():
            raise ModelLoadError(
                f"hf model path {str(path)!r} is a file, not a model folder; pass the folder "
                "that holds config.json and the tokenizer files",
                model=f"hf:{name}",
            )
        return ModelSource(name=name, path=path)
    return ModelSource(name=name, repo_id=name)


def resolve_device(device: str) -> Any:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or ``"auto"`` (best available)."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ModelLoadError(f"hf backend: unknown device {device!r}: {exc}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(
            f"hf backend: device {device!r} was asked for but torch sees no CUDA GPU "
            f"(torch {torch.__version__}); use device='cpu' or 'auto'"
        )
    return dev


def _in_cache(repo_id: str, revision: str | None) -> bool:
    try:
        found = huggingface_hub.try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # an invalid repo id, say: let from_pretrained report it
        return False
    return isinstance(found, str)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _load_error(source: ModelSource, exc: Exception) -> ModelLoadError:
    spec = f"hf:{source.name}"
    names = {type(e).__name__ for e in _chain(exc)}
    text = " ".join(str(e) for e in _chain(exc))
    if source.is_local:
        return ModelLoadError(
            f"cannot load hf model from folder {source.display!r}: {exc}", model=spec
        )
    if names & {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}:
        return ModelLoadError(
            f"hf model {source.name!r} was not found on the Hugging Face Hub, or it is gated "
            f"or private ({exc}). Check the id and revision, or log in with `hf auth login`. "
            + _FIX.format(name=source.name),
            model=spec,
        )
    if "couldn't connect" in text.lower() or names & {
        "LocalEntryNotFoundError",
        "ConnectError",
        "ConnectionError",
        "ConnectTimeout",
        "OfflineModeIsEnabled",
    }:
        return ModelLoadError(_offline_message(source.name), model=spec)
    return ModelLoadError(f"cannot load hf model {source.name!r}: {exc}", model=spec)


def _offline_message(name: str) -> str:
    return (
        f"cannot load hf model {name!r}: it is not on disk (not a local folder, not in the "
        "Hugging Face cache) and the Hugging Face Hub cannot be reached (offline, or "
        "HF_HUB_OFFLINE=1). " + _FIX.format(name=name)
    )


def _probe_hub(source: ModelSource, revision: str | None) -> ModelLoadError | None:
    """Check that the hub serves the model: ``None`` if so, else the error to raise.

    One metadata request (no retries, 10 s timeout) tells a missing repository and an
    unreachable hub apart, instead of the download's minute of retries.
    """
    spec = f"hf:{source.name}"
    try:
        huggingface_hub.HfApi().model_info(str(source.repo_id), revision=revision, timeout=10)
    except huggingface_hub.errors.HfHubHTTPError as exc:
        names = {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}
        if type(exc).__name__ in names:
            return _load_error(source, exc)
        return None  # another HTTP status: the download reports it if it persists
    except huggingface_hub.errors.HFValidationError as exc:
        return ModelLoadError(
            f"{source.name!r} is neither a model folder that exists nor a valid Hugging Face "
            f"Hub id ({exc})",
            model=spec,
        )
    except Exception:  # DNS, refused connection, timeout
        return ModelLoadError(_offline_message(source.name), model=spec)
    return None


def load_model(
    source: ModelSource,
    *,
    device: str,
    dtype: str,
    revision: str | None,
    trust_remote_code: bool,
    attn_implementation: str | None = None,
    auto_class: str = "AutoModelForCausalLM",
) -> LoadedModel:
    """Load the tokenizer and model (blocking; run it on a worker thread).

    On a GPU the weights load straight onto it (no copy through host memory) and attention
    is :func:`attention_for` the device and dtype unless ``attn_implementation`` names one.
    ``auto_class``: the transformers class that loads the weights (a reward model's is
    ``AutoModelForSequenceClassification``).
    """
    common: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if source.repo_id is not None:
        # A hub id: fail at once when it must be downloaded and cannot be; load a cached
        # copy without network calls when the hub cannot be reached.
        cached = _in_cache(source.repo_id, revision)
        if huggingface_hub.is_offline_mode():
            problem = None if cached else ModelLoadError(_offline_message(source.name))
        else:
            problem = _probe_hub(source, revision)
        if problem is not None and not cached:
            problem.model = f"hf:{source.name}"
            raise problem
        if problem is not None:
            common["local_files_only"] = True
    dev = resolve_device(device)
    where, file_args = source.from_pretrained_args()
    if file_args and importlib.util.find_spec("gguf") is None:
        raise MissingDependencyError("gguf", "hf", f"Loading the GGUF file {source.display!r}")
    common.update(file_args)
    if source.repo_id is not None and revision is not None:
        common["revision"] = revision
    placement: dict[str, Any] = {}
    if dev.type == "cuda":
        placement["device_map"] = {"": dev}
    attention = attn_implementation or attention_for(dev, DTYPES[dtype])
    if attention is not None:
        placement["attn_implementation"] = attention
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(where, **common)
        model = getattr(transformers, auto_class).from_pretrained(
            where, dtype=DTYPES[dtype], **placement, **common
        )
    except ModelLoadError:
        raise
    except Exception as exc:
        raise _load_error(source, exc) from exc
    return wrap_loaded(model, tokenizer, dev)


def default_dtype(device: str) -> str:
    """The dtype a device gets by default: float32 on the CPU, bfloat16 on a CUDA GPU that
    has it (float16 on older ones), the checkpoint's own elsewhere."""
    if device == "cpu":
        return "float32"
    if on_cuda(device):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "auto"


def on_cuda(device: str) -> bool:
    """Whether ``device`` (``"cuda"``, ``"cuda:1"``, ``"auto"``...) is a CUDA GPU here."""
    wanted = device.startswith("cuda") or device == "auto"
    return wanted and torch.cuda.is_available()


def attention_for(device: Any, dtype: Any) -> str | None:
    """The attention kernels for ``device``: FlashAttention-2 on a CUDA GPU in half precision
    when ``flash_attn`` is installed, else PyTorch's SDPA (flash / memory-efficient kernels);
    ``None`` (transformers' default) off the GPU."""
    if getattr(device, "type", "cpu") != "cuda":
        return None
    half = dtype in (torch.float16, torch.bfloat16)
    if half and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def wrap_loaded(model: Any, tokenizer: Any, dev: Any) -> LoadedModel:
    """A loaded model and tokenizer, on ``dev``, with what the backend needs to know."""
    if getattr(model, "device", None) != dev:
        model = model.to(dev)
    model = model.eval()
    eos: set[int] = set()
    gen = getattr(model, "generation_config", None)  # None: a model that does not generate
    for value in (getattr(gen, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            eos.add(value)
        elif isinstance(value, (list, tuple)):
            eos.update(int(v) for v in value)
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = getattr(gen, "pad_token_id", None) or getattr(model.config, "pad_token_id", None)
    if pad is None:
        pad = min(eos) if eos else 0
    # The checkpoint's generation_config.json (sampling defaults, repetition penalty, ...)
    # would fill every field a request leaves unset: keep only the special tokens.
    if gen is not None:
        model.generation_config = transformers.GenerationConfig(  # type: ignore[no-untyped-call]
            eos_token_id=sorted(eos) or None,
            pad_token_id=int(pad),
            bos_token_id=getattr(gen, "bos_token_id", None),
        )
    return LoadedModel(
        tokenizer=tokenizer,
        model=model,
        device=dev,
        eos_ids=tuple(sorted(eos)),
        pad_id=int(pad),
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        added_tokens=tuple(
            str(t.content) for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
        ),
    )
