//===- NpzTest.cpp - .npy / .npz reader and writer ------------------------===//
//
// References: files numpy wrote (tests/data/npz/gen_npz.py, with the values
// numpy saw recorded in expected.json), and numpy itself reading our files
// through /usr/bin/python3 when it is installed.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Npz.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Numerics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

using namespace tpu::npz;

namespace {

const std::string kDataDir = std::string(TPU_TEST_DATA_DIR) + "/npz/";

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

nlohmann::json expectedJson() {
  std::ifstream f(kDataDir + "expected.json");
  return nlohmann::json::parse(f);
}

/// A scratch directory removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string tmpl = std::string(TPU_BINARY_DIR) + "/npz-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    char *p = mkdtemp(buf.data());
    EXPECT_NE(p, nullptr);
    dir = p ? p : "";
  }
  ~TempDir() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string path(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

/// Element i of \p a as the integer the JSON holds (float bits, int value).
uint64_t rawElement(const Array &a, size_t i) {
  size_t w = dtypeSize(a.dtype);
  uint64_t v = 0;
  std::memcpy(&v, a.data.data() + i * w, w);
  switch (a.dtype) {
  case DType::I8:
    return uint64_t(int64_t(int8_t(v)));
  case DType::I16:
    return uint64_t(int64_t(int16_t(v)));
  case DType::I32:
    return uint64_t(int64_t(int32_t(v)));
  default:
    return v;
  }
}

void expectMatches(const Array &a, const nlohmann::json &want,
                   const std::string &what) {
  EXPECT_EQ(dtypeName(a.dtype), want["dtype"].get<std::string>()) << what;
  EXPECT_EQ(a.shape, want["shape"].get<std::vector<int64_t>>()) << what;
  const auto &values = want["values"];
  ASSERT_EQ(a.numel(), values.size()) << what;
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t expected = values[i].is_number_unsigned()
                            ? values[i].get<uint64_t>()
                            : uint64_t(values[i].get<int64_t>());
    EXPECT_EQ(rawElement(a, i), expected) << what << " element " << i;
  }
}

TEST(Npz, ReadsFilesNumpyWrote) {
  nlohmann::json expected = expectedJson();
  int files = 0;
  for (auto &[file, members] : expected.items()) {
    if (file == "single.npy")
      continue;
    Npz npz = readNpz(kDataDir + file);
    std::vector<std::string> wantNames;
    for (auto &[name, want] : members.items())
      wantNames.push_back(name);
    std::vector<std::string> names = npz.names();
    // nlohmann::json sorts keys; the file keeps numpy's order, so compare
    // as sets here and check order separately below.
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, wantNames) << file;
    for (auto &[name, want] : members.items())
      expectMatches(npz.get(name), want, file + ":" + name);
    ++files;
  }
  EXPECT_EQ(files, 4);
}

TEST(Npz, KeepsFileOrder) {
  // gen_npz.py saved the arrays in this order (every_dtype()).
  Npz npz = readNpz(kDataDir + "savez_all.npz");
  std::vector<std::string> want = {
      "a_float32", "a_float16", "a_float64", "a_int8",  "a_uint8",  "a_int16",
      "a_uint16",  "a_int32",   "a_uint32",  "a_int64", "a_uint64", "a_bool"};
  EXPECT_EQ(npz.names(), want);
}

TEST(Npz, ReadsNpy) {
  Array a = readNpy(kDataDir + "single.npy");
  expectMatches(a, expectedJson()["single.npy"], "single.npy");
  // np.arange(-6, 6).reshape(3, 4) as int16.
  std::vector<int64_t> v = a.toInt64();
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(v[i], int64_t(i) - 6);
}

TEST(Npz, TypedAccessAndConversions) {
  Npz npz = readNpz(kDataDir + "special.npz");
  // 0-d arrays hold one element and have an empty shape.
  const Array &s = npz.get("scalar_f32");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.numel(), 1u);
  EXPECT_EQ(s.as<float>()[0], 1.5f);
  EXPECT_EQ(npz.get("scalar_i64").as<int64_t>()[0], -1234567890123LL);
  EXPECT_TRUE(npz.get("scalar_bool").as<bool>()[0]);
  EXPECT_THROW(s.as<double>(), tpu::Error);
  // Empty arrays.
  EXPECT_EQ(npz.get("empty_3d").numel(), 0u);
  EXPECT_EQ(npz.get("empty_3d").shape, (std::vector<int64_t>{2, 0, 3}));
  EXPECT_TRUE(npz.get("empty_f32").toFloat().empty());
  // fp16 widened exactly: inf, -inf, nan, 2^-24, -0, 65504, 2^-14, 1/3 ->
  // 0.333251953125 (nearest fp16).
  std::vector<float> f = npz.get("f16_special").toFloat();
  ASSERT_EQ(f.size(), 8u);
  EXPECT_EQ(f[0], INFINITY);
  EXPECT_EQ(f[1], -INFINITY);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(f[4]));
  EXPECT_EQ(f[5], 65504.0f);
  EXPECT_EQ(f[6], std::ldexp(1.0f, -14));
  EXPECT_EQ(f[7], 0.333251953125f);
  // Four-d arange.
  std::vector<float> d4 = npz.get("four_d").toFloat();
  for (size_t i = 0; i < d4.size(); ++i)
    EXPECT_EQ(d4[i], float(i));
}

TEST(Npz, MissingMemberNamesFileAndMembers) {
  Npz npz = readNpz(kDataDir + "descriptors.npz");
  try {
    npz.get("nope");
    FAIL() << "no exception";
  } catch (const tpu::Error &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("descriptors.npz"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("x, y"), std::string::npos) << msg;
  }
  EXPECT_EQ(npz.find("nope"), nullptr);
}

void expectErrorContaining(const std::function<void()> &f,
                           const std::vector<std::string> &needles) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const tpu::Error &e) {
    std::string msg = e.what();
    for (const std::string &n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << msg << " lacks " << n;
  }
}

TEST(Npz, RejectsUnsupportedArrays) {
  expectErrorContaining([] { readNpz(kDataDir + "bad_bigendian.npz"); },
                        {"bad_bigendian.npz", "'x.npy'", "big-endian", ">f4"});
  expectErrorContaining([] { readNpz(kDataDir + "bad_fortran.npz"); },
                        {"bad_fortran.npz", "'x.npy'", "fortran_order"});
  expectErrorContaining([] { readNpz(kDataDir + "bad_complex.npz"); },
                        {"bad_complex.npz", "unsupported dtype", "<c8"});
  expectErrorContaining([] { readNpz(kDataDir + "bad_string.npz"); },
                        {"bad_string.npz", "unsupported dtype", "<U2"});
  expectErrorContaining([] { readNpz(kDataDir + "no_such_file.npz"); },
                        {"no_such_file.npz", "cannot open"});
}

/// Arrays of every dtype with values that depend on the index (the numpy
/// check below recomputes them): element i = i * 3 - 7 converted to the
/// dtype (unsigned: i * 3; bool: i % 3 == 0; fp16 via our encoder).
Npz makeEveryDtype() {
  Npz npz;
  const std::vector<int64_t> shape = {2, 3, 4};
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I8, DType::U8,
                  DType::I16, DType::U16, DType::I32, DType::U32, DType::I64,
                  DType::U64, DType::Bool}) {
    Array a(t, shape);
    for (size_t i = 0; i < a.numel(); ++i) {
      auto v = int64_t(i) * 3 - 7;
      auto u = uint64_t(i) * 3;
      auto *p = a.data.data() + i * dtypeSize(t);
      auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
      switch (t) {
      case DType::F32:
        put(float(v) / 4);
        break;
      case DType::F16:
        put(tpu::isa::fp32ToFp16(float(v) / 4));
        break;
      case DType::F64:
        put(double(v) / 4);
        break;
      case DType::I8:
        put(int8_t(v));
        break;
      case DType::U8:
        put(uint8_t(u));
        break;
      case DType::I16:
        put(int16_t(v));
        break;
      case DType::U16:
        put(uint16_t(u));
        break;
      case DType::I32:
        put(int32_t(v));
        break;
      case DType::U32:
        put(uint32_t(u));
        break;
      case DType::I64:
        put(int64_t(v));
        break;
      case DType::U64:
        put(uint64_t(u));
        break;
      case DType::Bool:
        put(uint8_t(i % 3 == 0));
        break;
      }
    }
    npz.set(std::string("arr_") + dtypeName(t), std::move(a));
  }
  float scalar = 2.25f;
  npz.set("scalar", Array::from<float>({}, &scalar));
  npz.set("empty", Array(DType::I32, {0, 5}));
  return npz;
}

void expectSameNpz(const Npz &a, const Npz &b) {
  ASSERT_EQ(a.names(), b.names());
  for (const auto &[name, arr] : a) {
    const Array &other = b.get(name);
    EXPECT_EQ(arr.dtype, other.dtype) << name;
    EXPECT_EQ(arr.shape, other.shape) << name;
    EXPECT_EQ(arr.data, other.data) << name;
  }
}

TEST(Npz, RoundTripThroughOurReader) {
  TempDir tmp;
  Npz npz = makeEveryDtype();
  for (bool compress : {false, true}) {
    for (bool zip64 : {false, true}) {
      NpzWriteOptions options;
      options.compress = compress;
      options.forceZip64 = zip64;
      std::string path = tmp.path("rt.npz");
      writeNpz(path, npz, options);
      Npz back = readNpz(path);
      expectSameNpz(npz, back);
      EXPECT_EQ(back.source(), path);
    }
  }
  std::string npy = tmp.path("one.npy");
  writeNpy(npy, npz.get("arr_int16"));
  Array a = readNpy(npy);
  EXPECT_EQ(a.data, npz.get("arr_int16").data);
  EXPECT_EQ(a.shape, npz.get("arr_int16").shape);
}

TEST(Npz, WriterIsDeterministicAndCompresses) {
  Npz npz;
  npz.set("zeros", Array(DType::F32, {64, 64}));
  std::vector<uint8_t> a = serializeNpz(npz, {true, false});
  std::vector<uint8_t> b = serializeNpz(npz, {true, false});
  std::vector<uint8_t> stored = serializeNpz(npz, {false, false});
  EXPECT_EQ(a, b);
  // 16 KiB of zeros deflates to far less than it stores.
  EXPECT_LT(a.size() * 10, stored.size());
}

TEST(Npz, WritesArraysHeldElsewhere) {
  // writeNpz of (name, pointer) pairs copies nothing and writes the bytes
  // an Npz of the same arrays serialises to, stored or deflated, with and
  // without zip64 records; the reader (which checks each CRC) reads them.
  Array f(DType::F32, {3, 5});
  for (size_t i = 0; i < f.data.size(); ++i)
    f.data[i] = uint8_t(i * 7 + 1);
  Array b(DType::I8, {70000});
  for (size_t i = 0; i < b.data.size(); ++i)
    b.data[i] = uint8_t(i % 251);
  Array empty(DType::I64, {0, 4});
  Npz npz;
  npz.set("w", f);
  npz.set("big", b);
  npz.set("empty", empty);
  std::vector<std::pair<std::string, const Array *>> held = {
      {"w", &f}, {"big", &b}, {"empty", &empty}};
  TempDir tmp;
  for (bool compress : {false, true})
    for (bool zip64 : {false, true}) {
      NpzWriteOptions options{compress, zip64};
      std::string path = tmp.path("held.npz");
      writeNpz(path, held, options);
      EXPECT_EQ(tpu::isa::bmodel::readFile(path), serializeNpz(npz, options))
          << "compress " << compress << ", zip64 " << zip64;
      expectSameNpz(npz, readNpz(path));
    }
}

TEST(Npz, LargeHeaderNeedsVersion2) {
  // A shape of 30000 ones ("1, " each) has a header over 64 KiB: .npy
  // version 2.0.
  Array a(DType::U8, std::vector<int64_t>(30000, 1));
  std::vector<uint8_t> bytes = serializeNpy(a);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes.size() % 64, 1u); // 64-aligned header + one data byte
  Array back = parseNpy(bytes.data(), bytes.size(), "big-header");
  EXPECT_EQ(back.shape, a.shape);
}

bool haveNumpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

TEST(Npz, NumpyReadsOurFiles) {
  if (!haveNumpy()) {
    // TPU_TESTS_NO_SKIP=1 (.ci/run): scripts/setup.sh installs numpy.
    if (const char *noSkip = std::getenv("TPU_TESTS_NO_SKIP");
        noSkip && std::string(noSkip) == "1")
      FAIL() << "/usr/bin/python3 with numpy not available";
    GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  }
  TempDir tmp;
  // Recomputes makeEveryDtype() in numpy and compares names (in order),
  // dtypes, shapes and values exactly.
  const char *script = R"PY(
import sys
import numpy as np
names = ['float32', 'float16', 'float64', 'int8', 'uint8', 'int16', 'uint16',
         'int32', 'uint32', 'int64', 'uint64', 'bool']
i = np.arange(24)
with np.load(sys.argv[1]) as z:
    assert list(z.files) == ['arr_' + n for n in names] + ['scalar', 'empty'], z.files
    for n in names:
        a = z['arr_' + n]
        assert a.dtype == np.dtype(n) and a.shape == (2, 3, 4), (n, a.dtype, a.shape)
        if n == 'bool':
            want = (i % 3 == 0)
        elif n.startswith('float'):
            want = ((i * 3 - 7) / 4).astype(n)
        elif n.startswith('uint'):
            want = (i * 3).astype(n)
        else:
            want = (i * 3 - 7).astype(n)
        assert np.array_equal(a.reshape(-1), want), (n, a, want)
    assert z['scalar'].shape == () and z['scalar'] == np.float32(2.25)
    assert z['empty'].dtype == np.int32 and z['empty'].shape == (0, 5)
)PY";
  std::string scriptPath = tmp.path("check.py");
  std::ofstream(scriptPath) << script;
  Npz npz = makeEveryDtype();
  for (bool compress : {false, true}) {
    for (bool zip64 : {false, true}) {
      std::string path = tmp.path("ours.npz");
      writeNpz(path, npz, NpzWriteOptions{compress, zip64});
      std::string cmd = "/usr/bin/python3 '" + scriptPath + "' '" + path + "'";
      EXPECT_EQ(std::system(cmd.c_str()), 0)
          << "compress=" << compress << " zip64=" << zip64;
    }
  }
  // A plain .npy through np.load as well.
  std::string npy = tmp.path("one.npy");
  writeNpy(npy, npz.get("arr_float64"));
  std::string cmd = "/usr/bin/python3 -c \"import numpy as np, sys; "
                    "a = np.load(sys.argv[1]); "
                    "assert a.dtype == np.float64 and a.shape == (2, 3, 4); "
                    "assert a.reshape(-1)[5] == 2.0\" '" +
                    npy + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Npz, WriteReplacesAtomically) {
  TempDir tmp;
  std::string path = tmp.path("out.npz");
  Npz first;
  first.set("a", Array(DType::I8, {3}));
  writeNpz(path, first);
  Npz second = makeEveryDtype();
  writeNpz(path, second);
  expectSameNpz(second, readNpz(path));
  // No temporary files are left behind.
  std::string ls = "ls -A '" + tmp.path("") + "' | grep -c tmp";
  EXPECT_NE(std::system((ls + " >/dev/null").c_str()), 0);
  // Unwritable destination: an error, not a crash.
  EXPECT_THROW(writeNpz(tmp.path("no/such/dir/x.npz"), first), tpu::Error);
}

TEST(Npz, SetReplacesInPlace) {
  Npz npz;
  npz.set("a", Array(DType::I8, {1}));
  npz.set("b", Array(DType::I8, {2}));
  npz.set("a", Array(DType::I8, {3}));
  EXPECT_EQ(npz.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(npz.get("a").shape, std::vector<int64_t>{3});
}

TEST(Npz, FromAndTypedHelpers) {
  std::vector<int16_t> v = {1, -2, 3, -4, 5, -6};
  Array a = Array::from<int16_t>({2, 3}, v);
  EXPECT_EQ(a.dtype, DType::I16);
  EXPECT_EQ(a.as<int16_t>()[3], -4);
  EXPECT_EQ(a.toFloat()[5], -6.0f);
  EXPECT_THROW(Array::from<int16_t>({4}, v), tpu::Error);
  float f[2] = {0.5f, -1.0f};
  Array b = Array::fromFloat({2}, f);
  EXPECT_EQ(b.toDouble()[1], -1.0);
  EXPECT_THROW(Array(DType::F32, {-1}), tpu::Error);
  EXPECT_EQ(shapeString({}), "()");
  EXPECT_EQ(shapeString({5}), "(5,)");
  EXPECT_EQ(shapeString({2, 3}), "(2, 3)");
  EXPECT_EQ(dtypeFromDescr("<f2"), DType::F16);
  EXPECT_EQ(dtypeFromDescr("|b1"), DType::Bool);
  EXPECT_EQ(dtypeFromDescr(">i1"), DType::I8); // byte order moot for 1 byte
  EXPECT_EQ(dtypeFromDescr(">f4"), std::nullopt);
  EXPECT_EQ(dtypeFromDescr("<c8"), std::nullopt);
}

//===----------------------------------------------------------------------===//
// Corrupt input
//===----------------------------------------------------------------------===//

const char *const kGoodFiles[] = {"savez_all.npz", "savez_compressed_all.npz",
                                  "special.npz", "descriptors.npz"};

TEST(NpzCorrupt, EveryTruncationThrows) {
  // Any truncation loses (part of) the end record, which closes the file.
  for (const char *file : kGoodFiles) {
    std::vector<uint8_t> bytes = readBytes(kDataDir + file);
    for (size_t n = 0; n < bytes.size(); ++n)
      EXPECT_THROW(parseNpz(bytes.data(), n, file), tpu::Error)
          << file << " truncated to " << n;
  }
  std::vector<uint8_t> npy = readBytes(kDataDir + "single.npy");
  for (size_t n = 0; n < npy.size(); ++n)
    EXPECT_THROW(parseNpy(npy.data(), n, "single.npy"), tpu::Error) << n;
}

/// Parses \p bytes; returns true if it threw tpu::Error, false if it parsed.
/// Anything else (another exception type, a crash) fails the test.
bool throwsTpuError(const std::vector<uint8_t> &bytes, const char *what) {
  try {
    parseNpz(bytes.data(), bytes.size(), what);
    return false;
  } catch (const tpu::Error &) {
    return true;
  }
}

TEST(NpzCorrupt, EveryByteFlipIsErrorOrHarmless) {
  for (const char *file : kGoodFiles) {
    std::vector<uint8_t> bytes = readBytes(kDataDir + file);
    size_t errors = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (uint8_t mask : {uint8_t(0xFF), uint8_t(0x01), uint8_t(0x80)}) {
        std::vector<uint8_t> bad = bytes;
        bad[i] ^= mask;
        errors += throwsTpuError(bad, file);
      }
    }
    // Every flip inside member data breaks the CRC (or the deflate
    // stream), so most flips must be detected.
    EXPECT_GT(errors, bytes.size()) << file;
  }
}

TEST(NpzCorrupt, BadCrcNamesMember) {
  std::vector<uint8_t> bytes = readBytes(kDataDir + "savez_all.npz");
  // The stored data of the first member (a_float32.npy) starts after its
  // local header: 30 bytes + name + extra; flip its last payload byte.
  size_t nameLen = bytes[26] | (bytes[27] << 8);
  size_t extraLen = bytes[28] | (bytes[29] << 8);
  size_t usize = bytes[22] | (bytes[23] << 8) | (bytes[24] << 16);
  size_t last = 30 + nameLen + extraLen + usize - 1;
  bytes[last] ^= 0x40;
  expectErrorContaining([&] { parseNpz(bytes.data(), bytes.size(), "f.npz"); },
                        {"f.npz", "member 'a_float32.npy'", "CRC"});
}

TEST(NpzCorrupt, UnsupportedCompressionMethod) {
  std::vector<uint8_t> bytes = readBytes(kDataDir + "savez_all.npz");
  // Patch the method of the first central record (found by signature).
  const uint8_t sig[] = {0x50, 0x4b, 0x01, 0x02};
  auto it = std::search(bytes.begin(), bytes.end(), sig, sig + 4);
  ASSERT_NE(it, bytes.end());
  constexpr size_t kMethodOffset = 10;
  constexpr uint8_t kBzip2 = 12;
  it[kMethodOffset] = kBzip2;
  expectErrorContaining([&] { parseNpz(bytes.data(), bytes.size(), "m.npz"); },
                        {"m.npz", "a_float32.npy", "compression method 12"});
}

TEST(NpzCorrupt, NotAZip) {
  std::vector<uint8_t> junk(100, 0x41);
  expectErrorContaining([&] { parseNpz(junk.data(), junk.size(), "j.npz"); },
                        {"j.npz", "not a zip"});
  std::vector<uint8_t> npy = readBytes(kDataDir + "single.npy");
  expectErrorContaining([&] { parseNpz(npy.data(), npy.size(), "s.npy"); },
                        {"s.npy", "not a zip"});
}

TEST(NpzCorrupt, BadNpyHeaders) {
  auto npyWith = [](const std::string &header) {
    std::string s = std::string("\x93NUMPY\x01\x00", 8);
    s.push_back(char(header.size() & 0xFF));
    s.push_back(char(header.size() >> 8));
    s += header;
    return std::vector<uint8_t>(s.begin(), s.end());
  };
  auto parse = [](const std::vector<uint8_t> &b) {
    parseNpy(b.data(), b.size(), "h.npy");
  };
  std::vector<uint8_t> ok =
      npyWith("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }\n");
  ok.insert(ok.end(), {1, 0, 2, 0});
  Array a = parseNpy(ok.data(), ok.size(), "ok");
  EXPECT_EQ(a.as<int16_t>()[1], 2);
  // Data one byte short / one byte long.
  std::vector<uint8_t> shortData(ok.begin(), ok.end() - 1);
  expectErrorContaining([&] { parse(shortData); }, {"h.npy", "data size"});
  std::vector<uint8_t> longData = ok;
  longData.push_back(0);
  expectErrorContaining([&] { parse(longData); }, {"data size"});
  expectErrorContaining(
      [&] { parse(npyWith("{'descr': '<i2', 'shape': (2,)}")); },
      {"needs 'descr'"});
  expectErrorContaining(
      [&] {
        parse(npyWith("{'descr': '<i2', 'fortran_order': False, 'shape': (2,"));
      },
      {"bad .npy header"});
  expectErrorContaining(
      [&] {
        parse(npyWith("{'descr': [('a', '<f4')], 'fortran_order': False, "
                      "'shape': (1,)}"));
      },
      {"structured"});
  expectErrorContaining(
      [&] {
        parse(npyWith("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (-1,)}"));
      },
      {"non-negative"});
  expectErrorContaining(
      [&] {
        parse(npyWith("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (99999999999999999999,)}"));
      },
      {"too large"});
  expectErrorContaining(
      [&] {
        parse(npyWith("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (4294967296, 4294967296, 4294967296)}"));
      },
      {"too large"});
  expectErrorContaining(
      [&] { parse(npyWith(std::string(200, '(') + std::string(200, ')'))); },
      {"too deep"});
}

} // namespace
