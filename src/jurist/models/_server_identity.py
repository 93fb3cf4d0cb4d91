"""What an OpenAI-compatible server says about the weights behind a model name.

A server restarted on other weights under the same name (a llama.cpp server on another
GGUF with the same ``--model_alias``, a vLLM server with the same
``--served-model-name``) answers the same ``provider``, ``name`` and ``base_url``, so the
cache must learn more from the server itself. :func:`served_identity` reads the answer to
``GET {base_url}/models``, finds the entry of the served model (its ``id``, or one of
llama.cpp's ``aliases``) and keeps the fields that name the weights and are stable from
one request to the next:

- vLLM: ``root`` (the model path or hub id it loaded), ``parent`` (a LoRA adapter's
  base) and ``max_model_len``;
- llama.cpp's ``llama-server``: ``meta`` (``n_params``, ``size``, ``ftype``,
  ``n_vocab``, ``n_ctx_train``...), which tells different models apart but not two
  fine-tunes of one base at one quantisation;
- any server that sends them: ``digest``, ``sha256``, ``hash``, ``size``,
  ``model_path``, ``path``, ``revision``, ``version``;
- ``created`` where it is a creation time (OpenAI's, Ollama's modification time), not the
  time of the request that vLLM, SGLang and llama.cpp stamp there: it is dropped when
  ``owned_by`` names one of those, or when it lies within a day of now;
- ``owned_by`` goes with the rest, but alone it names no weights.

When none of the weight fields is there (llama-cpp-python's server reports only ``id``
and ``owned_by: "me"``; a 404; a list without the model) there is no identity, and the
reason is returned for the one warning the model logs.

>>> body = b'{"data": [{"id": "tiny", "root": "/models/a", "max_model_len": 512,'
>>> body += b' "owned_by": "vllm", "created": 1700000000}]}'
>>> served_identity(body, 200, "tiny", now=1700000000.0)
({'max_model_len': 512, 'owned_by': 'vllm', 'root': '/models/a'}, '')
>>> served_identity(b'{"data": [{"id": "tiny", "owned_by": "me"}]}', 200, "tiny", now=0.0)[1]
'reports nothing that identifies the weights of model tiny (only id, owned_by)'
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["WEIGHT_FIELDS", "served_identity"]

WEIGHT_FIELDS = (
    "root",
    "parent",
    "max_model_len",
    "meta",
    "digest",
    "sha256",
    "hash",
    "size",
    "model_path",
    "path",
    "revision",
    "version",
)
# servers whose "created" is the time of the request, not of the model
_REQUEST_TIME_OWNERS = frozenset({"vllm", "sglang", "llamacpp"})
_DAY = 86400.0


def _entry(payload: Any, name: str) -> dict[str, Any] | None:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == name:
            return entry
    for entry in entries:
        aliases = entry.get("aliases")
        if isinstance(aliases, list) and name in aliases:
            return entry
    return None


def _stable_created(entry: dict[str, Any], now: float) -> int | None:
    created = entry.get("created")
    if isinstance(created, bool) or not isinstance(created, int) or created <= 0:
        return None
    if str(entry.get("owned_by", "")).lower() in _REQUEST_TIME_OWNERS:
        return None
    return created if created < now - _DAY else None


def served_identity(
    raw: bytes, status: int, name: str, *, now: float
) -> tuple[dict[str, Any] | None, str]:
    """The weight fields the server reports for model ``name``, and ``""``; or ``None``
    and why there are none. ``raw`` and ``status`` are the answer to ``GET .../models``;
    ``now`` is the client's clock (seconds since the epoch)."""
    if not 200 <= status < 300:
        return None, f"answered HTTP {status}"
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, "answered with a body that is not JSON"
    entry = _entry(payload, name)
    if entry is None:
        return None, f"lists no model named {name}"
    found = {key: entry[key] for key in WEIGHT_FIELDS if entry.get(key) not in (None, "", {})}
    created = _stable_created(entry, now)
    if created is not None:
        found["created"] = created
    if not found:
        keys = ", ".join(sorted(k for k in entry if entry[k] not in (None, "", [], {})))
        return None, f"reports nothing that identifies the weights of model {name} (only {keys})"
    if isinstance(entry.get("owned_by"), str):
        found["owned_by"] = entry["owned_by"]
    return dict(sorted(found.items())), ""
