#!/usr/bin/python3
"""Writes the numpy-made .npz/.npy fixtures of tests/unit/isa/NpzTest.cpp.

Run with /usr/bin/python3 (numpy required) from anywhere; the files land next
to this script. expected.json records, for every array, its dtype, shape and
the raw element values as integers (float elements as their bit patterns,
bool as 0/1), so the C++ test compares bit-exactly.
"""
import io
import json
import os
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = ["float32", "float16", "float64", "int8", "uint8", "int16", "uint16",
          "int32", "uint32", "int64", "uint64", "bool"]
BITS_VIEW = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}


def every_dtype():
    """One multi-dimensional array per dtype, with the type's extremes."""
    rng = np.random.default_rng(1684)
    arrays = {}
    for i, name in enumerate(DTYPES):
        dt = np.dtype(name)
        shape = [(2, 3), (4,), (2, 2, 3), (3, 1, 2)][i % 4]
        if dt.kind == "f":
            a = rng.standard_normal(shape).astype(dt)
            a.flat[0] = np.finfo(dt).max
            a.flat[1] = -np.finfo(dt).tiny
        elif dt.kind == "b":
            a = rng.integers(0, 2, shape).astype(dt)
        else:
            info = np.iinfo(dt)
            a = rng.integers(info.min, info.max, shape, dtype=dt,
                             endpoint=True)
            a.flat[0] = info.min
            a.flat[1] = info.max
        arrays["a_" + name] = a
    return arrays


def special():
    """0-d, empty and non-finite arrays."""
    f16 = np.array([np.inf, -np.inf, np.nan, 2.0**-24, -0.0, 65504.0,
                    6.1035156e-05, 1.0 / 3], dtype=np.float16)
    f32 = np.array([np.nan, np.inf, -np.inf, 1e-45, -0.0, 3.4028235e38],
                   dtype=np.float32)
    return {
        "scalar_f32": np.array(1.5, dtype=np.float32),
        "scalar_i64": np.array(-1234567890123, dtype=np.int64),
        "scalar_bool": np.array(True),
        "empty_f32": np.zeros((0,), dtype=np.float32),
        "empty_3d": np.zeros((2, 0, 3), dtype=np.int16),
        "f16_special": f16,
        "f32_special": f32,
        "four_d": np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2),
    }


def record(arrays):
    out = {}
    for name, a in arrays.items():
        view = a.view(BITS_VIEW[a.dtype.name]) if a.dtype.name in BITS_VIEW else a
        out[name] = {
            "dtype": a.dtype.name,
            "shape": list(a.shape),
            "values": [int(v) for v in view.reshape(-1)],
        }
    return out


class Unseekable(io.RawIOBase):
    """A write-only stream without tell/seek: zipfile then writes each
    member's CRC and sizes in a data descriptor after the data."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf += b
        return len(b)

    def tell(self):
        raise OSError("unseekable")

    def seekable(self):
        return False


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def write_with_descriptors(path, arrays):
    sink = Unseekable()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, a in arrays.items():
            with zf.open(name + ".npy", "w") as member:
                member.write(npy_bytes(a))
    with open(path, "wb") as f:
        f.write(bytes(sink.buf))


def main():
    expected = {}
    every = every_dtype()
    np.savez(os.path.join(HERE, "savez_all.npz"), **every)
    expected["savez_all.npz"] = record(every)
    np.savez_compressed(os.path.join(HERE, "savez_compressed_all.npz"), **every)
    expected["savez_compressed_all.npz"] = record(every)
    spec = special()
    np.savez(os.path.join(HERE, "special.npz"), **spec)
    expected["special.npz"] = record(spec)
    desc = {"x": every["a_int32"], "y": spec["f16_special"]}
    write_with_descriptors(os.path.join(HERE, "descriptors.npz"), desc)
    expected["descriptors.npz"] = record(desc)
    single = np.arange(-6, 6, dtype=np.int16).reshape(3, 4)
    np.save(os.path.join(HERE, "single.npy"), single)
    expected["single.npy"] = record({"": single})[""]

    # Files our reader must reject (each with a clear message).
    np.savez(os.path.join(HERE, "bad_bigendian.npz"),
             x=np.arange(4, dtype=">f4"))
    np.savez(os.path.join(HERE, "bad_fortran.npz"),
             x=np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.savez(os.path.join(HERE, "bad_complex.npz"),
             x=np.arange(3, dtype=np.complex64))
    np.savez(os.path.join(HERE, "bad_string.npz"), x=np.array(["ab", "c"]))

    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
