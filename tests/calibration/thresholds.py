#!/usr/bin/python3
"""The calibration threshold methods, written independently with numpy, against
the C++ ones (compiler/lib/Calibration/Thresholds.cpp, printed by the
cali-thresholds tool) on fixed histograms; relative tolerance 1e-6.

    thresholds.py --tool build/bin/cali-thresholds

The method definitions are those of compiler/include/tpuc/Calibration/
Thresholds.h; here each is vectorised over bins or candidates.
"""
import argparse
import subprocess
import sys

import numpy as np

LEVELS = 128


def smooth(v, eps=1e-4):
    """MXNet's _smooth_distribution on counts; None where it would raise."""
    zero = v == 0
    nz = np.count_nonzero(~zero)
    if nz == 0:
        return None
    eps1 = eps * np.count_nonzero(zero) / nz
    if eps1 >= 1:
        return None
    out = v + np.where(zero, eps, -eps1)
    return out if np.all(out > 0) else None


def kld(h, w, absmax):
    n = len(h)
    if n < LEVELS or h.sum() == 0 or absmax <= 0:
        return absmax
    tail = np.concatenate([np.cumsum(h[::-1])[::-1], [0.0]])  # tail[i] = sum h[i:]
    divergences = np.full(n + 1, np.inf)
    for i in range(LEVELS, n + 1):
        p = h[:i].copy()
        p[-1] += tail[i]
        width = i // LEVELS
        group = np.minimum(np.arange(i) // width, LEVELS - 1)
        sums = np.bincount(group, weights=h[:i], minlength=LEVELS)
        nonempty = np.bincount(group, weights=(p != 0).astype(float),
                               minlength=LEVELS)
        q = np.where(p != 0, sums[group] / np.maximum(nonempty[group], 1), 0.0)
        ps, qs = smooth(p), smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        divergences[i] = np.sum(ps * np.log(ps / qs))
    if not np.isfinite(divergences).any():
        return absmax
    best = int(np.argmin(divergences))  # first minimum
    return min((best + 0.5) * w, absmax)


def percentile9999(h, w, absmax):
    if h.sum() == 0 or absmax <= 0:
        return absmax
    i = int(np.searchsorted(np.cumsum(h), 0.9999 * h.sum(), side="left"))
    return min((i + 1) * w, absmax)


def mse(h, w, absmax):
    n = len(h)
    if n < LEVELS or h.sum() == 0 or absmax <= 0:
        return absmax
    t = np.arange(LEVELS, n + 1)[:, None] * w          # candidates x 1
    c = (np.arange(n)[None, :] + 0.5) * w              # 1 x bins
    err = np.where(c > t, (c - t) ** 2, (t / 127.0) ** 2 / 12.0)
    expected = (err * h[None, :]).sum(axis=1) / h.sum()
    return min(float(t[int(np.argmin(expected)), 0]), absmax)


def aciq(h, w, absmax, kind):
    if h.sum() == 0 or absmax <= 0:
        return absmax
    c = (np.arange(len(h)) + 0.5) * w
    if kind == "gauss":
        return min(3.92403714 * np.sqrt(np.average(c * c, weights=h)), absmax)
    return min(9.89490303 * np.average(c, weights=h), absmax)


def methods(h, w, mn, mx, absmax):
    return {
        "minmax": absmax,
        "kld": kld(h, w, absmax),
        "percentile9999": percentile9999(h, w, absmax),
        "mse": mse(h, w, absmax),
        "aciq_gauss": aciq(h, w, absmax, "gauss"),
        "aciq_laplace": aciq(h, w, absmax, "laplace"),
    }


def histograms():
    """(name, hist, width, min, max, absmax): fixed by a seed."""
    rng = np.random.default_rng(20240611)
    out = []
    # |N(0, 1)| binned at R = 8 (2048 bins of 1/256), like TensorStats.
    x = np.abs(rng.standard_normal(200000))
    h = np.bincount(np.floor(x * 256).astype(int), minlength=2048)[:2048]
    out.append(("gauss", h, 8 / 2048, -x.max(), x.max(), x.max()))
    # Laplace with a long tail (many empty bins), R = 64.
    x = np.abs(rng.laplace(0, 1.5, 100000))
    x = x[x < 64]
    h = np.bincount(np.floor(x * 32).astype(int), minlength=2048)
    out.append(("laplace", h, 64 / 2048, 0.0, x.max(), x.max()))
    # ReLU output: a spike at 0 and an outlier far out.
    x = np.concatenate([np.zeros(5000), np.abs(rng.standard_normal(20000)),
                        [15.9]])
    h = np.bincount(np.floor(x * 128).astype(int), minlength=2048)
    out.append(("relu_outlier", h, 16 / 2048, 0.0, 15.9, 15.9))
    # Small random counts with holes, 300 bins.
    h = rng.integers(0, 5, 300) * (rng.random(300) < 0.6)
    h[-1] = 3
    out.append(("sparse300", h, 0.01, -2.5, 2.99, 2.999))
    # Fewer bins than quantisation levels: kld and mse fall back to absmax.
    h = rng.integers(1, 50, 100)
    out.append(("short100", h, 0.5, -49.0, 49.7, 49.7))
    # Uniform.
    h = np.full(1500, 7)
    out.append(("uniform", h, 1 / 1024, -1.4, 1.46, 1.464))
    # All zero values (the histogram of a zero tensor): every method absmax.
    out.append(("zero", np.array([10]), 0.0, 0.0, 0.0, 0.0))
    result = []
    for name, h, w, mn, mx, am in out:
        h = np.asarray(h, dtype=float)
        used = np.nonzero(h)[0]
        h = h[: used[-1] + 1] if len(used) else h[:0]
        result.append((name, h, float(w), float(mn), float(mx), float(am)))
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    args = ap.parse_args()
    hists = histograms()
    text = "".join(
        "%r %r %r %r %s\n" % (w, mn, mx, am, " ".join("%d" % v for v in h))
        for _, h, w, mn, mx, am in hists)
    run = subprocess.run([args.tool], input=text, capture_output=True,
                         text=True, check=True)
    lines = run.stdout.splitlines()
    if len(lines) != len(hists):
        sys.exit("thresholds.py: %d result lines for %d histograms"
                 % (len(lines), len(hists)))
    failures = 0
    for (name, h, w, mn, mx, am), line in zip(hists, lines):
        got = dict(kv.split("=") for kv in line.split())
        want = methods(h, w, mn, mx, am)
        if set(got) != set(want):
            sys.exit("thresholds.py: methods %s, expected %s"
                     % (sorted(got), sorted(want)))
        for m, v in want.items():
            g = float(got[m])
            ok = abs(g - v) <= 1e-6 * max(abs(v), 1e-30)
            failures += not ok
            print("%-13s %-15s numpy %.9g  c++ %.9g  %s"
                  % (name, m, v, g, "ok" if ok else "MISMATCH"))
    if failures:
        sys.exit("thresholds.py: %d mismatches" % failures)
    print("thresholds.py: %d histograms x %d methods agree"
          % (len(hists), len(want)))


if __name__ == "__main__":
    main()
