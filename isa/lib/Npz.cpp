//===- Npz.cpp - numpy .npy / .npz reader and writer ----------------------===//
//
// .npy: magic "\x93NUMPY", version, header length (2 bytes in 1.0, 4 in
// 2.0/3.0), a Python dict literal {'descr', 'fortran_order', 'shape'} padded
// with spaces to a 64-byte boundary and ended by '\n', then the raw data.
//
// .npz: a zip archive of "<name>.npy" members (PKWARE APPNOTE 6.3). The
// reader goes through the central directory (so data descriptors need no
// special handling: the sizes and CRC come from the central record) and
// understands zip64 extra fields and the zip64 end records. The writer
// emits either stored or deflated members with a fixed DOS timestamp, so
// equal inputs give equal files.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Npz.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Numerics.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <sstream>

namespace tpu::npz {

namespace {

//===----------------------------------------------------------------------===//
// dtype table
//===----------------------------------------------------------------------===//

struct DTypeInfo {
  DType type;
  size_t size;
  const char *descr;
  const char *name;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, 4, "<f4", "float32"}, {DType::F16, 2, "<f2", "float16"},
    {DType::F64, 8, "<f8", "float64"}, {DType::I8, 1, "|i1", "int8"},
    {DType::U8, 1, "|u1", "uint8"},    {DType::I16, 2, "<i2", "int16"},
    {DType::U16, 2, "<u2", "uint16"},  {DType::I32, 4, "<i4", "int32"},
    {DType::U32, 4, "<u4", "uint32"},  {DType::I64, 8, "<i8", "int64"},
    {DType::U64, 8, "<u8", "uint64"},  {DType::Bool, 1, "|b1", "bool"},
};

const DTypeInfo &info(DType t) {
  for (const DTypeInfo &i : kDTypes)
    if (i.type == t)
      return i;
  throw Error("npz: invalid dtype code " + std::to_string(unsigned(t)));
}

//===----------------------------------------------------------------------===//
// Little-endian byte access with bounds checks
//===----------------------------------------------------------------------===//

/// Reads little-endian integers from a byte image; every read is bounds
/// checked and an overrun throws naming \p what and the offset.
class ByteReader {
public:
  ByteReader(const uint8_t *bytes, size_t size, const std::string &what)
      : bytes(bytes), size(size), what(what) {}

  void require(uint64_t offset, uint64_t count, std::string_view item) const {
    if (offset > size || count > size - offset) {
      std::ostringstream os;
      os << what << ": truncated: " << item << " at offset " << offset
         << " needs " << count << " bytes, file has " << size;
      throw Error(os.str());
    }
  }
  uint64_t read(uint64_t offset, unsigned width, const char *item) const {
    require(offset, width, item);
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i)
      v |= uint64_t(bytes[offset + i]) << (8 * i);
    return v;
  }
  uint16_t u16(uint64_t offset, const char *item) const {
    return uint16_t(read(offset, 2, item));
  }
  uint32_t u32(uint64_t offset, const char *item) const {
    return uint32_t(read(offset, 4, item));
  }
  uint64_t u64(uint64_t offset, const char *item) const {
    return read(offset, 8, item);
  }
  const uint8_t *at(uint64_t offset) const { return bytes + offset; }
  size_t fileSize() const { return size; }

private:
  const uint8_t *bytes;
  size_t size;
  const std::string &what;
};

void putLE(std::vector<uint8_t> &out, uint64_t v, unsigned width) {
  for (unsigned i = 0; i < width; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
}

//===----------------------------------------------------------------------===//
// .npy header: a Python literal
//===----------------------------------------------------------------------===//

/// A parsed Python literal (only what npy headers contain).
struct PyValue {
  enum Kind { Str, Int, Bool, None, Tuple, List, Dict } kind = None;
  std::string str;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;                      // Tuple, List
  std::vector<std::pair<PyValue, PyValue>> fields; // Dict
};

/// Recursive-descent parser of the dict literal of an npy header.
class PyLiteralParser {
public:
  PyLiteralParser(std::string_view text, const std::string &what)
      : text(text), what(what) {}

  PyValue parseTop() {
    PyValue v = parseValue(0);
    skipSpace();
    if (pos != text.size())
      fail("unexpected text after the header dict");
    return v;
  }

private:
  /// Headers nest at most dict -> tuple; anything deeper is malformed.
  static constexpr int kMaxDepth = 8;

  [[noreturn]] void fail(const std::string &msg) const {
    throw Error(what + ": bad .npy header at character " + std::to_string(pos) +
                ": " + msg);
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  PyValue parseValue(int depth) {
    if (depth > kMaxDepth)
      fail("nesting too deep");
    skipSpace();
    if (pos >= text.size())
      fail("unexpected end");
    char c = text[pos];
    PyValue v;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      v.str = parseString();
    } else if (c == '{') {
      ++pos;
      v.kind = PyValue::Dict;
      while (!consume('}')) {
        PyValue key = parseValue(depth + 1);
        if (!consume(':'))
          fail("expected ':'");
        PyValue value = parseValue(depth + 1);
        v.fields.emplace_back(std::move(key), std::move(value));
        if (!consume(',')) {
          if (!consume('}'))
            fail("expected ',' or '}'");
          break;
        }
      }
    } else if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      ++pos;
      v.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      while (!consume(close)) {
        v.items.push_back(parseValue(depth + 1));
        if (!consume(',')) {
          if (!consume(close))
            fail(std::string("expected ',' or '") + close + "'");
          break;
        }
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Int;
      v.integer = parseInt();
    } else if (consumeWord("True")) {
      v.kind = PyValue::Bool;
      v.boolean = true;
    } else if (consumeWord("False")) {
      v.kind = PyValue::Bool;
    } else if (consumeWord("None")) {
      v.kind = PyValue::None;
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string parseString() {
    char quote = text[pos++];
    std::string s;
    while (pos < text.size() && text[pos] != quote) {
      if (text[pos] == '\\') {
        ++pos;
        if (pos >= text.size())
          break;
      }
      s.push_back(text[pos++]);
    }
    if (pos >= text.size())
      fail("unterminated string");
    ++pos;
    return s;
  }

  int64_t parseInt() {
    bool negative = text[pos] == '-';
    if (negative)
      ++pos;
    if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
      fail("expected a digit");
    int64_t v = 0;
    constexpr int kBase = 10;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      int digit = text[pos++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / kBase)
        fail("integer too large");
      v = v * kBase + digit;
    }
    // Python 2 era headers may write long integers as "3L".
    if (pos < text.size() && text[pos] == 'L')
      ++pos;
    return negative ? -v : v;
  }

  std::string_view text;
  const std::string &what;
  size_t pos = 0;
};

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;
/// magic + major + minor
constexpr size_t kNpyPreambleSize = kNpyMagicSize + 2;
/// numpy pads the header so the data starts on a 64-byte boundary.
constexpr size_t kNpyAlign = 64;
constexpr size_t kNpyV1MaxHeader = 0xFFFF;

/// Checks the dtype descr and explains why an unsupported one is rejected.
DType descrToDType(const PyValue &descr, const std::string &what) {
  if (descr.kind != PyValue::Str)
    throw Error(what + ": unsupported dtype: structured/record dtypes are not "
                       "supported");
  if (std::optional<DType> t = dtypeFromDescr(descr.str))
    return *t;
  std::string s = descr.str;
  if (!s.empty() && s[0] == '>') {
    std::string little = "<" + s.substr(1);
    if (dtypeFromDescr(little))
      throw Error(what + ": big-endian dtype '" + s +
                  "' is not supported (convert with arr.astype('" + little +
                  "'))");
  }
  throw Error(what + ": unsupported dtype '" + s +
              "' (supported: f2 f4 f8 i1 u1 i2 u2 i4 u4 i8 u8 b1, "
              "little-endian)");
}

} // namespace

//===----------------------------------------------------------------------===//
// dtype and shape helpers
//===----------------------------------------------------------------------===//

size_t dtypeSize(DType t) { return info(t).size; }
const char *dtypeDescr(DType t) { return info(t).descr; }
const char *dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromDescr(std::string_view descr) {
  if (descr.size() < 2)
    return std::nullopt;
  char order = descr[0];
  std::string_view code = descr.substr(1);
  for (const DTypeInfo &i : kDTypes) {
    if (code != std::string_view(i.descr).substr(1))
      continue;
    // '<' little, '|' not applicable, '=' native (we only run on
    // little-endian hosts); single-byte types ignore the byte order.
    if (order == '<' || order == '|' || order == '=' ||
        (order == '>' && i.size == 1))
      return i.type;
    return std::nullopt;
  }
  return std::nullopt;
}

size_t shapeNumel(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw Error("npz: negative extent in shape " + shapeString(shape));
    if (d != 0 && n > std::numeric_limits<size_t>::max() / size_t(d))
      throw Error("npz: shape " + shapeString(shape) + " is too large");
    n *= size_t(d);
  }
  return n;
}

void checkInputs(const Npz &inputs, const std::vector<InputSpec> &specs,
                 const std::string &source) {
  auto list = [](const std::vector<std::string> &names) {
    std::string s;
    for (const std::string &n : names)
      s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? std::string("none") : s;
  };
  std::vector<std::string> wanted;
  for (const InputSpec &s : specs)
    wanted.push_back(s.name);
  for (const InputSpec &s : specs) {
    const Array *a = inputs.find(s.name);
    if (!a)
      throw Error(source + ": input '" + s.name +
                  "' is missing (the file holds: " + list(inputs.names()) +
                  ")");
    if (a->shape != s.shape)
      throw Error(source + ": input '" + s.name + "' has shape " +
                  shapeString(a->shape) + ", the model wants " +
                  shapeString(s.shape));
    if (a->dtype == s.dtype || (s.alsoFloat32 && a->dtype == DType::F32))
      continue;
    // A float32 input also takes integers it holds exactly: the compiler
    // keeps every input in f32, also those the ONNX model declares integer.
    bool integer = a->dtype != DType::F16 && a->dtype != DType::F32 &&
                   a->dtype != DType::F64;
    if (s.dtype == DType::F32 && integer) {
      constexpr int64_t kExact = int64_t(1) << 24; // float32's mantissa
      std::vector<int64_t> v = a->toInt64();
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] > kExact || v[i] < -kExact ||
            (a->dtype == DType::U64 && v[i] < 0))
          throw Error(source + ": input '" + s.name + "' (" +
                      dtypeName(a->dtype) + "): element " + std::to_string(i) +
                      " = " + std::to_string(v[i]) +
                      " has no exact float32 value, which the model wants");
      continue;
    }
    throw Error(source + ": input '" + s.name + "' has dtype " +
                dtypeName(a->dtype) + ", the model wants " +
                dtypeName(s.dtype) + " (convert it, e.g. numpy's astype)");
  }
  for (const std::string &name : inputs.names())
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end())
      throw Error(source + ": array '" + name +
                  "' is not an input of the model (inputs: " + list(wanted) +
                  ")");
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

//===----------------------------------------------------------------------===//
// Array
//===----------------------------------------------------------------------===//

Array::Array(DType dtype, std::vector<int64_t> shape)
    : dtype(dtype), shape(std::move(shape)) {
  size_t n = numel();
  size_t elem = dtypeSize(dtype);
  if (n > std::numeric_limits<size_t>::max() / elem)
    throw Error("npz: shape " + shapeString(this->shape) + " is too large");
  data.assign(n * elem, 0);
}

void Array::checkType(DType wanted) const {
  if (dtype != wanted)
    throw Error(std::string("npz: array of dtype ") + dtypeName(dtype) +
                " accessed as " + dtypeName(wanted));
}

void Array::copyIn(Array &a, const void *values) {
  if (a.numel() > 0)
    std::memcpy(a.data.data(), values, a.data.size());
}

void Array::throwSizeMismatch(const Array &a, size_t given) {
  throw Error("npz: " + std::to_string(given) + " values given for shape " +
              shapeString(a.shape) + " (" + std::to_string(a.numel()) +
              " elements)");
}

const uint16_t *Array::bits16() const {
  if (dtypeSize(dtype) != sizeof(uint16_t))
    throw Error(std::string("npz: array of dtype ") + dtypeName(dtype) +
                " accessed as 16-bit patterns");
  return reinterpret_cast<const uint16_t *>(data.data());
}

uint16_t *Array::bits16() {
  return const_cast<uint16_t *>(std::as_const(*this).bits16());
}

namespace {

/// Calls \p f(i, value) for every element, converted to double (fp16
/// exactly, 64-bit integers rounded to nearest double).
template <typename F> void forEachAsDouble(const Array &a, F f) {
  size_t n = a.numel();
  auto load = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, a.data.data() + i * sizeof(T), sizeof(T));
      f(i, double(v));
    }
  };
  switch (a.dtype) {
  case DType::F32:
    return load(float());
  case DType::F64:
    return load(double());
  case DType::I8:
    return load(int8_t());
  case DType::U8:
  case DType::Bool:
    return load(uint8_t());
  case DType::I16:
    return load(int16_t());
  case DType::U16:
    return load(uint16_t());
  case DType::I32:
    return load(int32_t());
  case DType::U32:
    return load(uint32_t());
  case DType::I64:
    return load(int64_t());
  case DType::U64:
    return load(uint64_t());
  case DType::F16:
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, a.data.data() + i * sizeof h, sizeof h);
      f(i, double(isa::fp16ToFp32(h)));
    }
    return;
  }
}

} // namespace

std::vector<float> Array::toFloat() const {
  std::vector<float> out(numel());
  if (dtype == DType::F32) {
    if (!out.empty())
      std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
  if (dtype == DType::I64 || dtype == DType::U64) {
    // Convert directly (int64 -> float rounds once; via double it could
    // round twice).
    for (size_t i = 0; i < out.size(); ++i) {
      if (dtype == DType::I64) {
        int64_t v;
        std::memcpy(&v, data.data() + 8 * i, 8);
        out[i] = float(v);
      } else {
        uint64_t v;
        std::memcpy(&v, data.data() + 8 * i, 8);
        out[i] = float(v);
      }
    }
    return out;
  }
  forEachAsDouble(*this, [&](size_t i, double v) { out[i] = float(v); });
  return out;
}

std::vector<double> Array::toDouble() const {
  std::vector<double> out(numel());
  forEachAsDouble(*this, [&](size_t i, double v) { out[i] = v; });
  return out;
}

std::vector<int64_t> Array::toInt64() const {
  std::vector<int64_t> out(numel());
  if (dtype == DType::I64 || dtype == DType::U64) {
    if (!out.empty())
      std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
  forEachAsDouble(*this, [&](size_t i, double v) {
    // Float -> int64: truncate, NaN -> 0, saturate out of range (values of
    // integer dtypes of up to 32 bits are exact in double).
    out[i] =
        std::isnan(v) ? 0 : isa::roundToInt(v, isa::RoundMode::TowardsZero);
  });
  return out;
}

//===----------------------------------------------------------------------===//
// Npz container
//===----------------------------------------------------------------------===//

void Npz::set(const std::string &name, Array array) {
  auto it = byName.find(name);
  if (it != byName.end()) {
    items[it->second].second = std::move(array);
    return;
  }
  byName.emplace(name, items.size());
  items.emplace_back(name, std::move(array));
}

bool Npz::contains(const std::string &name) const {
  return byName.count(name) != 0;
}

const Array *Npz::find(const std::string &name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &items[it->second].second;
}

Array *Npz::find(const std::string &name) {
  return const_cast<Array *>(std::as_const(*this).find(name));
}

const Array &Npz::get(const std::string &name) const {
  if (const Array *a = find(name))
    return *a;
  std::string have;
  for (const Entry &e : items)
    have += (have.empty() ? "" : ", ") + e.first;
  throw Error((sourceName.empty() ? std::string("npz") : sourceName) +
              ": no array named '" + name +
              "' (has: " + (have.empty() ? "none" : have) + ")");
}

Array &Npz::get(const std::string &name) {
  return const_cast<Array &>(std::as_const(*this).get(name));
}

std::vector<std::string> Npz::names() const {
  std::vector<std::string> out;
  for (const Entry &e : items)
    out.push_back(e.first);
  return out;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

Array parseNpy(const uint8_t *bytes, size_t size, const std::string &what) {
  ByteReader r(bytes, size, what);
  r.require(0, kNpyPreambleSize, "npy magic");
  if (std::memcmp(bytes, kNpyMagic, kNpyMagicSize) != 0)
    throw Error(what + ": not a .npy image (bad magic)");
  unsigned major = bytes[kNpyMagicSize];
  size_t headerLen;
  size_t headerStart;
  if (major == 1) {
    headerLen = r.u16(kNpyPreambleSize, "npy header length");
    headerStart = kNpyPreambleSize + 2;
  } else if (major == 2 || major == 3) {
    headerLen = r.u32(kNpyPreambleSize, "npy header length");
    headerStart = kNpyPreambleSize + 4;
  } else {
    throw Error(what + ": unsupported .npy format version " +
                std::to_string(major));
  }
  r.require(headerStart, headerLen, "npy header");
  // Versions 1 and 2 are latin-1 and 3 is utf-8; the keys and values we
  // accept are ASCII either way.
  std::string_view text(reinterpret_cast<const char *>(bytes + headerStart),
                        headerLen);
  PyValue dict = PyLiteralParser(text, what).parseTop();
  if (dict.kind != PyValue::Dict)
    throw Error(what + ": bad .npy header: not a dict");
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : dict.fields) {
    if (key.kind != PyValue::Str)
      throw Error(what + ": bad .npy header: non-string key");
    if (key.str == "descr")
      descr = &value;
    else if (key.str == "fortran_order")
      fortran = &value;
    else if (key.str == "shape")
      shape = &value;
    else
      throw Error(what + ": bad .npy header: unexpected key '" + key.str + "'");
  }
  if (!descr || !fortran || !shape)
    throw Error(what + ": bad .npy header: needs 'descr', 'fortran_order' "
                       "and 'shape'");
  Array a;
  a.dtype = descrToDType(*descr, what);
  if (fortran->kind != PyValue::Bool)
    throw Error(what + ": bad .npy header: 'fortran_order' is not a bool");
  if (fortran->boolean)
    throw Error(what + ": fortran_order arrays are not supported (save a "
                       "C-contiguous array, e.g. np.ascontiguousarray)");
  if (shape->kind != PyValue::Tuple)
    throw Error(what + ": bad .npy header: 'shape' is not a tuple");
  for (const PyValue &d : shape->items) {
    if (d.kind != PyValue::Int || d.integer < 0)
      throw Error(what + ": bad .npy header: shape entries must be "
                         "non-negative integers");
    a.shape.push_back(d.integer);
  }
  size_t numel;
  try {
    numel = shapeNumel(a.shape);
  } catch (const Error &) {
    throw Error(what + ": shape " + shapeString(a.shape) + " is too large");
  }
  size_t elem = dtypeSize(a.dtype);
  size_t dataStart = headerStart + headerLen;
  size_t available = size - dataStart;
  if (numel > available / elem || numel * elem != available) {
    std::ostringstream os;
    os << what << ": data size mismatch: shape " << shapeString(a.shape)
       << " of " << dtypeName(a.dtype) << " needs "
       << (numel > available / elem
               ? std::string("more than ") + std::to_string(available)
               : std::to_string(numel * elem))
       << " bytes, found " << available;
    throw Error(os.str());
  }
  a.data.assign(bytes + dataStart, bytes + size);
  if (a.dtype == DType::Bool)
    for (uint8_t &b : a.data)
      b = b != 0;
  return a;
}

namespace {

/// The .npy image of \p array up to its data: magic, version, header.
std::vector<uint8_t> npyHeader(const Array &array) {
  size_t numel = array.numel();
  if (array.data.size() != numel * dtypeSize(array.dtype))
    throw Error("npz: array of shape " + shapeString(array.shape) + " and " +
                dtypeName(array.dtype) + " holds " +
                std::to_string(array.data.size()) + " bytes, expected " +
                std::to_string(numel * dtypeSize(array.dtype)));
  std::string header =
      std::string("{'descr': '") + dtypeDescr(array.dtype) +
      "', 'fortran_order': False, 'shape': " + shapeString(array.shape) + ", }";
  // Pad with spaces so that preamble + length + header + '\n' is a multiple
  // of 64, as numpy does.
  size_t lenBytes = 2;
  unsigned major = 1;
  size_t unpadded = kNpyPreambleSize + lenBytes + header.size() + 1;
  size_t padded = (unpadded + kNpyAlign - 1) / kNpyAlign * kNpyAlign;
  if (padded - kNpyPreambleSize - lenBytes > kNpyV1MaxHeader) {
    lenBytes = 4;
    major = 2;
    unpadded = kNpyPreambleSize + lenBytes + header.size() + 1;
    padded = (unpadded + kNpyAlign - 1) / kNpyAlign * kNpyAlign;
  }
  header.append(padded - unpadded, ' ');
  header.push_back('\n');

  std::vector<uint8_t> out;
  out.reserve(padded);
  out.insert(out.end(), kNpyMagic, kNpyMagic + kNpyMagicSize);
  out.push_back(uint8_t(major));
  out.push_back(0);
  putLE(out, header.size(), unsigned(lenBytes));
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

} // namespace

std::vector<uint8_t> serializeNpy(const Array &array) {
  std::vector<uint8_t> out = npyHeader(array);
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

//===----------------------------------------------------------------------===//
// zip
//===----------------------------------------------------------------------===//

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
/// CRC-32 values print as all eight hex digits, as zip tools show them.
constexpr unsigned kCrcHexDigits = 8;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;

constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
/// The end record may be followed by a comment of up to 64 KiB.
constexpr size_t kMaxCommentSize = 0xFFFF;

constexpr uint32_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMax16 = 0xFFFF;

constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflate = 8;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagUtf8 = 1 << 11;

/// "version needed to extract": 2.0 (deflate), 4.5 (zip64).
constexpr uint16_t kVersionDeflate = 20;
constexpr uint16_t kVersionZip64 = 45;
/// "version made by" high byte: 3 = UNIX (so external attributes are a
/// st_mode).
constexpr uint16_t kMadeByUnix = 3 << 8;
/// -rw-r--r-- regular file, in the high half of the external attributes.
constexpr uint32_t kExternalAttrFile = 0100644u << 16;
/// Fixed DOS timestamp 1980-01-01 00:00:00 (day 1, month 1, year 0) for
/// reproducible output.
constexpr uint16_t kDosTime = 0;
constexpr uint16_t kDosDate = (1 << 5) | 1;

/// Deflate cannot expand data by more than about 1032:1; a larger claimed
/// ratio is a corrupt (or hostile) size field, refused before allocating.
constexpr uint64_t kMaxDeflateRatio = 1100;
constexpr uint64_t kDeflateSlack = 1024;
/// zlib's stream counters are 32-bit: feed it in chunks of this size.
constexpr size_t kZlibChunk = size_t(1) << 30;
/// zlib's raw-deflate window (negative = no zlib header).
constexpr int kRawDeflateWindow = -MAX_WBITS;
constexpr int kDeflateMemLevel = 8;

/// The CRC-32 of \p crc's bytes followed by \p data (\p crc: that of none
/// by default).
uint32_t crc32Of(const uint8_t *data, size_t size,
                 uLong crc = crc32(0L, Z_NULL, 0)) {
  while (size > 0) {
    size_t n = std::min(size, kZlibChunk);
    crc = crc32(crc, data, uInt(n));
    data += n;
    size -= n;
  }
  return uint32_t(crc);
}

std::vector<uint8_t> inflateRaw(const uint8_t *in, size_t inSize,
                                size_t outSize, const std::string &what) {
  std::vector<uint8_t> out(outSize);
  z_stream zs{};
  if (inflateInit2(&zs, kRawDeflateWindow) != Z_OK)
    throw Error(what + ": zlib inflateInit failed");
  // Once the declared size is reached, one spare byte detects a stream that
  // would produce more.
  uint8_t spare = 0;
  int rc;
  do {
    if (zs.avail_in == 0 && zs.total_in < inSize) {
      zs.next_in = const_cast<Bytef *>(in + zs.total_in);
      zs.avail_in = uInt(std::min(inSize - zs.total_in, kZlibChunk));
    }
    if (zs.avail_out == 0) {
      if (zs.total_out < outSize) {
        zs.next_out = out.data() + zs.total_out;
        zs.avail_out = uInt(std::min(outSize - zs.total_out, kZlibChunk));
      } else {
        zs.next_out = &spare;
        zs.avail_out = 1;
      }
    }
    rc = inflate(&zs, Z_NO_FLUSH);
  } while (rc == Z_OK && zs.total_out <= outSize);
  uint64_t produced = zs.total_out;
  std::string zmsg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (produced > outSize)
    throw Error(what + ": corrupt deflate data: longer than the declared " +
                std::to_string(outSize) + " bytes");
  if (rc == Z_BUF_ERROR)
    throw Error(what + ": corrupt deflate data: stream ends early after " +
                std::to_string(produced) + " bytes");
  if (rc != Z_STREAM_END)
    throw Error(what + ": corrupt deflate data" +
                (zmsg.empty() ? std::string() : ": " + zmsg));
  if (produced != outSize)
    throw Error(what + ": deflate data gives " + std::to_string(produced) +
                " bytes, the directory says " + std::to_string(outSize));
  return out;
}

std::vector<uint8_t> deflateRaw(const std::vector<uint8_t> &in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kRawDeflateWindow,
                   kDeflateMemLevel, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error("npz: zlib deflateInit failed");
  std::vector<uint8_t> out;
  constexpr size_t kOutChunk = size_t(1) << 16;
  std::vector<uint8_t> buf(kOutChunk);
  size_t inPos = 0;
  int flush;
  do {
    size_t inChunk = std::min(in.size() - inPos, kZlibChunk);
    zs.next_in = const_cast<Bytef *>(in.data() + inPos);
    zs.avail_in = uInt(inChunk);
    inPos += inChunk;
    flush = inPos == in.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      zs.next_out = buf.data();
      zs.avail_out = uInt(buf.size());
      if (deflate(&zs, flush) == Z_STREAM_ERROR) {
        deflateEnd(&zs);
        throw Error("npz: zlib deflate failed");
      }
      out.insert(out.end(), buf.data(),
                 buf.data() + (buf.size() - zs.avail_out));
    } while (zs.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&zs);
  return out;
}

/// Zip64 extended information (extra field 0x0001): the fields whose 32-bit
/// (or 16-bit) slot holds the all-ones marker follow, in this order.
void applyZip64Extra(const ByteReader &r, uint64_t extraStart,
                     uint64_t extraLen, uint64_t &usize, uint64_t &csize,
                     uint64_t *offset, const std::string &what) {
  uint64_t pos = extraStart, end = extraStart + extraLen;
  while (pos + 4 <= end) {
    uint16_t id = r.u16(pos, "extra field id");
    uint16_t len = r.u16(pos + 2, "extra field size");
    uint64_t body = pos + 4;
    if (body + len > end)
      throw Error(what + ": extra field overruns its record");
    if (id == kZip64ExtraId) {
      uint64_t p = body;
      auto take = [&](uint64_t &field, const char *name) {
        if (p + 8 > body + len)
          throw Error(what + ": zip64 extra field lacks the " +
                      std::string(name));
        field = r.u64(p, name);
        p += 8;
      };
      if (usize == kMax32)
        take(usize, "uncompressed size");
      if (csize == kMax32)
        take(csize, "compressed size");
      if (offset && *offset == kMax32)
        take(*offset, "local header offset");
    }
    pos = body + len;
  }
}

struct CentralEntry {
  std::string name;
  uint16_t flags;
  uint16_t method;
  uint32_t crc;
  uint64_t csize;
  uint64_t usize;
  uint64_t localOffset;
};

/// Finds the end records and returns (entry count, directory offset,
/// directory size).
void readEnd(const ByteReader &r, uint64_t &count, uint64_t &cdOffset,
             uint64_t &cdSize, const std::string &what) {
  size_t size = r.fileSize();
  if (size < kEndSize)
    throw Error(what + ": not a zip file (too short for an end record)");
  size_t lowest =
      size - kEndSize > kMaxCommentSize ? size - kEndSize - kMaxCommentSize : 0;
  size_t endPos = size;
  for (size_t p = size - kEndSize + 1; p-- > lowest;) {
    if (r.u32(p, "end record") == kEndSig &&
        p + kEndSize + r.u16(p + 20, "comment length") <= size) {
      endPos = p;
      break;
    }
  }
  if (endPos == size)
    throw Error(what + ": not a zip file (no end of central directory "
                       "record; truncated?)");
  uint16_t disk = r.u16(endPos + 4, "disk number");
  uint16_t cdDisk = r.u16(endPos + 6, "directory disk");
  count = r.u16(endPos + 10, "entry count");
  cdSize = r.u32(endPos + 12, "directory size");
  cdOffset = r.u32(endPos + 16, "directory offset");
  if (endPos >= kZip64LocatorSize &&
      r.u32(endPos - kZip64LocatorSize, "zip64 locator") == kZip64LocatorSig) {
    uint64_t z64 = r.u64(endPos - kZip64LocatorSize + 8, "zip64 end offset");
    r.require(z64, kZip64EndSize, "zip64 end record");
    if (r.u32(z64, "zip64 end record") != kZip64EndSig)
      throw Error(what + ": bad zip64 end record signature at offset " +
                  std::to_string(z64));
    disk = uint16_t(r.u32(z64 + 16, "zip64 disk number") != 0);
    cdDisk = uint16_t(r.u32(z64 + 20, "zip64 directory disk") != 0);
    count = r.u64(z64 + 32, "zip64 entry count");
    cdSize = r.u64(z64 + 40, "zip64 directory size");
    cdOffset = r.u64(z64 + 48, "zip64 directory offset");
  } else if (count == kMax16 || cdSize == kMax32 || cdOffset == kMax32) {
    throw Error(what + ": end record needs zip64 but there is no zip64 "
                       "locator");
  }
  if (disk != 0 || cdDisk != 0)
    throw Error(what + ": multi-disk zip archives are not supported");
  r.require(cdOffset, cdSize, "central directory");
}

std::vector<CentralEntry> readCentral(const ByteReader &r, uint64_t count,
                                      uint64_t cdOffset, uint64_t cdSize,
                                      const std::string &what) {
  std::vector<CentralEntry> entries;
  uint64_t pos = cdOffset, end = cdOffset + cdSize;
  // Each record takes at least kCentralHeaderSize bytes; a count beyond
  // that is corrupt (and must not drive a huge reserve()).
  if (count > cdSize / kCentralHeaderSize)
    throw Error(what + ": central directory of " + std::to_string(cdSize) +
                " bytes cannot hold " + std::to_string(count) + " entries");
  entries.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (pos + kCentralHeaderSize > end ||
        r.u32(pos, "central header") != kCentralHeaderSig)
      throw Error(what + ": bad central directory record " + std::to_string(i) +
                  " at offset " + std::to_string(pos));
    CentralEntry e;
    e.flags = r.u16(pos + 8, "flags");
    e.method = r.u16(pos + 10, "method");
    e.crc = r.u32(pos + 16, "crc");
    e.csize = r.u32(pos + 20, "compressed size");
    e.usize = r.u32(pos + 24, "uncompressed size");
    uint16_t nameLen = r.u16(pos + 28, "name length");
    uint16_t extraLen = r.u16(pos + 30, "extra length");
    uint16_t commentLen = r.u16(pos + 32, "comment length");
    e.localOffset = r.u32(pos + 42, "local header offset");
    uint64_t namePos = pos + kCentralHeaderSize;
    uint64_t recordEnd = namePos + nameLen + extraLen + commentLen;
    if (recordEnd > end)
      throw Error(what + ": central directory record " + std::to_string(i) +
                  " overruns the directory");
    e.name.assign(reinterpret_cast<const char *>(r.at(namePos)), nameLen);
    applyZip64Extra(r, namePos + nameLen, extraLen, e.usize, e.csize,
                    &e.localOffset, what + ": member '" + e.name + "'");
    entries.push_back(std::move(e));
    pos = recordEnd;
  }
  return entries;
}

/// The uncompressed bytes of one member, CRC checked.
/// A member's content: where the image holds it (stored), else inflated
/// into `owned`.
struct Content {
  const uint8_t *data = nullptr;
  size_t size = 0;
  std::vector<uint8_t> owned;
};

Content extract(const ByteReader &r, const CentralEntry &e,
                const std::string &what) {
  if (e.flags & kFlagEncrypted)
    throw Error(what + ": encrypted members are not supported");
  std::string item = "member '" + e.name + "'";
  r.require(e.localOffset, kLocalHeaderSize, "local header of " + item);
  if (r.u32(e.localOffset, "local header") != kLocalHeaderSig)
    throw Error(what + ": bad local header signature at offset " +
                std::to_string(e.localOffset));
  uint16_t nameLen = r.u16(e.localOffset + 26, "local name length");
  uint16_t extraLen = r.u16(e.localOffset + 28, "local extra length");
  uint64_t namePos = e.localOffset + kLocalHeaderSize;
  r.require(namePos, uint64_t(nameLen) + extraLen, "local name of " + item);
  if (std::string_view(reinterpret_cast<const char *>(r.at(namePos)),
                       nameLen) != e.name)
    throw Error(what + ": local header name differs from the directory");
  uint64_t dataPos = namePos + nameLen + extraLen;
  r.require(dataPos, e.csize, "data of " + item);
  const uint8_t *data = r.at(dataPos);
  Content out;
  if (e.method == kMethodStored) {
    if (e.csize != e.usize)
      throw Error(what + ": stored member with compressed size " +
                  std::to_string(e.csize) + " != size " +
                  std::to_string(e.usize));
    out.data = data;
    out.size = size_t(e.csize);
  } else if (e.method == kMethodDeflate) {
    if (e.usize > e.csize * kMaxDeflateRatio + kDeflateSlack)
      throw Error(what + ": implausible uncompressed size " +
                  std::to_string(e.usize) + " for " + std::to_string(e.csize) +
                  " compressed bytes");
    out.owned = inflateRaw(data, e.csize, e.usize, what);
    out.data = out.owned.data();
    out.size = out.owned.size();
  } else {
    throw Error(what + ": compression method " + std::to_string(e.method) +
                " is not supported (only stored and deflate)");
  }
  uint32_t crc = crc32Of(out.data, out.size);
  if (crc != e.crc)
    throw Error(what + ": bad CRC-32 (directory " +
                isa::formatHex(e.crc, kCrcHexDigits) + ", data " +
                isa::formatHex(crc, kCrcHexDigits) + ")");
  return out;
}

constexpr std::string_view kNpySuffix = ".npy";

} // namespace

Npz parseNpz(const uint8_t *bytes, size_t size, const std::string &what) {
  ByteReader r(bytes, size, what);
  uint64_t count, cdOffset, cdSize;
  readEnd(r, count, cdOffset, cdSize, what);
  Npz npz;
  npz.setSource(what);
  for (const CentralEntry &e : readCentral(r, count, cdOffset, cdSize, what)) {
    if (!e.name.empty() && e.name.back() == '/')
      continue; // a directory entry
    std::string member = what + ": member '" + e.name + "'";
    Content content = extract(r, e, member);
    std::string name = e.name;
    if (name.size() >= kNpySuffix.size() &&
        name.compare(name.size() - kNpySuffix.size(), kNpySuffix.size(),
                     kNpySuffix) == 0)
      name.resize(name.size() - kNpySuffix.size());
    if (npz.contains(name))
      throw Error(member + ": duplicate array name '" + name + "'");
    npz.set(name, parseNpy(content.data, content.size, member));
  }
  return npz;
}

namespace {

/// A zip image as pieces: the records it builds, which it owns, and the
/// stored arrays' data, which it points to (no copy of a large array).
struct NpzParts {
  std::deque<std::vector<uint8_t>> owned;
  std::vector<isa::bmodel::ByteSpan> spans;
  uint64_t size = 0;

  void add(const uint8_t *data, size_t n) {
    if (n)
      spans.push_back({data, n});
    size += n;
  }
  void add(std::vector<uint8_t> bytes) {
    owned.push_back(std::move(bytes));
    add(owned.back().data(), owned.back().size());
  }
};

using NamedArrays = std::vector<std::pair<std::string, const Array *>>;

NpzParts npzParts(const NamedArrays &arrays, const NpzWriteOptions &options) {
  NpzParts parts;
  std::vector<uint8_t> central;
  uint64_t count = 0;
  for (const auto &[name, arrayPtr] : arrays) {
    const Array &array = *arrayPtr;
    std::string member = name + std::string(kNpySuffix);
    if (member.size() > kMax16)
      throw Error("npz: array name '" + name.substr(0, 64) +
                  "...' is too long for a zip member");
    std::vector<uint8_t> header = npyHeader(array);
    uint32_t crc = crc32Of(array.data.data(), array.data.size(),
                           crc32Of(header.data(), header.size()));
    std::vector<uint8_t> deflated;
    if (options.compress) {
      std::vector<uint8_t> raw = header;
      raw.insert(raw.end(), array.data.begin(), array.data.end());
      deflated = deflateRaw(raw);
    }
    uint64_t usize = header.size() + array.data.size();
    uint64_t csize = options.compress ? deflated.size() : usize;
    uint64_t offset = parts.size;
    std::vector<uint8_t> out;
    bool sizes64 = options.forceZip64 || usize >= kMax32 || csize >= kMax32;
    bool offset64 = options.forceZip64 || offset >= kMax32;
    bool zip64 = sizes64 || offset64;
    uint16_t method = options.compress ? kMethodDeflate : kMethodStored;
    uint16_t version = zip64 ? kVersionZip64 : kVersionDeflate;
    bool utf8 = std::any_of(member.begin(), member.end(),
                            [](char c) { return uint8_t(c) >= 0x80; });
    uint16_t flags = utf8 ? kFlagUtf8 : 0;

    // Local header: with zip64 both sizes move to the extra field.
    putLE(out, kLocalHeaderSig, 4);
    putLE(out, version, 2);
    putLE(out, flags, 2);
    putLE(out, method, 2);
    putLE(out, kDosTime, 2);
    putLE(out, kDosDate, 2);
    putLE(out, crc, 4);
    putLE(out, sizes64 ? kMax32 : csize, 4);
    putLE(out, sizes64 ? kMax32 : usize, 4);
    putLE(out, member.size(), 2);
    putLE(out, sizes64 ? 4 + 16 : 0, 2);
    out.insert(out.end(), member.begin(), member.end());
    if (sizes64) {
      putLE(out, kZip64ExtraId, 2);
      putLE(out, 16, 2);
      putLE(out, usize, 8);
      putLE(out, csize, 8);
    }
    parts.add(std::move(out));
    if (options.compress) {
      parts.add(std::move(deflated));
    } else {
      parts.add(std::move(header));
      parts.add(array.data.data(), array.data.size());
    }

    // Central record: each field that overflows (or all, when forced) is
    // marked and carried in the zip64 extra field, in the fixed order.
    std::vector<uint8_t> extra64;
    if (sizes64) {
      putLE(extra64, usize, 8);
      putLE(extra64, csize, 8);
    }
    if (offset64)
      putLE(extra64, offset, 8);
    putLE(central, kCentralHeaderSig, 4);
    putLE(central, kMadeByUnix | version, 2);
    putLE(central, version, 2);
    putLE(central, flags, 2);
    putLE(central, method, 2);
    putLE(central, kDosTime, 2);
    putLE(central, kDosDate, 2);
    putLE(central, crc, 4);
    putLE(central, sizes64 ? kMax32 : csize, 4);
    putLE(central, sizes64 ? kMax32 : usize, 4);
    putLE(central, member.size(), 2);
    putLE(central, extra64.empty() ? 0 : 4 + extra64.size(), 2);
    putLE(central, 0, 2); // comment length
    putLE(central, 0, 2); // disk number start
    putLE(central, 0, 2); // internal attributes
    putLE(central, kExternalAttrFile, 4);
    putLE(central, offset64 ? kMax32 : offset, 4);
    central.insert(central.end(), member.begin(), member.end());
    if (!extra64.empty()) {
      putLE(central, kZip64ExtraId, 2);
      putLE(central, extra64.size(), 2);
      central.insert(central.end(), extra64.begin(), extra64.end());
    }
    ++count;
  }

  uint64_t cdOffset = parts.size, cdSize = central.size();
  parts.add(std::move(central));
  bool end64 = options.forceZip64 || count >= kMax16 || cdSize >= kMax32 ||
               cdOffset >= kMax32;
  std::vector<uint8_t> out;
  if (end64) {
    uint64_t z64 = parts.size;
    putLE(out, kZip64EndSig, 4);
    putLE(out, kZip64EndSize - 12, 8); // size of the rest of the record
    putLE(out, kMadeByUnix | kVersionZip64, 2);
    putLE(out, kVersionZip64, 2);
    putLE(out, 0, 4); // this disk
    putLE(out, 0, 4); // directory disk
    putLE(out, count, 8);
    putLE(out, count, 8);
    putLE(out, cdSize, 8);
    putLE(out, cdOffset, 8);
    putLE(out, kZip64LocatorSig, 4);
    putLE(out, 0, 4); // disk with the zip64 end record
    putLE(out, z64, 8);
    putLE(out, 1, 4); // total disks
  }
  putLE(out, kEndSig, 4);
  putLE(out, 0, 2); // this disk
  putLE(out, 0, 2); // directory disk
  putLE(out, end64 ? kMax16 : count, 2);
  putLE(out, end64 ? kMax16 : count, 2);
  putLE(out, end64 ? kMax32 : cdSize, 4);
  putLE(out, end64 ? kMax32 : cdOffset, 4);
  putLE(out, 0, 2); // comment length
  parts.add(std::move(out));
  return parts;
}

NamedArrays namedArrays(const Npz &npz) {
  NamedArrays arrays;
  for (const auto &[name, array] : npz)
    arrays.emplace_back(name, &array);
  return arrays;
}

} // namespace

std::vector<uint8_t> serializeNpz(const Npz &npz,
                                  const NpzWriteOptions &options) {
  NpzParts parts = npzParts(namedArrays(npz), options);
  std::vector<uint8_t> out;
  out.reserve(parts.size);
  for (const isa::bmodel::ByteSpan &p : parts.spans)
    out.insert(out.end(), p.data, p.data + p.size);
  return out;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

Array readNpy(const std::string &path) {
  std::vector<uint8_t> bytes = isa::bmodel::readFile(path);
  return parseNpy(bytes.data(), bytes.size(), path);
}

Npz readNpz(const std::string &path) {
  // Mapped: the arrays are the only copy of a stored member's data.
  isa::bmodel::FileBytes bytes(path);
  return parseNpz(bytes.data(), bytes.size(), path);
}

void writeNpy(const std::string &path, const Array &array) {
  isa::bmodel::writeFileAtomically(path, serializeNpy(array));
}

void writeNpz(const std::string &path, const Npz &npz, bool compress) {
  NpzWriteOptions options;
  options.compress = compress;
  writeNpz(path, npz, options);
}

void writeNpz(const std::string &path, const Npz &npz,
              const NpzWriteOptions &options) {
  writeNpz(path, namedArrays(npz), options);
}

void writeNpz(const std::string &path,
              const std::vector<std::pair<std::string, const Array *>> &arrays,
              const NpzWriteOptions &options) {
  isa::bmodel::writeFileAtomically(path, npzParts(arrays, options).spans);
}

} // namespace tpu::npz
