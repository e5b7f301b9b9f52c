"""One look for every picture specadvisor draws, a figure factory, and saving (PNG or SVG by suffix).

Only the commands that draw import this package (matplotlib: ~0.35 s), never `specadvisor recommend`. Figures are built
with `matplotlib.figure.Figure` and the Agg canvas directly, not pyplot, so nothing depends on a display or on
pyplot's global figure registry.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from advisor.errors import InputError
from advisor.fileio.atomic_write import write_atomic

FORMATS = {".png": "png", ".svg": "svg"}
DPI = 120  # 9.6 x 5.4 in -> 1152 x 648 px: sharp on a laptop, ~80-150 KB per PNG

STYLE = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: every machine renders the same text
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d8dde3",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "svg.fonttype": "none",  # keep text as text in SVG: searchable, and smaller
    "svg.hashsalt": "specadvisor",  # deterministic element ids: the same input gives the same file
}

# Colours: greys for "no speculation", greens/blues for speculation, red for losing or not fitting.
BASELINE = "#5b6770"
SPEC = "#1b7f5f"
LOSS = "#c44e52"
MARK = "#111111"
RANGE = "#9ecae1"
VERDICT_COLOURS = ("#b8bec6", "#e8a5a0", "#f3d27a", "#8cc9a0")  # does not fit, disable, marginal, enable


def k_colours(n: int) -> list:
    """One colour per draft length, light (k = 1) to dark (k = n): the same k has the same colour everywhere."""
    cmap = colormaps["viridis_r"]
    return [cmap(0.12 + 0.8 * i / max(n - 1, 1)) for i in range(n)]


def figure(width: float = 9.6, height: float = 5.4):
    """A Figure on the Agg canvas, with STYLE applied."""
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def axes(fig, *args, **kwargs):
    """fig.add_subplot under STYLE (rc settings apply when an Axes is made, not when it is drawn)."""
    with matplotlib.rc_context(STYLE):
        return fig.add_subplot(*args, **kwargs)


def title(fig, ax, headline: str, subtitle: str) -> None:
    """Bold headline for the figure, then one grey line over the axes that says which scenario it is about."""
    fig.suptitle(headline, x=0.01, ha="left", fontsize=12.5, fontweight="bold")
    ax.set_title(subtitle, loc="left", fontsize=8.5, color="#4a4f55", fontweight="normal")


def legend_right(ax, **kwargs) -> None:
    """Legends sit right of the axes, never over the data. Curves labelled "k = n" get their own two-column
    legend on top, so eight draft lengths take four rows."""
    handles, labels = kwargs.pop("handles", None), None
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    else:
        labels = [h.get_label() for h in handles]
    ks = [(h, lab) for h, lab in zip(handles, labels) if lab.startswith("k = ")]
    rest = [(h, lab) for h, lab in zip(handles, labels) if not lab.startswith("k = ")]
    top = 1.0
    if ks:
        first = ax.legend(*zip(*ks), loc="upper left", bbox_to_anchor=(1.01, top), borderaxespad=0.0, ncol=2,
                          title="draft length k", title_fontsize=8.5, alignment="left")
        ax.add_artist(first)
        top = 0.70
    if rest:
        ax.legend(*zip(*rest), loc="upper left", bbox_to_anchor=(1.01, top), borderaxespad=0.0, **kwargs)


def render(fig, fmt: str = "png") -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buf, format=fmt, dpi=DPI, metadata={"Software": "specadvisor"} if fmt == "png" else
                    {"Creator": "specadvisor", "Date": None})
    return buf.getvalue()


def save(fig, path: str | Path) -> Path:
    """Write the figure atomically; the file's suffix (.png or .svg) picks the format."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"--out {path}: the suffix picks the format; use .png or .svg")
    return write_atomic(path, render(fig, fmt))
