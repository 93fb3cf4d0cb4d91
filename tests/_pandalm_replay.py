"""PandaLM's test set replayed as a judge whose answer is a fixed function of its prompt.

PandaLM's ``data/testset-v1.json`` (../shared/realdata) holds 999 pairs of responses with
three human annotators (0 tie, 1, 2) and, in the files beside it, the verdicts GPT-3.5 and
PandaLM-7B gave each pair (GPT-3.5 gave 25 no verdict: "garbage"). The items here are
those pairs (``prompt``, ``response_a``, ``response_b``) with the annotators' majority as
``human`` (``A``, ``B`` or ``tie``), judged with the ``mt_bench_pair`` template.

A mock cannot learn from examples, so :class:`Replay` is an explicit rule, and what the
tests using it prove is that alignment's *search, held-out discipline, intervals and
refusal* work on real labels, not that a model improves. Its answer depends on the
prompt only (never on the judged item's human label):

- by default it answers GPT-3.5's recorded verdict for the judged pair (the test set holds
  71 groups of identical pairs; the replay answers each group as its first pair) (``[[A]]``,
  ``[[B]]``, ``[[C]]`` for a tie, and an unreadable sentence where GPT-3.5 gave none);
- ``TieRule``: when the system message holds a few-shot example labelled ``tie`` whose
  two responses are alike (difflib ratio >= 0.8), or the sentence :data:`TIE_HINT`, it
  answers a tie for pairs whose two responses are nearly the same (ratio >= 0.95). On
  these data people call 25 of those 30 pairs a tie and GPT-3.5 only 3, so the rule, once
  triggered, raises agreement with people; whether the search finds such an example,
  and whether the held-out interval supports the gain, is what a test checks;
- ``NoiseRule``: every distinct set of examples makes the replay answer PandaLM-7B's
  recorded verdict instead of GPT-3.5's on a pseudo-random 30% of the pairs (a hash of
  the examples and the pair). The examples change the answers, so the train slice moves
  by chance, but carry no signal (PandaLM-7B agrees with people less than GPT-3.5 on
  these pairs), so no gain should survive the held-out check.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from jurist.judges._examples import EXAMPLES_HEADER
from jurist.templates import get_template
from jurist.types import Request

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
PANDALM = REALDATA / "PandaLM" / "data"
TEMPLATE = get_template("mt_bench_pair")
TIE_HINT = "Two replies that say nearly the same thing are a tie."
VERDICT_TEXT = {"A": "[[A]]", "B": "[[B]]", "tie": "[[C]]", None: "I cannot decide between them."}
_CODE: dict[Any, str | None] = {1: "A", 2: "B", 0: "tie", "1": "A", "2": "B", "Tie": "tie"}


def load_items() -> list[dict[str, Any]]:
    """The 999 pairs with ``human`` (majority label), ``gpt`` and ``pandalm`` verdicts and
    ``similarity`` of the two responses."""
    rows = json.loads((PANDALM / "testset-v1.json").read_text())
    gpt = {
        r["idx"]: r["gpt_result"]
        for r in json.loads((PANDALM / "gpt-3.5-turbo-testset-v1.json").read_text())
    }
    panda = {
        r["idx"]: r["pandalm_result"]
        for r in json.loads((PANDALM / "pandalm-7b-testset-v1.json").read_text())
    }
    items = []
    for r in rows:
        votes = Counter(r[f"annotator{k}"] for k in (1, 2, 3))
        top, count = votes.most_common(1)[0]
        assert count >= 2
        prompt = r["instruction"] + (f"\n\n{r['input']}" if r.get("input") else "")
        a, b = str(r["response1"]), str(r["response2"])
        items.append(
            {
                "id": f"pandalm-{r['idx']}",
                "prompt": prompt,
                "response_a": a,
                "response_b": b,
                "human": _CODE[top],
                "gpt": _CODE.get(gpt[r["idx"]]),
                "pandalm": _CODE[panda[r["idx"]]],
                "similarity": difflib.SequenceMatcher(
                    None, a.strip().lower(), b.strip().lower()
                ).ratio(),
            }
        )
    return items


class Replay:
    """The replay judge's answer function (see the module docs); ``calls`` counts the
    calls, ``seen`` the prompt texts judged, in order."""

    def __init__(self, items: list[dict[str, Any]], rule: Literal["tie", "noise"] = "tie") -> None:
        self.rule = rule
        self.by_text: dict[str, dict[str, Any]] = {}
        for it in items:
            self.by_text.setdefault(TEMPLATE.render_item(it), it)
        self.calls = 0
        self.seen: list[str] = []

    def __call__(self, request: Request) -> str:
        self.calls += 1
        system = str(request.messages[0].content)
        text = str(request.messages[-1].content)
        item = self.by_text[text]
        self.seen.append(text)
        verdict = item["gpt"]
        examples = self._examples(system)
        if self.rule == "tie":
            taught = TIE_HINT in system or any(
                ex["label"] == "tie" and ex["item"]["similarity"] >= 0.8 for ex in examples
            )
            if taught and item["similarity"] >= 0.95:
                verdict = "tie"
        elif examples:
            digest = hashlib.sha256(
                f"{sorted(e['item']['id'] for e in examples)}|{item['id']}".encode()
            )
            if digest.digest()[0] < 77:  # 77 / 256: about 30%
                verdict = item["pandalm"]
        return VERDICT_TEXT[verdict]

    @lru_cache(maxsize=4096)  # noqa: B019  (one replay per test)
    def _examples(self, system: str) -> list[dict[str, Any]]:
        if EXAMPLES_HEADER not in system:
            return []
        out = []
        blocks = system.split(EXAMPLES_HEADER, 1)[1].split("\n\nExample ")
        for block in blocks[1:]:
            body = block.split(":\n", 1)[1]
            text, label = body.rsplit("\nVerdict: ", 1)
            out.append({"item": self.by_text[text], "label": label.strip()})
        return out
