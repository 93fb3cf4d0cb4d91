"""Keeping secrets out of every file jurist writes.

:func:`scrub` returns a copy of a JSON-like value (dicts, lists, strings, numbers) in which
anything that may be a credential is replaced by ``"***"``:

- the value of a mapping key that names a secret (``api_key``, ``Authorization``,
  ``token``, ``password``, ``secret``, ``x-api-key``...), at any depth;
- inside text: ``key=value`` / ``key: value`` pairs with such a key (catalog overrides such
  as ``judges.x[model_options.api_key=sk-...]``, query strings), ``Bearer <token>``, and
  strings shaped like well-known provider keys (``sk-...``, ``sk-ant-...``, ``hf_...``).

It is applied where a manifest, a summary, a report or a log line is written, whatever
route the secret took to get there (a flag, a catalog override, a catalog entry).

>>> scrub({"model": {"api_key": "sk-abc123", "base_url": "http://h/v1"}, "n": 3})
{'model': {'api_key': '***', 'base_url': 'http://h/v1'}, 'n': 3}
>>> scrub("judges.x[model_options.api_key=sk-live-123,temperature=0]")
'judges.x[model_options.api_key=***,temperature=0]'
>>> scrub({"headers": {"Authorization": "Bearer abc.def"}})
{'headers': {'Authorization': '***'}}
>>> scrub("calling with Bearer abc.def now")
'calling with Bearer *** now'
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "scrub"]

REDACTED = "***"

_SECRET_WORDS = (
    "api_key",
    "apikey",
    "api-key",
    "authorization",
    "auth_token",
    "access_token",
    "refresh_token",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "private_key",
    "access_key",
    "session_key",
    "cookie",
)
# a key names a secret when its last dotted / dashed segment ends in one of the words
_KEY = re.compile(
    r"(?i)(?:^|[._\-\s])(?:" + "|".join(re.escape(w) for w in _SECRET_WORDS) + r")s?$"
)
_PAIR = re.compile(
    r"(?i)(?P<key>[A-Za-z0-9_.\-]*(?:"
    + "|".join(re.escape(w) for w in _SECRET_WORDS)
    + r"))(?P<sep>\s*[=:]\s*)(?P<quote>['\"]?)(?P<value>[^\s,\]\)'\"&;]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{3,}")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-|live-)?[A-Za-z0-9_\-]{8,}|hf_[A-Za-z0-9]{16,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{20,}|xox[abp]-[A-Za-z0-9\-]{10,}|gh[pousr]_[A-Za-z0-9]{20,})"
)


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential.

    >>> is_secret_key("api_key"), is_secret_key("model_options.api_key"), is_secret_key("X-Api-Key")
    (True, True, True)
    >>> is_secret_key("max_tokens"), is_secret_key("tokens"), is_secret_key("base_url")
    (False, False, False)
    """
    lowered = key.strip().lower()
    if lowered in ("max_tokens", "tokens", "prompt_tokens", "completion_tokens"):
        return False
    if lowered.endswith("_tokens") or lowered.endswith("tokens_per_min"):
        return False
    return bool(_KEY.search(lowered)) or lowered in _SECRET_WORDS


def _scrub_text(text: str) -> str:
    if not text:
        return text

    def pair(m: re.Match[str]) -> str:
        if not is_secret_key(m.group("key")):
            return m.group(0)
        return f"{m.group('key')}{m.group('sep')}{m.group('quote')}{REDACTED}"

    text = _PAIR.sub(pair, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def scrub(value: Any) -> Any:
    """A copy of ``value`` with every credential replaced by ``"***"`` (see the module)."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v else scrub(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return _scrub_text(value)
    return value
