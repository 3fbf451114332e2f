#!/usr/bin/env bash
# scripts/lib/npz.js against numpy: numpy writes stored and deflated (and
# zip64-flagged) archives of several dtypes; npz.js reads them and writes
# them back; numpy checks that names, dtypes, shapes and values survived.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
arrays = {
    "f32": rng.standard_normal((2, 3, 4)).astype(np.float32),
    "f64": rng.standard_normal(5),
    "i64": np.array([-(2**40), -1, 0, 7, 2**50], dtype=np.int64),
    "i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
    "u8": np.arange(250, 256, dtype=np.uint8),
    "i8": np.array([-128, 127], dtype=np.int8),
    "bool": np.array([[True, False], [False, True]]),
    "scalar": np.float32(3.25),
    "empty": np.zeros((0, 4), dtype=np.float32),
    "name.with.dots/and_slash": np.ones((1,), np.float32),
}
np.savez("stored.npz", **arrays)
np.savez_compressed("deflated.npz", **arrays)
np.save("keys.npy", np.array(list(arrays)))
PY

node -e '
  const npz = require(process.argv[1]);
  for (const f of ["stored.npz", "deflated.npz"]) npz.writeNpz("js_" + f, npz.readNpz(f));
  let failed = false;
  try { npz.readNpz("keys.npy"); failed = true; } catch (e) {}
  if (failed) { console.error("a non-zip file was accepted"); process.exit(1); }
' "$ROOT/scripts/lib/npz.js"

/usr/bin/python3 - <<'PY'
import numpy as np
keys = [str(k) for k in np.load("keys.npy")]
for f in ["stored.npz", "deflated.npz"]:
    a, b = np.load(f), np.load("js_" + f)
    assert list(b.keys()) == keys, (f, list(b.keys()))
    for k in keys:
        assert a[k].dtype == b[k].dtype, (f, k, a[k].dtype, b[k].dtype)
        assert a[k].shape == b[k].shape, (f, k, a[k].shape, b[k].shape)
        assert np.array_equal(a[k], b[k]), (f, k)
print("npz.js: round trip of", len(keys), "arrays x 2 archives ok")
PY
