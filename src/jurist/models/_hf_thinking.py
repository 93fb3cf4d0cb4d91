"""The thinking budget of the ``hf`` backend, enforced inside ``generate``.

:class:`ThinkingBudget` is a logits processor that follows each row of a batch: a row is
inside its thinking from the opening tag (already in the prompt when the chat template
opened the block, or written by the model) until the closing tag. A row that has spent
``budget`` tokens inside its thinking gets the closing tag's tokens forced as its next
tokens (every other token's score set to minus infinity); it then goes on to its verdict
freely. Tokens the model writes after its thinking closed are never touched, and a row
never opens a second budget. The logprobs a request asked for are recorded before this
processor runs, so they are the model's own (a forced tag keeps its natural logprob).

Runs on the backend's worker thread, with torch. :func:`files_template_thinks` and
:func:`loaded_template_thinks` decide the backend's ``capabilities.thinking``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import huggingface_hub
import torch
import transformers

from jurist.errors import ConfigError
from jurist.models._hf_loading import LoadedModel, ModelSource
from jurist.models._thinking import THINK_CLOSE, THINK_OPEN, open_at_end, template_thinks

__all__ = [
    "ThinkingBudget",
    "budget_processor",
    "files_template_thinks",
    "loaded_template_thinks",
]


class ThinkingBudget(transformers.LogitsProcessor):
    """Forces the closing tag once a row has thought for ``budget`` tokens."""

    def __init__(
        self,
        budget: int,
        open_ids: Sequence[int],
        close_ids: Sequence[int],
        inside: Sequence[bool],
    ) -> None:
        if budget < 1 or not open_ids or not close_ids:
            raise ConfigError("a thinking budget needs budget >= 1 and both tags' tokens")
        self.budget = budget
        self.open_ids = tuple(open_ids)
        self.close_ids = tuple(close_ids)
        self.inside = list(inside)
        self.closed = [False] * len(self.inside)
        self.spent = [0] * len(self.inside)
        self.forcing = [-1] * len(self.inside)  # index into close_ids being forced, or -1
        self.step = 0

    def _ends_with(self, row: Any, seq: tuple[int, ...]) -> bool:
        if len(seq) > self.step:  # only tokens generated here count
            return False
        return tuple(int(t) for t in row[-len(seq) :].tolist()) == seq

    def _advance(self, i: int, row: Any) -> None:
        """Take in row ``i``'s newest token."""
        if self.closed[i]:
            return
        if self.forcing[i] >= 0:
            self.forcing[i] += 1
            if self.forcing[i] >= len(self.close_ids):
                self.forcing[i] = -1
                self.inside[i] = False
                self.closed[i] = True
            return
        if self.inside[i]:
            if self._ends_with(row, self.close_ids):
                self.inside[i] = False
                self.closed[i] = True
            else:
                self.spent[i] += 1
        elif self._ends_with(row, self.open_ids):
            self.inside[i] = True

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.step > 0:
            for i in range(len(self.inside)):
                self._advance(i, input_ids[i])
        self.step += 1
        for i in range(len(self.inside)):
            if self.inside[i] and self.forcing[i] < 0 and self.spent[i] >= self.budget:
                self.forcing[i] = 0
            if self.forcing[i] >= 0:
                token = self.close_ids[self.forcing[i]]
                scores[i, :] = -torch.inf
                scores[i, token] = 0.0
        return scores


def budget_processor(lm: LoadedModel, budget: int, prompts: Sequence[str]) -> ThinkingBudget:
    """The processor for a batch whose rows were rendered as ``prompts``."""
    enc = lm.tokenizer([THINK_OPEN, THINK_CLOSE], add_special_tokens=False)["input_ids"]
    open_ids, close_ids = ([int(t) for t in ids] for ids in enc)
    return ThinkingBudget(budget, open_ids, close_ids, [open_at_end(p) for p in prompts])


def files_template_thinks(source: ModelSource, revision: str | None) -> bool:
    """Whether the chat template in a model's files has a thinking switch, read without
    loading anything: ``chat_template.jinja`` or ``tokenizer_config.json``'s
    ``chat_template``, from the model's folder or, for a hub id, from the local hub cache
    (``False`` when neither is there yet: the backend checks again once loaded)."""
    texts: list[str] = []
    for filename in ("chat_template.jinja", "tokenizer_config.json"):
        path: Path | None = None
        if source.path is not None:
            path = source.path / filename
        elif source.repo_id is not None:
            found = huggingface_hub.try_to_load_from_cache(
                source.repo_id, filename, revision=revision
            )
            path = Path(found) if isinstance(found, str) else None
        if path is None or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if filename.endswith(".json"):
            try:
                template = json.loads(text).get("chat_template")
            except (ValueError, AttributeError):
                continue
            if isinstance(template, list):  # named templates: [{"name", "template"}]
                texts += [str(t.get("template", "")) for t in template if isinstance(t, dict)]
            elif isinstance(template, str):
                texts.append(template)
        else:
            texts.append(text)
    return any(template_thinks(t) for t in texts)


def loaded_template_thinks(lm: LoadedModel) -> bool:
    """Whether a loaded tokenizer's chat template has a thinking switch."""
    return template_thinks(getattr(lm.tokenizer, "chat_template", None))
