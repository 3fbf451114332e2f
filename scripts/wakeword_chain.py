#!/usr/bin/python3
"""openWakeWord's streaming chain (melspectrogram -> embedding -> heads) on
espeak-ng clips, with one model run per model and backend (every window of
every clip in one batch), for tests/e2e/wakeword_chain.sh.

    wakeword_chain.py clips --out DIR
        DIR/clips.npz (one int16 array per clip) and DIR/clips.json.
    wakeword_chain.py chain --out DIR --backend ort|tpu [--bin BUILD/bin]
                      [--mode F32|F16]
        Runs the chain on DIR/clips.npz: DIR/<backend>/scores.npz (per clip
        and head, the score after every 1280-sample chunk).
    wakeword_chain.py compare --out DIR --a ort --b tpu_f32
        The table; exit 1 when a clip's detections differ.

Framing (openWakeWord's Python package, utils.AudioFeatures and
Model.predict): every 1280-sample chunk the melspectrogram runs on the last
1760 samples (the chunk and 480 before it) and gives 8 frames of 32,
rescaled as x / 10 + 2; the frame buffer starts as 76 rows of ones; after
each chunk the embedding model runs on the last 76 frames (hop 8 frames =
one chunk) and gives one 96-dim embedding; each head runs on the last N
embeddings (N its input's second dimension: 16, 22 for weather, 34 for the
timer) once there are N. A detection is a score >= 0.5 (the timer: any of
its classes 1..6; 0 is the background). Two departures: the
embedding buffer is not prefilled with embeddings of random noise (each clip
starts with 1 s of its own noise instead), and the first 5 scores are not
zeroed (both chains see the same framing).

Backends:
  ort  the .onnx models through ONNX Runtime (scripts/ort_run.js,
       --per-sample: each window alone, as openWakeWord runs them), except
       hey_rhasspy: the package's .onnx is another network (models/README.md),
       its reference is the .tflite through scripts/tflite_ref.py (numpy).
  tpu  each .tflite: tpuc transform for a batch of all windows -> tpuc deploy
       --quantize MODE (F16 / BF16: with the quantize table `tpuc qtable`
       writes on the same batch, the ops fp16 cannot hold kept in F32) ->
       tpusim run (full mode), one run per model. The
       heads and the melspectrogram are imported for one window and
       re-batched with tpuc transform --batch B (the imported ops are per
       sample): the heads declare batch 1 and spell it out in their
       reshapes, and the melspectrogram clips its output at (max - 80 dB)
       with the maximum over the whole tensor, which --batch makes one
       maximum per window, as each per-chunk run of openWakeWord takes it
       (over the batch the clips would differ, the batch spanning 85 dB and
       no chunk 80, and the scores move by up to 1.8e-3). One window per model is run alone through the batch-1
       bmodel as a check (equal bit for bit).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("TPU_MODELS_CACHE", os.path.join(ROOT, "models", "cache"))
SR = 16000
CHUNK = 1280
CONTEXT = 480  # samples of the previous chunk in each melspectrogram run
MEL_IN = CHUNK + CONTEXT
FRAMES = 76
HEADS = ["alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1",
         "timer_v0.1", "weather_v0.1"]
# The clips: (name, text or None for noise only). Fixed voice, speed, pitch.
# espeak-ng says "mycroft" as "mi-croft" (no head fires on it: kept as a
# near miss); "my croft" is the wake word. The timer head is trained on
# timers with a duration ("set a timer" alone scores 0.001).
CLIPS = [("alexa", "alexa"), ("hey_jarvis", "hey jarvis"), ("hey_my_croft", "hey my croft"),
         ("hey_rhasspy", "hey rhasspy"), ("timer", "set a timer for five minutes"),
         ("weather", "what's the weather"), ("mi_croft", "hey mycroft"),
         ("morning", "good morning everyone"), ("lights", "turn off the kitchen lights"),
         ("noise", None)]
VOICE, SPEED, PITCH, GAIN, NOISE, SEED = "en-us", 150, 50, 0.8, 30.0, 1684


def manifest():
    with open(os.path.join(ROOT, "models", "manifest.json")) as f:
        return {m["file"]: m for m in json.load(f)["tflite"]}


def espeak(text):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.wav")
        subprocess.run(["espeak-ng", "-v", VOICE, "-s", str(SPEED), "-p", str(PITCH),
                        "-w", path, text], check=True)
        with wave.open(path) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
    # Band-limited resampling to 16 kHz (FFT), as scripts/make_int8_sets.py.
    n = int(round(len(x) * SR / rate))
    return np.fft.irfft(np.fft.rfft(x)[: n // 2 + 1], n) * (n / len(x))


def cmd_clips(a):
    rng = np.random.default_rng(SEED)
    clips, meta = {}, []
    for name, text in CLIPS:
        y = espeak(text) * GAIN if text else np.zeros(0)
        # 480 samples of context, 1 s before the speech, >= 0.7 s after, and
        # >= 3 s in all (the timer head needs 34 chunks).
        lead = CONTEXT + SR
        total = max(CONTEXT + 3 * SR, lead + len(y) + int(0.7 * SR))
        total = CONTEXT + (total - CONTEXT + CHUNK - 1) // CHUNK * CHUNK
        audio = np.zeros(total)
        audio[lead:lead + len(y)] = y
        audio += rng.normal(0, NOISE, total)
        clips[name] = np.clip(np.round(audio), -32768, 32767).astype(np.int16)
        meta.append({"name": name, "text": text, "samples": total,
                     "chunks": (total - CONTEXT) // CHUNK})
    os.makedirs(a.out, exist_ok=True)
    np.savez(os.path.join(a.out, "clips.npz"), **clips)
    with open(os.path.join(a.out, "clips.json"), "w") as f:
        json.dump({"voice": VOICE, "speed": SPEED, "pitch": PITCH, "gain": GAIN,
                   "noise_sigma": NOISE, "seed": SEED, "clips": meta}, f, indent=1)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout)
        sys.exit(f"wakeword_chain: failed ({r.returncode}): {' '.join(cmd)}")
    return r.stdout


class Tpu:
    def __init__(self, bin_dir, mode, work):
        self.bin, self.mode, self.work = bin_dir, mode, work
        self.m = manifest()
        self.checks = []

    def __call__(self, model, x):
        """The .tflite \\p model (file stem) on the batch \\p x."""
        e = self.m[model + ".tflite"]
        iname, oname = e["inputs"][0]["name"], e["outputs"][0]["name"]
        w = os.path.join(self.work, model)
        os.makedirs(w, exist_ok=True)
        tfl = os.path.join(CACHE, model + ".tflite")
        top = os.path.join(w, "top.mlir")
        # One window's shape: the heads' declared one; the melspectrogram
        # declares one chunk, [1, 1280], and reads 1760 samples here.
        one_shape = json.dumps([[1] + list(x.shape[1:])], separators=(",", ":"))
        heads = model in HEADS
        if heads or model == "melspectrogram":
            run([f"{self.bin}/tpuc", "transform", tfl, "-o", top, "--input-shapes", one_shape,
                 "--batch", str(len(x))])
        else:
            run([f"{self.bin}/tpuc", "transform", tfl, "-o", top, "--input-shapes",
                 json.dumps([list(x.shape)], separators=(",", ":"))])
        bm = os.path.join(w, "model.bmodel")
        inp = os.path.join(w, "in.npz")
        np.savez(inp, **{iname: x.astype(np.float32)})
        qt = []
        if self.mode in ("F16", "BF16"):
            # The ops whose values the 16-bit type cannot hold on these
            # inputs stay F32 (tpuc qtable; the melspectrogram's STFT powers
            # reach ~1e10).
            q = os.path.join(w, "model.qtable")
            run([f"{self.bin}/tpuc", "qtable", top, "--test-input", inp, "--quantize", self.mode,
                 "-o", q])
            kept = [l for l in open(q) if l.strip() and not l.startswith("#")]
            self.checks.append(f"{model}: {len(kept)} ops kept in F32 (tpuc qtable)")
            qt = ["--quantize-table", q]
        run([f"{self.bin}/tpuc", "deploy", top, "--quantize", self.mode, "--chip", "bm1684x",
             "-o", bm] + qt)
        outp = os.path.join(w, "out.npz")
        run([f"{self.bin}/tpusim", "run", bm, "-i", inp, "-o", outp])
        y = np.load(outp)[oname]
        # The batched bmodel against the batch-1 one on one window (what the
        # batching or the rewrites could break): a head's highest score,
        # the melspectrogram's quietest chunk (its clip floor lowest), the
        # embedding of the loudest window.
        if heads:
            k = int(np.argmax(detect(y.reshape(len(y), -1))))
        elif model == "melspectrogram":
            k = int(np.argmin(y.reshape(len(y), -1).max(1)))
        else:
            k = int(np.argmax(x.reshape(len(x), -1).max(1)))
        run([f"{self.bin}/tpuc", "transform", tfl, "-o", os.path.join(w, "c_top.mlir"),
             "--input-shapes", one_shape])
        run([f"{self.bin}/tpuc", "deploy", os.path.join(w, "c_top.mlir"), "--quantize",
             self.mode, "--chip", "bm1684x", "-o", os.path.join(w, "c.bmodel")] + qt)
        np.savez(os.path.join(w, "c_in.npz"), **{iname: x[k:k + 1].astype(np.float32)})
        run([f"{self.bin}/tpusim", "run", os.path.join(w, "c.bmodel"), "-i",
             os.path.join(w, "c_in.npz"), "-o", os.path.join(w, "c_out.npz")])
        one = np.load(os.path.join(w, "c_out.npz"))[oname]
        if not np.array_equal(one[0], y[k]):
            sys.exit(f"wakeword_chain: {model}: the batched run differs from batch 1 on window {k} "
                     f"(max |diff| {np.abs(one[0].astype(np.float64) - y[k]).max():.3g})")
        self.checks.append(f"{model}: batch {len(x)} == batch 1 on window {k}")
        return y


class Ort:
    def __init__(self, work):
        self.work = work
        self.m = manifest()

    def __call__(self, model, x):
        e = self.m[model + ".tflite"]
        w = os.path.join(self.work, model)
        os.makedirs(w, exist_ok=True)
        if e.get("reference") == "numpy":
            sys.path.insert(0, os.path.join(ROOT, "scripts"))
            import tflite_ref
            mj = tflite_ref.decode(os.path.join(CACHE, model + ".tflite"))
            iname, oname = e["inputs"][0]["name"], e["outputs"][0]["name"]
            return np.concatenate([tflite_ref.reference(mj, {iname: x[b:b + 1]})[oname]
                                   for b in range(len(x))]).astype(np.float32)
        inp, outp = os.path.join(w, "in.npz"), os.path.join(w, "out.npz")
        np.savez(inp, **{e["inputs"][0]["twin"]: x.astype(np.float32)})
        run(["node", os.path.join(ROOT, "scripts", "ort_run.js"),
             os.path.join(CACHE, e["twin"]), inp, outp, "--per-sample"])
        return np.load(outp)[e["outputs"][0]["twin"]]


def cmd_chain(a):
    clips = np.load(os.path.join(a.out, "clips.npz"))
    names = list(clips.files)
    work = os.path.join(a.out, a.tag)
    os.makedirs(work, exist_ok=True)
    be = Ort(work) if a.backend == "ort" else Tpu(os.path.abspath(a.bin), a.mode, work)
    # Melspectrogram: one row per chunk of every clip.
    rows, first = [], {}
    for n in names:
        x = clips[n].astype(np.float32)
        c = (len(x) - CONTEXT) // CHUNK
        first[n] = (len(rows), c)
        rows += [x[i * CHUNK:i * CHUNK + MEL_IN] for i in range(c)]
    mel = be("melspectrogram", np.stack(rows))  # [C, 1, 8, 32]
    if mel.shape[1:] != (1, 8, 32):
        sys.exit(f"wakeword_chain: melspectrogram gave {mel.shape}, expected [C, 1, 8, 32]")
    mel = mel.reshape(len(mel), 8, 32) / np.float32(10) + np.float32(2)
    # Embedding windows: the last 76 frames after every chunk.
    wins = []
    for n in names:
        s, c = first[n]
        buf = np.concatenate([np.ones((FRAMES, 32), np.float32), mel[s:s + c].reshape(-1, 32)])
        wins += [buf[8 * (i + 1):8 * (i + 1) + FRAMES] for i in range(c)]
    emb = be("embedding_model", np.stack(wins)[..., None]).reshape(len(wins), 96)
    scores = {}
    for h in HEADS:
        n_emb = manifest()[h + ".tflite"]["inputs"][0]["shape"][1]
        xs, where = [], []
        for n in names:
            s, c = first[n]
            for i in range(n_emb - 1, c):
                xs.append(emb[s + i - n_emb + 1:s + i + 1])
            where.append((n, len(xs)))
        y = be(h, np.stack(xs))
        y = y.reshape(len(y), -1)
        at = 0
        for n, end in where:
            scores[f"{n}/{h}"] = y[at:end]
            at = end
    np.savez(os.path.join(work, "scores.npz"), **scores)
    for c in getattr(be, "checks", []):
        print("wakeword_chain:", c)


def detect(s):
    """Per-window detection score: the score itself, or for the timer's 7
    softmax classes the highest of classes 1..6 (class 0 is the background;
    openWakeWord scores each timer class as a wake word of its own)."""
    return s[:, 0] if s.shape[1] == 1 else s[:, 1:].max(1)


def cmd_compare(a):
    A = np.load(os.path.join(a.out, a.a, "scores.npz"))
    B = np.load(os.path.join(a.out, a.b, "scores.npz"))
    clips = [c["name"] for c in json.load(open(os.path.join(a.out, "clips.json")))["clips"]]
    heads = [h.split("_v0")[0] for h in HEADS]
    print(f"max score per clip and head, {a.a} / {a.b} (* = detection, score >= 0.5)")
    print("| clip | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    bad, maxdiff, fired, worst = [], 0.0, [], "-"
    for c in clips:
        cells = []
        for h, hn in zip(HEADS, heads):
            sa, sb = A[f"{c}/{h}"], B[f"{c}/{h}"]
            if sa.shape != sb.shape:
                sys.exit(f"wakeword_chain: {c}/{h}: {sa.shape} against {sb.shape} scores")
            d = float(np.abs(sa.astype(np.float64) - sb).max()) if len(sa) else 0.0
            if d > maxdiff:
                maxdiff, worst = d, f"{c}/{hn}"
            da, db = detect(sa), detect(sb)
            ya, yb = bool((da >= 0.5).any()), bool((db >= 0.5).any())
            cells.append(f"{da.max():.3f}{'*' if ya else ''} / {db.max():.3f}{'*' if yb else ''}")
            if ya != yb:
                bad.append(f"{c}/{hn}")
            if ya:
                fired.append(f"{hn} on {c}")
        print(f"| {c} | " + " | ".join(cells) + " |")
    print(f"detections ({a.a}): {', '.join(fired) if fired else 'none'}")
    print(f"max |score difference| over all windows: {maxdiff:.3g} ({worst})")
    if not fired:
        print(f"FAIL: {a.a} detects nothing on any clip: the clips test no detection")
        sys.exit(1)
    if bad:
        print(f"FAIL: detections differ on {', '.join(bad)}")
        sys.exit(1)
    if a.max_diff is not None and maxdiff > a.max_diff:
        print(f"FAIL: max |score difference| {maxdiff:.3g} > {a.max_diff}")
        sys.exit(1)
    print(f"PASS: {a.a} and {a.b} detect the same on every clip and head")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["clips", "chain", "compare"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", choices=["ort", "tpu"])
    ap.add_argument("--bin")
    ap.add_argument("--mode", default="F32")
    ap.add_argument("--tag", help="chain: the result folder (default: the backend, tpu_MODE)")
    ap.add_argument("--a")
    ap.add_argument("--b")
    ap.add_argument("--max-diff", type=float)
    a = ap.parse_args()
    if a.what == "clips":
        cmd_clips(a)
    elif a.what == "chain":
        if not a.backend or (a.backend == "tpu" and not a.bin):
            ap.error("chain needs --backend (and --bin for tpu)")
        a.tag = a.tag or (a.backend if a.backend == "ort" else f"tpu_{a.mode.lower()}")
        cmd_chain(a)
    else:
        if not (a.a and a.b):
            ap.error("compare needs --a and --b")
        cmd_compare(a)


if __name__ == "__main__":
    main()
