"""Compares the GDMA command counts of two `tpu-dis` listings.

    count_gdma.py less|equal FUSED.dis UNFUSED.dis

Counts the lines of GDMA commands ("gdma N @0x..."), end commands included,
prints both counts and exits 1 unless FUSED has fewer (less) or as many
(equal) as UNFUSED.
"""
import re
import sys


def count(path):
    pattern = re.compile(r"^\s*gdma \d+ @0x")
    with open(path) as f:
        return sum(1 for line in f if pattern.match(line))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("less", "equal"):
        sys.exit("usage: count_gdma.py less|equal FUSED.dis UNFUSED.dis")
    fused, unfused = count(sys.argv[2]), count(sys.argv[3])
    print(f"gdma commands: fused {fused}, unfused {unfused}")
    if fused == 0 or unfused == 0:
        sys.exit("count_gdma.py: no GDMA commands found")
    ok = fused < unfused if sys.argv[1] == "less" else fused == unfused
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
