"""Page assembly: escaping, tables, the self-contained HTML document (plotly.js inline once, figures as JSON).

Escaping rules: every string from a file is `html.escape`d where it lands in HTML (text and attributes); JSON put
inside <script> goes through `script_json`, which writes `<`, `>`, `&`, U+2028 and U+2029 as \\uXXXX escapes so no
value can close the script element or open a comment. The page loads nothing from the network.
"""
from __future__ import annotations

import html
import json
import math

_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def esc(value) -> str:
    """HTML-escape any value's text (quotes included, so it is safe in attributes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def script_json(value) -> str:
    """JSON text safe inside a <script> element: `value` (an object, or JSON text already) with <, >, & escaped.

    The characters only occur inside JSON strings, where \\u003c is the same character, so the data is unchanged.
    """
    text = value if isinstance(value, str) else json.dumps(value, allow_nan=False)
    return "".join(_SCRIPT_ESCAPES.get(ch, ch) for ch in text)


def fmt(value, digits: int = 4) -> str:
    """A table cell's text: '–' for None, integers with thousands separators, floats to `digits` significant."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return f"{int(value):,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:.{digits}g}"
    return str(value)


def table(headers: list[str], rows: list[list], row_attrs: list[dict] | None = None, cls: str = "") -> str:
    """An HTML table; cells are escaped (pass `Raw` for pre-built HTML), row_attrs become data-* attributes."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, cells in enumerate(rows):
        attrs = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in ((row_attrs or [{}] * len(rows))[i] or {}).items()
                        if v is not None)
        tds = "".join(f"<td>{c.html if isinstance(c, Raw) else esc(fmt(c))}</td>" for c in cells)
        body.append(f"<tr{attrs}>{tds}</tr>")
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


class Raw:
    """Already-safe HTML for a table cell (built here from escaped parts)."""

    def __init__(self, html_text: str):
        self.html = html_text


def badge(verdict) -> Raw:
    v = verdict or "no verdict"
    return Raw(f'<span class="badge b-{esc(v.replace(" ", "-"))}">{esc(v)}</span>')


def section(anchor: str, title: str, body: str, note: str = "") -> str:
    note_html = f'<p class="note">{note}</p>' if note else ""
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{note_html}{body}</section>'


def figure_div(fig_id: str) -> str:
    return f'<div class="fig" id="{esc(fig_id)}"></div>'


def filter_bar(options: dict[str, list[str]]) -> str:
    parts = []
    for name, values in options.items():
        opts = '<option value="*">all</option>' + "".join(f'<option value="{esc(v)}">{esc(v)}</option>'
                                                          for v in values)
        parts.append(f'<label>{esc(name)} <select id="filter-{esc(name)}" data-filter="{esc(name)}">{opts}</select>'
                     f'</label>')
    return f'<div class="filters">Filter: {" ".join(parts)}</div>'


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:14px 24px}header h1{margin:0;font-size:22px}
header .sub{color:#cfd8dc;font-size:13px;margin-top:4px}
main{padding:0 24px 40px;max-width:1400px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:16px 0;padding:12px 18px;
scroll-margin-top:48px}
h2{font-size:18px;margin:4px 0 10px}
.headline{font-size:18px;line-height:1.5}.headline .big{font-size:34px;font-weight:700}
.plain{font-size:18px;font-weight:600;padding:8px 12px;border-radius:4px;margin:8px 0}
.plain.SLOWER{background:#ffebee;color:#b71c1c}.plain.FASTER{background:#e8f5e9;color:#1b5e20}
.plain.SAME{background:#eeeeee;color:#333}.plain.UNDECIDED{background:#fff8e1;color:#6d4c00}
.plain.NOT_MODELLED{background:#f3e5f5;color:#4a148c}
.modelled{display:inline-block;background:#fff3e0;color:#e65100;border:1px solid #ffb74d;border-radius:4px;
padding:1px 8px;font-weight:600;font-size:13px}
.measured{display:inline-block;background:#e3f2fd;color:#0d47a1;border:1px solid #64b5f6;border-radius:4px;
padding:1px 8px;font-weight:600;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}th,td{border:1px solid #e0e0e0;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f5f5f5}td{font-variant-numeric:tabular-nums}
.badge{padding:1px 6px;border-radius:3px;font-weight:600;font-size:12px;color:#fff;background:#9e9e9e}
.b-FASTER{background:#2e7d32}.b-SLOWER{background:#c62828}.b-SAME{background:#757575}.b-UNDECIDED{background:#b28704}.b-NOT_MODELLED{background:#6a1b9a}
.filters{position:sticky;top:0;background:#fafafa;padding:8px 0;z-index:10;font-size:14px}
.filters select{margin:0 12px 0 4px}.note{color:#555;font-size:13px;margin:4px 0 8px}
.fig{width:100%;min-height:300px}nav a{color:#b0bec5;margin-right:12px;font-size:13px}
.env td:first-child{font-family:ui-monospace,monospace;color:#37474f}.err{color:#b71c1c}
"""

JS = """
(function(){
  var figs = JSON.parse(document.getElementById('ptxmoe-figures').textContent);
  var plots = [];
  Object.keys(figs).forEach(function(id){
    var el = document.getElementById(id); if(!el) return;
    var f = figs[id];
    Plotly.newPlot(el, f.data || [], f.layout || {}, {responsive: true, displaylogo: false});
    plots.push(el);
  });
  function want(meta, sel){
    if(!meta) return true;
    for (var k in sel){
      if(sel[k] !== '*' && meta[k] !== undefined && meta[k] !== '' && meta[k] !== sel[k]) return false;
    }
    return true;
  }
  function apply(){
    var sel = {};
    document.querySelectorAll('select[data-filter]').forEach(function(s){ sel[s.dataset.filter] = s.value; });
    document.querySelectorAll('tr[data-preset], tr[data-skew]').forEach(function(tr){
      var meta = {preset: tr.dataset.preset, skew: tr.dataset.skew};
      tr.style.display = want(meta, sel) ? '' : 'none';
    });
    plots.forEach(function(el){
      var vis = el.data.map(function(tr){ return want(tr.meta, sel); });
      var same = el.data.every(function(tr, i){ return (tr.visible === undefined || tr.visible === true) === vis[i]; });
      if(!same) Plotly.restyle(el, {visible: vis});  // NOTE: a restyle redraws; skip figures the filter leaves alone
    });
  }
  document.querySelectorAll('select[data-filter]').forEach(function(s){ s.addEventListener('change', apply); });
  window.ptxmoeApplyFilter = apply;
})();
"""


def page(title: str, subtitle: str, nav: list[tuple[str, str]], body: str, figures: dict[str, str],
         plotly_js: str) -> str:
    """The whole document. `figures` maps div id -> a figure's JSON text (Figure.to_json())."""
    fig_json = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in figures.items()) + "}"
    nav_html = "".join(f'<a href="#{esc(a)}">{esc(label)}</a>' for a, label in nav)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
        f"<style>{CSS}</style><script>{plotly_js}</script></head><body>"
        f"<header><h1>{esc(title)}</h1><div class=\"sub\">{subtitle}</div><nav>{nav_html}</nav></header>"
        f"<main>{body}</main>"
        f"<script type=\"application/json\" id=\"ptxmoe-figures\">{script_json(fig_json)}</script>"
        f"<script>{JS}</script></body></html>\n")
