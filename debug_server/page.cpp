// The cluster page served at "/". One renderer (the inline script) draws the summary and the
// table both from the data embedded at serve time and from each refresh, so the two cannot
// disagree. The summary is the live-status tree's (any world size); the table lists the ranks
// fetched in detail (every rank of a small world, the ranks the summary names otherwise).
#include <fmt/format.h>

#include "debug_server/cluster.h"

namespace collie {
namespace {

constexpr const char* kPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>collie cluster view</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
th {{ background: #f0f0f0; }}
tr.ok td.state {{ color: #2a7d2a; }}
tr.stalled {{ background: #fff7d6; }}
tr.straggler, tr.culprit {{ background: #ffd9d6; font-weight: bold; }}
tr.unreachable {{ background: #e4e4e4; color: #777; }}
#findings li, #live li.finding {{ color: #a00; }}
</style></head>
<body>
<h1>collie cluster view</h1>
<p id="summary"></p>
<ul id="live"></ul>
<table id="cluster"><thead><tr><th>rank</th><th>host</th><th>state</th>
<th>last completed</th><th>in flight</th><th>details</th></tr></thead><tbody></tbody></table>
<ul id="findings"></ul>
<p><small>served by rank {self}; refreshes every {refresh} ms;
<a href="/v1/cluster/status">JSON</a> · <a href="/v1/cluster/analyze">analysis</a></small></p>
<script>
function td(text, cls) {{
  const c = document.createElement('td');
  c.textContent = text;
  if (cls) c.className = cls;
  return c;
}}
function render(data) {{
  const body = document.querySelector('#cluster tbody');
  body.replaceChildren();
  for (const r of data.ranks) {{
    const tr = document.createElement('tr');
    tr.className = 'rank ' + r.state;
    tr.dataset.rank = r.rank;
    const s = r.status || {{}};
    const g = (s.groups || []).find(x => x.pg === '0') || (s.groups || [])[0];
    let done = '-', flight = '-';
    if (g) {{
      done = g.last_completed_seq ? (g.last_completed_op + ' #' + g.last_completed_seq) : 'none';
      flight = (g.inflight || []).map(o => o.op + ' #' + o.seq + ' (' + o.age_s.toFixed(1) + ' s)')
                                .join(', ') || 'idle';
    }}
    tr.append(td(r.rank), td(s.host || '?'), td(r.state, 'state'), td(done), td(flight),
              td(r.reachable ? r.reasons.join('; ') : r.error));
    body.append(tr);
  }}
  const live = data.live;
  document.getElementById('summary').textContent =
      (data.analysis ? data.analysis.summary : live.summary) + ' (' + live.answered.count +
      ' of ' + live.world_size + ' ranks answered; fetched in ' + data.elapsed_s.toFixed(2) + ' s)';
  const item = (text, cls) => {{
    const li = document.createElement('li'); li.textContent = text; li.className = cls || '';
    return li; }};
  document.getElementById('live').replaceChildren(
      ...live.groups.map(g => item(g.text)),
      ...live.findings.map(x => item(x.kind + ': ' + x.message, 'finding')));
  const f = document.getElementById('findings');
  f.replaceChildren(...(data.analysis ? data.analysis.findings : []).map(x => item(x.message)));
}}
render({data});
setInterval(() => fetch('/v1/cluster/status' + location.search).then(r => r.json()).then(render)
                      .catch(() => {{
  document.getElementById('summary').textContent = 'refresh failed: this rank is not answering';
}}), {refresh});
</script>
</body></html>
)HTML";

}  // namespace

std::string render_cluster_page(const LiveView& v, int self_rank, int refresh_ms) {
  std::string data = cluster_json(v).dump();
  // Inside <script>, "</script>" in a string would end the element; escape every '<'.
  std::string escaped;
  escaped.reserve(data.size());
  for (char c : data) {
    if (c == '<') {
      escaped += "\\u003c";
    } else {
      escaped += c;
    }
  }
  return fmt::format(fmt::runtime(kPage), fmt::arg("self", self_rank),
                     fmt::arg("refresh", refresh_ms), fmt::arg("data", escaped));
}

}  // namespace collie
