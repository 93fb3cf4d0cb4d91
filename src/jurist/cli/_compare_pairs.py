"""The pairs ``jurist compare`` judges: N systems' answers, read, aligned and paired.

The answers come from N files (one system each, named by the file's stem) or from files
whose rows name their system in a column (``--system-column``). Each system's answers are
keyed by item: ``--id-field`` when given, else the row number (one file per system) or the
prompt text (a system column). Every system must answer every item once, with the same
prompt: an error names the file and line otherwise. A row holding a conversation
(``messages``) is an answer too: its pair holds ``messages_a`` and ``messages_b`` (the
context before the judged turn is checked when the pair is judged), and the other
systems' answers to that item must be conversations as well.

Which pairs (:func:`plan_pairs`):

- ``--baseline NAME``: every other system against the baseline, on every item (the
  system shown as A, the baseline as B; the judge's swap shows both orders);
- no baseline, two systems: A against B on every item (``jurist compare a b``);
- no baseline, more systems: round robin, every two systems on every item.

``--pairs-budget K`` keeps K of them, balanced: each pair of systems gets the same number
of items (give or take one), the items drawn at random (``--seed``) and the side each system
is shown on alternating, so every system plays about as often as every other. The choice is
a function of the answers and the flags alone, so a resumed comparison writes the same
pairs and judges only those still missing.

>>> s = Systems(["x", "y", "z"], [0, 1])
>>> for name in s.names:
...     for row in (0, 1):
...         s.add(name, row, Answer(f"q{row}", f"{name}{row}", f"{name}.jsonl:{row + 1}"))
>>> [(k, a, b) for k, a, b in plan_pairs(s, baseline="z")]
[(0, 'x', 'z'), (0, 'y', 'z'), (1, 'x', 'z'), (1, 'y', 'z')]
>>> len(plan_pairs(s)), len(plan_pairs(s, pairs_budget=3))
(6, 3)
>>> sorted((a, b) if a < b else (b, a) for _, a, b in plan_pairs(s, pairs_budget=3))
[('x', 'y'), ('x', 'z'), ('y', 'z')]
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from jurist._missing import field_problem
from jurist.data import open_source
from jurist.data._local_images import resolve_images
from jurist.errors import ConfigError, DataError

__all__ = ["Answer", "Pair", "Systems", "plan_pairs", "read_systems", "write_pairs"]

Pair = tuple[Hashable, str, str]
"""An item key, the system shown as A and the system shown as B."""


@dataclass(frozen=True)
class Answer:
    """One system's answer to one item, and where it was read."""

    prompt: Any
    response: Any
    where: str
    item_id: Any = None
    messages: Any = None
    """A conversation (the row's ``messages``) instead of a prompt and a response."""


@dataclass
class Systems:
    """Every system's answers by item key, systems and items in the order first read."""

    names: list[str]
    keys: list[Hashable]
    answers: dict[str, dict[Hashable, Answer]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    by_row: bool = False
    """Items are matched by row number (one file per system, no id field)."""

    def add(self, system: str, key: Hashable, answer: Answer) -> None:
        mine = self.answers.setdefault(system, {})
        if key in mine:
            raise DataError(
                f"{answer.where}: system {system!r} already answered this item at "
                f"{mine[key].where}; each system answers each item once"
            )
        mine[key] = answer


def _key(value: Any, where: str, id_field: str) -> Hashable:
    if isinstance(value, list | dict):
        raise DataError(f"{where}: {id_field} {value!r} is not a single value")
    return value  # type: ignore[no-any-return]


def read_systems(
    files: Sequence[Path],
    *,
    prompt_field: str,
    response_field: str,
    id_field: str | None,
    system_column: str | None,
    files_root: Sequence[Path] = (),
) -> Systems:
    """Read and align the answers (see the module docs); errors name the file and line."""
    if system_column is None and len(files) < 2:
        raise ConfigError(
            "compare needs two or more answer files (one per system), or one file whose "
            "rows name their system: --system-column COLUMN"
        )
    stems = [f.stem for f in files]
    if len(set(stems)) < len(stems):  # the same stem twice: number them by position
        stems = [f"{stem}#{i + 1}" for i, stem in enumerate(stems)]
    systems = Systems([], [])
    seen_keys: set[Hashable] = set()
    for path, stem in zip(files, stems, strict=True):
        source = open_source(path, files_root=files_root)
        for row_number, (_, where, row) in enumerate(source):
            # the pairs file lives in the run folder: a local image path is checked against
            # this data file's policy now, and written as its real path
            row = resolve_images(row, source.files, where)
            messages = row.get("messages")
            if messages is not None and system_column is not None and id_field is None:
                raise ConfigError(
                    f"{where}: a conversation names no prompt to match the systems' answers "
                    "on; give each row an id and --id-field"
                )
            needed = [prompt_field, response_field] if messages is None else []
            needed += [system_column] if system_column else []
            needed += [id_field] if id_field else []
            for column in needed:
                problem = field_problem(row, column)
                if problem is not None:
                    raise DataError(f"{where}: {problem}; the fields are {sorted(row)}")
            name = str(row[system_column]) if system_column else stem
            if id_field is not None:
                key = _key(row[id_field], where, id_field)
            elif system_column is None:
                key = row_number
            else:
                key = _key(row[prompt_field], where, prompt_field)
            item_id = row[id_field] if id_field is not None else None
            answer = (
                Answer(row[prompt_field], row[response_field], where, item_id)
                if messages is None
                else Answer(None, None, where, item_id, messages)
            )
            systems.add(name, key, answer)
            if name not in systems.names:
                systems.names.append(name)
                systems.sources[name] = str(path)
            if key not in seen_keys:
                seen_keys.add(key)
                systems.keys.append(key)
    systems.by_row = id_field is None and system_column is None
    _check_complete(systems, files, id_field=id_field)
    return systems


def _check_complete(s: Systems, files: Sequence[Path], *, id_field: str | None) -> None:
    if len(s.names) < 2:
        found = f"only {s.names[0]!r}" if s.names else "none"
        raise DataError(f"{', '.join(map(str, files))}: compare needs two systems ({found})")
    if not s.keys:
        raise ConfigError(f"{files[0]}: no items to compare")
    first = s.names[0]
    for name in s.names:
        mine = s.answers[name]
        if s.by_row and len(mine) != len(s.keys):
            longest = max(s.names, key=lambda n: len(s.answers[n]))
            raise DataError(
                f"{s.sources[longest]} has more rows than {s.sources[name]} ({len(mine)}); "
                "compare needs equal rows"
            )
        for key in s.keys:
            answer = mine.get(key)
            if answer is None:
                other = next(a for a in (s.answers[n].get(key) for n in s.names) if a)
                raise DataError(
                    f"system {name!r} has no answer for the item of {other.where} "
                    f"({id_field or 'prompt'} {key!r}); every system must answer every item"
                )
            reference = s.answers[first][key]
            if (answer.messages is None) != (reference.messages is None):
                plain = answer if answer.messages is None else reference
                raise DataError(
                    f"{plain.where}: no messages, while the answer at "
                    f"{(reference if plain is answer else answer).where} holds a conversation; "
                    "compare conversations with conversations"
                )
            if answer.messages is None and answer.prompt != reference.prompt:
                raise DataError(f"{reference.where} and {answer.where}: the prompts differ")


def plan_pairs(
    systems: Systems,
    *,
    baseline: str | None = None,
    pairs_budget: int | None = None,
    seed: int = 0,
) -> list[Pair]:
    """The pairs to judge, in a fixed order (see the module docs)."""
    names = systems.names
    if baseline is not None and baseline not in names:
        raise ConfigError(f"--baseline {baseline!r} is not one of the systems: {names}")
    if baseline is not None:
        matchups = [(name, baseline) for name in names if name != baseline]
    else:
        matchups = list(itertools.combinations(names, 2))
    keys = systems.keys
    if pairs_budget is None or pairs_budget >= len(matchups) * len(keys):
        return [(key, a, b) for key in keys for a, b in matchups]
    if pairs_budget < 1:
        raise ConfigError(f"--pairs-budget must be at least 1, got {pairs_budget}")
    drawn: list[list[Hashable]] = []
    for a, b in matchups:
        order = list(keys)
        random.Random(f"{seed}\x00{a}\x00{b}").shuffle(order)
        drawn.append(order)
    chosen: list[Pair] = []
    for k in range(pairs_budget):
        turn, which = divmod(k, len(matchups))
        a, b = matchups[which]
        if baseline is None and turn % 2:
            a, b = b, a  # round robin: each system is shown on each side as often
        chosen.append((drawn[which][turn], a, b))
    return chosen


def write_pairs(systems: Systems, plan: Sequence[Pair], out: Path, *, id_field: str | None) -> int:
    """Write the planned pairs to ``out`` (JSONL, atomically); the number written.

    Each pair: ``prompt``, ``response_a``, ``response_b`` (or, for conversations,
    ``messages_a`` and ``messages_b``), ``system_a``, ``system_b``, and
    ``item``: the item's id (also under ``id_field``) or, for answers matched by row, its
    row (from 0); answers matched by prompt have no ``item`` (the prompt names it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as f:
        for key, a, b in plan:
            first, second = systems.answers[a][key], systems.answers[b][key]
            pair: dict[str, Any] = (
                {
                    "prompt": first.prompt,
                    "response_a": first.response,
                    "response_b": second.response,
                }
                if first.messages is None
                else {"messages_a": first.messages, "messages_b": second.messages}
            )
            pair["system_a"] = a
            pair["system_b"] = b
            if id_field is not None:
                pair[id_field] = first.item_id
            if id_field is not None or systems.by_row:
                pair["item"] = key  # which instruction: the leaderboard aligns systems on it
            f.write(orjson.dumps(pair, default=str) + b"\n")
    tmp.replace(out)
    return len(plan)
