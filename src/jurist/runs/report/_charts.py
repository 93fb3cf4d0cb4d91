"""The report's charts: small inline SVGs drawn here (no script, no external reference).

Every label passes through :func:`html.escape`. The scatter plot has ticks with values on
both axes, and points that fall on the same spot are drawn once, larger, with their count
(discrete scales such as a 1-5 judge against 1-5 labels put many items on one spot).

>>> svg = histogram([0.0, 0.5, 0.5, 1.0], bins=2)
>>> svg.startswith("<svg") and svg.count("<rect") == 2
True
>>> ticks(1, 5, integer=True)
[1.0, 2.0, 3.0, 4.0, 5.0]
>>> ticks(0, 1)
[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["bars", "histogram", "scatter", "tick_text", "ticks"]

_W, _H, _PAD = 480, 200, 30
_SW, _SH, _SL, _SB = 480, 300, 52, 44  # scatter: width, height, left and bottom margins


def histogram(
    values: Sequence[float],
    *,
    bins: int = 10,
    low: float = 0.0,
    high: float = 1.0,
    chart_id: str = "",
    title: str = "",
    x_title: str = "",
    y_title: str = "items",
) -> str:
    """Counts of ``values`` in ``bins`` equal bins over [low, high]."""
    counts = [0] * bins
    width = (high - low) / bins or 1.0
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / width)))] += 1
    labels = [f"{low + i * width:.2g}-{low + (i + 1) * width:.2g}" for i in range(bins)]
    return bars(labels, counts, chart_id=chart_id, title=title, x_title=x_title, y_title=y_title)


_TOP = 24  # room for the title above the plot
_MIN_BAR = 3.0  # a count of 1 among hundreds is still a visible bar (pixels)


def bars(
    labels: Sequence[str],
    counts: Sequence[int],
    *,
    chart_id: str = "",
    title: str = "",
    x_title: str = "",
    y_title: str = "items",
) -> str:
    """A bar chart, one bar per label in the order given, with its count above it, a
    title, both axes with their titles, and count ticks on the vertical axis; a count
    above zero is never thinner than a few pixels."""
    n = max(1, len(counts))
    top = max([1, *counts])
    left = _PAD + 14
    step = (_W - left - _PAD) / n
    base = _TOP + _H - _PAD  # the horizontal axis
    span = _H - 2 * _PAD
    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg"{ident} width="{_W}" height="{_TOP + _H + 22}" '
        f'role="img" class="chart" aria-label="{escape(title)}">',
        f'<text class="chart-title" x="{_W / 2:.1f}" y="16" font-size="13" font-weight="bold" '
        f'text-anchor="middle">{escape(title)}</text>',
        f'<line class="axis" x1="{left}" y1="{base}" x2="{_W - _PAD}" y2="{base}" stroke="#666"/>',
        f'<line class="axis" x1="{left}" y1="{base - span}" x2="{left}" y2="{base}" '
        'stroke="#666"/>',
    ]
    for t in ticks(0, top, integer=True):
        y = base - span * t / top
        parts.append(
            f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#666"/>'
            f'<text class="y-tick" x="{left - 6}" y="{y + 3:.1f}" font-size="9" '
            f'text-anchor="end">{tick_text(t)}</text>'
        )
    for i, (label, count) in enumerate(zip(labels, counts, strict=True)):
        h = span * count / top
        if count:
            h = max(h, _MIN_BAR)
        x = left + i * step
        y = base - h
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{max(1.0, step - 4):.1f}" '
            f'height="{h:.1f}" fill="#4a78b5"><title>{escape(label)}: {count}</title></rect>'
        )
        parts.append(
            f'<text x="{x + step / 2:.1f}" y="{y - 4:.1f}" font-size="10" '
            f'text-anchor="middle">{count}</text>'
        )
        parts.append(
            f'<text class="bar-label" x="{x + step / 2:.1f}" y="{base + 14:.1f}" '
            f'font-size="9" text-anchor="middle">{escape(label[:12])}</text>'
        )
    parts.append(
        f'<text class="x-title" x="{(left + _W - _PAD) / 2:.1f}" y="{_TOP + _H + 14}" '
        f'font-size="11" text-anchor="middle">{escape(x_title)}</text>'
        f'<text class="y-title" x="12" y="{base - span / 2:.1f}" font-size="11" '
        f'transform="rotate(-90 12 {base - span / 2:.1f})" text-anchor="middle">'
        f"{escape(y_title)}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def ticks(low: float, high: float, *, integer: bool = False, target: int = 5) -> list[float]:
    """Round tick values covering [low, high]: every whole number of a short integer
    scale, else steps of 1, 2 or 5 times a power of ten."""
    if high <= low:
        return [float(low)]
    if integer and high - low <= 10:
        return [float(v) for v in range(math.ceil(low), math.floor(high) + 1)]
    raw = (high - low) / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    out = []
    k = first
    while k * step <= high + step * 1e-9:
        out.append(round(k * step, 10))
        k += 1
    return out


def tick_text(value: float) -> str:
    """A tick value as people write it: ``3``, ``0.25``."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def scatter(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    x_label: str,
    y_label: str,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    x_integer: bool = False,
    y_integer: bool = False,
    chart_id: str = "",
    title: str = "",
) -> str:
    """A scatter plot of paired values with a title, ticks and values on both axes; points
    on the same spot (within a pixel) are one circle sized by, and labelled with, their
    count; a single point is a clearly visible dot."""
    xr = _padded(x_range or _span(xs))
    yr = _padded(y_range or _span(ys))
    left, right, top, bottom = _SL, _SW - 16, 12 + _TOP, _SH + _TOP - _SB

    def px(v: float) -> float:
        return left + (v - xr[0]) / ((xr[1] - xr[0]) or 1.0) * (right - left)

    def py(v: float) -> float:
        return bottom - (v - yr[0]) / ((yr[1] - yr[0]) or 1.0) * (bottom - top)

    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg"{ident} width="{_SW}" height="{_SH + _TOP}" '
        f'role="img" class="chart" aria-label="{escape(title)}">',
        f'<text class="chart-title" x="{_SW / 2:.1f}" y="16" font-size="13" font-weight="bold" '
        f'text-anchor="middle">{escape(title)}</text>',
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#888"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#888"/>',
    ]
    for t in ticks(*xr, integer=x_integer):
        x = px(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#888"/>'
            f'<text class="x-tick" x="{x:.1f}" y="{bottom + 15}" font-size="10" '
            f'text-anchor="middle">{tick_text(t)}</text>'
        )
    for t in ticks(*yr, integer=y_integer):
        y = py(t)
        parts.append(
            f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#888"/>'
            f'<text class="y-tick" x="{left - 7}" y="{y + 3:.1f}" font-size="10" '
            f'text-anchor="end">{tick_text(t)}</text>'
        )
    parts.append(
        f'<text class="x-title" x="{(left + right) / 2:.1f}" y="{_SH + _TOP - 8}" '
        f'font-size="11" text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="y-title" x="12" y="{(top + bottom) / 2:.1f}" font-size="11" '
        f'transform="rotate(-90 12 {(top + bottom) / 2:.1f})" text-anchor="middle">'
        f"{escape(y_label)}</text>"
    )
    spots: dict[tuple[int, int], list[float]] = {}
    for xv, yv in zip(xs, ys, strict=True):
        key = (round(px(xv)), round(py(yv)))
        spot = spots.setdefault(key, [xv, yv, 0])
        spot[2] += 1
    top_count = max((s[2] for s in spots.values()), default=1)
    labelled = len(spots) <= 100
    for (x, y), (xv, yv, count) in sorted(spots.items(), key=lambda kv: -kv[1][2]):
        r = 4.0 + 12 * math.sqrt(count / top_count) if count > 1 else 4.0
        parts.append(
            f'<circle cx="{x}" cy="{y}" r="{r:.1f}" fill="#b5524a" fill-opacity="0.6" '
            f'stroke="#7a2f29" stroke-width="1">'
            f"<title>{tick_text(xv)}, {tick_text(yv)}: {int(count)}</title></circle>"
        )
        if labelled and count > 1:
            parts.append(
                f'<text class="count" x="{x}" y="{y + 3}" font-size="9" '
                f'text-anchor="middle">{int(count)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _padded(span: tuple[float, float]) -> tuple[float, float]:
    """The range with 5% room each side, so points on its ends stay off the axes."""
    room = (span[1] - span[0]) * 0.05
    return (span[0] - room, span[1] + room)


def _span(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return (0.0, 1.0)
    lo, hi = min(values), max(values)
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)
