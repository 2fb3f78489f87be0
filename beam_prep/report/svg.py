"""Hand-made inline SVG charts: horizontal bars, columns, a curve, a variable-width histogram.

Each function returns one ``<svg>`` element as a string (no ``xmlns``: inline SVG in HTML5
needs none, and the page then holds no URL at all). Labels from data are escaped with
:func:`beam_prep.report.page.text`; a full token is also given as a ``<title>`` tooltip.
Coordinates are rounded to 0.1 px so a chart of 200 points stays a few kilobytes.

Example:
    >>> s = hbars(["a<b", "c"], [3, 1], value_labels=["3", "1"])
    >>> s.startswith("<svg") and "a&lt;b" in s
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from beam_prep.report.page import fmt_num, shown, text

WIDTH = 600


def _f(x: float) -> str:
    """Compact coordinate."""
    r = round(x, 1)
    return str(int(r)) if r == int(r) else str(r)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]``.

    Example:
        >>> nice_ticks(0, 1)
        [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = hi / max(n, 1) - lo / max(n, 1)  # no overflow for spans near the float64 limit
    if not math.isfinite(raw) or raw <= 0:
        return [lo, hi]
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


@dataclass(frozen=True)
class Scale:
    """Linear (or log10) map from data ``[lo, hi]`` to pixels ``[p0, p1]``.

    Attributes:
        lo: Data value at ``p0``.
        hi: Data value at ``p1``.
        p0: Pixel of ``lo``.
        p1: Pixel of ``hi``.
        log: Map ``log10(x)`` instead of ``x`` (``lo`` must then be > 0).
    """

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool = False

    def __call__(self, x: float) -> float:
        if self.log:
            a, b, v = math.log10(self.lo), math.log10(self.hi), math.log10(max(x, self.lo))
        else:
            a, b, v = self.lo, self.hi, x
        if b == a:
            return (self.p0 + self.p1) / 2
        return self.p0 + (v - a) / (b - a) * (self.p1 - self.p0)


def _side_label(x: float, y: float, label: str, cls: str) -> str:
    """A label beside a vertical line: right of it in the left half, left of it otherwise."""
    if x < WIDTH / 2:
        return f'<text class="{cls}" x="{_f(x + 4)}" y="{_f(y)}">{text(label)}</text>'
    return (f'<text class="{cls}" x="{_f(x - 4)}" y="{_f(y)}" text-anchor="end">'
            f"{text(label)}</text>")


def _axis_labels(left: float, height: float, x_label: str, y_label: str) -> str:
    return (f'<text class="muted" x="{_f((left + WIDTH) / 2)}" y="{_f(height - 6)}" '
            f'text-anchor="middle">{text(x_label)}</text>'
            f'<text class="muted" x="4" y="12">{text(y_label)}</text>')


def _svg(width: float, height: float, body: str, label: str) -> str:
    return (f'<svg width="{_f(width)}" height="{_f(height)}" viewBox="0 0 {_f(width)} '
            f'{_f(height)}" role="img" aria-label="{text(label)}">{body}</svg>')


def _y_axis(ys: Scale, x0: float, x1: float, *, fmt=fmt_num) -> str:
    parts = []
    for t in nice_ticks(ys.lo, ys.hi, 4):
        y = ys(t)
        parts.append(f'<line class="grid" x1="{_f(x0)}" x2="{_f(x1)}" y1="{_f(y)}" '
                     f'y2="{_f(y)}"/><text x="{_f(x0 - 4)}" y="{_f(y + 4)}" '
                     f'text-anchor="end">{text(fmt(t))}</text>')
    return "".join(parts)


def _x_axis(xs: Scale, y: float, *, fmt=fmt_num) -> str:
    parts = [f'<line class="axis" x1="{_f(xs.p0)}" x2="{_f(xs.p1)}" y1="{_f(y)}" y2="{_f(y)}"/>']
    if xs.log:
        ticks = [10.0 ** e for e in range(math.ceil(math.log10(xs.lo)),
                                           math.floor(math.log10(xs.hi)) + 1)]
    else:
        ticks = nice_ticks(xs.lo, xs.hi, 6)
    for t in ticks:
        x = xs(t)
        parts.append(f'<line class="axis" x1="{_f(x)}" x2="{_f(x)}" y1="{_f(y)}" '
                     f'y2="{_f(y + 4)}"/><text x="{_f(x)}" y="{_f(y + 16)}" '
                     f'text-anchor="middle">{text(fmt(t))}</text>')
    return "".join(parts)


def hbars(labels: Sequence[str], values: Sequence[float], *, value_labels: Sequence[str],
          label_chars: int = 24, title: str = "bar chart") -> str:
    """Horizontal bars, one per label (top to bottom), value written after each bar.

    Args:
        labels: Category names (data: escaped, cut to ``label_chars``, full text as tooltip).
        values: Bar lengths (>= 0).
        value_labels: Text after each bar (already formatted).
        label_chars: Characters of a label shown left of its bar.
        title: Accessible name of the chart.

    Returns:
        One ``<svg>`` element.
    """
    longest = max((len(lab) for lab in labels), default=1)
    row, left, right = 18, 12 + 7 * min(max(longest, 5), label_chars), 130
    height = row * len(labels) + 8
    vmax = max(values, default=0) or 1
    xs = Scale(0, vmax, left, WIDTH - right)
    parts = []
    for i, (lab, v, vl) in enumerate(zip(labels, values, value_labels)):
        y = 4 + i * row
        w = max(xs(v) - left, 0.5 if v > 0 else 0)
        parts.append(
            f'<g><title>{text(lab, limit=200)}</title>'
            f'<text x="{_f(left - 6)}" y="{_f(y + 13)}" text-anchor="end">'
            f"{text(lab, limit=label_chars)}</text>"
            f'<rect class="bar" x="{_f(left)}" y="{_f(y + 2)}" width="{_f(w)}" height="14"/>'
            f'<text x="{_f(left + w + 4)}" y="{_f(y + 13)}">{text(vl)}</text></g>')
    return _svg(WIDTH, height, "".join(parts), title)


def columns(labels: Sequence[str], values: Sequence[float], *, title: str = "columns",
            marks: Sequence[tuple[float, str]] = (), y_fmt=fmt_num, x_label: str = "",
            y_label: str = "") -> str:
    """Vertical bars at positions 0..n-1 with category labels below (thinned when many).

    Args:
        labels: One label per bar.
        values: Bar heights (>= 0).
        title: Accessible name.
        marks: ``(position, text)`` dashed vertical lines; a position may be fractional
            (e.g. ``i + 0.5`` to mark a cut between bars ``i`` and ``i + 1``).
        y_fmt: Formats the y ticks.
        x_label: Text under the x axis.
        y_label: Text above the y axis.

    Returns:
        One ``<svg>`` element.
    """
    height, left, top, bottom = 232, 56, 24, 44
    n = max(len(values), 1)
    vmax = max(values, default=0) or 1
    xs = Scale(-0.5, n - 0.5, left, WIDTH - 12)
    ys = Scale(0, vmax, height - bottom, top)
    band = (xs.p1 - xs.p0) / n
    longest = max((len(shown(lab, limit=12)) for lab in labels), default=1)
    every = max(1, math.ceil((longest * 6.5 + 8) / band))  # labels must not overlap
    parts = [_y_axis(ys, left, WIDTH - 12, fmt=y_fmt)]
    for i, (lab, v) in enumerate(zip(labels, values)):
        x = xs(i) - band * 0.4
        y = ys(v)
        parts.append(f'<rect class="bar" x="{_f(x)}" y="{_f(y)}" width="{_f(band * 0.8)}" '
                     f'height="{_f(ys(0) - y)}"><title>{text(lab, limit=80)}: '
                     f"{text(fmt_num(v))}</title></rect>")
        if i % every == 0:
            parts.append(f'<text x="{_f(xs(i))}" y="{_f(height - bottom + 14)}" '
                         f'text-anchor="middle">{text(lab, limit=12)}</text>')
    parts.append(f'<line class="axis" x1="{_f(left)}" x2="{_f(WIDTH - 12)}" '
                 f'y1="{_f(ys(0))}" y2="{_f(ys(0))}"/>')
    for pos, label in marks:
        x = xs(pos)
        parts.append(f'<line class="cut" x1="{_f(x)}" x2="{_f(x)}" y1="{_f(top - 6)}" '
                     f'y2="{_f(ys(0))}"/>' + _side_label(x, top - 8, label, "cuttext"))
    parts.append(_axis_labels(left, height, x_label, y_label))
    return _svg(WIDTH, height, "".join(parts), title)


def curve(points: Sequence[tuple[float, float]], *, x_max: float, log_x: bool,
          title: str = "curve", cut: tuple[float, str] | None = None,
          gap: tuple[tuple[float, float], tuple[float, float], str] | None = None,
          x_label: str = "", y_label: str = "") -> str:
    """A rising curve with y in [0, 1] shown as percent, an optional cut and an unknown gap.

    Args:
        points: ``(x, y)`` in x order (x >= 1 when ``log_x``).
        x_max: Right end of the x axis.
        log_x: Logarithmic x axis (for long vocabularies).
        title: Accessible name.
        cut: ``(x, text)``: a dashed red vertical line (the vocabulary cut).
        gap: ``((x0, y0), (x1, y1), text)``: a dotted grey segment for a part whose shape is
            unknown (drawn as a straight line only to join its known ends).
        x_label: Text under the x axis.
        y_label: Text above the y axis.

    Returns:
        One ``<svg>`` element.
    """
    height, left, top, bottom = 240, 56, 24, 44
    lo = 1.0 if log_x else 0.0
    xs = Scale(lo, max(x_max, lo + 1), left, WIDTH - 16, log=log_x)
    ys = Scale(0, 1, height - bottom, top)
    parts = [_y_axis(ys, left, WIDTH - 16, fmt=lambda t: f"{100 * t:.0f}%"),
             _x_axis(xs, ys(0))]
    if points:
        d = " ".join(f"{_f(xs(x))},{_f(ys(y))}" for x, y in points)
        parts.append(f'<polyline class="curve" points="{d}"/>')
    if gap is not None:
        (x0, y0), (x1, y1), label = gap
        parts.append(f'<line class="gap" x1="{_f(xs(x0))}" y1="{_f(ys(y0))}" '
                     f'x2="{_f(xs(x1))}" y2="{_f(ys(y1))}"><title>{text(label)}</title></line>'
                     f'<text class="muted" x="{_f(xs(x1) - 2)}" y="{_f(ys(y1) + 14)}" '
                     'text-anchor="end">dropped tokens: shape unknown</text>')
    if cut is not None:
        x = xs(cut[0])
        parts.append(f'<line class="cut" x1="{_f(x)}" x2="{_f(x)}" y1="{_f(top - 4)}" '
                     f'y2="{_f(ys(0))}"/>' + _side_label(x, top - 8, cut[1], "cuttext"))
    parts.append(_axis_labels(left, height, x_label, y_label))
    return _svg(WIDTH, height, "".join(parts), title)


def histogram(edges: Sequence[float], heights: Sequence[float], *, title: str = "histogram",
              marks: Sequence[tuple[float, str]] = (), tooltips: Sequence[str] = (),
              x_label: str = "", y_label: str = "",
              window: tuple[float, float] | None = None) -> str:
    """Bars of varying width: bar ``i`` spans ``edges[i]..edges[i+1]`` with ``heights[i]``.

    Args:
        edges: ``len(heights) + 1`` increasing x values.
        heights: Bar heights (>= 0).
        title: Accessible name.
        marks: ``(x, text)`` solid purple vertical lines (e.g. the mean); a mark outside
            ``window`` is drawn at its edge, its text ending in an arrow.
        tooltips: One tooltip per bar.
        x_label: Text under the x axis.
        y_label: Text above the y axis.
        window: The x range drawn (default: all edges). A bar reaching beyond it is cut at
            the window's edge, which gets a dashed red line and the bar's true end.

    Returns:
        One ``<svg>`` element.
    """
    height, left, top, bottom = 240, 64, 24, 44
    lo, hi = window if window is not None else (edges[0], edges[-1])
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    xs = Scale(lo, hi, left, WIDTH - 16)
    ys = Scale(0, max(heights, default=0) or 1, height - bottom, top)
    parts = [_y_axis(ys, left, WIDTH - 16), _x_axis(xs, ys(0))]
    for i, h in enumerate(heights):
        x0, x1 = xs(max(edges[i], lo)), xs(min(edges[i + 1], hi))
        w = max(x1 - x0, 1.5)
        tip = f"<title>{text(tooltips[i])}</title>" if i < len(tooltips) else ""
        cls = "bar" if i % 2 == 0 else "bar2"
        parts.append(f'<rect class="{cls}" x="{_f(x0)}" y="{_f(ys(h))}" width="{_f(w)}" '
                     f'height="{_f(ys(0) - ys(h))}">{tip}</rect>')
    for cut, end, label in ((lo, edges[0], f"← {fmt_num(edges[0])}"),
                            (hi, edges[-1], f"{fmt_num(edges[-1])} →")):
        if not lo <= end <= hi:  # the outer bar is cut here; its true end is written
            px = xs(cut)
            parts.append(f'<line class="cut" x1="{_f(px)}" x2="{_f(px)}" y1="{_f(top + 14)}" '
                         f'y2="{_f(ys(0))}"/>' + _side_label(px, top + 10, label, "cuttext"))
    for x, label in marks:
        if not lo <= x <= hi:
            x, label = (lo, f"← {label}") if x < lo else (hi, f"{label} →")
        px = xs(x)
        parts.append(f'<line class="mark" x1="{_f(px)}" x2="{_f(px)}" y1="{_f(top - 4)}" '
                     f'y2="{_f(ys(0))}"/>' + _side_label(px, top - 8, label, "marktext"))
    parts.append(_axis_labels(left, height, x_label, y_label))
    return _svg(WIDTH, height, "".join(parts), title)


def range_bar(lo: float, hi: float, mean: float, std: float | None, *,
              title: str = "range") -> str:
    """min–max line with mean ± std box, for a numeric feature without quantiles."""
    height, left = 70, 64
    a, b = (lo - 0.5, hi + 0.5) if hi <= lo else (lo, hi)
    xs = Scale(a, b, left, WIDTH - 16)
    y = 22
    parts = [f'<line class="axis" x1="{_f(xs(lo))}" x2="{_f(xs(hi))}" y1="{y}" y2="{y}"/>']
    if std is not None and math.isfinite(std):
        x0, x1 = xs(max(mean - std, lo)), xs(min(mean + std, hi))
        parts.append(f'<rect class="bar" x="{_f(x0)}" y="{y - 8}" width="{_f(max(x1 - x0, 1))}"'
                     f' height="16"><title>mean ± std</title></rect>')
    parts.append(f'<line class="mark" x1="{_f(xs(mean))}" x2="{_f(xs(mean))}" y1="{y - 12}" '
                 f'y2="{y + 12}"/>')
    parts.append(_x_axis(xs, 44))
    return _svg(WIDTH, height, "".join(parts), title)
