"""Claim-by-claim verdicts: the judge lists claims, one verdict each; the score is the share
of claims that earn full marks.

A template with a :class:`ClaimsForm` (``Template.claims``) asks for lines such as::

    Claim: The tower was finished in 1889.
    Verdict: supported
    Claim: It is 400 metres tall.
    Verdict: unsupported

and reads them strictly:

- every ``Claim:`` line starts a claim (``Claim 2:`` and a leading ``2.`` are fine); its text
  runs up to its ``Verdict:`` line and must not be empty;
- every claim has a verdict, and a verdict belongs to the claim above it: a verdict with no
  claim, a claim with no verdict, or a verdict that is not one of the labels (``supported``,
  ``unsupported``) fails the whole reading;
- two different verdicts for one claim are a conflict, handled by the template's rule
  (``"fail"``, or the ``"first"`` / ``"last"`` one wins);
- lines after a claim's verdict and before the next claim are its reason; text before the
  first claim is ignored;
- an output with no claims fails (``parse: ...``); so does one that says ``No claims``:
  faithfulness is undefined for an answer that states nothing, and scoring it 1.0 would
  reward saying nothing.

The score is the mean of the claims' label scores (with the default labels, the fraction of
claims supported); the verdict value is that score. Reading is linear in the output's
length. With JSON output the judge writes ``{"claims": [{"claim": ..., "verdict": ...}]}``.

>>> form = ClaimsForm()
>>> text = "Claim: Paris is in France.\\nVerdict: supported\\nClaim 2: It has 9M people.\\n"
>>> text += "Verdict: unsupported\\nReason: the context gives 2.1M."
>>> v = form.parse(text, explanations=True)
>>> v.score, v.explanation
(0.5, '1 of 2 claims supported. Not supported: (2) It has 9M people. [the context gives 2.1M.]')
>>> print(form.parse("Claim: a\\nVerdict: maybe").error)
parse: claim 1: 'maybe' is not one of "supported", "unsupported"
>>> form.parse("Verdict: supported").error
"parse: a 'Verdict:' line before any 'Claim:' line"
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jurist.templates._forms import LEAD
from jurist.templates._json import find_json_object
from jurist.templates._parse import Conflict, ParsedVerdict, split_reasoning
from jurist.templates._scale import Label, LabelScale

__all__ = ["ClaimsForm"]

_SUPPORTED = Label(name="supported", score=1.0)
_UNSUPPORTED = Label(name="unsupported", score=0.0, aliases=("not supported",))


@dataclass
class _Claim:
    number: int
    text: list[str] = field(default_factory=list)
    verdicts: list[tuple[str, float] | str] = field(default_factory=list)  # str: unreadable
    reason: list[str] = field(default_factory=list)


@lru_cache(maxsize=32)
def _line(key: str) -> re.Pattern[str]:
    k = r"\s+".join(re.escape(w) for w in key.split())
    return re.compile(
        rf"^{LEAD}(?:\d{{1,4}}[.)][ \t]*+)?{k}(?:[ \t]*+#?\d{{1,4}})?"
        r"[\s*_]*+[:=][\s*_]*+(?P<rest>.*)$",
        re.IGNORECASE,
    )


_REASON = re.compile(rf"^{LEAD}(?:reason|because|explanation)[\s*_]*+[:=][\s*_]*+", re.IGNORECASE)


class ClaimsForm(BaseModel):
    """How a claim-by-claim output is written: the claim and verdict keys, the verdict
    labels (``supported`` 1.0, ``unsupported`` 0.0) and the phrase for "no claims"."""

    model_config = ConfigDict(frozen=True)

    claim_key: str = "Claim"
    verdict_key: str = "Verdict"
    labels: LabelScale = Field(
        default_factory=lambda: LabelScale(labels=(_SUPPORTED, _UNSUPPORTED))
    )
    none_phrase: str = "No claims"

    def describe(self) -> str:
        """The output format, for the prompt and the template catalog."""
        return (
            f"{self.claim_key}: <one claim>\n{self.verdict_key}: <one of {self.labels.describe()}>"
        )

    def json_schema(self, explanations: bool = False) -> dict[str, Any]:
        """The JSON schema of a claims object: ``{"claims": [{"claim", "verdict"}]}``."""
        item: dict[str, Any] = {"claim": {"type": "string"}}
        if explanations:
            item["reason"] = {"type": "string"}
        item["verdict"] = {"type": "string", "enum": [lb.name for lb in self.labels.labels]}
        return {
            "type": "object",
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": item,
                        "required": list(item),
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["claims"],
            "additionalProperties": False,
        }

    def json_format(self, explanations: bool = False) -> str:
        """The format line asking for the JSON object."""
        reason = '"reason": "<why>", ' if explanations else ""
        choices = " or ".join(f'"{lb.name}"' for lb in self.labels.labels)
        return (
            'Reply with only this JSON object: {"claims": [{"claim": "<one claim>", '
            f'{reason}"verdict": {choices}}}, ...]}}'
        )

    def parse(
        self,
        text: str,
        *,
        explanations: bool = False,
        json: bool | None = None,
        conflict: Conflict = "fail",
    ) -> ParsedVerdict:
        """Read the claims and their verdicts (module doc); a failure is returned, not raised."""
        answer, _ = split_reasoning(text)
        if json or (json is None and "{" in answer):
            obj = find_json_object(answer)
            if obj is not None and "claims" in obj:
                return self._from_json(obj["claims"], explanations)
            if json:
                return _fail("the output is not a JSON object with a 'claims' list")
        return self._from_text(answer, explanations, conflict)

    def _label(self, raw: str, number: int) -> tuple[str, float] | str:
        words = raw.strip().strip("*_`\"'[]().").strip()
        low = " ".join(words.split()).casefold()
        phrases = sorted(
            ((p, lb) for lb in self.labels.labels for p in lb.phrases),
            key=lambda pl: len(pl[0]),
            reverse=True,
        )
        for phrase, label in phrases:
            p = phrase.casefold()
            if low.startswith(p) and (len(low) == len(p) or not low[len(p)].isalnum()):
                return label.name, label.score
        shown = words if len(words) <= 40 else words[:37] + "..."
        return f"claim {number}: {shown!r} is not one of {self.labels.describe()}"

    def _from_text(self, answer: str, explanations: bool, conflict: Conflict) -> ParsedVerdict:
        claim_re, verdict_re = _line(self.claim_key), _line(self.verdict_key)
        claims: list[_Claim] = []
        for line in answer.splitlines():
            m = claim_re.match(line)
            if m is not None:
                claims.append(_Claim(len(claims) + 1, [m.group("rest").strip()]))
                continue
            m = verdict_re.match(line)
            if m is not None:
                if not claims:
                    return _fail(
                        f"a '{self.verdict_key}:' line before any '{self.claim_key}:' line"
                    )
                claims[-1].verdicts.append(self._label(m.group("rest"), claims[-1].number))
            elif claims:
                target = claims[-1].reason if claims[-1].verdicts else claims[-1].text
                if line.strip():
                    target.append(_REASON.sub("", line.strip()))
        if not claims:
            if any(" ".join(ln.strip(" .*_-").split()).casefold() == self.none_phrase.casefold()
                   for ln in answer.splitlines()):  # fmt: skip
                return _fail("the judge found no claims to check (the score is undefined)")
            return _fail(f"no '{self.claim_key}:' lines in the output")
        decided: list[tuple[_Claim, str, float]] = []
        for c in claims:
            if not " ".join(c.text).strip():
                return _fail(f"claim {c.number} is empty")
            if not c.verdicts:
                return _fail(f"claim {c.number} has no '{self.verdict_key}:' line")
            if conflict == "fail":
                bad = next((v for v in c.verdicts if isinstance(v, str)), None)
                if bad is not None:
                    return _fail(bad)
                distinct = list(dict.fromkeys(c.verdicts))
                if len(distinct) > 1:
                    shown = ", ".join(str(v[0]) for v in distinct)
                    return _fail(f"conflicting verdicts for claim {c.number}: {shown}")
            pick = c.verdicts[-1] if conflict == "last" else c.verdicts[0]
            if isinstance(pick, str):
                return _fail(pick)
            decided.append((c, pick[0], pick[1]))
        return self._verdict(
            [
                (" ".join(c.text).strip(), name, score, " ".join(c.reason))
                for c, name, score in decided
            ],
            explanations,
        )

    def _from_json(self, raw: Any, explanations: bool) -> ParsedVerdict:
        if not isinstance(raw, list):
            return _fail("'claims' must be a list")
        if not raw:
            return _fail("the judge found no claims to check (the score is undefined)")
        rows: list[tuple[str, str, float, str]] = []
        for i, item in enumerate(raw, 1):
            if not isinstance(item, dict) or not isinstance(item.get("claim"), str):
                return _fail(f"claim {i} is not an object with a 'claim' string")
            verdict = item.get("verdict")
            if not isinstance(verdict, str):
                return _fail(f"claim {i}: the verdict is not a label")
            try:
                label = self.labels.label_of(" ".join(verdict.split()))
            except KeyError:
                return _fail(f"claim {i}: {verdict[:40]!r} is not one of {self.labels.describe()}")
            if not item["claim"].strip():
                return _fail(f"claim {i} is empty")
            reason = item.get("reason")
            rows.append((item["claim"].strip(), label.name, label.score,
                         reason.strip() if isinstance(reason, str) else ""))  # fmt: skip
        return self._verdict(rows, explanations)

    def _verdict(
        self, rows: list[tuple[str, str, float, str]], explanations: bool
    ) -> ParsedVerdict:
        score = sum(s for _, _, s, _ in rows) / len(rows)
        if not explanations:
            return ParsedVerdict(score, score)
        top = max(lb.score for lb in self.labels.labels)
        full = sum(1 for _, _, s, _ in rows if s == top)
        best = next(lb.name for lb in self.labels.labels if lb.score == top)
        misses = [
            f"({i}) {claim}" + (f" [{reason}]" if reason else "")
            for i, (claim, _name, s, reason) in enumerate(rows, 1)
            if s != top
        ]
        note = f"{full} of {len(rows)} claims {best}."
        if misses:
            note += f" Not {best}: " + "; ".join(misses)
        return ParsedVerdict(score, score, None, note)


def _fail(message: str) -> ParsedVerdict:
    return ParsedVerdict(None, None, f"parse: {message}")
