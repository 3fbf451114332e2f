#!/usr/bin/env bash
# tpusim's HTML report in a real browser: the default CNN (one layer group
# in F16) compiled and simulated with --report; headless Chromium (Debian
# `chromium`) renders the page from disk, with no network. Checks that the
# script ran to the end ("rendered: N ops"), that no console error was
# logged, that the summary and every row of the per-op table show the stats
# JSON's numbers, and that the charts were drawn; writes a screenshot to
# the build tree for people to look at. Then tpuc explore's report: one
# Pareto front per workload, each equal to the one computed from
# results.json.
#
#   report_test.sh --bin BUILD/bin --work DIR --screenshot FILE.png
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/skip.sh"
BIN="" WORK="" SHOT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    --screenshot) SHOT="$2"; shift ;;
    *) echo "report_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
command -v chromium >/dev/null || tpu_skip "report_test.sh: chromium is not installed"
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK"
set -x
"$BIN/tpuc" transform "$ROOT/models/default/default_cnn.onnx" -o top.mlir \
  --input-shapes [[1,3,32,32]] > /dev/null
"$BIN/tpuc" deploy top.mlir --quantize F16 --chip bm1684x -o m.bmodel > /dev/null
"$BIN/tpusim" run m.bmodel --mode timing --stats stats.json --report report.html
# Chromium wants a writable home; everything that would reach the network
# is off.
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home" XDG_CACHE_HOME="$WORK/home"
mkdir -p "$HOME"
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run
       --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0)
timeout 120 chromium "${flags[@]}" --dump-dom "file://$WORK/report.html" \
  > dom.html 2> console.txt
timeout 120 chromium "${flags[@]}" --window-size=1280,2400 \
  --screenshot="${SHOT:-$WORK/report.png}" "file://$WORK/report.html" \
  > /dev/null 2>> console.txt
set +x
/usr/bin/python3 - stats.json dom.html console.txt <<'PY'
import json, re, sys
from html.parser import HTMLParser

stats = json.load(open(sys.argv[1]))
dom = open(sys.argv[2]).read()
console = open(sys.argv[3]).read()
c = {x["name"]: x["value"] for x in stats["counters"]}
errors = [l for l in console.splitlines()
          if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
assert not errors, "console errors:\n" + "\n".join(errors)

class Cells(HTMLParser):
    """Text of every <td>/<th> per table id, row by row."""
    def __init__(self):
        super().__init__()
        self.tables, self.table, self.row, self.cell = {}, None, None, None
        self.ids = {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = True
        if tag == "table":
            self.table = a.get("id")
            self.tables[self.table] = []
        elif tag == "tr" and self.table is not None:
            self.row = []
            self.tables[self.table].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""
    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "table":
            self.table = None
    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

p = Cells()
p.feed(dom)
status = re.search(r'id="status"[^>]*>([^<]*)<', dom)
ops = stats["ops"]
assert status and status.group(1).startswith(f"rendered: {len(ops)} ops"), \
    f"the page's script did not finish: {status.group(1) if status else None}"
num = lambda s: int(s.replace(",", "").split()[0])
summary = {r[0]: r[1] for r in p.tables["summary-table"]}
assert num(summary["latency"]) == c["total_cycles"], summary["latency"]
assert num(summary["DDR read"]) == c["ddr.read_bytes"]
assert num(summary["DDR written"]) == c["ddr.write_bytes"]
rows = p.tables["ops-table"][1:]  # after the header
assert len(rows) == len(ops), (len(rows), len(ops))
by_name = {o["name"]: o for o in ops}
for r in rows:
    o = by_name[r[0]]
    assert num(r[2]) == o["cycles"], (r, o)
    assert num(r[-2]) == o["ddr_read_bytes"] and num(r[-1]) == o["ddr_write_bytes"]
for chart in ("timeline", "roofline", "ddr", "lmem"):
    assert chart in p.ids, chart
assert dom.count("<path") >= 4 and "roof-point" in dom, "charts not drawn"
print(f"report: rendered, {len(rows)} op rows and the summary equal the stats "
      "JSON, no console errors")
PY

# The DDR chart is the channel's record of when it moved bytes: no bin above
# the peak, and its bytes are the run's bus bytes (ResNet-style overlap of
# two GDMA commands used to put bins at 93 GB/s of a 64 GB/s channel).
/usr/bin/python3 - report.html stats.json <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>',
                         html, re.S).group(1))
c = {x["name"]: x["value"] for x in json.load(open(sys.argv[2]))["counters"]}
series = d["ddrSeries"]
assert max(v for _, v in series) <= d["ddrPeakGBps"] * (1 + 1e-12), series
# Seconds per bin: cycles per bin over the clock (peak bytes per second
# over peak bytes per cycle).
bin_s = c["total_cycles"] / len(series) * d["ddrBytesPerCycle"] / (d["ddrPeakGBps"] * 1e9)
chart = sum(v * 1e9 * bin_s for _, v in series)
assert abs(chart - c["ddr.bus_bytes"]) <= 1e-6 * c["ddr.bus_bytes"], (chart, c["ddr.bus_bytes"])
print(f"report: the DDR chart holds the run's {c['ddr.bus_bytes']} bus bytes, none above the peak")
PY

# tpuc explore's report: one Pareto front per workload (model and
# quantisation: two models' latencies do not compete), each front the one
# computed here from results.json.
printf '%s\n' 'models = ["top.mlir"]' 'quantize = ["F16", "BF16"]' \
  'layer_group = ["none", "dp"]' '[machine]' 'chip.npu_num = [32, 64]' \
  'ddr.bandwidth_gbps = [16, 64]' > sweep.toml
"$BIN/tpuc" explore sweep.toml -o sweep 2> /dev/null
timeout 120 chromium "${flags[@]}" --dump-dom "file://$WORK/sweep/report.html" \
  > sweep_dom.html 2> sweep_console.txt
/usr/bin/python3 - sweep/results.json sweep_dom.html sweep_console.txt <<'PY'
import json, re, sys
pts = [p for p in json.load(open(sys.argv[1]))["points"] if p["status"] == "ok"]
dom = open(sys.argv[2]).read()
errors = [l for l in open(sys.argv[3]).read().splitlines()
          if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
assert not errors, "console errors:\n" + "\n".join(errors)
workloads = re.findall(r'data-workload="([^"]*)"', dom)
assert workloads == ["top.mlir F16", "top.mlir BF16"], workloads
# A key that only tells the workloads apart has no (empty) chart heading.
assert "<h3>quantize</h3>" not in dom, "an empty heading for quantize"
assert "<h3>chip.npu_num</h3>" in dom
# The front tables' first cells (the point indices), one table per workload
# in that order.
shown = [sorted(int(i) for i in re.findall(r'<tr class="front-row"><td>(\d+)</td>', t))
         for t in re.split(r'data-workload=', dom)[1:]]
for w, got in zip(["F16", "BF16"], shown):
    mine = [p for p in pts if p["params"]["quantize"] == w]
    want = sorted(a["index"] for a in mine if not any(
        b is not a and b["cost_proxy"] <= a["cost_proxy"] and
        b["latency_us"] <= a["latency_us"] and
        (b["cost_proxy"] < a["cost_proxy"] or b["latency_us"] < a["latency_us"])
        for b in mine))
    assert got == want, (w, got, want)
print(f"explore report: a front per workload ({len(workloads)}), as results.json gives them")
PY
