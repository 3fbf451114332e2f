#!/usr/bin/env python3
"""Checks a tpusim stats JSON's per-op profile against its totals.

    check_op_profile.py STATS.json [--ops N]

The per-op cycles (with the "(other)" row) must add up to total_cycles, the
per-op DDR bytes read / written and MACs to the run's. Exit 1 naming the
first counter that does not add up; 2 when the stats have no "ops".
"""
import json
import sys


def main():
    stats = json.load(open(sys.argv[1]))
    if "ops" not in stats:
        print(f"{sys.argv[1]}: no per-op profile (no <stem>_ops.json beside "
              "the bmodel?)", file=sys.stderr)
        return 2
    c = {x["name"]: x["value"] for x in stats["counters"]}
    ops = stats["ops"]
    checks = [("cycles", "total_cycles"), ("ddr_read_bytes", "ddr.read_bytes"),
              ("ddr_write_bytes", "ddr.write_bytes"), ("macs", "tiu.macs"),
              ("tiu_commands", "tiu.commands"),
              ("gdma_commands", "gdma.commands")]
    for per_op, total in checks:
        got = sum(o[per_op] for o in ops)
        if got != c[total]:
            print(f"{sys.argv[1]}: per-op {per_op} add up to {got}, "
                  f"{total} is {c[total]}", file=sys.stderr)
            return 1
    # Busy time is a union of intervals: an op's GDMA commands in flight
    # together count once, so no op is busier than the whole run's GDMA;
    # ops whose transfers overlap each count the overlap, so the ops
    # together are at least as busy as the run.
    for engine in ("tiu", "gdma"):
        per_op = [o[f"{engine}_busy_cycles"] for o in ops]
        total = c[f"{engine}.busy_cycles"]
        if max(per_op) > total or sum(per_op) < total:
            print(f"{sys.argv[1]}: per-op {engine}_busy_cycles (largest "
                  f"{max(per_op)}, sum {sum(per_op)}) against "
                  f"{engine}.busy_cycles {total}", file=sys.stderr)
            return 1
    print(f"op profile: {len(ops) - 1} ops; cycles, DDR bytes, MACs and "
          f"commands add up to the totals ({c['total_cycles']} cycles), "
          "busy cycles within them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
