"""One look for every figure: same size, fonts and colours. (The footer naming the GPU, the
versions, the preset and the batch size is added when ``run.save_figure`` saves it:
helpers/course/results.py.)"""
from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
STYLE = {
    "figure.figsize": (8, 4.5),
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 11,
    "axes.titlesize": 13,
    "axes.labelsize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
}


def apply_style() -> None:
    matplotlib.rcParams.update(STYLE)


apply_style()


def subplots(ncols: int = 1, nrows: int = 1, **kwargs):
    """``plt.subplots`` in the course's style, sized by the number of panels."""
    width, height = STYLE["figure.figsize"]
    kwargs.setdefault("figsize", (width * max(1.0, 0.6 * ncols), height * nrows))
    return plt.subplots(nrows, ncols, **kwargs)


def label_bars(ax, bars, fmt="{:.2f}"):
    """Write each bar's value on top of it (skipping NaN bars such as OOM points)."""
    for bar in bars:
        height = bar.get_height()
        if not math.isnan(height):
            ax.annotate(fmt.format(height), (bar.get_x() + bar.get_width() / 2, height),
                        ha="center", va="bottom", fontsize=9, xytext=(0, 2),
                        textcoords="offset points")


def lines_by_method(ax, frame, x, y, scale=1.0, marker="o", methods=None):
    """One line per ``method`` of ``y`` against ``x``; OOM points are marked with an ×."""
    for method in methods or list(dict.fromkeys(frame["method"])):
        part = frame[frame["method"] == method].sort_values(x)
        ax.plot(part[x], part[y] * scale, marker=marker, label=method)
        if "status" in part:
            oom = part[part["status"] == "oom"]
            for xv in oom[x]:
                ax.annotate("OOM", (xv, 0), xycoords=("data", "axes fraction"), color="red",
                            ha="center", va="bottom", fontsize=9)
    ax.legend()


def dashed_companions(ax, frame, x, y, label, scale=1.0):
    """Beside each method's solid line drawn by ``lines_by_method``, its ``y`` as a dashed line
    of the same colour (for example the GPU's busy time under the wall clock), with one legend
    entry, ``label``, that explains the dashes. Methods whose ``y`` is all NaN are skipped."""
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    drawn = False
    for method in dict.fromkeys(frame["method"]):
        part = frame[frame["method"] == method].sort_values(x)
        if method not in colours or part[y].isna().all():
            continue
        ax.plot(part[x], part[y] * scale, ls="--", marker=".", color=colours[method])
        drawn = True
    if drawn:
        ax.plot([], [], ls="--", color="gray", label=label)
        ax.legend()
    return drawn


def plain_log_ticks(ax, axis="both"):
    """Label log-scaled axes with plain numbers (100, 200, 500) instead of powers of ten; an
    axis spanning less than two decades also gets ticks at 2x and 5x each power of ten, so a
    100-400 axis shows 100, 200 rather than 100 alone."""
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    for which in ("x", "y") if axis == "both" else (axis,):
        target = ax.xaxis if which == "x" else ax.yaxis
        if target.get_scale() == "log":
            low, high = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
            if low > 0 and math.log10(high / low) < 2:
                target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            target.set_major_formatter(fmt)
            target.set_minor_formatter(NullFormatter())
