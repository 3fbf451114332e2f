#!/usr/bin/env bash
# tpusim's HTML report in a real browser: the default CNN (one layer group
# in F16) compiled and simulated with --report; headless Chromium (Debian
# `chromium`) renders the page from disk, with no network. Checks that the
# script ran to the end ("rendered: N ops"), that no console error was
# logged, that the summary and every row of the per-op table show the stats
# JSON's numbers, and that the charts were drawn; writes a screenshot to
# the build tree for people to look at.
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
