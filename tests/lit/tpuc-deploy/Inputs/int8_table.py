"""The calibration table (TPU-MLIR's text format: `#` comments, then `name
threshold min max` per tensor) and its symmetric INT8 types, as the check
scripts of the INT8 lit tests derive them independently of tpuc.
"""


def load(path):
    """{name: (threshold, min, max)}, the threshold at least 1e-5 (tpuc's
    floor for an all-zero tensor)."""
    table = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, th, lo, hi = line.split()[:4]
        table[name] = (max(float(th), 1e-5), float(lo), float(hi))
    return table


def symmetric(table, name):
    """(scale, signed) of a symmetric INT8 tensor: threshold / 127 signed,
    threshold / 255 unsigned when the calibrated minimum is >= 0."""
    th, lo, _ = table[name]
    return (th / 255.0, False) if lo >= 0 else (th / 127.0, True)
