# Sourced (not run) by the scripts that take a real pretrained model of
# models/manifest.json by name: scripts/bench_models.sh,
# tests/e2e/real_model.sh, tests/models/run_real_models.sh. The caller sets
# ROOT (the repository root).

# Where scripts/fetch_models.sh puts the model files.
MODELS_CACHE="${TPU_MODELS_CACHE:-$ROOT/models/cache}"

# manifest_model NAME: prints "ONNX_PATH SHAPES", SHAPES in the form of
# `tpuc transform --input-shapes` ("[[1,3,48,192]]", one list per input).
# Fails, naming the model, when the manifest does not list it.
manifest_model() {
  /usr/bin/python3 - "$ROOT/models/manifest.json" "$1" "$MODELS_CACHE" <<'PY'
import json, sys
manifest, name, cache = sys.argv[1:]
models = {m["name"]: m for m in json.load(open(manifest))["models"]}
if name not in models:
    sys.exit(f"error: no model '{name}' in {manifest} (have: {', '.join(models)})")
m = models[name]
print(f"{cache}/{m['file']}",
      json.dumps([i["shape"] for i in m["inputs"]], separators=(",", ":")))
PY
}

# manifest_tflite_model NAME: prints "TFLITE_PATH ONNX_TWIN_PATH SHAPES
# SAMPLES REFERENCE" for an entry of the manifest's "tflite" list (SHAPES as
# for manifest_model; SAMPLES inputs to test, default 1; REFERENCE onnx (the
# twin through ONNX Runtime, the default) or numpy (scripts/tflite_ref.py)).
manifest_tflite_model() {
  /usr/bin/python3 - "$ROOT/models/manifest.json" "$1" "$MODELS_CACHE" <<'PY'
import json, sys
manifest, name, cache = sys.argv[1:]
models = {m["name"]: m for m in json.load(open(manifest)).get("tflite", [])}
if name not in models:
    sys.exit(f"error: no tflite model '{name}' in {manifest} (have: {', '.join(models)})")
m = models[name]
print(f"{cache}/{m['file']}", f"{cache}/{m['twin']}",
      json.dumps([i["shape"] for i in m["inputs"]], separators=(",", ":")),
      m.get("samples", 1), m.get("reference", "onnx"))
PY
}

# tflite_rename_twin_outputs NAME IN.npz OUT.npz: copies the arrays of IN
# (keyed by the .onnx twin's output names) to OUT under the TFLite names.
tflite_rename_twin_outputs() {
  /usr/bin/python3 - "$ROOT/models/manifest.json" "$@" <<'PY'
import json, os, sys
import numpy as np
manifest, name, src, dst = sys.argv[1:]
m = {e["name"]: e for e in json.load(open(manifest))["tflite"]}[name]
data = np.load(src)
out = {o["name"]: data[o["twin"]] for o in m["outputs"]}
tmp = dst + ".tmp.npz"
np.savez(tmp, **out)
os.replace(tmp, dst)
PY
}

# stack_npz OUT.npz IN1.npz IN2.npz ...: each array of the inputs stacked
# along a new first axis (one entry per input file), under its name.
stack_npz() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys
import numpy as np
out, ins = sys.argv[1], sys.argv[2:]
data = [np.load(f) for f in ins]
stacked = {k: np.stack([d[k] for d in data]) for k in data[0].files}
tmp = out + ".tmp.npz"
np.savez(tmp, **stacked)
os.replace(tmp, out)
PY
}
