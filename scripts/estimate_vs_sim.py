#!/usr/bin/env python3
"""The static cost model against the simulator, per bmodel and per group.

For every bmodel given, runs `tpu-estimate` (isa::estimateGroup per command
group) and `tpusim run --mode timing --trace` and prints the ratio
estimate / simulated of the total cycles and the distribution of the
per-group ratios (a group's simulated time is the end of its last command
minus the end of the previous group's, MCU launch included on both sides).

  scripts/estimate_vs_sim.py [--bin BUILD/bin] [-p KEY=VALUE]... MODEL.bmodel...

-p keys go to both tools (machine keys, as `tpusim config` lists them).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def compare(bin_dir, model, params, tmp):
    est_json = os.path.join(tmp, "estimate.json")
    trace_json = os.path.join(tmp, "trace.json")
    stats_json = os.path.join(tmp, "stats.json")
    p = [arg for kv in params for arg in ("-p", kv)]
    run([os.path.join(bin_dir, "tpu-estimate"), model, "--json", est_json] + p)
    run([os.path.join(bin_dir, "tpusim"), "run", model, "--mode", "timing",
         "--trace", trace_json, "--stats", stats_json] + p)
    est = json.load(open(est_json))
    counters = {c["name"]: c["value"]
                for c in json.load(open(stats_json))["counters"]}
    period_ns = 1000.0 / float(
        next(c["value"] for c in json.load(open(stats_json))["config"]
             if c["key"] == "tiu.freq_mhz"))
    ends = {}
    for e in json.load(open(trace_json))["traceEvents"]:
        # Command events carry their command group; the per-op spans of the
        # op track (tpu.* categories) do not.
        if e.get("ph") != "X" or "group" not in e.get("args", {}):
            continue
        g = e["args"]["group"]
        ends[g] = max(ends.get(g, 0.0), e["ts"] + e["dur"])
    ratios, prev = [], 0.0
    for g, group in enumerate(est["groups"]):
        if g not in ends:  # a group without commands
            continue
        sim_cycles = round((ends[g] - prev) * 1000.0 / period_ns)
        prev = ends[g]
        if sim_cycles:
            ratios.append(group["cycles"] / sim_cycles)
    ratios.sort()
    n = len(ratios)
    total = est["cycles"] / counters["total_cycles"]
    line = (f"{os.path.basename(model)}: estimate {est['cycles']} / "
            f"simulated {counters['total_cycles']} cycles = {total:.4f}")
    if n:
        line += (f"; {n} groups: min {ratios[0]:.4f}, p10 "
                 f"{ratios[n // 10]:.4f}, median {ratios[n // 2]:.4f}, max "
                 f"{ratios[-1]:.4f}, within 10 %: "
                 f"{sum(1 for r in ratios if abs(r - 1) <= 0.1)}/{n}")
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("-p", dest="params", action="append", default=[])
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.models:
            compare(args.bin, m, args.params, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
