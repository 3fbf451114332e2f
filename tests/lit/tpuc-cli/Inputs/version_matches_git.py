"""Checks that each tool's --version names the commit its build came from.

usage: version_matches_git.py SRC_ROOT TOOL...

The version is "<x.y.z>" or "<x.y.z> (<describe>)", describe being
`git describe --always --long` with "-dirty" when tracked files changed,
taken at build time (isa/cmake/TpuVersion.cmake). In a git checkout the commit it names must be the
checkout's HEAD (the build directory's tools are rebuilt, and the version
re-taken, by every build); outside one (a source tarball) there is no commit
to name and the version must be the bare project version.
"""
import os
import re
import shutil
import subprocess
import sys


def main():
    src, tools = sys.argv[1], sys.argv[2:]
    git = shutil.which("git")
    head = None
    # A checkout as the build sees one: SRC/.git (a source tree unpacked
    # inside another repository is not one).
    if git and os.path.exists(os.path.join(src, ".git")):
        r = subprocess.run([git, "-C", src, "rev-parse", "HEAD"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            head = r.stdout.strip()
    failed = False
    # Tools of a part not built (TPU_ENABLE_SIMULATOR=OFF) are skipped.
    tools = [t for t in tools if shutil.which(t)]
    if not tools:
        print("none of the tools is on PATH")
        sys.exit(1)
    for tool in tools:
        # The line with the toolchain's version (tpuc-opt prints LLVM's
        # first, as mlir-opt does).
        lines = subprocess.run([tool, "--version"], capture_output=True,
                               text=True, check=True).stdout.splitlines()
        out = next((l.strip() for l in lines if "(tpu-toolchain)" in l),
                   "\n".join(lines))
        m = re.fullmatch(r"\S+ \(tpu-toolchain\) (\d+\.\d+\.\d+)(?: \((.+)\))?",
                         out)
        if not m:
            print(f"{tool}: unexpected version line {out!r}")
            failed = True
            continue
        describe = m.group(2)
        if head is None:
            if describe is not None:
                print(f"{tool}: not a git checkout, yet the version names "
                      f"{describe!r}")
                failed = True
            continue
        # describe: [<tag>-<n>-g]<hash>[-dirty]
        h = re.fullmatch(r"(?:.*-g)?([0-9a-f]{4,40})(?:-dirty)?",
                         describe or "")
        if not h or not head.startswith(h.group(1)):
            print(f"{tool}: version {out!r} does not name HEAD {head} "
                  f"(a build that did not re-take the version?)")
            failed = True
        else:
            print(f"{tool}: {describe} is HEAD")
    sys.exit(1 if failed else 0)


main()
