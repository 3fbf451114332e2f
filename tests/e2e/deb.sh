#!/usr/bin/env bash
# The Debian package: cpack builds tpu-toolchain_VERSION_amd64.deb from the
# build; its control file declares the Debian packages of every library the
# tools link (dpkg-shlibdeps, checked against ldd of the installed tpuc and
# tpusim), it holds the tools and the docs under /usr, and the tools
# unpacked from it (dpkg-deb -x, no root needed) run the demo flow.
#
#   deb.sh --build BUILD_DIR --work DIR
set -euo pipefail
BUILD="" WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    *) echo "deb.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BUILD" ] && [ -n "$WORK" ] || { echo "need --build and --work" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(realpath "$BUILD")"
rm -rf "$WORK"
mkdir -p "$WORK/root" "$WORK/run"
cd "$WORK"
cpack --config "$BUILD/CPackConfig.cmake" -B "$WORK/pkg" > cpack.log 2>&1 ||
  { cat cpack.log; exit 1; }
deb=$(ls pkg/tpu-toolchain_*_amd64.deb)
dpkg-deb -I "$deb" > control.txt
cat control.txt
grep -q "^ Package: tpu-toolchain$" control.txt
dpkg-deb -c "$deb" > contents.txt
for t in tpuc tpuc-opt tpusim tpu-dis tpu-asm tpu-estimate; do
  grep -q " \./usr/bin/$t$" contents.txt || { echo "deb.sh: no /usr/bin/$t" >&2; exit 1; }
done
grep -q " \./usr/share/tpu-toolchain/bm1684x.cfg$" contents.txt
grep -q " \./usr/share/doc/tpu_toolchain/README.md$" contents.txt
dpkg-deb -x "$deb" root
# Every library the installed tools load belongs to a package that Depends
# names, or to one in the closure of their own dependencies (libLLVM's
# libz3, libxml2, ...: those packages' business, not ours).
depends=$(sed -n 's/^ Depends: //p' control.txt | tr ',' '\n' | sed 's/ (.*//; s/^ *//')
closure=$(apt-cache depends --recurse --important $depends 2>/dev/null |
  sed -n 's/^ *\(Pre\)\{0,1\}Depends: //p; s/^\([a-z0-9][^ ]*\)$/\1/p' |
  sed 's/:amd64$//; s/^<\(.*\)>$/\1/' | sort -u)
for lib in $(ldd root/usr/bin/tpuc root/usr/bin/tpusim | awk '/=>/ {print $3}' | sort -u); do
  real=$(readlink -f "$lib")
  # dpkg's database keeps some libraries under /lib (merged /usr).
  pkg=""
  for p in "$real" "${real#/usr}" "/usr$real" "$lib"; do
    pkg=$(dpkg -S "$p" 2>/dev/null | head -1) && break
  done
  pkg=${pkg%%:*}
  [ -n "$pkg" ] || { echo "deb.sh: no package owns $real" >&2; exit 1; }
  echo "$closure" | grep -qx "$pkg" ||
    { echo "deb.sh: $real ($pkg) is not covered by Depends" >&2; exit 1; }
done
# The unpacked tools run the demo flow (libLLVM/libMLIR through RUNPATH).
cp "$ROOT/models/default/default_cnn.onnx" run/
cd run
export PATH="$WORK/root/usr/bin:/usr/bin:/bin"
tpuc --version
tpuc transform default_cnn.onnx -o model_top.mlir --input-shapes '[[1,3,32,32]]' > /dev/null
tpuc deploy model_top.mlir --quantize F16 --chip bm1684x -o model.bmodel > /dev/null
tpusim run model.bmodel --mode timing | grep -q "^total cycles"
echo "deb: OK ($(basename "$deb"), $(stat -c %s "$WORK/$deb") bytes)"
