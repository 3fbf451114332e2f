"""Checks the INT8 matmuls of two activations of make_int8_attn.py's model
against numpy (compiler/docs/design.md "INT8"): the scales of the result
types are the calibration table's (symmetric: threshold / 127, or / 255
and uint8 for a non-negative tensor), the multiplier m and right shift r
of each op satisfy m 2^-r ~ s_left s_right / s_out (within half a unit of
m), and the codes the tpu interpreter dumped (tpuc run --dump-all) are the
int32 sums of the operand codes, times m, shifted right by r rounding half
up, saturated: exactly.

    check_int8_attn.py CALI_TABLE MODEL_TPU.mlir TPU_DUMP.npz
"""
import re
import sys

import numpy as np

import int8_table

table_path, mlir_path, dump_path = sys.argv[1:4]
table = int8_table.load(table_path)
dump = np.load(dump_path)
text = open(mlir_path).read()
failures = []


def qtype(name):
    return int8_table.symmetric(table, name)


def attrs(name):
    for line in text.splitlines():
        if '"tpu.MatMul"' in line and f'name = "{name}"' in line:
            m = re.search(r"quant_multiplier = \[(-?\d+)\]", line)
            r = re.search(r"quant_rshift = \[(-?\d+)\]", line)
            return int(m.group(1)), int(r.group(1))
    sys.exit(f"check_int8_attn: no INT8 tpu.MatMul {name} in {mlir_path}")


def check(name, left, right, left_table, right_table):
    a = dump[left].astype(np.int64)
    b = dump[right].astype(np.int64)
    s_a, _ = qtype(left_table)
    s_b, _ = qtype(right_table)
    s_o, signed = qtype(name)
    m, r = attrs(name)
    if abs(m - s_a * s_b / s_o * 2.0 ** r) > 0.5 + 1e-6:
        failures.append(f"{name}: multiplier {m} >> {r} is not {s_a * s_b / s_o}")
    acc = np.matmul(a, b) * m
    y = (acc + (1 << (r - 1))) >> r if r > 0 else acc << -r
    y = np.clip(y, -128, 127) if signed else np.clip(y, 0, 255)
    got = dump[name].astype(np.int64)
    if got.shape != y.shape or (got != y).any():
        bad = int((got != y).sum()) if got.shape == y.shape else got.size
        failures.append(f"{name}: {bad} of {y.size} codes differ from numpy")
    if (dump[name].dtype == np.int8) != signed:
        failures.append(f"{name}: dtype {dump[name].dtype}")


# Q K^T: int8 x int8 in the tables' types of q0 and k0 (reshape and
# transpose keep the codes and types).
check("s0", "q", "kt", "q0", "k0")
# P V: the softmax output quantised to uint8 (non-negative) times int8.
check("o0", "p_uint8", "v", "p", "v0")
if failures:
    print("check_int8_attn: FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("check_int8_attn: s0, o0 exact")
