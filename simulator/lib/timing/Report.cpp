//===- Report.cpp - A self-contained HTML report of one run --------------===//
//
// See Report.h. The page is a fixed template (HTML, CSS and script below)
// plus one JSON object with the run's data; the script draws every table
// and chart from that object, so the page needs nothing but itself.
//
//===----------------------------------------------------------------------===//
#include "tpusim/Report.h"

#include "tpu/isa/Machine.h"

#include <algorithm>
#include <cmath>

namespace tpu::sim {

namespace {

constexpr const char *kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tpusim report</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1200px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; cursor: pointer; user-select: none; }
td.l, th.l { text-align: left; }
#ops-table td.name { max-width: 26em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; text-align: left; }
.bar { display: inline-flex; width: 160px; height: 10px; background: #eee; }
.bar span { display: block; height: 100%; }
.tiu { background: #3b7dd8; } .gdma { background: #e8913a; } .idle { background: #bbb; }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
canvas { border: 1px solid #ccc; }
svg text { font-size: 11px; fill: #333; }
.note { color: #666; font-size: 0.85em; }
</style></head><body>
<h1 id="title">tpusim report</h1>
<section id="summary"><h2>Summary</h2><table id="summary-table"></table>
<details><summary>Machine (every chip and timing key of the run)</summary>
<table id="machine-table"></table></details></section>
<section><h2>Ops</h2>
<p class="note legend">Cycles of the run by op (they add up to the total):
<span class="tiu"></span>a TIU command of the op running<span class="gdma"></span>only its GDMA
commands in flight<span class="idle"></span>neither. Click a column to sort.</p>
<table id="ops-table"><thead><tr></tr></thead><tbody></tbody></table></section>
<section><h2>Timeline</h2>
<p class="note">TIU, GDMA and the op track. Wheel or buttons to zoom, drag to pan.
<button id="zoom-in">zoom in</button> <button id="zoom-out">zoom out</button>
<button id="zoom-reset">whole run</button> <span id="view"></span></p>
<canvas id="timeline" width="1150" height="150"></canvas></section>
<section><h2>Roofline</h2>
<p class="note">Each op: operations (2 per MAC) per DDR byte against operations per cycle;
the ceilings are the cube's peak per precision and the DDR bandwidth of the configuration.</p>
<svg id="roofline" width="760" height="430"></svg></section>
<section><h2>DDR bandwidth over time</h2>
<p class="note">Each GDMA command's DDR bytes spread evenly over its duration (commands in flight
together may add up above the peak for an instant).</p>
<svg id="ddr" width="1150" height="220"></svg></section>
<section><h2>Local-memory occupancy over time</h2>
<p class="note">Per lane: each layer group's peak (the compiler's op map) over the group's span;
single ops and chains run their own kernels and are not shown.</p>
<svg id="lmem" width="1150" height="220"></svg></section>
<p id="status" class="note"></p>
<script id="data" type="application/json">)HTML";

constexpr const char *kTail = R"HTML(</script>
<script>
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('data').textContent);
  var C = {};
  D.stats.counters.forEach(function (c) { C[c.name] = c.value; });
  var NS = 'http://www.w3.org/2000/svg';
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(x) { return Number(x).toLocaleString('en-US'); }
  function pct(x) { return (100 * x).toFixed(1) + ' %'; }
  document.getElementById('title').textContent =
      'tpusim report: ' + D.net + ' (' + D.model + ')';

  // Summary.
  var us = C['total_time_us'];
  var rows = [
    ['latency', fmt(C['total_cycles']) + ' cycles = ' + us.toFixed(3) + ' us'],
    ['TIU busy', pct(C['tiu.busy_share']) + ' (' + fmt(C['tiu.commands']) + ' commands)'],
    ['GDMA busy', pct(C['gdma.busy_share']) + ' (' + fmt(C['gdma.commands']) + ' commands)'],
    ['MAC utilisation', pct(C['tiu.mac_utilisation'])],
    ['DDR read', fmt(C['ddr.read_bytes']) + ' bytes'],
    ['DDR written', fmt(C['ddr.write_bytes']) + ' bytes'],
    ['DDR utilisation', pct(C['ddr.utilisation'])],
    ['command groups', fmt(C['groups'])]
  ];
  var st = document.getElementById('summary-table');
  rows.forEach(function (r) {
    var tr = el('tr'); tr.appendChild(el('th', {'class': 'l'}, r[0]));
    tr.appendChild(el('td', {'class': 'l', 'data-key': r[0]}, r[1])); st.appendChild(tr);
  });
  var mt = document.getElementById('machine-table');
  D.stats.config.forEach(function (c) {
    var tr = el('tr'); tr.appendChild(el('td', {'class': 'l'}, c.key));
    tr.appendChild(el('td', {'class': 'l'}, c.value + ' ' + (c.unit || '')));
    mt.appendChild(tr);
  });

  // Ops table.
  var ops = D.ops || [];
  var cols = [
    ['name', 'op', 'l'], ['type', 'type', 'l'], ['cycles', 'cycles'],
    ['share', '% of run'], ['bar', 'where the cycles went', 'l'],
    ['span_cycles', 'span'], ['tiu_busy_cycles', 'TIU busy'],
    ['gdma_busy_cycles', 'GDMA busy (GDMA clock)'], ['macs', 'MACs'],
    ['mac_utilisation', 'MAC util.'], ['ddr_read_bytes', 'DDR read'],
    ['ddr_write_bytes', 'DDR written']
  ];
  var total = C['total_cycles'] || 1;
  ops.forEach(function (o) { o.share = o.cycles / total; });
  var head = document.querySelector('#ops-table thead tr');
  var sortKey = 'cycles', sortDown = true;
  cols.forEach(function (c) {
    var th = el('th', {'class': c[2] || '', 'data-col': c[0]}, c[1]);
    th.addEventListener('click', function () {
      if (c[0] === 'bar') return;
      if (sortKey === c[0]) sortDown = !sortDown; else { sortKey = c[0]; sortDown = c[2] !== 'l'; }
      fillOps();
    });
    head.appendChild(th);
  });
  function fillOps() {
    var body = document.querySelector('#ops-table tbody');
    while (body.firstChild) body.removeChild(body.firstChild);
    var sorted = ops.slice().sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      var r = (typeof x === 'string') ? x.localeCompare(y) : x - y;
      return sortDown ? -r : r;
    });
    sorted.forEach(function (o) {
      var tr = el('tr', {'class': 'op-row'});
      cols.forEach(function (c) {
        var k = c[0], td;
        if (k === 'bar') {
          td = el('td', {'class': 'l'});
          var bar = el('span', {'class': 'bar', 'title': o.ops || o.name});
          var w = 160 * o.cycles / total;
          var scale = o.cycles > 0 ? Math.max(w, 2) / o.cycles : 0;
          [['tiu', o.tiu_owned_cycles], ['gdma', o.gdma_owned_cycles],
           ['idle', o.cycles - o.tiu_owned_cycles - o.gdma_owned_cycles]].forEach(function (p) {
            bar.appendChild(el('span', {'class': p[0], 'style': 'width:' + (p[1] * scale).toFixed(2) + 'px'}));
          });
          td.appendChild(bar);
        } else if (k === 'name') {
          td = el('td', {'class': 'name', 'title': o.ops || o.name}, o.name);
        } else if (k === 'type') {
          td = el('td', {'class': 'l'}, o.type);
        } else if (k === 'share' || k === 'mac_utilisation') {
          td = el('td', {}, pct(o[k]));
        } else {
          td = el('td', {}, fmt(o[k]));
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }
  fillOps();

  // Timeline: events are [track, start, end, op] in TIU cycles.
  var cv = document.getElementById('timeline'), ctx = cv.getContext('2d');
  var ev = D.events, end = Math.max(total, 1), v0 = 0, v1 = end;
  var palette = ['#3b7dd8', '#e8913a', '#5aa469', '#b05fc1', '#d15c5c', '#3fb6b6', '#a08a2b'];
  function colour(op) { return op < 0 ? '#999' : palette[op % palette.length]; }
  var tracks = ['ops', 'TIU', 'GDMA'], laneH = 36, left = 50;
  function draw() {
    ctx.clearRect(0, 0, cv.width, cv.height);
    ctx.font = '11px sans-serif'; ctx.fillStyle = '#333';
    tracks.forEach(function (t, i) { ctx.fillText(t, 4, 20 + i * (laneH + 8) + laneH / 2); });
    var w = cv.width - left - 4, s = w / (v1 - v0);
    ev.forEach(function (e) {
      if (e[2] < v0 || e[1] > v1) return;
      var x0 = left + Math.max(e[1] - v0, 0) * s, x1 = left + Math.min(e[2] - v0, v1 - v0) * s;
      ctx.fillStyle = colour(e[3]);
      ctx.fillRect(x0, 10 + e[0] * (laneH + 8), Math.max(x1 - x0, 0.5), laneH);
    });
    document.getElementById('view').textContent =
        'cycles ' + fmt(Math.round(v0)) + ' .. ' + fmt(Math.round(v1));
  }
  function zoom(f, at) {
    var c = at === undefined ? (v0 + v1) / 2 : at, half = (v1 - v0) * f / 2;
    half = Math.max(half, 10);
    v0 = Math.max(0, c - half); v1 = Math.min(end, c + half);
    draw();
  }
  document.getElementById('zoom-in').onclick = function () { zoom(0.5); };
  document.getElementById('zoom-out').onclick = function () { zoom(2); };
  document.getElementById('zoom-reset').onclick = function () { v0 = 0; v1 = end; draw(); };
  cv.addEventListener('wheel', function (e) {
    e.preventDefault();
    var r = cv.getBoundingClientRect();
    var at = v0 + (e.clientX - r.left - left) / (cv.width - left - 4) * (v1 - v0);
    zoom(e.deltaY < 0 ? 0.7 : 1.4, at);
  }, {passive: false});
  var drag = null;
  cv.addEventListener('mousedown', function (e) { drag = {x: e.clientX, v0: v0, v1: v1}; });
  window.addEventListener('mouseup', function () { drag = null; });
  cv.addEventListener('mousemove', function (e) {
    if (!drag) return;
    var d = (drag.x - e.clientX) / (cv.width - left - 4) * (drag.v1 - drag.v0);
    d = Math.max(-drag.v0, Math.min(end - drag.v1, d));
    v0 = drag.v0 + d; v1 = drag.v1 + d; draw();
  });
  draw();

  // A line chart of [x, y] points into an svg.
  function chart(id, pts, yLabel, capY, capLabel) {
    var g = document.getElementById(id), W = +g.getAttribute('width'), H = +g.getAttribute('height');
    var L = 60, B = 30, maxY = capY || 0;
    pts.forEach(function (p) { maxY = Math.max(maxY, p[1]); });
    maxY = maxY || 1;
    function X(x) { return L + x / end * (W - L - 10); }
    function Y(y) { return H - B - y / maxY * (H - B - 10); }
    g.appendChild(sv('line', {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#999'}));
    g.appendChild(sv('line', {x1: L, y1: 10, x2: L, y2: H - B, stroke: '#999'}));
    g.appendChild(sv('text', {x: L + 6, y: 12}, yLabel));
    g.appendChild(sv('text', {x: L - 4, y: Y(maxY) + 4, 'text-anchor': 'end'}, maxY.toFixed(1)));
    g.appendChild(sv('text', {x: L - 4, y: H - B + 4, 'text-anchor': 'end'}, '0'));
    g.appendChild(sv('text', {x: W - 10, y: H - 8, 'text-anchor': 'end'}, fmt(end) + ' cycles'));
    if (capY) {
      g.appendChild(sv('line', {x1: L, y1: Y(capY), x2: W - 10, y2: Y(capY), stroke: '#d15c5c', 'stroke-dasharray': '4 3'}));
      g.appendChild(sv('text', {x: W - 12, y: Y(capY) - 4, 'text-anchor': 'end'}, capLabel));
    }
    var d = pts.map(function (p, i) { return (i ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1); }).join(' ');
    g.appendChild(sv('path', {d: d, fill: 'none', stroke: '#3b7dd8', 'stroke-width': 1.5}));
  }
  chart('ddr', D.ddrSeries, 'DDR GB/s', D.ddrPeakGBps, 'peak ' + D.ddrPeakGBps + ' GB/s');
  chart('lmem', D.lmemSeries, 'KiB per lane', D.lmemKiB, 'local memory ' + D.lmemKiB + ' KiB');

  // Roofline (log-log).
  (function () {
    var g = document.getElementById('roofline'), W = 760, H = 430, L = 70, B = 40;
    var pts = ops.filter(function (o) { return o.macs > 0 && o.cycles > 0 && (o.ddr_read_bytes + o.ddr_write_bytes) > 0; });
    var peaks = D.peaks, bw = D.ddrBytesPerCycle;
    var xMin = 0.1, xMax = 10000, yMin = 1, yMax = 1;
    for (var k in peaks) yMax = Math.max(yMax, 2 * peaks[k] * 2);
    function X(x) { return L + (Math.log10(x) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin)) * (W - L - 10); }
    function Y(y) { return H - B - (Math.log10(y) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)) * (H - B - 10); }
    g.appendChild(sv('line', {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#999'}));
    g.appendChild(sv('line', {x1: L, y1: 10, x2: L, y2: H - B, stroke: '#999'}));
    g.appendChild(sv('text', {x: W / 2, y: H - 8, 'text-anchor': 'middle'}, 'operations per DDR byte'));
    g.appendChild(sv('text', {x: 4, y: 14}, 'operations per cycle'));
    [0.1, 1, 10, 100, 1000, 10000].forEach(function (x) {
      g.appendChild(sv('text', {x: X(x), y: H - B + 14, 'text-anchor': x === xMax ? 'end' : 'middle'}, String(x)));
    });
    for (var y = 1; y <= yMax; y *= 10)
      g.appendChild(sv('text', {x: L - 4, y: Y(y) + 4, 'text-anchor': 'end'}, String(y)));
    var names = Object.keys(peaks);
    names.forEach(function (name, i) {
      var peak = 2 * peaks[name], knee = peak / bw;
      var d = 'M' + X(xMin) + ' ' + Y(Math.max(bw * xMin, yMin)) + ' L' + X(Math.min(knee, xMax)) + ' ' + Y(peak) + ' L' + X(xMax) + ' ' + Y(peak);
      g.appendChild(sv('path', {d: d, fill: 'none', stroke: palette[(i + 4) % palette.length], 'stroke-width': 1.2}));
      g.appendChild(sv('text', {x: W - 12, y: Y(peak) - 4, 'text-anchor': 'end'}, name + ' peak ' + fmt(peak) + '/cycle'));
    });
    pts.forEach(function (o, i) {
      var ai = 2 * o.macs / (o.ddr_read_bytes + o.ddr_write_bytes), perf = 2 * o.macs / o.cycles;
      var c = sv('circle', {cx: X(Math.min(Math.max(ai, xMin), xMax)), cy: Y(Math.max(perf, yMin)), r: 4, fill: palette[i % palette.length], 'class': 'roof-point'});
      c.appendChild(sv('title', {}, o.name + ': ' + ai.toFixed(1) + ' op/B, ' + perf.toFixed(0) + ' op/cycle'));
      g.appendChild(c);
    });
  })();
  document.getElementById('status').textContent = 'rendered: ' + ops.length + ' ops, ' + ev.length + ' commands';
})();
</script>
</body></html>
)HTML";

/// JSON text safe inside a <script> element.
std::string scriptSafe(const std::string &json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";
      ++i;
      continue;
    }
    out += json[i];
  }
  return out;
}

} // namespace

std::string renderReport(const ReportInput &in, const SimConfig &cfg) {
  nlohmann::json d;
  d["net"] = in.netName;
  d["model"] = in.modelPath;
  d["stats"] = in.stats;
  d["ops"] = in.stats.contains("ops") ? in.stats["ops"] : nlohmann::json::array();
  uint64_t period = cfg.tiuPeriodPs();
  uint64_t total = 0;
  for (const auto &c : in.stats["counters"])
    if (c["name"] == "total_cycles")
      total = c["value"].get<uint64_t>();
  // Events: [track, start, end, op] in TIU cycles; track 0 = ops, 1 = TIU,
  // 2 = GDMA. The op of a command is the profile's (its map).
  nlohmann::json ev = nlohmann::json::array();
  const std::vector<TraceEvent> &events = *in.events;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent &e = events[i];
    int op = in.profile && i < in.profile->eventOp.size()
                 ? int(in.profile->eventOp[i])
                 : -1;
    ev.push_back({e.engine == isa::Engine::Tiu ? 1 : 2, e.startPs / period,
                  e.endPs / period, op});
  }
  if (in.profile)
    for (size_t i = 0; i < in.profile->ops.size(); ++i) {
      const OpStats &s = in.profile->ops[i];
      if (s.tiuCommands + s.gdmaCommands == 0 || s.name == "(other)")
        continue;
      ev.push_back({0, s.firstPs / period, s.lastPs / period, int(i)});
    }
  d["events"] = std::move(ev);
  // DDR bandwidth over time, in 300 bins, as GB/s: the channel's own
  // record of when it moved bytes (at its peak rate, which the transfers in
  // flight share), so no bin exceeds the peak. (Spreading each command's
  // bytes over its whole duration, start-up and latency included, put
  // overlapping commands above it.)
  const size_t bins = 300;
  std::vector<double> busyPs(bins, 0.0);
  uint64_t end = std::max<uint64_t>(total, 1);
  double binPs = double(end) * double(period) / double(bins);
  if (in.ddrBusy)
    for (auto [a, z] : *in.ddrBusy)
      for (size_t k = size_t(double(a) / binPs);
           k < bins && double(k) * binPs < double(z); ++k) {
        double lo = std::max(double(a), double(k) * binPs);
        double hi = std::min(double(z), double(k + 1) * binPs);
        if (hi > lo)
          busyPs[k] += hi - lo;
      }
  double cyclesPerSecond = cfg.tiuFreqMhz * 1e6;
  nlohmann::json ddr = nlohmann::json::array();
  for (size_t k = 0; k < bins; ++k)
    ddr.push_back({double(k) * double(end) / double(bins),
                   std::min(1.0, busyPs[k] / binPs) * cfg.ddrBandwidthGBps});
  d["ddrSeries"] = std::move(ddr);
  d["ddrPeakGBps"] = cfg.ddrBandwidthGBps;
  d["ddrBytesPerCycle"] = cfg.ddrBandwidthGBps * 1e9 / cyclesPerSecond;
  // Local memory: each group's peak over its span.
  nlohmann::json lmem = nlohmann::json::array();
  lmem.push_back({0.0, 0.0});
  if (in.profile)
    for (const OpStats &s : in.profile->ops) {
      if (s.lmemBytes == 0 || s.tiuCommands + s.gdmaCommands == 0)
        continue;
      double kib = double(s.lmemBytes) / 1024.0;
      double a = double(s.firstPs / period), z = double(s.lastPs / period);
      lmem.push_back({a, 0.0});
      lmem.push_back({a, kib});
      lmem.push_back({z, kib});
      lmem.push_back({z, 0.0});
    }
  lmem.push_back({double(end), 0.0});
  d["lmemSeries"] = std::move(lmem);
  d["lmemKiB"] = double(cfg.chip.lmemBytes) / 1024.0;
  isa::Machine m = cfg.machine();
  d["peaks"] = {{"INT8", m.peakMacsPerCycle(isa::Prec::Int8)},
                {"F16/BF16", m.peakMacsPerCycle(isa::Prec::Fp16)},
                {"F32", m.peakMacsPerCycle(isa::Prec::Fp32)}};
  return std::string(kHead) + scriptSafe(d.dump()) + kTail;
}

} // namespace tpu::sim
