#!/usr/bin/python3
"""Scores INT8 outputs against F32 ones for tests/e2e/int8_accuracy.sh.

    int8_eval.py KIND --f32 F.npz --int8 Q.npz [--tpu-mlir M] [--labels L]
                 [--method NAME] [--json OUT]

F.npz and Q.npz hold the model's output for every evaluation sample along
the batch axis (one batched run each: the top interpreter, the INT8 tpu
interpreter). An integer INT8 output is dequantised as (q - zp) * scale with
the !quant.uniform type of its op in M (model_tpu.mlir). Prints one line:
the mean over samples of cosine and Euclidean similarity (1 - ||a-b|| /
||b||), SQNR (dB) pooled over the samples -- the formulas of `tpuc compare` -- and the gate figure of
KIND:
  rec  CTC greedy decode (argmax per step, repeats collapsed, blank 0
       dropped; index i >= 1 is line i-1 of ppocr_keys_v1.txt, the last
       class the space, as PaddleOCR's CTCLabelDecode with use_space_char):
       share of samples whose INT8 text equals F32's; also F32's text
       against the rendered one (informative)
  cls  share of samples whose argmax class equals F32's (also F32 against
       the rendered rotation, informative)
  det, emb, mel  minimum and mean per-sample cosine
"""

import argparse
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("TPU_MODELS_CACHE", os.path.join(ROOT, "models", "cache"))


def dequant(q, name, mlir):
    text = open(mlir).read()
    for line in text.splitlines():
        if f'name = "{name}"' in line:
            m = re.search(r"!quant\.uniform<([iu])8:f32, ([0-9.eE+-]+)(?::(-?\d+))?>>\s*$", line)
            if m:
                return (q.astype(np.float64) - float(m.group(3) or 0)) * float(m.group(2))
    sys.exit(f"int8_eval: no quantised type of {name} in {mlir}")


def sims(a, b):
    a = a.astype(np.float64).ravel(); b = b.astype(np.float64).ravel()
    na, nb, nd = np.linalg.norm(a), np.linalg.norm(b), np.linalg.norm(a - b)
    cos = float(a @ b / (na * nb)) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    euc = float(np.clip(1 - nd / nb, 0, 1)) if nb > 0 else float(nd == 0)
    sqnr = float(10 * np.log10(nb ** 2 / nd ** 2)) if nd > 0 else float("inf")
    return cos, euc, sqnr


def ctc(probs, chars):
    idx = probs.argmax(-1)
    out, prev = [], -1
    for i in idx:
        if i != prev and i != 0:
            out.append(chars[i - 1] if i - 1 < len(chars) else " ")
        prev = i
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["rec", "cls", "det", "emb", "mel"])
    ap.add_argument("--f32", required=True)
    ap.add_argument("--int8", required=True)
    ap.add_argument("--tpu-mlir")
    ap.add_argument("--labels")
    ap.add_argument("--method", default="")
    ap.add_argument("--json")
    a = ap.parse_args()
    F = np.load(a.f32); Q = np.load(a.int8)
    name = list(F.keys())[0]
    f = F[name]; q = Q[name]
    if q.dtype != np.float32:
        q = dequant(q, name, a.tpu_mlir)
    n = f.shape[0]
    per = [sims(q[i], f[i]) for i in range(n)]
    cos, euc = (float(np.mean([p[k] for p in per])) for k in range(2))
    # SQNR pooled over the samples (a mean of dB would be ruled by the
    # samples that happen to match exactly, e.g. saturated softmaxes)
    d = (q.astype(np.float64) - f.astype(np.float64))
    sqnr = float(10 * np.log10((f.astype(np.float64) ** 2).sum() / (d ** 2).sum())) if (d ** 2).sum() > 0 else float("inf")
    res = {"method": a.method, "samples": n, "cosine": cos, "euclid": euc, "sqnr": sqnr,
           "min_cosine": float(min(p[0] for p in per))}
    labels = json.load(open(a.labels, encoding="utf-8")) if a.labels else None
    if a.kind == "rec":
        chars = [l.rstrip("\n") for l in open(os.path.join(CACHE, "ppocr_keys_v1.txt"), encoding="utf-8")]
        if f.shape[-1] != len(chars) + 2:
            sys.exit(f"int8_eval: {f.shape[-1]} classes, dictionary {len(chars)} + blank + space")
        tf = [ctc(f[i], chars) for i in range(n)]
        tq = [ctc(q[i], chars) for i in range(n)]
        res["gate"] = float(np.mean([x == y for x, y in zip(tf, tq)]))
        res["gate_name"] = "INT8 text == F32 text"
        if labels:
            res["f32_correct"] = float(np.mean([x == y for x, y in zip(tf, labels)]))
        res["diff"] = [(i, x, y) for i, (x, y) in enumerate(zip(tf, tq)) if x != y]
    elif a.kind == "cls":
        cf = f.reshape(n, -1).argmax(1); cq = q.reshape(n, -1).argmax(1)
        res["gate"] = float((cf == cq).mean())
        res["gate_name"] = "INT8 class == F32 class"
        if labels:
            res["f32_correct"] = float(np.mean(cf == (np.array(labels) == 180)))
    else:
        res["gate"] = res["min_cosine"]
        res["gate_name"] = "min per-sample cosine"
    extra = f" (F32 reads the rendered truth: {res['f32_correct']:.3f})" if "f32_correct" in res else ""
    print(f"| {a.method:<10} | {cos:.6f} | {euc:.6f} | {sqnr:7.2f} | "
          f"{res['gate_name']}: {res['gate']:.4f}, min cos {res['min_cosine']:.6f} |{extra}")
    if res.get("diff"):
        for i, x, y in res["diff"][:10]:
            print(f"    sample {i}: F32 '{x}' INT8 '{y}'")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fo:
            json.dump(res, fo, ensure_ascii=False)


if __name__ == "__main__":
    main()
