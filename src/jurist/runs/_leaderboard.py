"""A leaderboard from pairwise runs: Bradley-Terry scores with bootstrap intervals, and raw
and length-controlled win rates against a baseline, side by side.

:func:`leaderboard` reads one or more pairwise run folders (``jurist compare``, or
:func:`jurist.evaluate` with a :class:`~jurist.judges.PairwiseJudge` over items that name
``system_a`` and ``system_b``). Each judged pair is one battle between its two systems,
with the pair's verdict after both orders: A, B or a tie. A failed pair (no verdict) and,
under ``consistency="inconsistent"``, a pair whose two orders disagreed are left out and
counted (``failed``, ``inconsistent``); under the default ``consistency="tie"`` such a pair
is a tie, as the run recorded it.

- **Bradley-Terry** (``jurist.metrics.bradley_terry``, Arena-Hard-Auto's reading): every
  battle of every run; a system's score is its modelled win rate against the baseline
  (0-100), its interval the 2.5 and 97.5 percentiles over ``bootstrap`` resamples of the
  battles.
- **Win rate** (``jurist.metrics.win_rate``): over the pairs a system played against the
  baseline, the mean preference for the system (the pair's score read from the system's
  side: 1 a win, 0 a loss, 0.5 a tie, in between for graded verdicts), x 100, with its
  standard error.
- **Length-controlled win rate** (AlpacaEval 2.0's GLM) over the same pairs, the lengths
  being the two answers' lengths in characters (of a conversation pair: its last
  assistant messages'). With two systems or more against the
  baseline, ``jurist.metrics.fit_length_controlled`` estimates each instruction's
  difficulty jointly across them, as AlpacaEval does (an instruction is the pair's
  ``item`` field, as ``jurist compare`` writes it, else its prompt); with one,
  ``jurist.metrics.length_controlled_win_rate`` fits it without a difficulty.

With ``style_control``, the Bradley-Terry fit also weighs each battle's style differences
(``jurist.metrics.style_differences``: length, markdown headers, lists and bold), as
Arena-Hard-Auto's style control does, and reads each score at the mean difference; the
coefficients are in ``style``.

The baseline is ``baseline`` when given; else the one system in every battle (``jurist
compare --baseline``, or B of a two-system comparison); else the system in the most
battles (ties by name), which the leaderboard says.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from jurist.errors import ConfigError, DataError
from jurist.runs._leaderboard_types import (
    LeaderboardData,
    LeaderboardRow,
    LeaderboardRun,
    StyleRow,
)
from jurist.runs._run import Run
from jurist.runs.report._leaderboard_page import write_leaderboard

if TYPE_CHECKING:
    from jurist.metrics import LengthControlledWinRate

# jurist.metrics is imported where it is used: `import jurist` does not load it (it loads
# jurist.runs)

__all__ = ["Leaderboard", "LeaderboardRow", "LeaderboardRun", "leaderboard"]

_WINNER = {"A": "model_a", "B": "model_b", "tie": "tie"}
_Battle = tuple[str, str, str, float, float, float, Hashable]
"""system A, system B, the winner, the pair's score (A's preference), A's and B's answer
lengths, the item."""


class Leaderboard(LeaderboardData):
    """The systems ranked by Bradley-Terry score (see the module docs): ``rows``, the
    ``baseline`` and where it came from, the ``runs`` read; exports ``to_csv``,
    ``to_pandas`` and the HTML page, ``report``."""

    def report(self, path: str | Path) -> Path:
        """Write the leaderboard's self-contained HTML page (table, plot, the runs read)."""
        return write_leaderboard(self, Path(path))


class _Side:
    """A system's pairs against the baseline: preferences, the two answers' lengths and
    the items (instructions) they answer."""

    def __init__(self) -> None:
        self.preference: list[float] = []
        self.length: list[float] = []
        self.baseline_length: list[float] = []
        self.items: list[Hashable] = []


def _system(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise DataError(
            f"{where}: the pair names no {key} (its fields are {sorted(item)}); a leaderboard "
            "reads pairs that name their systems, as `jurist compare` writes them"
        )
    return value


def _answer(item: dict[str, Any], side: str) -> str:
    """A pair's answer of one side as text: ``response_a``/``response_b``, or for a
    conversation pair the last assistant message of ``messages_a``/``messages_b``."""
    response = item.get(f"response_{side}")
    if response is None and isinstance(item.get(f"messages_{side}"), list):
        said = [m for m in item[f"messages_{side}"] if isinstance(m, dict)]
        replies = [m.get("content") for m in said if m.get("role") == "assistant"]
        response = replies[-1] if replies else ""
        if isinstance(response, list):  # content parts: their text
            response = " ".join(str(p.get("text", "")) for p in response if isinstance(p, dict))
    return response if isinstance(response, str) else str(response)


_UNBOUNDED = (
    "won or lost every battle against the systems connected to the baseline: its score "
    "has no finite estimate (the interval shows where the fit stopped)"
)


def _style(answers_a: list[str], answers_b: list[str], notes: list[str]) -> dict[str, Any]:
    """Arena-Hard-Auto's style features of each battle's answers, those that vary."""
    from jurist.metrics import style_differences

    features = style_differences(answers_a, answers_b)
    kept = {k: v for k, v in features.items() if len(set(map(float, v))) > 1}
    if not kept:
        raise DataError(
            "style control: no style feature (length, headers, lists, bold) varies across "
            "the battles, so there is nothing to control for"
        )
    if len(kept) < len(features):
        left = sorted(set(features) - set(kept))
        notes.append(f"style control without {', '.join(left)}: the same in every battle")
    return kept


def leaderboard(
    runs: Iterable[str | Path | Run],
    *,
    baseline: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    style_control: bool = False,
) -> Leaderboard:
    """Rank the systems of one or more pairwise runs (see the module docs);
    ``style_control``: Arena-Hard-Auto's style control of the Bradley-Terry scores."""
    from jurist.metrics import bradley_terry, win_rate

    battles: list[_Battle] = []
    answers: tuple[list[str], list[str]] = ([], [])  # each battle's two answers (style)
    read: list[LeaderboardRun] = []
    lengths: dict[str, list[float]] = {}
    for given in runs:
        run = given if isinstance(given, Run) else Run(given)
        judge = run.manifest.judge
        if judge.get("kind") != "pairwise":
            raise ConfigError(
                f"{run.run_dir}: not a pairwise run (its judge is {judge.get('kind')!r}); a "
                "leaderboard reads the runs of `jurist compare`"
            )
        counts = {"pairs": 0, "battles": 0, "failed": 0, "inconsistent": 0}
        for row in run.rows():
            item, outcome = row["item"], row["outcome"]
            where = f"{run.run_dir} item {row['idx']}"
            a, b = _system(item, "system_a", where), _system(item, "system_b", where)
            counts["pairs"] += 1
            text_a, text_b = _answer(item, "a"), _answer(item, "b")
            len_a, len_b = float(len(text_a)), float(len(text_b))
            lengths.setdefault(a, []).append(len_a)
            lengths.setdefault(b, []).append(len_b)
            winner = outcome.get("winner")
            if row["score"] is None:
                counts["failed"] += 1
            elif winner == "inconsistent":
                counts["inconsistent"] += 1
            elif winner in _WINNER:
                counts["battles"] += 1
                key = _item_key(item)
                battles.append((a, b, _WINNER[winner], float(row["score"]), len_a, len_b, key))
                if style_control:
                    answers[0].append(text_a)
                    answers[1].append(text_b)
            else:
                raise DataError(f"{where}: the verdict {winner!r} is not A, B or tie")
        read.append(
            LeaderboardRun(
                run_dir=str(run.run_dir),
                judge=str(judge.get("name", "pairwise")),
                data=run.manifest.dataset.source,
                **counts,
            )
        )
    if not read:
        raise ConfigError("a leaderboard needs at least one run")
    if not battles:
        raise DataError(
            f"{', '.join(r.run_dir for r in read)}: no pair has a verdict (every pair failed "
            "or was inconsistent); nothing to rank"
        )
    base, base_from = _baseline(battles, baseline)
    notes: list[str] = []
    result = bradley_terry(
        [(a, b, w) for a, b, w, *_ in battles],
        baseline=base,
        bootstrap=bootstrap,
        seed=seed,
        style=_style(*answers, notes) if style_control else None,
    )
    notes += [f"{name}: {_UNBOUNDED}" for name in result.unbounded]
    sides = _sides(battles, base)
    controlled, difficulty = _length_controlled(sides, base, notes)
    rows: list[LeaderboardRow] = []
    for rank, bt in enumerate(sorted(result.rows, key=lambda r: (-r.score, r.model)), 1):
        side = sides.get(bt.model)
        raw = win_rate(side.preference) if side else None
        lc = controlled.get(bt.model)
        rows.append(
            LeaderboardRow(
                rank=rank,
                system=bt.model,
                score=bt.score,
                lower=bt.lower,
                upper=bt.upper,
                battles=bt.n_battles,
                win_rate=raw.value if raw else None,
                win_rate_se=raw.standard_error if raw else None,
                lc_win_rate=lc.value if lc else None,
                lc_win_rate_se=lc.standard_error if lc else None,
                wins=raw.n_wins if raw else 0,
                ties=raw.n_draws if raw else 0,
                losses=raw.n_losses if raw else 0,
                pairs_vs_baseline=raw.n if raw else 0,
                mean_length=sum(lengths[bt.model]) / len(lengths[bt.model]),
            )
        )
    return Leaderboard(
        baseline=base,
        baseline_from=base_from,
        rows=rows,
        runs=read,
        bootstrap=bootstrap,
        seed=seed,
        battles=len(battles),
        lc_difficulty=difficulty,
        style_control=style_control,
        style=[StyleRow(**c.model_dump()) for c in result.style],
        notes=notes,
    )


def _item_key(item: dict[str, Any]) -> Hashable:
    """The instruction a pair answers: its ``item`` field (``jurist compare`` writes the
    row or the id), else its prompt."""
    key = item.get("item", item.get("prompt"))
    return key if isinstance(key, Hashable) else repr(key)


def _length_controlled(
    sides: dict[str, _Side], base: str, notes: list[str]
) -> tuple[dict[str, LengthControlledWinRate], Literal["joint", "none"]]:
    """Each system's length-controlled win rate against ``base`` (see the module docs),
    and whether the instructions' difficulty was estimated (``joint``) or not."""
    from jurist.metrics import fit_length_controlled, length_controlled_win_rate

    fitted = {name: side for name, side in sides.items() if len(side.preference) >= 2}
    for name in sorted(set(sides) - set(fitted)):
        notes.append(f"{name}: one pair against {base}, too few for a length control")
    repeated = sorted(n for n, side in fitted.items() if len(set(side.items)) < len(side.items))
    if len(fitted) >= 2 and not repeated:
        joint = fit_length_controlled(
            {n: s.preference for n, s in fitted.items()},
            {n: s.length for n, s in fitted.items()},
            {n: s.baseline_length for n, s in fitted.items()},
            items={n: s.items for n, s in fitted.items()},
        )
        return {name: joint[name] for name in fitted}, "joint"
    if repeated and len(fitted) >= 2:
        notes.append(
            f"{', '.join(repeated)}: an instruction met {base} more than once (runs read "
            "together?), so the length control is fitted per system, without instruction "
            "difficulty"
        )
    return {
        n: length_controlled_win_rate(s.preference, s.length, s.baseline_length)
        for n, s in fitted.items()
    }, "none"


def _baseline(
    battles: Sequence[_Battle], given: str | None
) -> tuple[str, Literal["given", "every battle", "most battles"]]:
    systems = sorted({s for a, b, *_ in battles for s in (a, b)})
    if given is not None:
        if given not in systems:
            raise ConfigError(f"baseline {given!r} is in no judged pair; the systems: {systems}")
        return given, "given"
    everywhere = set(systems)
    count = dict.fromkeys(systems, 0)
    for a, b, *_ in battles:
        everywhere &= {a, b}
        count[a] += 1
        count[b] += 1
    if len(everywhere) == 2:  # two systems: B of the first pair, as `compare a b` reads
        return battles[0][1], "every battle"
    if len(everywhere) == 1:
        return everywhere.pop(), "every battle"
    return min(systems, key=lambda s: (-count[s], s)), "most battles"


def _sides(battles: Sequence[_Battle], base: str) -> dict[str, _Side]:
    """Each system's pairs against ``base``, read from the system's side."""
    sides: dict[str, _Side] = {}
    for a, b, _, score, len_a, len_b, key in battles:
        if b == base:
            side, pref, mine, theirs = sides.setdefault(a, _Side()), score, len_a, len_b
        elif a == base:
            side, pref, mine, theirs = sides.setdefault(b, _Side()), 1 - score, len_b, len_a
        else:
            continue
        side.preference.append(pref)
        side.length.append(mine)
        side.baseline_length.append(theirs)
        side.items.append(key)
    return sides
