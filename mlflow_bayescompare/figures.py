"""What every figure of the package shares: its ink colour, its resolution, and how it is written (PNG, SVG, PDF)
without touching pyplot's global state."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

__all__ = ["INK", "PNG_DPI", "figure_png", "save", "write_png_and_svg"]

INK = "#1f2933"
#: Figures are sized for ~100 px per inch; PNGs carry twice that, so they stay sharp at 2x.
PNG_DPI = 200
_FORMATS = {".png": ("png", {}), ".svg": ("svg", {"Date": None}), ".pdf": ("pdf", {"CreationDate": None})}


def figure_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """Render ``fig`` to PNG bytes (no global state involved)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return buf.getvalue()


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` as PNG (at :data:`PNG_DPI`), SVG or PDF, chosen by the suffix."""
    path = Path(path)
    if path.suffix.lower() not in _FORMATS:
        raise ValueError(f"save a figure as .png, .svg or .pdf, not {path.name!r}")
    fmt, metadata = _FORMATS[path.suffix.lower()]
    fig.savefig(path, format=fmt, dpi=PNG_DPI, facecolor="white", metadata=metadata)
    return path


def write_png_and_svg(figures: dict[str, Figure], folder: Path) -> dict[str, bytes]:
    """Write each figure into ``folder`` as ``<name>.png`` and ``<name>.svg`` and return the PNGs (the HTML reports
    embed them).  Each figure is laid out once, for its PNG, and its SVG keeps that layout: the layout engine is
    about a third of a save (measured on a 100-dataset comparison: its four SVGs in 0.51 s instead of 0.77 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    pngs = {}
    for name, fig in figures.items():
        pngs[name] = figure_png(fig)
        (folder / f"{name}.png").write_bytes(pngs[name])
        fig.set_layout_engine("none")
        save(fig, folder / f"{name}.svg")
    return pngs
