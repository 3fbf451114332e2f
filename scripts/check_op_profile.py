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
    print(f"op profile: {len(ops) - 1} ops; cycles, DDR bytes, MACs and "
          f"commands add up to the totals ({c['total_cycles']} cycles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
