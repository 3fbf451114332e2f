#!/usr/bin/env python3
"""Runs tpusim on copies of a bmodel with one byte changed each.

    byte_flips.py TPUSIM MODEL.bmodel IN.npz WORKDIR [--seed N]
                  [--fb N] [--cmd N] [--coeff N]

The bmodel must come from `tpuc deploy` (the binary section starts with the
coefficients, whose size tpu-dis prints, and the command streams follow).
Each run changes one byte (XOR with a random non-zero value) at a seeded
random position of one region: the FlatBuffer, the command streams, the
coefficients. Every run must either
  - fail with exit status 1, a message "tpusim: error: <file>: ..." that
    names the file, and no output file, or
  - exit 0 with outputs identical (names, dtypes, shapes, bytes) to the
    unchanged bmodel's.
A run that exits 0 with other outputs is "changed". Per region the script
prints "REGION: N runs, R rejected, I identical, C changed"; it exits 1 on a
crash, a hang, an unclear message or a half-written output, and on any
"changed" run outside the command streams (their format carries no check
code: a changed command word that still decodes is a different valid
program). A "changed" run in the commands is listed, not fatal.
"""
import argparse
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import zipfile

HEADER = 64
TIMEOUT = 60


def outputs_of(path):
    """The npz members, name -> raw bytes (header included: dtype, shape)."""
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in sorted(z.namelist())}


def coeff_size(tpudis, model):
    out = subprocess.run([tpudis, model], capture_output=True, text=True,
                         check=True).stdout
    sizes = [int(m) for m in re.findall(r"coeff: address=\S+ size=(\d+)", out)]
    if len(sizes) != 1:
        sys.exit("byte_flips: expected one stage with coefficients")
    return sizes[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tpusim")
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("work")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fb", type=int, default=50)
    ap.add_argument("--cmd", type=int, default=50)
    ap.add_argument("--coeff", type=int, default=5)
    args = ap.parse_args()

    args.tpusim = shutil.which(args.tpusim) or args.tpusim
    os.makedirs(args.work, exist_ok=True)
    data = open(args.model, "rb").read()
    fb_size, bin_size = struct.unpack_from("<II", data, 8)
    tpudis = os.path.join(os.path.dirname(os.path.abspath(args.tpusim)),
                          "tpu-dis")
    n_coeff = coeff_size(tpudis, args.model)
    fb = (HEADER, HEADER + fb_size)
    coeff = (fb[1], fb[1] + n_coeff)
    cmd = (coeff[1], HEADER + fb_size + bin_size)
    if cmd[0] >= cmd[1] or coeff[0] >= coeff[1]:
        sys.exit("byte_flips: the bmodel has no coefficients or no commands")

    base_out = os.path.join(args.work, "base.npz")
    subprocess.run([args.tpusim, "run", args.model, "-i", args.input, "-o",
                    base_out], check=True, capture_output=True)
    base = outputs_of(base_out)

    rng = random.Random(args.seed)
    bad = []
    for region, (lo, hi), count in [("flatbuffer", fb, args.fb),
                                    ("commands", cmd, args.cmd),
                                    ("coefficients", coeff, args.coeff)]:
        stats = {"rejected": 0, "identical": 0, "changed": 0}
        for k in range(count):
            pos = rng.randrange(lo, hi)
            xor = rng.randrange(1, 256)
            flipped = bytearray(data)
            flipped[pos] ^= xor
            name = os.path.join(args.work, "%s_%d.bmodel" % (region, k))
            out = os.path.join(args.work, "%s_%d.npz" % (region, k))
            if os.path.exists(out):
                os.remove(out)
            with open(name, "wb") as f:
                f.write(flipped)
            what = "%s flip %d: byte %d ^= 0x%02x" % (region, k, pos, xor)
            try:
                r = subprocess.run([args.tpusim, "run", name, "-i", args.input,
                                    "-o", out], capture_output=True, text=True, errors="replace",
                                   timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                bad.append(what + ": no answer after %d s" % TIMEOUT)
                continue
            if r.returncode == 0:
                if outputs_of(out) == base:
                    stats["identical"] += 1
                else:
                    stats["changed"] += 1
                    msg = what + ": exit 0 with different outputs"
                    if region == "commands":
                        print("  changed: " + msg)
                    else:
                        bad.append(msg)
                continue
            stats["rejected"] += 1
            # Under AddressSanitizer (scripts/sanitize.sh) an exception
            # leaving a SystemC coroutine stack prints a three-line warning
            # first: ASan cannot follow that stack switch. It is not ours.
            asan_noise = ("ASan is ignoring requested __asan_handle_no_return",
                          "False positive error reports may follow",
                          "https://github.com/google/sanitizers/issues/189")
            err = [l for l in r.stderr.strip().splitlines()
                   if not any(n in l for n in asan_noise)]
            first = err[0] if err else ""
            if r.returncode != 1:
                bad.append("%s: exit status %d (%s)" % (what, r.returncode, first))
            elif not first.startswith("tpusim: error: "):
                bad.append("%s: no 'tpusim: error:' message: %r" % (what, first))
            elif name not in first:
                bad.append("%s: the message does not name the file: %s" % (what, first))
            if os.path.exists(out):
                bad.append(what + ": failed but wrote " + out)
            print("  %s: %s" % (what, first))
        print("%s: %d runs, %d rejected, %d identical, %d changed"
              % (region.upper(), count, stats["rejected"], stats["identical"],
                 stats["changed"]))
    for b in bad:
        print("BAD: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
