#!/usr/bin/env bash
# Installs the Node packages of the test scripts (package.json at the repo
# root: onnxruntime-node, the float reference) into node_modules/ with
# `npm ci`. Idempotent: does nothing when the locked versions are installed.
# The committed .npmrc skips onnxruntime-node's CUDA download (the CPU runtime
# is bundled in the npm package), so this works with npm as the only network.
# Exit status: 0 installed, 1 failed, 77 the npm registry cannot be reached.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

installed_ok() {
  node -e '
    const want = require("./package-lock.json").packages["node_modules/onnxruntime-node"].version;
    const have = require("./node_modules/onnxruntime-node/package.json").version;
    process.exit(want === have ? 0 : 1);' 2>/dev/null
}

# Several tests may call this at once: one installs, the others wait.
exec 9>"${TMPDIR:-/tmp}/setup_node.$(printf %s "$ROOT" | md5sum | cut -c1-12).lock"
flock 9

if installed_ok; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "setup_node: error: npm is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! npm ping --fetch-timeout=30000 --fetch-retries=1 >/dev/null 2>&1; then
  echo "setup_node: the npm registry cannot be reached; onnxruntime-node not installed" >&2
  exit 77
fi
echo "setup_node: npm ci (onnxruntime-node)"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
installed_ok || { echo "setup_node: error: onnxruntime-node missing after npm ci" >&2; exit 1; }
