"""Keeping secrets out of every file and log line jurist writes.

:func:`scrub` returns a copy of a JSON-like value (dicts, lists, strings, numbers) in which
anything that may be a credential is replaced by ``"***"``:

- every value handed to a backend as a key (:func:`remember_secret`: the ``openai``
  backend registers its ``api_key`` and secret headers, whatever route they took: a flag,
  an environment variable, a catalog entry or an inline override), wherever it appears;
- the value of a mapping key that names a secret (``api_key``, ``Authorization``,
  ``x-api-key``, ``password``, ``client_secret``, ``hf_token``...), at any depth;
- inside text: ``key=value`` / ``key: value`` pairs with such a key (catalog overrides such
  as ``judges.x[model_options.api_key=sk-...]``, query strings), command-line flags
  (``--api-key VALUE``), ``Bearer <token>``, the
  password of a URL (``https://user:pw@host``), and strings shaped like well-known
  provider keys (``sk-...`` with a digit, ``hf_...``, ``AKIA...``).

Ordinary data is left alone: ``max_tokens``, a ``tokens`` column, a logprob's ``token``,
``eos_token`` and text that merely mentions a token.

It is applied where a manifest, a summary, a report or a log line is written (the
``jurist.*`` loggers carry :class:`ScrubFilter`, see :func:`get_logger`).

>>> scrub({"model": {"api_key": "sk-abc123", "base_url": "http://h/v1"}, "n": 3})
{'model': {'api_key': '***', 'base_url': 'http://h/v1'}, 'n': 3}
>>> scrub("judges.x[model_options.api_key=sk-live-123,temperature=0]")
'judges.x[model_options.api_key=***,temperature=0]'
>>> scrub({"headers": {"Authorization": "Bearer abc.def"}})
{'headers': {'Authorization': '***'}}
>>> scrub("calling with Bearer abc.def now")
'calling with Bearer *** now'
>>> scrub({"max_tokens": 5, "tokens": 12, "token": "Yes", "text": "the token: Paris"})
{'max_tokens': 5, 'tokens': 12, 'token': 'Yes', 'text': 'the token: Paris'}
>>> remember_secret("my-own-server-key-42")
>>> scrub("server said: key my-own-server-key-42 is not valid")
'server said: key *** is not valid'
"""

from __future__ import annotations

import base64
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "ScrubFilter",
    "get_logger",
    "is_placeholder_key",
    "is_secret_key",
    "redact_known",
    "remember_secret",
    "remember_secrets_in",
    "scrub",
    "secrets_in",
    "shown_name",
    "split_url_credentials",
]

REDACTED = "***"

# A mapping key (or the key of a key=value pair in text) names a secret when its last
# segment is one of these (segments split at ``.``, ``_``, ``-`` or a space).
_ALTS = (
    r"api[_\-]?key|x[_\-]api[_\-]key|apikey|secret(?:[_\-]?key)?|client[_\-]secret"
    r"|passwd|password|passphrase|pwd"
    r"|authorization|proxy[_\-]authorization|auth|credentials?|cookie"
    r"|private[_\-]key|access[_\-]key(?:[_\-]id)?|secret[_\-]access[_\-]key|session[_\-]key"
    r"|(?:api|auth|access|refresh|bearer|hf|hub|session|id|github|gh|gitlab|oauth|csrf|jwt|bot"
    r"|client|secret|security|personal[_\-]access|x[_\-]auth|slack|openai|anthropic)[_\-]?token"
)
_KEY = re.compile(rf"(?i)(?:^|[._\-\s])(?:{_ALTS})s?$")
# key=value / key: value in text; the key must itself name a secret (so a pair that does
# not, such as ``https://...``, never swallows one that does further on). A key is a word
# of its own: not the last segment of a path (``/etc/passwd: not an image`` names a file,
# and ``: not`` is prose), and a quote after it closes a quote opened before it
# (``'password': 'x'``), never one around other text (``'/etc/passwd': not``).
_PAIR = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.\-/\\])(?P<open>[\"']?)"
    rf"(?P<key>(?:[A-Za-z0-9_.\-]*[._\-])?(?:{_ALTS})s?)"
    r"(?P<sep>(?P=open)\s*[=:]\s*)(?P<quote>[\"']?)(?P<scheme>(?:bearer|basic|token)\s+)?"
    r"(?P<value>[^\s,\]\)\}\"'&;]+)"
)
# a command-line flag and its value: --api-key VALUE, --hf-token=VALUE
_FLAG = re.compile(
    rf"(?i)(?P<flag>--(?:[a-z0-9]+[_\-])*(?:{_ALTS}))(?P<sep>=|\s+)"
    r"(?P<value>(?!-)[^\s'\"]+|'[^']*'|\"[^\"]*\")"
)
# "Bearer <token>" where the token has a digit or punctuation ("bearer of news" is prose)
_BEARER = re.compile(
    r"\b(?P<scheme>[Bb]earer|BEARER|[Bb]asic|BASIC)\s+"
    r"(?=[A-Za-z0-9._~+/=\-]*[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{6,}"
)
_SCHEME = re.compile(r"(?i)^(?:bearer|basic|token)\s+")
_URL_PASSWORD = re.compile(r"(?i)\b(?P<head>[a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+@")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|xox[abpr]-[A-Za-z0-9\-]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|glpat-[A-Za-z0-9_\-]{20,})"
)

# Values that are placeholders, not keys (local servers take any key).
_PLACEHOLDERS = frozenset({"not-needed", "sk-no-key-required", "none", "empty", "dummy", "fake"})
_MIN_SECRET_LEN = 8

_lock = threading.Lock()
_known: frozenset[str] = frozenset()
_known_re: re.Pattern[str] | None = None


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a credential.

    >>> is_secret_key("api_key"), is_secret_key("model_options.api_key"), is_secret_key("X-Api-Key")
    (True, True, True)
    >>> is_secret_key("Authorization"), is_secret_key("hf_token"), is_secret_key("OPENAI_API_KEY")
    (True, True, True)
    >>> is_secret_key("max_tokens"), is_secret_key("tokens"), is_secret_key("token")
    (False, False, False)
    >>> is_secret_key("eos_token"), is_secret_key("base_url"), is_secret_key("top_logprobs")
    (False, False, False)
    """
    return bool(_KEY.search(key.strip()))


def is_placeholder_key(value: str) -> bool:
    """Whether an API key is a placeholder a local server takes (``not-needed``), not a key.

    >>> is_placeholder_key("not-needed"), is_placeholder_key("sk-live-1234")
    (True, False)
    """
    return value.strip().lower() in _PLACEHOLDERS


def remember_secret(value: object) -> None:
    """Scrub this exact value from everything written from now on.

    Backends call it with the keys they are given (an ``api_key``, a secret header), so a
    key is caught even where it shows up unannounced (a server's error echoing it, a
    name). Values shorter than 8 characters and placeholders (``not-needed``) are skipped:
    they would match ordinary text.
    """
    global _known, _known_re
    if not isinstance(value, str):
        return
    text = _SCHEME.sub("", value.strip())
    if len(text) < _MIN_SECRET_LEN or text.lower() in _PLACEHOLDERS or text in _known:
        return
    with _lock:
        known = _known | {text}
        # longest first, so a key that contains another is replaced whole
        alternatives = sorted(known, key=len, reverse=True)
        _known_re = re.compile("|".join(re.escape(k) for k in alternatives))
        _known = known


def remember_secrets_in(options: Mapping[str, Any]) -> None:
    """:func:`remember_secret` for every secret value in a mapping of options, at any depth
    (``api_key``, ``headers={"Authorization": ...}``).

    >>> remember_secrets_in({"headers": {"X-Api-Key": "hdr-secret-value-7"}, "timeout": 5})
    >>> scrub("rejected hdr-secret-value-7")
    'rejected ***'
    """
    for key, value in options.items():
        if isinstance(value, Mapping):
            remember_secrets_in(value)
        elif isinstance(key, str) and is_secret_key(key):
            remember_secret(value)


def redact_known(text: str) -> str:
    """``text`` with only the values given to :func:`remember_secret` replaced: for text
    that holds user data (a report's items), where the patterns of :func:`scrub` could
    touch ordinary words.

    >>> remember_secret("page-secret-0042")
    >>> redact_known("password: hunter2, key page-secret-0042")
    'password: hunter2, key ***'
    """
    known = _known_re
    return text if known is None or not text else known.sub(REDACTED, text)


def _scrub_text(text: str) -> str:
    if not text:
        return text
    text = redact_known(text)

    def pair(m: re.Match[str]) -> str:
        if m.group("value") == REDACTED or not is_secret_key(m.group("key")):
            return m.group(0)
        scheme = m.group("scheme") or ""
        head = f"{m.group('open')}{m.group('key')}{m.group('sep')}{m.group('quote')}"
        return f"{head}{scheme}{REDACTED}"

    text = _FLAG.sub(lambda m: f"{m.group('flag')}{m.group('sep')}{REDACTED}", text)
    text = _PAIR.sub(pair, text)
    text = _BEARER.sub(lambda m: f"{m.group('scheme')} {REDACTED}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{REDACTED}@", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def scrub(value: Any) -> Any:
    """A copy of ``value`` with every credential replaced by ``"***"`` (see the module).

    Mapping keys are kept (a key that is itself a secret is scrubbed as text); a secret
    key's value is replaced unless it is empty (``None``, ``""``), so a manifest still
    says that no key was set.
    """
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            secret = isinstance(k, str) and is_secret_key(k)
            name = _scrub_text(k) if isinstance(k, str) else k
            out[name] = REDACTED if secret and v not in (None, "") else scrub(v)
        return out
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return _scrub_text(value)
    return value


def secrets_in(text: str) -> list[str]:
    """The credential values :func:`scrub` would hide in ``text``, in order of appearance
    (each once): for text that must stay usable with the values replaced (a command line to
    run again).

    >>> secrets_in("openai:j[api_key=sk-live-0123456789abcdef] http://u:pw-9a8b7c@h/v1")
    ['sk-live-0123456789abcdef', 'pw-9a8b7c']
    >>> secrets_in("--api-key=flag-value-1 Bearer tok.123.456")
    ['flag-value-1', 'tok.123.456']
    """
    if not text:
        return []
    spans: list[tuple[int, int]] = []
    known = _known_re
    if known is not None:
        spans += [m.span() for m in known.finditer(text)]
    spans += [m.span("value") for m in _FLAG.finditer(text)]
    spans += [m.span("value") for m in _PAIR.finditer(text) if is_secret_key(m.group("key"))]
    spans += [(m.end("scheme"), m.end()) for m in _BEARER.finditer(text)]
    spans += [(m.end("head"), m.end() - 1) for m in _URL_PASSWORD.finditer(text)]
    spans += [m.span() for m in _KEY_SHAPES.finditer(text)]
    found: list[str] = []
    for start, end in sorted(spans):
        value = text[start:end].strip().strip("'\"")
        fresh = value and value != REDACTED and not any(value in other for other in found)
        if fresh:
            found = [f for f in found if f not in value] + [value]
    return found


# a run of letters and digits as long and as mixed as a generated key
_TOKEN_RUN = re.compile(r"[A-Za-z0-9]{24,}")
_MIN_TOKEN_ENTROPY = 4.0  # bits per character; English words and version tags stay below


def _looks_generated(run: str) -> bool:
    mixed = any(c.isupper() for c in run) and any(c.islower() for c in run)
    if not (mixed and any(c.isdigit() for c in run)):
        return False
    counts = Counter(run).values()
    entropy = -sum(n / len(run) * math.log2(n / len(run)) for n in counts)
    return entropy >= _MIN_TOKEN_ENTROPY


@lru_cache(maxsize=1024)
def _name_is_key_like(name: str) -> bool:
    if _scrub_text(name) != name:
        return True
    return any(_looks_generated(m.group(0)) for m in _TOKEN_RUN.finditer(name))


def shown_name(name: str) -> str:
    """A model name as it may be written to a file, a log or the screen: ``***`` when it
    looks like a credential (a key's shape such as ``sk-...``, a ``key=value`` pair, a value
    given to :func:`remember_secret`, or a run of 24+ letters and digits as mixed as a
    generated token), else the name itself. Model names never look like that; a key pasted
    where the name goes does.

    >>> shown_name("gpt-4o-mini"), shown_name("Qwen/Qwen2.5-0.5B-Instruct")
    ('gpt-4o-mini', 'Qwen/Qwen2.5-0.5B-Instruct')
    >>> shown_name("sk-proj-4f9a8b7c6d5e4f3a2b1c"), shown_name("Xk3p9QzL7mN2vB8wR4tY6uJ1")
    ('***', '***')
    """
    if name in _known or _name_is_key_like(name):
        return REDACTED
    return name


def split_url_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that part as the value of an HTTP
    ``Authorization`` header (Basic), or ``None`` when the URL has none. The password is
    given to :func:`remember_secret`.

    >>> split_url_credentials("http://me:pw-secret-42@127.0.0.1:8000/v1")
    ('http://127.0.0.1:8000/v1', 'Basic bWU6cHctc2VjcmV0LTQy')
    >>> split_url_credentials("https://api.openai.com/v1")
    ('https://api.openai.com/v1', None)
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    user, password = unquote(user), unquote(password)
    remember_secret(password)
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record's message (its arguments merged in) and
    its exception text; it never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        clean = _scrub_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _scrub_text(record.exc_text)
        return True


_FILTER = ScrubFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with :class:`ScrubFilter` attached (once).

    >>> log = get_logger("jurist.doctest")
    >>> any(isinstance(f, ScrubFilter) for f in log.filters)
    True
    """
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
