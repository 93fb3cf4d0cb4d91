"""Pure helpers of the server prefill (:mod:`jurist.models._prefill`): chat templates
rendered on the client, the first position's alternatives read from an answer, and the
verdicts' scores made from them.

**Rendering.** For raw ``/v1/completions`` the client writes the prompt the server's chat
template would: the model's own template (Jinja, run in a sandbox as transformers runs it),
given as its text, as a ``.jinja`` file, as a ``.gguf`` file (its
``tokenizer.chat_template``), or ``"chatml"``. A final assistant message is continued, not
closed: the messages are rendered with a marker in its place and the text is cut there,
the prefix appended as it is. ``bos_token`` renders empty (the server adds the model's own
when it tokenizes).

**Scores from one position.** The answer to a one-token request with ``top_logprobs``
gives the alternatives at the verdict's first token. A verdict gets the mass of the
alternatives that spell it (``" 4"`` for ``"4"``: leading whitespace is not compared), that
spell it and end (``"4."``), or that begin it and no other verdict (``" Inc"`` for
``"Incorrect"``, whose later tokens are not read: for verdicts told apart by their first
token the scores are those of that token). An alternative that begins several verdicts
(``"I"`` of ``"I am not sure"`` and ``"Incorrect"``) counts for none of them, and
``coverage`` shows the mass left out.

>>> chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Score:"}]
>>> render_chat(CHATML, chat)
'<|im_start|>user\\nq<|im_end|>\\n<|im_start|>assistant\\nScore:'
>>> s = scores_from_alternatives([(" 4", -0.2), (" 5", -2.0), ("The", -3.0)], [" 4", " 5", " 1"])
>>> sorted(s.logprobs), round(s.coverage, 3)
([' 4', ' 5'], 0.954)
>>> s = scores_from_alternatives([(" Inc", -0.1), (" Correct", -3.0)], ["Correct", "Incorrect"])
>>> {k: round(v, 3) for k, v in sorted(s.probs.items())}
{'Correct': 0.052, 'Incorrect': 0.948}
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jurist.errors import ConfigError, MissingDependencyError, ModelError
from jurist.types import CandidateScores, Usage

__all__ = [
    "CHATML",
    "first_alternatives",
    "load_chat_template",
    "render_chat",
    "scores_from_alternatives",
]

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
_MARK = "\x00jurist-prefill\x00"
_CONTINUES = re.compile(r"\w")


def load_chat_template(given: str) -> str:
    """The template text ``given`` stands for: ``"chatml"``, Jinja text, or the path of a
    ``.jinja`` or ``.gguf`` file."""
    if given.strip().lower() == "chatml":
        return CHATML
    if "{{" in given or "{%" in given:
        return given
    path = Path(given).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"chat_template {given!r} is neither 'chatml', Jinja text, nor an existing "
            ".jinja or .gguf file"
        )
    if path.suffix.lower() == ".gguf":
        try:
            import gguf
        except ImportError as exc:
            raise MissingDependencyError(
                "gguf", "prefill", "Reading a chat template from a GGUF file"
            ) from exc
        reader = gguf.GGUFReader(str(path))
        field = reader.fields.get("tokenizer.chat_template")
        if field is None:
            raise ConfigError(f"{path}: the GGUF file holds no tokenizer.chat_template")
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return path.read_text(encoding="utf-8")


def _environment() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise MissingDependencyError("jinja2", "prefill", "Rendering a chat template") from exc

    def raise_exception(message: str) -> None:
        raise ConfigError(f"the chat template refused the messages: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env


_TEMPLATES: dict[str, Any] = {}


def render_chat(template: str, messages: Sequence[Mapping[str, str]], **options: Any) -> str:
    """The prompt ``template`` writes for ``messages``, ending where the answer goes on
    (a final assistant message continued; else the generation prompt). ``options``: more
    template variables (``enable_thinking``)."""
    compiled = _TEMPLATES.get(template)
    if compiled is None:
        compiled = _TEMPLATES[template] = _environment().from_string(template)
    rows = [dict(m) for m in messages]
    prefill = bool(rows) and rows[-1]["role"] == "assistant"
    tail = ""
    if prefill:
        tail = rows[-1]["content"]
        rows[-1] = {**rows[-1], "content": _MARK}
    text = str(
        compiled.render(
            messages=rows,
            add_generation_prompt=not prefill,
            bos_token="",
            eos_token="",
            **options,
        )
    )
    if not prefill:
        return text
    cut = text.find(_MARK)
    if cut < 0:
        raise ConfigError("the chat template does not write the final assistant message")
    return text[:cut] + tail


def first_alternatives(payload: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The alternatives at the first generated position of a chat or completions answer
    (OpenAI's ``logprobs.content`` or the legacy ``top_logprobs`` list), the chosen token
    among them."""
    try:
        choice = payload["choices"][0]
        data = choice.get("logprobs") or {}
        out: dict[str, float] = {}
        content = data.get("content")
        if content:
            first = content[0]
            for alt in first.get("top_logprobs") or ():
                out[str(alt["token"])] = _lp(alt.get("logprob"))
            out.setdefault(str(first["token"]), _lp(first.get("logprob")))
        elif data.get("top_logprobs"):
            top = data["top_logprobs"][0] or {}
            out.update({str(k): _lp(v) for k, v in top.items()})
            tokens, chosen = data.get("tokens") or (), data.get("token_logprobs") or ()
            if tokens and chosen:
                out.setdefault(str(tokens[0]), _lp(chosen[0]))
    except (LookupError, TypeError, AttributeError, ValueError) as exc:
        raise ModelError(f"an answer of unexpected shape ({type(exc).__name__}: {exc})") from exc
    if not out:
        raise ModelError("the server returned no logprobs at the verdict's position")
    return list(out.items())


def _lp(value: Any) -> float:
    return -math.inf if value is None else float(value)


def scores_from_alternatives(
    alternatives: Sequence[tuple[str, float]],
    candidates: Sequence[str],
    *,
    prompt_tokens: int = 0,
) -> CandidateScores:
    """The candidates' scores from the alternatives at their first token (module docs)."""
    keys = {c: c.lstrip() for c in candidates}
    mass: dict[str, float] = {}
    for token, logprob in alternatives:
        piece = token.lstrip()
        if not piece or not math.isfinite(logprob):
            continue
        spelled = [
            c
            for c, k in keys.items()
            if piece == k or (piece.startswith(k) and not _CONTINUES.match(piece, len(k)))
        ]
        begun = [c for c, k in keys.items() if len(k) > len(piece) and k.startswith(piece)]
        if spelled:
            target = max(spelled, key=lambda c: len(keys[c]))
        elif len(begun) == 1:
            target = begun[0]
        else:
            continue
        mass[target] = mass.get(target, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    logprobs = {c: math.log(m) for c, m in mass.items()}
    probs = {c: m / total for c, m in mass.items()} if total > 0 else {}
    return CandidateScores(
        logprobs=logprobs,
        probs=probs,
        coverage=min(1.0, total),
        usage=Usage(prompt_tokens=prompt_tokens, calls=1, attempts=1),
    )
