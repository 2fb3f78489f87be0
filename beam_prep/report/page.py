"""HTML building blocks of the report: escaping, number formats, tables, the page shell.

Every string that comes from data (tokens, feature names, paths, reasons) goes through
:func:`text`, which escapes ``& < > " '`` and shows characters that would be invisible or
would re-order the page (control characters, bidi overrides, line separators, lone surrogates)
as ``\\uXXXX``. The result is safe both as element content and as a quoted attribute value.
Right-to-left tokens are kept as they are and isolated with ``<bdi>`` (:func:`token`).

The page is one self-contained document: inline CSS, no script, no external resource. Its
Content-Security-Policy (:data:`CSP`, the first element of ``<head>``) says so to the browser
too: should a future card forget to escape, a planted script, event handler,
``javascript:`` URL, external image or form still does nothing.

Example:
    >>> text('<b a="1">&')
    '&lt;b a=&quot;1&quot;&gt;&amp;'
    >>> fmt_int(1234567)
    '1,234,567'
    >>> fmt_pct(0.12345)
    '12.35%'
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Iterable, Sequence

# Longest token shown on the page; a longer one is cut (with its length) so that a
# hostile or huge token cannot make the page large.
MAX_TOKEN_CHARS = 60

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1180px;margin:0 auto;padding:16px 24px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #d0d7de}
h3{font-size:16px;margin:0 0 6px}
section.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;
margin:12px 0}
.row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
table.kv{border-collapse:collapse;font-size:13px}
table.kv th{text-align:left;font-weight:600;padding:2px 12px 2px 0;color:#57606a;
vertical-align:top}
table.kv td{padding:2px 8px 2px 0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.kind{display:inline-block;font-size:12px;padding:1px 8px;border-radius:10px;
background:#ddf4ff;color:#0969da;margin-left:8px}
.note{color:#57606a;font-size:12px;max-width:1000px}.row .note{max-width:600px}
h4{font-size:13px;margin:8px 0 4px}
.warn{color:#9a6700}
.err{color:#cf222e;font-weight:600}
svg{background:#fff;font:11px system-ui,sans-serif}
svg text{fill:#1f2328}
svg .bar{fill:#4c8bf5}svg .bar2{fill:#f0a35e}svg .axis{stroke:#8c959f;stroke-width:1}
svg .grid{stroke:#eaeef2;stroke-width:1}svg .curve{fill:none;stroke:#1a7f37;stroke-width:2}
svg .cut{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:4 3}
svg .mark{stroke:#8250df;stroke-width:1.5}svg .gap{fill:none;stroke:#8c959f;
stroke-dasharray:2 3}
svg .cuttext{fill:#cf222e}svg .marktext{fill:#8250df}svg .muted{fill:#57606a}
"""

#: The page's policy: nothing but its own inline style (no script, image, font, frame, fetch,
#: ``<base>`` or form target; base-uri and form-action do not fall back to default-src).
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_VISIBLE_CATEGORIES_REPLACED = ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")


def _visible(s: str) -> str:
    """Replaces invisible / reordering characters by a ``\\uXXXX`` escape (tab kept)."""
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch != " " and unicodedata.category(ch) in _VISIBLE_CATEGORIES_REPLACED:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def shown(s: str, *, limit: int | None = None) -> str:
    """The data string as it is shown (before HTML escaping): visible, possibly cut.

    Example:
        >>> shown("a\\u202eb")
        'a\\\\u202eb'
    """
    v = _visible(str(s))
    if limit is not None and len(v) > limit:
        v = v[:limit - 1] + "…"  # at most `limit` characters: chart labels have fixed room
    return v


def text(s: object, *, limit: int | None = None) -> str:
    """HTML-escaped, visible form of a data string (safe in content and quoted attributes)."""
    return html.escape(shown(str(s), limit=limit), quote=True)


def token(s: str) -> str:
    """A vocabulary token for HTML content: escaped, cut, bidi-isolated."""
    return f"<bdi>{text(s, limit=MAX_TOKEN_CHARS)}</bdi>"


def fmt_int(n: int | float | None) -> str:
    """Integer with thousands separators (``—`` for None)."""
    return "—" if n is None else f"{int(n):,}"


def fmt_num(x: float | int | None) -> str:
    """A statistic with 6 significant digits (``—`` for None, ``inf``/``nan`` as such)."""
    if x is None:
        return "—"
    if isinstance(x, int):
        return fmt_int(x)
    if not math.isfinite(x):
        return str(x)
    return f"{x:.6g}"


def fmt_pct(share: float | None) -> str:
    """A share in [0, 1] as a percentage with two decimals."""
    return "—" if share is None else f"{100.0 * share:.2f}%"


def kv_table(rows: Iterable[tuple[str, str]], *, html_keys: bool = False) -> str:
    """Two-column table; keys are escaped here (unless ``html_keys``: already HTML, e.g.
    :func:`token`), values must already be HTML."""
    body = "".join(f"<tr><th>{k if html_keys else text(k)}</th><td>{v}</td></tr>"
                   for k, v in rows)
    return f'<table class="kv">{body}</table>'


def note(s: str) -> str:
    """A small explanatory paragraph (``s`` must already be HTML)."""
    return f'<p class="note">{s}</p>'


def card(title_html: str, body: str, *, data_name: str | None = None) -> str:
    """A bordered section; ``data_name`` (escaped) lets tests find the section."""
    attr = f' data-name="{text(data_name)}"' if data_name is not None else ""
    return f'<section class="card"{attr}><h3>{title_html}</h3>{body}</section>'


def document(title: str, parts: Sequence[str]) -> str:
    """The complete page: doctype, policy, inline CSS, the parts in order; no script."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(parts)}</main></body></html>\n"
    )
