"""The HTML report: one self-contained page (no external files, no network).

Rows are rendered here, escaped, so the page shows everything without
scripts; a small inline script adds the controls: one checkbox per outcome,
a choice of which serializer the outcome filter looks at (or any of them),
and a search box over names, aliases and kinds. Hidden rows get the
``hidden`` attribute; ``#shown`` counts the visible ones.
"""

from __future__ import annotations

import html

from .._audit.model import Outcome, Report
from .interface import Formatter

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
.meta { color: #555; margin-bottom: 1em; }
table { border-collapse: collapse; }
th, td { padding: 2px 8px; text-align: left; vertical-align: top; border-bottom: 1px solid #eee; }
th { background: #f4f4f4; position: sticky; top: 0; }
td.name { font-family: ui-monospace, monospace; }
td.num { text-align: right; }
td[class^="o-"] { white-space: nowrap; }
.o-identity { background: #e3f6e3; }
.o-copy { background: #e3f0fa; }
.o-wrong { background: #ffc9c9; font-weight: bold; }
.o-dump, .o-load { background: #ffe1e1; }
.o-crash, .o-hang { background: #f3d4f3; font-weight: bold; }
.controls { margin: 1em 0; display: flex; flex-wrap: wrap; gap: 1em; align-items: center; }
.controls label { white-space: nowrap; }
.why { color: #444; font-size: .9em; }
.why .hint { color: #075; }
#search { width: 22em; }
"""

_SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('#entries tbody tr'));
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input.outcome-filter'));
  var which = document.getElementById('serializer');
  var search = document.getElementById('search');
  var shown = document.getElementById('shown');
  function apply() {
    var wanted = {};
    boxes.forEach(function (b) { if (b.checked) { wanted[b.value] = true; } });
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var count = 0;
    rows.forEach(function (row) {
      var outcomes = which.value === '*'
        ? row.getAttribute('data-outcomes').split(' ')
        : [row.getAttribute('data-o-' + which.value)];
      var ok = outcomes.some(function (o) { return wanted[o]; });
      var text = row.getAttribute('data-search');
      ok = ok && words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  which.addEventListener('change', apply);
  search.addEventListener('input', apply);
  apply();
})();
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


class HtmlFormat(Formatter):
    """A single HTML page with per-outcome filters and a search box."""

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        serializers = list(report.serializers)
        totals = report.totals()
        title = f"picklable audit: {', '.join(report.targets) or 'objects'}"
        out: list[str] = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            '<p class="meta">'
            + _e(
                f"{len(report.entries)} objects · Python {report.python} · "
                f"{report.seconds:.1f} s · "
                + ", ".join(f"{name} {version}" for name, version in report.serializers.items())
            )
            + "</p>",
        ]
        out += self._totals(report, serializers, totals)
        out += self._controls(serializers, totals)
        out += self._entries(report, serializers)
        if report.problems:
            out.append('<h2>Not audited</h2><ul id="problems">')
            out += [f"<li><code>{_e(p.name)}</code>: {_e(p.error)}</li>" for p in report.problems]
            out.append("</ul>")
        out.append(f"<script>{_SCRIPT}</script></body></html>")
        return "\n".join(out) + "\n"

    @staticmethod
    def _totals(
        report: Report, serializers: list[str], totals: dict[str, dict[str, int]]
    ) -> list[str]:
        out = ['<table id="totals"><thead><tr><th>outcome</th>']
        out += [f"<th>{_e(s)}</th>" for s in serializers]
        out.append("</tr></thead><tbody>")
        for outcome in Outcome:
            out.append(f'<tr class="o-{outcome.value}"><td>{_e(outcome.label)}</td>')
            out += [
                f'<td class="num" data-serializer="{_e(s)}" data-outcome="{outcome.value}">'
                f"{totals[s][outcome.value]}</td>"
                for s in serializers
            ]
            out.append("</tr>")
        out.append("</tbody></table>")
        return out

    @staticmethod
    def _controls(serializers: list[str], totals: dict[str, dict[str, int]]) -> list[str]:
        out = ['<div class="controls">', '<label>Outcome of <select id="serializer">']
        out += [f'<option value="{_e(s)}">{_e(s)}</option>' for s in serializers]
        out.append('<option value="*">any serializer</option></select></label>')
        for outcome in Outcome:
            out.append(
                f'<label class="o-{outcome.value}"><input type="checkbox" class="outcome-filter" '
                f'id="filter-{outcome.value}" value="{outcome.value}" checked> '
                f"{_e(outcome.label)}</label>"
            )
        out.append(
            '<input type="search" id="search" placeholder="Search names, aliases, kinds" '
            'aria-label="Search">'
        )
        total = sum(totals[serializers[0]].values()) if serializers else 0
        out.append(
            f'<span><span id="shown">{total}</span> of <span id="total">{total}</span> shown</span>'
        )
        out.append("</div>")
        return out

    @staticmethod
    def _entries(report: Report, serializers: list[str]) -> list[str]:
        out = ['<table id="entries"><thead><tr><th>object</th><th>kind</th>']
        out += [f"<th>{_e(s)}</th>" for s in serializers]
        out.append("<th>picklable: why</th></tr></thead><tbody>")
        for entry in report.entries:
            search = " ".join([entry.name, *entry.aliases, entry.kind]).lower()
            outcomes = " ".join(sorted({r.outcome.value for r in entry.results.values()}))
            attrs = "".join(
                f' data-o-{_e(s)}="{entry.results[s].outcome.value}"'
                for s in serializers
                if s in entry.results
            )
            out.append(
                f'<tr data-name="{_e(entry.name)}" data-search="{_e(search)}" '
                f'data-outcomes="{outcomes}"{attrs}>'
            )
            aliases = (
                f'<br><span class="why">also: {_e(", ".join(entry.aliases))}</span>'
                if entry.aliases
                else ""
            )
            out.append(f'<td class="name">{_e(entry.name)}{aliases}</td><td>{_e(entry.kind)}</td>')
            for s in serializers:
                result = entry.results.get(s)
                if result is None:
                    out.append("<td></td>")
                    continue
                tip = " — ".join(x for x in (result.error, result.detail, result.hint) if x)
                title = f' title="{_e(tip)}"' if tip else ""
                out.append(
                    f'<td class="o-{result.outcome.value}"{title}>{_e(result.outcome.label)}</td>'
                )
            mine = entry.results.get("picklable")
            why = ""
            if mine is not None and mine.outcome is not Outcome.IDENTITY:
                parts = [_e(x) for x in (mine.error, mine.detail) if x]
                if mine.hint:
                    parts.append(f'<span class="hint">hint: {_e(mine.hint)}</span>')
                why = "<br>".join(parts)
            out.append(f'<td class="why">{why}</td></tr>')
        out.append("</tbody></table>")
        return out
