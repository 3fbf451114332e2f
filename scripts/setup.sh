#!/usr/bin/env bash
# Installs every Debian package the toolchain needs to build and test.
# Idempotent and quiet when everything is already there.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache pkg-config g++ git
  # cpack's .deb: dpkg-shlibdeps computes its Depends.
  dpkg-dev
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools clang-19 lld-19 libclang-rt-19-dev
  libsystemc-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev zlib1g-dev libssl-dev
  # Image inputs: PNG and JPEG decoding; PIL writes the test images.
  libpng-dev libjpeg62-turbo-dev python3-pil
  libonnx-testdata python3 python3-onnx python3-numpy
  # ResNet-18 test model, exported with random weights at test time.
  python3-torch python3-torchvision
  # INT8 accuracy data (tests/e2e/int8_accuracy.sh): rendered Chinese and
  # Latin text lines (PP-OCR rec's lines cut from fortunes-zh's Chinese
  # prose and verse), synthetic speech.
  fonts-wqy-microhei fonts-dejavu-core fortunes-zh espeak-ng
  # Arm NN's TFLite parser and reference CPU backend: an independent
  # reference for the TFLite frontend (tests/e2e/armnn.sh).
  python3-pyarmnn libarmnn-cpuref-backend22
  # Headless browser for the test of tpusim's HTML report.
  chromium
  # tpuc explore's Slurm test (tests/e2e/explore_slurm.sh): a single-node
  # cluster started by the test.
  slurm-wlm munge
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js runs the ONNX Runtime reference (npm onnxruntime-node). A machine
# may already carry a newer Node.js with its own npm; only add Debian's when
# there is none, so that a working installation is never replaced.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
