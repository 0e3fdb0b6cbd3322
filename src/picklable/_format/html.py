"""The HTML report: one self-contained page (no external files, no network).

Rows are rendered here, escaped, so the page holds everything without scripts;
a small inline script adds the controls: which serializer the outcome filter
(and the "why" column) looks at, one checkbox per outcome, property objects in
or out, a search box over names, aliases and kinds, and three views (picklable's
problems, any serializer's problems, everything).

The page opens on problems: picklable's when it has any, else those of any
serializer, else every row. Whatever is chosen is kept in the URL's fragment
(``#serializer=pickle&outcomes=dump,load&q=frame&properties=0``), so a reload,
a bookmark or a link shows the same rows. Hidden rows get the ``hidden``
attribute; ``#shown`` counts the visible ones. Each object is one row; the
other names that reach it (aliases) fold inside its cell.
"""

from __future__ import annotations

import html
import json

from .._audit.model import FAILURES, PROPERTY, Entry, Outcome, Report
from .interface import Formatter

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: 1.5em 0 .3em; }
.meta { color: #555; margin-bottom: 1em; }
table { border-collapse: collapse; }
th, td { padding: 2px 8px; text-align: left; vertical-align: top; border-bottom: 1px solid #eee; }
th { background: #f4f4f4; }
#entries { width: 100%; table-layout: fixed; }
#entries th { position: sticky; top: 0; z-index: 1; }
td.name { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
td.num { text-align: right; }
td[class^="o-"] { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.totals { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
.totals caption { text-align: left; font-weight: bold; padding-bottom: .2em; }
.o-identity { background: #e3f6e3; }
.o-copy { background: #e3f0fa; }
.o-wrong { background: #ffc9c9; font-weight: bold; }
.o-dump, .o-load { background: #ffe1e1; }
.o-crash, .o-hang { background: #f3d4f3; font-weight: bold; }
.controls { margin: 1em 0 .5em; display: flex; flex-wrap: wrap; gap: .6em 1em;
  align-items: center; }
.controls label { white-space: nowrap; }
.views button { font: inherit; padding: 2px 10px; border: 1px solid #bbb; background: #fff;
  border-radius: 3px; cursor: pointer; }
.views button[aria-pressed="true"] { background: #333; color: #fff; border-color: #333; }
.why { color: #444; font-size: .9em; overflow-wrap: anywhere; }
.why .hint { color: #075; }
.why-for { display: none; }
.why-for .serializer { display: none; font-weight: bold; }
#entries[data-why="*"] .why-for, #entries[data-why="*"] .why-for .serializer { display: block; }
#entries[data-why="*"] .why-for.shipped { display: none; }
details.aliases { color: #555; font-size: .9em; }
details.aliases ul { margin: .2em 0; padding-left: 1.2em; }
#search { width: 22em; }
#nothing { color: #555; font-style: italic; }
"""

_SCRIPT = """
(function () {
  var table = document.getElementById('entries');
  var rows = Array.prototype.slice.call(table.querySelectorAll('tbody tr'));
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input.outcome-filter'));
  var which = document.getElementById('serializer');
  var search = document.getElementById('search');
  var properties = document.getElementById('properties');
  var shown = document.getElementById('shown');
  var nothing = document.getElementById('nothing');
  var whyHead = document.getElementById('why-head');
  var views = Array.prototype.slice.call(document.querySelectorAll('.views button'));
  var presets = JSON.parse(document.getElementById('presets').textContent);
  var allOutcomes = boxes.map(function (b) { return b.value; });

  function state() {
    return {
      serializer: which.value,
      outcomes: boxes.filter(function (b) { return b.checked; })
        .map(function (b) { return b.value; }),
      q: search.value,
      properties: properties.checked
    };
  }
  function set(s) {
    which.value = s.serializer;
    if (which.value !== s.serializer) { which.value = presets.problems.serializer; }
    var wanted = {};
    s.outcomes.forEach(function (o) { wanted[o] = true; });
    boxes.forEach(function (b) { b.checked = !!wanted[b.value]; });
    search.value = s.q || '';
    properties.checked = s.properties !== false;
  }
  function same(a, b) {
    return a.serializer === b.serializer && a.outcomes.join() === b.outcomes.join()
      && (a.q || '') === (b.q || '') && a.properties === b.properties;
  }
  function toHash(s) {
    var parts = ['serializer=' + encodeURIComponent(s.serializer),
                 'outcomes=' + encodeURIComponent(s.outcomes.join(',') || 'none')];
    if (s.q) { parts.push('q=' + encodeURIComponent(s.q)); }
    if (!s.properties) { parts.push('properties=0'); }
    return '#' + parts.join('&');
  }
  function fromHash(hash) {
    if (!hash || hash.length < 2) { return null; }
    var s = {serializer: presets.start.serializer, outcomes: presets.start.outcomes, q: '',
             properties: true};
    hash.slice(1).split('&').forEach(function (pair) {
      var cut = pair.indexOf('=');
      if (cut < 0) { return; }
      var key = pair.slice(0, cut);
      var value = decodeURIComponent(pair.slice(cut + 1));
      if (key === 'serializer') { s.serializer = value; }
      else if (key === 'outcomes') {
        s.outcomes = value === 'none' ? [] : value.split(',').filter(function (o) {
          return allOutcomes.indexOf(o) !== -1;
        });
      }
      else if (key === 'q') { s.q = value; }
      else if (key === 'properties') { s.properties = value !== '0'; }
    });
    return s;
  }
  function remember(s) {
    var hash = toHash(s);
    if (location.hash === hash) { return; }
    try { history.replaceState(null, '', hash); }
    catch (e) { location.replace(hash); }
  }
  function apply() {
    var s = state();
    var wanted = {};
    s.outcomes.forEach(function (o) { wanted[o] = true; });
    var words = s.q.toLowerCase().split(/\\s+/).filter(Boolean);
    var count = 0;
    rows.forEach(function (row) {
      var outcomes = s.serializer === '*'
        ? row.getAttribute('data-outcomes').split(' ')
        : [row.getAttribute('data-o-' + s.serializer)];
      var ok = outcomes.some(function (o) { return wanted[o]; });
      ok = ok && (s.properties || row.getAttribute('data-kind') !== 'property');
      var text = row.getAttribute('data-search');
      ok = ok && words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
    nothing.hidden = count !== 0;
    table.setAttribute('data-why', s.serializer);
    whyHead.textContent = s.serializer === '*' ? 'why' : 'why (' + s.serializer + ')';
    views.forEach(function (button) {
      var preset = presets[button.getAttribute('data-view')];
      button.setAttribute('aria-pressed', String(same(s, preset)));
    });
    remember(s);
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  which.addEventListener('change', apply);
  search.addEventListener('input', apply);
  properties.addEventListener('change', apply);
  views.forEach(function (button) {
    button.addEventListener('click', function () {
      set(presets[button.getAttribute('data-view')]);
      apply();
    });
  });
  window.addEventListener('hashchange', function () {
    var s = fromHash(location.hash);
    if (s && !same(s, state())) { set(s); apply(); }
  });
  set(fromHash(location.hash) || presets.start);
  apply();
})();
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _failing(entry: Entry, serializer: str | None) -> bool:
    results = (
        list(entry.results.values())
        if serializer is None
        else [entry.results[serializer]]
        if serializer in entry.results
        else []
    )
    return any(r.outcome in FAILURES for r in results)


def presets(report: Report) -> dict[str, dict[str, object]]:
    """The three views, and ``start``: the one the page opens on.

    ``problems``: picklable's failing outcomes; ``anywhere``: failing outcomes
    of any serializer, property objects left out; ``all``: every row. The page
    opens on the first that shows a row (and on ``all`` when none does).
    """
    failures = [o.value for o in FAILURES]
    views: dict[str, dict[str, object]] = {
        "problems": {"serializer": "picklable", "outcomes": failures, "q": "", "properties": True},
        # Any serializer: pickle fails on every property object, which no one ships;
        # they are one click away (the "property objects" box).
        "anywhere": {"serializer": "*", "outcomes": failures, "q": "", "properties": False},
        "all": {
            "serializer": "picklable",
            "outcomes": [o.value for o in Outcome],
            "q": "",
            "properties": True,
        },
    }
    if any(_failing(e, "picklable") for e in report.entries):
        views["start"] = views["problems"]
    elif any(_failing(e, None) for e in report.entries):
        views["start"] = views["anywhere"]
    else:
        views["start"] = views["all"]
    return views


class HtmlFormat(Formatter):
    """A single HTML page: opens on problems, filters kept in the URL."""

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        serializers = list(report.serializers)
        title = f"picklable audit: {', '.join(report.targets) or 'objects'}"
        properties = report.property_count
        apart = f" ({properties} properties, counted apart)" if properties else ""
        views = json.dumps(presets(report)).replace("</", "<\\/")
        why_rules = " ".join(
            f'#entries[data-why="{_e(s)}"] .why-for[data-for="{_e(s)}"] {{ display: block; }}'
            for s in serializers
        )
        out: list[str] = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title><style>{_STYLE}{why_rules}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            '<p class="meta">'
            + _e(
                f"{len(report.entries)} objects{apart} · Python {report.python} · "
                f"{report.seconds:.1f} s · "
                + ", ".join(f"{name} {version}" for name, version in report.serializers.items())
            )
            + "</p>",
            f'<script type="application/json" id="presets">{views}</script>',
        ]
        out += self._totals(report, serializers)
        if report.notes:
            out.append('<ul id="notes">')
            out += [f"<li>{_e(note)}</li>" for note in report.notes]
            out.append("</ul>")
        out += self._controls(report, serializers)
        out += self._entries(report, serializers)
        if report.problems:
            out.append('<h2>Not audited</h2><ul id="problems">')
            out += [f"<li><code>{_e(p.name)}</code>: {_e(p.error)}</li>" for p in report.problems]
            out.append("</ul>")
        if report.ignored:
            out.append(f'<h2>Ignored ({len(report.ignored)})</h2><p id="ignored">')
            out.append(", ".join(f"<code>{_e(name)}</code>" for name in report.ignored))
            out.append("</p>")
        out.append(f"<script>{_SCRIPT}</script></body></html>")
        return "\n".join(out) + "\n"

    @staticmethod
    def _count_table(
        table_id: str,
        caption: str,
        serializers: list[str],
        totals: dict[str, dict[str, int]],
        all_rows: bool,
    ) -> list[str]:
        out = [f'<table id="{table_id}"><caption>{_e(caption)}</caption>']
        out.append("<thead><tr><th>outcome</th>")
        out += [f"<th>{_e(s)}</th>" for s in serializers]
        out.append("</tr></thead><tbody>")
        for outcome in Outcome:
            if not all_rows and not any(totals[s][outcome.value] for s in serializers):
                continue
            out.append(f'<tr class="o-{outcome.value}"><td>{_e(outcome.label)}</td>')
            out += [
                f'<td class="num" data-serializer="{_e(s)}" data-outcome="{outcome.value}">'
                f"{totals[s][outcome.value]}</td>"
                for s in serializers
            ]
            out.append("</tr>")
        out.append("</tbody></table>")
        return out

    def _totals(self, report: Report, serializers: list[str]) -> list[str]:
        properties = report.property_count
        out = ['<div class="totals">']
        if properties:
            others = len(report.entries) - properties
            out += self._count_table(
                "totals",
                f"{others} objects",
                serializers,
                report.totals(properties=False),
                True,
            )
            out += self._count_table(
                "property-totals",
                f"{properties} property objects, counted apart",
                serializers,
                report.totals(properties=True),
                False,
            )
        else:
            out += self._count_table(
                "totals", f"{len(report.entries)} objects", serializers, report.totals(), True
            )
        out.append("</div>")
        return out

    @staticmethod
    def _controls(report: Report, serializers: list[str]) -> list[str]:
        out = [
            '<div class="controls views" role="group" aria-label="Views">',
            '<button type="button" data-view="problems">picklable\'s problems</button>',
            '<button type="button" data-view="anywhere">problems of any serializer</button>',
            '<button type="button" data-view="all">everything</button>',
            "</div>",
            '<div class="controls">',
            '<label>Outcome of <select id="serializer">',
        ]
        out += [f'<option value="{_e(s)}">{_e(s)}</option>' for s in serializers]
        out.append('<option value="*">any serializer</option></select></label>')
        for outcome in Outcome:
            out.append(
                f'<label class="o-{outcome.value}"><input type="checkbox" class="outcome-filter" '
                f'id="filter-{outcome.value}" value="{outcome.value}" checked> '
                f"{_e(outcome.label)}</label>"
            )
        out.append(
            '<label><input type="checkbox" id="properties" checked> property objects</label>'
        )
        out.append(
            '<input type="search" id="search" placeholder="Search names, aliases, kinds" '
            'aria-label="Search">'
        )
        total = len(report.entries)
        out.append(
            f'<span><span id="shown">{total}</span> of <span id="total">{total}</span> shown</span>'
        )
        out.append("</div>")
        return out

    @staticmethod
    def _entries(report: Report, serializers: list[str]) -> list[str]:
        # Fixed layout: a long name wraps in its column instead of pushing "why"
        # off the screen; "why" gets what the other columns leave.
        name_pct, kind_pct, outcome_pct = 28, 9, 8
        why_pct = 100 - name_pct - kind_pct - outcome_pct * len(serializers)
        out = [
            '<table id="entries" data-why="picklable"><colgroup>',
            f'<col style="width:{name_pct}%"><col style="width:{kind_pct}%">',
            *(f'<col style="width:{outcome_pct}%">' for _ in serializers),
            f'<col style="width:{max(why_pct, 20)}%"></colgroup>',
            "<thead><tr><th>object</th><th>kind</th>",
        ]
        out += [f"<th>{_e(s)}</th>" for s in serializers]
        out.append('<th id="why-head">why (picklable)</th></tr></thead><tbody>')
        for entry in report.entries:
            out += _row(entry, serializers)
        out.append("</tbody></table>")
        out.append('<p id="nothing" hidden>No object matches these filters.</p>')
        return out


def _row(entry: Entry, serializers: list[str]) -> list[str]:
    search = " ".join([entry.name, *entry.aliases, entry.kind]).lower()
    outcomes = " ".join(sorted({r.outcome.value for r in entry.results.values()}))
    attrs = "".join(
        f' data-o-{_e(s)}="{entry.results[s].outcome.value}"'
        for s in serializers
        if s in entry.results
    )
    kind = "property" if entry.kind == PROPERTY else entry.kind
    out = [
        (
            f'<tr data-name="{_e(entry.name)}" data-kind="{_e(kind)}" data-search="{_e(search)}" '
            f'data-outcomes="{outcomes}"{attrs}>'
        )
    ]
    aliases = ""
    if entry.aliases:
        count = len(entry.aliases)
        items = "".join(f"<li>{_e(a)}</li>" for a in entry.aliases)
        aliases = (
            f'<details class="aliases"><summary>{count} other name{"s" if count > 1 else ""}'
            f"</summary><ul>{items}</ul></details>"
        )
    # <wbr>: a long dotted name wraps after a dot rather than inside a word.
    name = _e(entry.name).replace(".", ".<wbr>")
    out.append(f'<td class="name">{name}{aliases}</td><td>{_e(entry.kind)}</td>')
    whys = []
    for s in serializers:
        result = entry.results.get(s)
        if result is None:
            out.append("<td></td>")
            continue
        tip = " — ".join(x for x in (result.error, result.detail, result.hint) if x)
        title = f' title="{_e(tip)}"' if tip else ""
        out.append(f'<td class="o-{result.outcome.value}"{title}>{_e(result.outcome.label)}</td>')
        if result.outcome is not Outcome.IDENTITY:
            parts = [_e(x) for x in (result.error, result.detail) if x]
            if result.hint:
                parts.append(f'<span class="hint">fix: {_e(result.hint)}</span>')
            # An exact copy ships: told under its own serializer, not among the
            # problems of "any serializer".
            shipped = " shipped" if result.outcome.ok else ""
            whys.append(
                f'<div class="why-for{shipped}" data-for="{_e(s)}">'
                f'<span class="serializer">{_e(s)}</span>'
                f"{'<br>'.join(parts) or _e(result.outcome.label)}</div>"
            )
    out.append(f'<td class="why">{"".join(whys)}</td></tr>')
    return out
