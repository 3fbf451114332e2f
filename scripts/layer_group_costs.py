#!/usr/bin/env python3
"""The layer-group cost model against the simulator, group by group.

    layer_group_costs.py --bin BUILD/bin MODEL_TOP.mlir --quantize F16 [--work DIR]
        [--json OUT.json] [DEPLOY_OPTION ...]

Deploys the top module with one command group per top-level op
(--group-per-op: every top-level op of model_final.mlir is exactly one
command group), runs it on tpusim in timing
mode with a trace, and compares, for every tpu.Group, the cycles the
compiler's cost model gave it (<stem>_groups.json, cost_cycles: the static
estimate isa::estimateGroup, launch excluded) with the simulator's time for
its command group (end of its last command minus end of the previous
group's, less the MCU launch). Prints one line per group and the
distribution of estimate / simulated.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quantize", default="F16")
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("model")
    args, extra = ap.parse_known_args()
    work = args.work or os.path.dirname(os.path.abspath(args.model))
    os.makedirs(work, exist_ok=True)
    stem = os.path.join(work, "lgcost")
    tpuc = os.path.join(args.bin, "tpuc")
    tpusim = os.path.join(args.bin, "tpusim")
    subprocess.run([tpuc, "deploy", args.model, "--quantize", args.quantize,
                    "--chip", "bm1684x", "-o", stem + ".bmodel",
                    "--group-per-op"] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([tpusim, "run", stem + ".bmodel", "--mode", "timing",
                    "--trace", stem + "_trace.json", "--stats",
                    stem + "_stats.json"], check=True,
                   stdout=subprocess.DEVNULL)
    groups = json.load(open(stem + "_groups.json"))["groups"]
    stats = json.load(open(stem + "_stats.json"))
    cfg = {c["key"]: c["value"] for c in stats.get("config", [])}
    freq = float(cfg.get("tiu.freq_mhz", 1000))
    launch_ns = float(cfg.get("mcu.group_launch_ns", 1000))
    # Top-level ops of the final module in order: each one emitting commands
    # is one command group.
    silent = ("top.Input", "top.None", "tpu.Weight", "tpu.Reshape")
    order = []
    depth = 0
    for line in open(stem + "_final.mlir"):
        stripped = line.strip()
        m = re.search(r'"(tpu\.\w+|top\.\w+)"', stripped)
        opens = stripped.count("({")
        closes = stripped.count("})")
        if depth == 0 and m and line.startswith("    ") and \
                not line.startswith("     "):
            op = m.group(1)
            if op not in silent:
                name = re.search(r'name = "([^"]*)"', line)
                order.append([op, name.group(1) if name else ""])
        depth += opens - closes
        if closes and depth == 0 and order and order[-1][0] == "tpu.Group":
            name = re.search(r'name = "([^"]*)"', line)
            if name:
                order[-1][1] = name.group(1)
    events = [e for e in json.load(open(stem + "_trace.json"))["traceEvents"]
              if e.get("ph") == "X" and "group" in e.get("args", {})]
    end = {}
    for e in events:
        g = e["args"]["group"]
        end[g] = max(end.get(g, 0.0), e["ts"] + e["dur"])
    by_name = {g["name"]: g for g in groups}
    rows = []
    prev_end = 0.0
    for k, (op, name) in enumerate(order):
        if k not in end:
            continue
        sim_ns = (end[k] - prev_end) * 1000.0 - launch_ns  # trace in us
        prev_end = end[k]
        if op != "tpu.Group" or name not in by_name:
            continue
        g = by_name[name]
        sim_cycles = sim_ns * freq / 1000.0
        ratio = g["cost_cycles"] / sim_cycles if sim_cycles > 0 else float("nan")
        rows.append({"name": name, "ops": len(g["ops"]),
                     "estimate": g["cost_cycles"], "simulated": sim_cycles,
                     "ratio": ratio})
        print(f"{name:>10} {len(g['ops']):3d} ops  estimate {g['cost_cycles']:>10}"
              f"  simulated {sim_cycles:12.0f}  estimate/simulated {ratio:.3f}")
    if not rows:
        print("no layer groups")
        return 0
    ratios = sorted(r["ratio"] for r in rows)
    within = sum(1 for r in ratios if abs(r - 1) <= 0.10)
    total_e = sum(r["estimate"] for r in rows)
    total_s = sum(r["simulated"] for r in rows)
    print(f"groups {len(rows)}: estimate/simulated min {ratios[0]:.3f} "
          f"median {ratios[len(ratios) // 2]:.3f} max {ratios[-1]:.3f}; "
          f"{within} of {len(rows)} within 10 %; all groups "
          f"{total_e / total_s:.3f}")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
