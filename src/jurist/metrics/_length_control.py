"""Length-controlled win rates: AlpacaEval 2.0's GLM, in numpy.

AlpacaEval's judge prefers longer answers, so a system can buy wins with verbosity. The
length-controlled (LC) win rate answers the counterfactual question "what would the win
rate be if both answers had the same length?" (Dubois et al. 2024, arXiv 2404.04475). A
logistic regression (GLM) predicts each item's preference ``p_i`` from

- a model term ``theta`` (one per system),
- a bounded length term ``beta * tanh((len_system_i - len_baseline_i) / s)``, ``s`` the
  sample standard deviation of the system's length differences,
- an instruction difficulty term ``psi * d_i`` where per-instruction difficulties ``d_i``
  are available,

fitted to the soft preferences by maximum likelihood. The LC win rate is the model's mean
prediction over the items with the length term set to zero:
``100 * mean_i logistic(theta + psi * d_i)``.

**Conventions.** ``length_coef`` is ``beta`` above (system minus baseline, so a positive
value means the judge favours the longer answer); AlpacaEval's weights CSV stores the
opposite sign (its ``np.tanh(std_delta_len)`` uses baseline minus system). ``model_coef`` is
AlpacaEval's ``not_gamed_baseline.astype(float)`` weight and ``difficulty_coef`` its
``instruction_difficulty`` weight. A larger ``d_i`` means an instruction on which systems
beat the baseline more easily.

**Regularisation.** AlpacaEval fits each system together with annotations of "gamed"
baselines (the baseline prompted to be verbose or concise, judged against itself), weighted
0.2, which pins the length weight; those annotations are not in its repository. As the
stand-in, the length weight here has a Gaussian prior with mean ``length_prior_mean`` (1.5:
the median of the 200 length weights in AlpacaEval's published weights file) and precision
``length_prior_precision`` (10: about 100 near-even annotations of evidence; AlpacaEval's
gamed rows weigh about 160). Like AlpacaEval's, it outweighs the data of a small set (a few
dozen items); set the precision to 0 for the plain maximum-likelihood fit.

**Instruction difficulty.** AlpacaEval estimates ``d_i`` once, jointly across the systems
on its leaderboard, and keeps it fixed (``instruction_difficulty.csv``, on Hugging Face).
With one system alone ``d_i`` cannot be told apart from that system's own per-item quality,
so :func:`length_controlled_win_rate` leaves the term out unless ``instruction_difficulty``
is given, and the LC win rate is then ``logistic(theta)``; it ignores how hard items are
spread, which moves it away from AlpacaEval's figure (towards 50 for a system far from it).
:func:`fit_length_controlled` does what AlpacaEval does over several systems judged
against the same baseline on the same items: it estimates ``d_i`` jointly (an additive
item effect with a Gaussian prior of precision ``difficulty_prior_precision``) and then
fits each system's GLM with those difficulties.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> longer = rng.normal(300, 100, 400)  # the system's answers are longer than the baseline's
>>> p = 1 / (1 + np.exp(-(-0.5 + 1.5 * np.tanh(longer / longer.std()))))
>>> lc = length_controlled_win_rate(p, 600 + longer, np.full(400, 600))
>>> round(lc.raw, 1), round(lc.value, 1), round(lc.length_coef, 2)  # planted: 37.8 = logistic(-0.5)
(72.1, 37.8, 1.5)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.metrics._glm import fit_logistic, logistic
from jurist.metrics._winrate import as_float_array, check_preference, win_rate

__all__ = ["LengthControlledWinRate", "length_controlled_win_rate"]

FloatArray = npt.NDArray[np.float64]


class LengthControlledWinRate(BaseModel):
    """A length-controlled win rate (0-100) with the raw one and the fitted GLM.

    ``standard_error`` is the delta-method standard error of ``value`` from the GLM's
    information (0-100 scale), conditional on the instruction difficulties (taken as
    known, as AlpacaEval does). ``difficulty`` says where ``d_i`` came from: ``"given"``,
    ``"joint"`` (estimated by :func:`fit_length_controlled`) or ``"none"``. ``converged``
    is false when the fit has no finite maximum (e.g. a system that loses every item);
    ``value`` is then the limit it was heading to.
    """

    model_config = ConfigDict(frozen=True)

    value: float
    raw: float
    standard_error: float
    raw_standard_error: float
    n: int
    model_coef: float
    length_coef: float
    difficulty_coef: float | None
    length_scale: float
    difficulty: Literal["given", "joint", "none"]
    converged: bool


def _lengths(values: Any, name: str, n: int) -> FloatArray:
    arr = as_float_array(values, name)
    if arr.size != n:
        raise DataError(f"{name} has {arr.size} items, preference has {n}")
    neg = np.flatnonzero(arr < 0)
    if neg.size:
        raise DataError(f"{name}[{int(neg[0])}] is {float(arr[neg[0]])!r}: a length is >= 0")
    return arr


def length_feature(
    system_length: FloatArray, baseline_length: FloatArray
) -> tuple[FloatArray, float]:
    """``tanh(delta / s)`` with ``delta`` = system minus baseline length, ``s`` its sample std."""
    delta = system_length - baseline_length
    scale = float(delta.std(ddof=1)) if delta.size > 1 else 0.0
    if not scale > 0:
        return np.zeros_like(delta), 0.0
    return np.tanh(delta / scale), scale


def fit_one(
    p: FloatArray,
    t: FloatArray,
    scale: float,
    difficulty: FloatArray | None,
    source: Literal["given", "joint", "none"],
    *,
    length_prior_mean: float,
    length_prior_precision: float,
) -> LengthControlledWinRate:
    """The per-system GLM on prepared features (shared by the one- and many-system entry points)."""
    n = p.size
    cols = [t, np.ones(n)] + ([difficulty] if difficulty is not None else [])
    X = np.column_stack(cols)
    k = X.shape[1]
    precision = np.zeros(k)
    mean = np.zeros(k)
    precision[0], mean[0] = length_prior_precision, length_prior_mean
    if scale == 0:  # no length variation: the length weight is not identified, pin it at 0
        precision[0], mean[0] = 1.0, 0.0
    fit = fit_logistic(X, p, prior_precision=precision, prior_mean=mean, start=mean)
    beta, theta = float(fit.coef[0]), float(fit.coef[1])
    psi = float(fit.coef[2]) if difficulty is not None else None
    eta = theta + (psi * difficulty if difficulty is not None and psi is not None else 0.0)
    s = logistic(np.asarray(eta, dtype=float) * np.ones(n))
    value = float(s.mean())
    # delta method: d value / d (beta, theta, psi)
    grad = np.zeros(k)
    grad[1] = float(np.mean(s * (1 - s)))
    if difficulty is not None:
        grad[2] = float(np.mean(s * (1 - s) * difficulty))
    try:
        cov = np.linalg.inv(fit.information)
        se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
    except np.linalg.LinAlgError:
        se = math.nan
    raw = win_rate(p)
    return LengthControlledWinRate(
        value=100.0 * value,
        raw=raw.value,
        standard_error=100.0 * se if fit.converged else math.nan,
        raw_standard_error=raw.standard_error,
        n=n,
        model_coef=theta,
        length_coef=beta,
        difficulty_coef=psi,
        length_scale=scale,
        difficulty=source,
        converged=fit.converged,
    )


def length_controlled_win_rate(
    preference: Sequence[float] | npt.ArrayLike,
    system_length: Sequence[float] | npt.ArrayLike,
    baseline_length: Sequence[float] | npt.ArrayLike,
    *,
    instruction_difficulty: Sequence[float] | npt.ArrayLike | None = None,
    length_prior_mean: float = 1.5,
    length_prior_precision: float = 10.0,
) -> LengthControlledWinRate:
    """AlpacaEval 2.0's length-controlled win rate of one system (see the module docstring).

    ``preference`` per item in ``[0, 1]`` (the probability the system beats the baseline),
    ``system_length`` / ``baseline_length`` the two answers' lengths (AlpacaEval counts
    characters), ``instruction_difficulty`` per item if known (for several systems on the
    same items, :func:`fit_length_controlled` estimates it).

    >>> lc = length_controlled_win_rate([1, 0, 1, 0.5], [900, 100, 800, 400], [400] * 4)
    >>> lc.raw, lc.difficulty, lc.value < lc.raw
    (62.5, 'none', True)
    """
    p = check_preference(preference)
    n = p.size
    sys_len = _lengths(system_length, "system_length", n)
    base_len = _lengths(baseline_length, "baseline_length", n)
    if length_prior_precision < 0:
        raise DataError(f"length_prior_precision must be >= 0, got {length_prior_precision}")
    difficulty = None
    if instruction_difficulty is not None:
        difficulty = as_float_array(instruction_difficulty, "instruction_difficulty")
        if difficulty.size != n:
            raise DataError(
                f"instruction_difficulty has {difficulty.size} items, preference has {n}"
            )
    t, scale = length_feature(sys_len, base_len)
    return fit_one(
        p,
        t,
        scale,
        difficulty,
        "given" if difficulty is not None else "none",
        length_prior_mean=length_prior_mean,
        length_prior_precision=length_prior_precision,
    )


def align_items(
    systems: Sequence[str], items: Mapping[str, Sequence[Hashable]] | None, sizes: Mapping[str, int]
) -> tuple[list[Hashable], dict[str, npt.NDArray[np.int64]]]:
    """Every item id, in first-seen order, and each system's row -> item index map."""
    order: dict[Hashable, int] = {}
    index: dict[str, npt.NDArray[np.int64]] = {}
    for name in systems:
        if items is None:
            if len(set(sizes.values())) > 1:
                raise DataError(
                    "systems have different numbers of items "
                    f"({dict(sizes)}): pass items= to say which item each preference is"
                )
            ids: Sequence[Hashable] = range(sizes[name])
        else:
            if name not in items:
                raise DataError(f"items has no entry for system {name!r}")
            ids = items[name]
            if len(ids) != sizes[name]:
                raise DataError(f"items[{name!r}] has {len(ids)} ids, its preference {sizes[name]}")
            if len(set(ids)) != len(ids):
                raise DataError(f"items[{name!r}] repeats an item id")
        index[name] = np.array([order.setdefault(i, len(order)) for i in ids], dtype=np.int64)
    return list(order), index
