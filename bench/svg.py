"""Tiny inline-SVG charts for the bench report: strip plot, bars, log-log scatter. No dependencies.

Every chart is a self-contained <svg> string (tooltips are <title> children), so the report
opens offline and needs no script.
"""

from __future__ import annotations

import hashlib
import math
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f")
FONT = 'font-family="system-ui, sans-serif"'


def _t(x: float, y: float, s: str, anchor: str = "start", size: int = 11, fill: str = "#333",
       extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'{FONT} {extra}>{escape(s)}</text>')


def _svg(w: float, h: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
            f'viewBox="0 0 {w:.0f} {h:.0f}" role="img" aria-label="{escape(label)}">{"".join(body)}</svg>')


def message(text: str, label: str, w: int = 720) -> str:
    """A figure that says why there is nothing to plot (a CPU bench has no speedups)."""
    return _svg(w, 44, ['<rect x="0.5" y="0.5" width="99%" height="43" fill="#fafafa" stroke="#ddd"/>',
                        _t(12, 27, text, fill="#666", size=13)], label)


class LogScale:
    """Maps [lo, hi] (positive) to pixels [a, b] on a log axis, with 1-2-5 ticks."""

    def __init__(self, values: list[float], a: float, b: float, pad: float = 1.25,
                 include: tuple[float, ...] = ()):
        vals = [v for v in (*values, *include) if v > 0] or [1.0]
        self.lo, self.hi = min(vals) / pad, max(vals) * pad
        if self.hi / self.lo < 4:  # keep at least two ticks in view
            mid = math.sqrt(self.lo * self.hi)
            self.lo, self.hi = mid / 2, mid * 2
        self.a, self.b = a, b

    def __call__(self, v: float) -> float:
        f = (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return self.a + f * (self.b - self.a)

    def ticks(self) -> list[float]:
        out: list[float] = []
        for k in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
            out += [m * 10.0 ** k for m in (1, 2, 5) if self.lo <= m * 10.0 ** k <= self.hi]
        return out if len(out) <= 9 else [t for t in out if math.log10(t).is_integer()]


def fmt_num(v: float) -> str:
    return f"{v:g}" if 1e-3 <= abs(v) < 1e5 else f"{v:.0e}"


def _x_axis(scale: LogScale, y0: float, y1: float, label: str, suffix: str = "") -> list[str]:
    out = [f'<line x1="{scale.a}" y1="{y1}" x2="{scale.b}" y2="{y1}" stroke="#999"/>']
    for t in scale.ticks():
        x = scale(t)
        out += [f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="#eee"/>',
                _t(x, y1 + 14, fmt_num(t) + suffix, "middle", 10, "#666")]
    out.append(_t((scale.a + scale.b) / 2, y1 + 30, label, "middle", 11, "#444"))
    return out


def _jitter(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) / 0xFFFF - 0.5


def strip_chart(bands: dict[str, list[tuple[float, str]]], label: str, axis: str, ref: float = 1.0,
                w: int = 720) -> str:
    """One band per group (a level), one dot per problem on a log axis; a line at `ref` and the
    geometric mean of each band as a bar."""
    left, band_h, top = 90, 44, 10
    h = top + band_h * len(bands) + 44
    scale = LogScale([v for pts in bands.values() for v, _ in pts], left + 10, w - 20, include=(ref,))
    body = _x_axis(scale, top, h - 40, axis, "x")
    body.append(f'<line x1="{scale(ref):.1f}" y1="{top}" x2="{scale(ref):.1f}" y2="{h - 40}" '
                f'stroke="#c44" stroke-dasharray="4 3"/>')
    for k, (name, pts) in enumerate(bands.items()):
        y = top + band_h * k + band_h / 2
        color = PALETTE[k % len(PALETTE)]
        body.append(_t(left, y + 4, name, "end", 12))
        for v, tip in pts:
            cy = y + _jitter(tip) * (band_h - 14)
            body.append(f'<circle cx="{scale(v):.1f}" cy="{cy:.1f}" r="4" fill="{color}" fill-opacity="0.7">'
                        f'<title>{escape(tip)}</title></circle>')
        if pts:
            gm = math.exp(sum(math.log(v) for v, _ in pts) / len(pts))
            body.append(f'<rect x="{scale(gm) - 1.5:.1f}" y="{y - band_h / 2 + 3:.1f}" width="3" '
                        f'height="{band_h - 6}" fill="#222">'
                        f'<title>{escape(name)} geomean {gm:.2f}x</title></rect>')
    return _svg(w, h, body, label)


def bar_chart(labels: list[str], series: list[tuple[str, list[float | None]]], label: str, value_fmt: str,
              w: int = 720, ref: float | None = None, label_w: int = 220) -> str:
    """Horizontal grouped bars on a linear axis from 0; one row per label, one bar per series."""
    bar_h, gap, top = 12, 8, 26
    row_h = bar_h * len(series) + gap
    h = top + row_h * len(labels) + 10
    vmax = max([v for _, vals in series for v in vals if v is not None] + [ref or 0.0, 1e-9])
    x0, x1 = label_w, w - 70
    body = []
    for k, (name, _) in enumerate(series):  # legend
        color = PALETTE[k % len(PALETTE)]
        body += [f'<rect x="{x0 + 140 * k}" y="6" width="10" height="10" fill="{color}"/>',
                 _t(x0 + 140 * k + 14, 15, name, size=11)]
    for r, text in enumerate(labels):
        y = top + row_h * r
        body.append(_t(x0 - 6, y + row_h / 2 + 1, text[:40], "end", 11))
        for k, (name, vals) in enumerate(series):
            v = vals[r]
            by = y + bar_h * k
            if v is None:
                body.append(_t(x0 + 4, by + bar_h - 2, "n/a", size=9, fill="#999"))
                continue
            bw, shown = max(1.0, (x1 - x0) * v / vmax), value_fmt.format(v)
            body += [f'<rect x="{x0}" y="{by}" width="{bw:.1f}" height="{bar_h - 1}" '
                     f'fill="{PALETTE[k % len(PALETTE)]}">'
                     f'<title>{escape(f"{text} {name}: {shown}")}</title></rect>',
                     _t(x0 + bw + 4, by + bar_h - 2, shown, size=9, fill="#555")]
    if ref is not None:
        xr = x0 + (x1 - x0) * ref / vmax
        body.append(f'<line x1="{xr:.1f}" y1="{top - 4}" x2="{xr:.1f}" y2="{h - 6}" stroke="#c44" '
                    f'stroke-dasharray="4 3"/>')
    return _svg(w, h, body, label)


def scatter_loglog(points: list[tuple[float, float, int, str]], legend: list[str], label: str, xlabel: str,
                   ylabel: str, w: int = 720, h: int = 440) -> str:
    """(x, y, color index, tooltip) points on log-log axes, with the y = x diagonal and y = 10x."""
    left, bottom = 70, h - 46
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    both = xs + ys
    sx = LogScale(both, left, w - 20)
    sy = LogScale(both, bottom, 20)
    body = _x_axis(sx, 20, bottom, xlabel, " ms")
    body.append(f'<line x1="{left}" y1="20" x2="{left}" y2="{bottom}" stroke="#999"/>')
    for t in sy.ticks():
        body += [f'<line x1="{left}" y1="{sy(t):.1f}" x2="{w - 20}" y2="{sy(t):.1f}" stroke="#eee"/>',
                 _t(left - 6, sy(t) + 4, fmt_num(t), "end", 10, "#666")]
    body.append(_t(16, (20 + bottom) / 2, ylabel, "middle", 11, "#444",
                   f'transform="rotate(-90 16 {(20 + bottom) / 2:.1f})"'))
    lo, hi = sx.lo, sx.hi
    for mult, name in ((1.0, "at the floor"), (10.0, "10x the floor")):
        if hi / mult <= lo:
            continue
        body.append(f'<line x1="{sx(lo):.1f}" y1="{sy(lo * mult):.1f}" x2="{sx(hi / mult):.1f}" '
                    f'y2="{sy(hi):.1f}" stroke="#c44" stroke-dasharray="{"none" if mult == 1 else "4 3"}">'
                    f'<title>{name}</title></line>')
    for x, y, c, tip in points:
        body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4.5" fill="{PALETTE[c % len(PALETTE)]}" '
                    f'fill-opacity="0.75"><title>{escape(tip)}</title></circle>')
    for k, name in enumerate(legend):
        body += [f'<circle cx="{left + 16 + 110 * k}" cy="30" r="5" fill="{PALETTE[k % len(PALETTE)]}"/>',
                 _t(left + 25 + 110 * k, 34, name)]
    return _svg(w, h, body, label)
