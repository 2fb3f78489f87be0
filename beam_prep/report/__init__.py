"""HTML report of an analysis artifact directory or an ELWC output directory (issue 17).

Modules: :mod:`~beam_prep.report.page` (escaping, formats, page shell),
:mod:`~beam_prep.report.svg` (charts), :mod:`~beam_prep.report.sidecar` (one streaming pass
over a counts sidecar), :mod:`~beam_prep.report.analysis` and :mod:`~beam_prep.report.elwc`
(the two pages), :mod:`~beam_prep.report.build` (choose, render, write),
:mod:`~beam_prep.report.cli` (``beam-prep report``).

Why hand-made SVG (and not matplotlib or vega-lite):

* Offline and self-contained by construction: the page is text with inline ``<svg>``
  elements and inline CSS; no script, no font, no URL (not even an SVG ``xmlns``).
  Vega-lite needs its JavaScript runtime (vega + vega-lite + vega-embed, ~800 KB minified)
  inlined into every page to work offline, and a JS-rendered chart is blank until it runs.
* Size: a chart here is 2–10 KB (200 curve points, 25 bars). Matplotlib PNGs embedded as
  base64 are 20–60 KB each; as SVG, matplotlib writes every glyph as a path (~50–100 KB).
* Dependencies and speed: matplotlib is not a dependency of the project (it would add ~40 MB
  and ~1 s of import to a CLI that must start fast); the charts needed are bars, one
  curve and a variable-width histogram, about 250 lines of code.
* Safety: every data string is escaped by one function (:func:`page.text`), and tokens
  stay selectable text (searchable with Ctrl+F), which neither PNGs nor canvas give.
* Cost: no interactivity beyond SVG ``<title>`` tooltips, and axes are simple.

Example:
    >>> from beam_prep.report import write_report    # doctest: +SKIP
    >>> write_report("artifacts/")                     # doctest: +SKIP
    'artifacts/report.html'
"""

from __future__ import annotations

from typing import Any

__all__ = ["REPORT_FILE", "render_report", "write_report"]


def __getattr__(name: str) -> Any:
    # Lazy: `beam-prep report --help` imports this package and must not load Beam for it.
    if name in __all__:
        from beam_prep.report import build

        return getattr(build, name)
    raise AttributeError(f"module 'beam_prep.report' has no attribute {name!r}")
