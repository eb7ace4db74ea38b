"""The page around the sections: inline CSS, one small inline script (table sorting; the
page reads the same without it) and a Content-Security-Policy that allows nothing else:
no request leaves the page, so it works offline and inside the MLflow UI's artifact view."""

from __future__ import annotations

import base64
import hashlib
from html import escape

CSS = """
:root{--ink:#1a202c;--mute:#4a5568;--line:#e2e8f0;--bg:#f7fafc;--t:#2b6cb0;--s:#dd6b20;--bad:#c53030;--good:#2f855a}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
header{background:#1a365d;color:#fff;padding:18px 32px}header h1{margin:0 0 4px;font-size:22px}header .who{opacity:.9}
header code{background:rgba(255,255,255,.12);color:#fff}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:8px 32px;z-index:2}
nav a{margin-right:18px;color:var(--t);text-decoration:none;font-weight:600}
main{max-width:1240px;margin:0 auto;padding:8px 32px 48px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 22px;margin:18px 0}
h2{margin:0 0 12px;font-size:18px}h3{font-size:15px;margin:0 0 6px}h4{margin:16px 0 6px}
.cards{display:flex;flex-wrap:wrap;gap:14px;margin-bottom:16px}
.card{flex:1 1 200px;border:1px solid var(--line);border-radius:8px;padding:12px 16px;background:var(--bg)}
.card.key{border-color:#90cdf4;background:#ebf8ff}
.label{color:var(--mute);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.big{display:block;font-size:30px;font-weight:700;font-variant-numeric:tabular-nums}
.ci{display:block;color:var(--mute);font-size:12px;font-variant-numeric:tabular-nums}
.p{display:block;font-size:12px;color:var(--mute)}.hint,.sub{color:var(--mute);font-size:11px;font-weight:400}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}thead th{background:var(--bg);font-size:12px;color:var(--mute)}
.scroll{overflow-x:auto;max-width:100%}td code,th code,.who code,p code{overflow-wrap:anywhere}
table.compare thead th{overflow-wrap:break-word;min-width:120px}table.compare td{white-space:nowrap}
table.runs td,table.runs th{text-align:left}
table.sortable thead th{cursor:pointer}tr.total{font-weight:700;background:#fffaf0}
td.best{font-weight:700;background:#f0fff4}
.bar{display:block;height:4px;background:var(--line);border-radius:2px;margin:3px 0 0 auto;width:90px}
.bar span{display:block;height:4px;background:var(--bad);border-radius:2px}
.missing{color:#a0aec0}.verdict{font-size:15px;margin:0 0 14px;max-width:980px}.note{color:var(--mute);font-size:12px}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:14px}
.plots.wide{grid-template-columns:repeat(auto-fit,minmax(460px,1fr))}
.fig{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px}
.plot{display:block;width:100%;height:auto}figcaption{font-size:11px;color:var(--mute);padding:2px 6px}
.lg{display:inline-flex;align-items:center;margin-right:12px;white-space:nowrap}
.sw{display:inline-block;width:18px;margin-right:5px;border-top:3px solid}
.sw.dash{border-top-style:dashed}
.plot text{font-size:11px;fill:#2d3748}.plot .svg-title{font-size:13px;font-weight:600}
.example{border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:12px 0}
.facts{display:flex;flex-wrap:wrap;gap:16px;color:var(--mute);margin-bottom:6px}
table.probs{width:auto;margin:4px 0 8px}table.probs td,table.probs th{padding:2px 10px}
.diff{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px}
.pane-title{font-size:11px;color:var(--mute);text-transform:uppercase}
pre.code{margin:0;padding:8px 10px;background:#f7fafc;border:1px solid var(--line);border-radius:6px;overflow:auto;
max-height:420px;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre}
del{background:#fed7d7;color:#742a2a;text-decoration:line-through}
ins{background:#c6f6d5;color:#22543d;text-decoration:none}
.clip{color:var(--mute);font-style:italic}code{background:#edf2f7;padding:1px 4px;border-radius:3px;font-size:12px}
ul.renaming{margin:4px 0 8px;padding-left:18px}
table.facts-table>tbody>tr>th{width:140px;color:var(--mute)}table.facts-table>tbody>tr>td{text-align:left}
table.config td:last-child{color:var(--mute)}table.kv{width:auto;font-size:12px}table.kv th,table.kv td{padding:2px 8px}
table.kv th{color:var(--mute);font-weight:600}table.stats{width:auto;min-width:50%;margin-top:8px}
table.stats td{white-space:nowrap}table.stats .ci{display:inline}h3.stats-title{margin-top:16px}
tr.src-given td:last-child{color:var(--good);font-weight:600}
tr.src-detected td:last-child,tr.src-inferred td:last-child{color:var(--s)}
details summary{cursor:pointer;margin:12px 0 6px;font-weight:600}
.interval-plot text{font-size:11px}
@media (max-width:960px){header{padding:14px 16px}nav{padding:8px 16px}nav a{margin-right:12px}
main{padding:4px 10px 32px}
section{padding:12px 14px;margin:12px 0}th,td{padding:5px 6px}.bar{width:56px}.big{font-size:26px}}
@media (max-width:640px){.diff{grid-template-columns:minmax(0,1fr)}}
@media print{nav{display:none}section{break-inside:avoid}}
"""

# Click a header to sort a table.sortable by that column (numbers by their data-value).
SCRIPT = """document.querySelectorAll('table.sortable').forEach(function(t){
t.querySelectorAll('thead th').forEach(function(h,i){
h.addEventListener('click',function(){
var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),d=h.dataset.dir==='a'?-1:1;h.dataset.dir=d===1?'a':'d';
function v(r){var c=r.cells[i],n=c.querySelector('[data-value]'),s=c.getAttribute('data-sort');
var x=s!==null?s:(n?n.getAttribute('data-value'):null);
return x!==null?parseFloat(x):c.textContent;}
rows.sort(function(a,b){var x=v(a),y=v(b);return (x>y?1:x<y?-1:0)*d;});rows.forEach(function(r){b.appendChild(r);});});
});});"""


def csp() -> str:
    """``default-src 'none'``: only inline styles, ``data:`` images and this page's one script (by hash)."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )


def page(title: str, subtitle: str, nav: list[tuple[str, str]], body: str) -> str:
    """A complete, self-contained HTML document."""
    links = "".join(f'<a href="#{escape(anchor)}">{escape(label)}</a>' for anchor, label in nav)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp()}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{escape(title)}</title><style>{CSS}</style></head>'
        f'<body><header><h1>{escape(title)}</h1><div class="who">{subtitle}</div></header>'
        f"<nav>{links}</nav><main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )
