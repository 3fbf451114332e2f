#!/usr/bin/env python3
"""Regenerates the candidate lists of ONNX backend node tests.

    scripts/onnx_node_tests.py [--build DIR] [--write]

Runs `tpuc-onnx-test --report` over every node test of libonnx-testdata and
sorts the tests into
  PASS         -> tests/onnx/node_tests_pass.txt
  REJECTED     -> tests/onnx/node_tests_rejected.txt (the importer refuses
                  the model with an error; each entry needs a "# reason")
  UNSUPPORTED  -> not listed (an operator outside OnnxOps.def)
  SKIP         -> not listed (sequence/optional values)
  FAIL         -> printed: a bug to fix (or a tolerance to justify in the
                  pass list as `test rtol=X atol=Y  # reason`)
Lines already in the lists keep their tolerances and reasons; a newly
rejected test gets the importer's message as a provisional reason, marked
"TODO" so a maintainer rewrites it. Without --write the script only prints
what would change.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASS_LIST = os.path.join(ROOT, "tests", "onnx", "node_tests_pass.txt")
REJECTED_LIST = os.path.join(ROOT, "tests", "onnx", "node_tests_rejected.txt")


def read_list(path):
    """Returns (header lines, {test: full line}) of a list file."""
    header, entries = [], {}
    if not os.path.exists(path):
        return header, entries
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            body = line.split("#", 1)[0].strip()
            if not body:
                if not entries:
                    header.append(line)
                continue
            entries[body.split()[0]] = line
    return header, entries


def write_list(path, header, lines):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for line in header:
            f.write(line + "\n")
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="build directory holding bin/tpuc-onnx-test")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the two list files")
    args = parser.parse_args()

    tool = os.path.join(args.build, "bin", "tpuc-onnx-test")
    if not os.path.exists(tool):
        sys.exit(f"onnx_node_tests: {tool} does not exist (build it first)")
    report = subprocess.run([tool, "--report", "--pass-list", PASS_LIST],
                            check=True, capture_output=True, text=True).stdout

    results = {}
    for line in report.splitlines():
        status, rest = line.split(" ", 1)
        name, _, message = rest.partition(" : ")
        results[name.strip()] = (status, message.strip())

    pass_header, passing = read_list(PASS_LIST)
    rej_header, rejected = read_list(REJECTED_LIST)
    new_pass, new_rejected, failing = [], [], []
    for name, (status, message) in sorted(results.items()):
        if status == "PASS":
            new_pass.append(passing.get(name, name))
        elif status == "REJECTED":
            reason = message.split(".onnx: ", 1)[-1]
            if reason.startswith("node '") and "): " in reason:
                reason = reason.split("): ", 1)[1]
            new_rejected.append(rejected.get(name, f"{name}  # TODO reason: {reason}"))
        elif status == "FAIL":
            failing.append(f"{name}: {message}")

    counts = {}
    for status, _ in results.values():
        counts[status] = counts.get(status, 0) + 1
    print("node tests:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for label, old, new in (("pass", passing, new_pass),
                            ("rejected", rejected, new_rejected)):
        names = {line.split()[0] for line in new}
        for name in sorted(names - set(old)):
            print(f"  + {label}: {name}")
        for name in sorted(set(old) - names):
            status = results.get(name, ("MISSING", ""))[0]
            print(f"  - {label}: {name} (now {status})")
    for line in failing:
        print("  FAIL", line)
    if args.write:
        write_list(PASS_LIST, pass_header, new_pass)
        write_list(REJECTED_LIST, rej_header, new_rejected)
        print(f"wrote {PASS_LIST} and {REJECTED_LIST}")


if __name__ == "__main__":
    main()
