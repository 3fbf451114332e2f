//===- ConstTensor.cpp - Tensors known at ONNX import time ----------------===//

#include "ConstTensor.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Numerics.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace tpuc::frontend {

bool isFloatType(ElemType type) {
  return type == elem::Float || type == elem::Double || type == elem::Float16 ||
         type == elem::BFloat16;
}

bool isIntegerType(ElemType type) {
  switch (type) {
  case elem::UInt8:
  case elem::Int8:
  case elem::UInt16:
  case elem::Int16:
  case elem::Int32:
  case elem::Int64:
  case elem::Bool:
  case elem::UInt32:
  case elem::UInt64:
    return true;
  default:
    return false;
  }
}

std::string elemTypeName(ElemType type) {
  if (onnx::TensorProto_DataType_IsValid(type))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(type));
  return "type " + std::to_string(type);
}

int64_t wrapToElemType(int64_t v, ElemType type) {
  switch (type) {
  case elem::UInt8:
    return static_cast<uint8_t>(v);
  case elem::Int8:
    return static_cast<int8_t>(v);
  case elem::UInt16:
    return static_cast<uint16_t>(v);
  case elem::Int16:
    return static_cast<int16_t>(v);
  case elem::Int32:
    return static_cast<int32_t>(v);
  case elem::UInt32:
    return static_cast<uint32_t>(v);
  case elem::Bool:
    return v != 0;
  default:
    return v;
  }
}

namespace {

/// Float to int64 the way a C cast does (toward zero), with NaN and
/// out-of-range values pinned instead of undefined.
int64_t truncToInt64(double v) {
  if (std::isnan(v))
    return 0;
  constexpr double kLimit = 9.2233720368547758e18; // 2^63
  if (v >= kLimit)
    return std::numeric_limits<int64_t>::max();
  if (v <= -kLimit)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

} // namespace

double roundToElemType(double v, ElemType type) {
  switch (type) {
  case elem::Float:
    return static_cast<float>(v);
  case elem::Double:
    return v;
  case elem::Float16:
    return tpu::isa::roundToPrec(static_cast<float>(v), tpu::isa::Prec::Fp16);
  case elem::BFloat16:
    return tpu::isa::roundToPrec(static_cast<float>(v), tpu::isa::Prec::Bf16);
  case elem::Bool:
    return v != 0.0 ? 1.0 : 0.0;
  default:
    return static_cast<double>(wrapToElemType(truncToInt64(v), type));
  }
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  return checkedNumElements(shape, "shape " + shapeToString(shape),
                            /*elemBytes=*/1);
}

int64_t checkedNumElements(llvm::ArrayRef<int64_t> shape,
                           const std::string &what, int64_t elemBytes) {
  int64_t n = 1, bytes;
  for (int64_t d : shape) {
    if (d < 0)
      throw tpu::Error(what + ": negative dimension " + std::to_string(d) +
                       " in " + shapeToString(shape));
    if (__builtin_mul_overflow(n, d, &n))
      throw tpu::Error(what + ": the element count of shape " +
                       shapeToString(shape) + " overflows 64 bits");
  }
  if (__builtin_mul_overflow(n, elemBytes, &bytes))
    throw tpu::Error(what + ": shape " + shapeToString(shape) + " holds " +
                     std::to_string(n) + " elements, whose " +
                     std::to_string(elemBytes) +
                     "-byte values overflow a 64-bit byte count");
  return n;
}

std::string shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  // A shape with a zero dim holds nothing, yet its other dims may
  // multiply past 64 bits (a fuzzed model): its strides are never used
  // (nothing is indexed), zeros. Otherwise the element count was checked
  // (checkedNumElements), so an overflow here is an error.
  if (llvm::is_contained(shape, 0))
    return std::vector<int64_t>(shape.size(), 0);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    if (__builtin_mul_overflow(strides[i + 1], shape[i + 1], &strides[i]))
      throw tpu::Error("the strides of shape " + shapeToString(shape) +
                       " overflow 64 bits");
  return strides;
}

Shape broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                      const std::string &what) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw tpu::Error(what + ": shapes " + shapeToString(a) + " and " +
                       shapeToString(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcastIndices(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape) {
  size_t rank = outShape.size();
  size_t lead = rank - inShape.size();
  int64_t n = numElements(outShape);
  if (n == 0)
    return {};
  std::vector<int64_t> inStrides = stridesOf(inShape);
  std::vector<int64_t> result(n);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = lead; d < rank; ++d)
      if (inShape[d - lead] != 1)
        off += idx[d] * inStrides[d - lead];
    result[k] = off;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return result;
}

//===----------------------------------------------------------------------===//
// ConstTensor
//===----------------------------------------------------------------------===//

ConstTensor ConstTensor::ofInts(Shape shape, std::vector<int64_t> values,
                                ElemType type) {
  ConstTensor t;
  t.type = type;
  t.shape = std::move(shape);
  if (isFloatType(type)) {
    t.floats.reserve(values.size());
    for (int64_t v : values)
      t.floats.push_back(roundToElemType(static_cast<double>(v), type));
  } else {
    t.ints = std::move(values);
    for (int64_t &v : t.ints)
      v = wrapToElemType(v, type);
  }
  return t;
}

ConstTensor ConstTensor::ofDoubles(Shape shape, std::vector<double> values,
                                   ElemType type) {
  ConstTensor t;
  t.type = type;
  t.shape = std::move(shape);
  if (isFloatType(type)) {
    t.floats = std::move(values);
    for (double &v : t.floats)
      v = roundToElemType(v, type);
  } else {
    t.ints.reserve(values.size());
    for (double v : values)
      t.ints.push_back(type == elem::Bool
                           ? v != 0.0
                           : wrapToElemType(truncToInt64(v), type));
  }
  return t;
}

ConstTensor ConstTensor::filled(Shape shape, double value, ElemType type) {
  int64_t n = numElements(shape);
  return ofDoubles(std::move(shape), std::vector<double>(n, value), type);
}

double ConstTensor::getDouble(int64_t k) const {
  return isFloat() ? floats[k] : static_cast<double>(ints[k]);
}

int64_t ConstTensor::getInt(int64_t k) const {
  return isFloat() ? truncToInt64(floats[k]) : ints[k];
}

std::vector<int64_t> ConstTensor::toInts() const {
  if (!isFloat())
    return ints;
  std::vector<int64_t> out;
  out.reserve(floats.size());
  for (double v : floats)
    out.push_back(truncToInt64(v));
  return out;
}

std::vector<double> ConstTensor::toDoubles() const {
  if (isFloat())
    return floats;
  return std::vector<double>(ints.begin(), ints.end());
}

std::vector<float> ConstTensor::toFloats() const {
  std::vector<float> out;
  out.reserve(size());
  if (isFloat())
    for (double v : floats)
      out.push_back(static_cast<float>(v));
  else
    for (int64_t v : ints)
      out.push_back(static_cast<float>(v));
  return out;
}

ConstTensor ConstTensor::reshaped(Shape newShape) const {
  ConstTensor t = *this;
  t.shape = std::move(newShape);
  return t;
}

ConstTensor ConstTensor::castTo(ElemType newType) const {
  return isFloat() ? ofDoubles(shape, floats, newType)
                   : ofInts(shape, ints, newType);
}

void ConstTensor::set(int64_t k, double v) {
  if (isFloat())
    floats[k] = roundToElemType(v, type);
  else if (type == elem::Bool)
    ints[k] = v != 0.0;
  else
    ints[k] = wrapToElemType(truncToInt64(v), type);
}

void ConstTensor::setInt(int64_t k, int64_t v) {
  if (isFloat())
    floats[k] = roundToElemType(static_cast<double>(v), type);
  else
    ints[k] = wrapToElemType(v, type);
}

//===----------------------------------------------------------------------===//
// TensorProto decoding
//===----------------------------------------------------------------------===//

namespace {

/// Bytes per element of the fixed-size types we decode from raw_data.
size_t rawElemSize(ElemType type) {
  switch (type) {
  case elem::UInt8:
  case elem::Int8:
  case elem::Bool:
    return 1;
  case elem::UInt16:
  case elem::Int16:
  case elem::Float16:
  case elem::BFloat16:
    return 2;
  case elem::Int32:
  case elem::UInt32:
  case elem::Float:
    return 4;
  case elem::Int64:
  case elem::UInt64:
  case elem::Double:
    return 8;
  default:
    return 0;
  }
}

template <typename T> T loadLE(const uint8_t *p) {
  // Every host we build on is little-endian, as are ONNX raw_data and npy.
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// The file an external-data \p location names: relative to the model's
/// directory \p baseDir and inside it (as ONNX Runtime enforces). Absolute
/// paths, '..' components and symbolic links that lead outside are errors.
std::string resolveExternalLocation(const std::string &location,
                                    const std::string &baseDir,
                                    const std::string &what) {
  namespace path = llvm::sys::path;
  std::string quoted = "external data location '" + location + "'";
  if (path::is_absolute(location) || path::has_root_name(location) ||
      path::has_root_directory(location))
    throw tpu::Error(what + ": " + quoted +
                     " is an absolute path; it must be relative to the "
                     "model's directory");
  for (auto it = path::begin(location), e = path::end(location); it != e; ++it)
    if (*it == "..")
      throw tpu::Error(what + ": " + quoted +
                       " has a '..' component; it must stay inside the "
                       "model's directory");
  std::string dir = baseDir.empty() ? std::string(".") : baseDir;
  std::string file = dir + "/" + location;
  llvm::SmallString<256> realDir, realFile;
  if (std::error_code ec = llvm::sys::fs::real_path(dir, realDir))
    throw tpu::Error(what + ": cannot resolve the model's directory '" + dir +
                     "': " + ec.message());
  if (std::error_code ec = llvm::sys::fs::real_path(file, realFile))
    throw tpu::Error(what + ": cannot open external data file '" + file +
                     "': " + ec.message());
  llvm::StringRef real = realFile;
  if (!real.starts_with(realDir) || real.size() == realDir.size() ||
      !path::is_separator(real[realDir.size()]))
    throw tpu::Error(what + ": " + quoted + " resolves to '" + real.str() +
                     "', outside the model's directory '" +
                     std::string(realDir) + "' (through a symbolic link)");
  if (llvm::sys::fs::is_directory(real))
    throw tpu::Error(what + ": external data file '" + file +
                     "' is a directory");
  return file;
}

/// Reads the bytes of a tensor stored as external data.
std::string readExternalData(const onnx::TensorProto &tensor,
                             const std::string &baseDir,
                             const std::string &what) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  auto number = [&](const std::string &key, const std::string &value) {
    int64_t v;
    if (llvm::StringRef(value).getAsInteger(10, v) || v < 0)
      throw tpu::Error(what + ": external data " + key + " '" + value +
                       "' is not a non-negative integer");
    return v;
  };
  for (const auto &kv : tensor.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = number("offset", kv.value());
    else if (kv.key() == "length")
      length = number("length", kv.value());
  }
  if (location.empty())
    throw tpu::Error(what + ": external data without a location");
  std::string path = resolveExternalLocation(location, baseDir, what);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw tpu::Error(what + ": cannot open external data file '" + path + "'");
  in.seekg(0, std::ios::end);
  int64_t fileSize = static_cast<int64_t>(in.tellg());
  if (length < 0)
    length = offset <= fileSize ? fileSize - offset : 0;
  if (offset > fileSize || length > fileSize - offset)
    throw tpu::Error(what + ": external data range [" + std::to_string(offset) +
                     ", " + std::to_string(offset + length) +
                     ") lies outside '" + path + "' (" +
                     std::to_string(fileSize) + " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in)
    throw tpu::Error(what + ": cannot read external data from '" + path + "'");
  return bytes;
}

/// What every initializer decoder checks first: the element type, the
/// shape and its element count, and where the bytes are (raw_data or
/// external data, read; null: the typed fields).
struct ProtoData {
  ElemType type;
  Shape shape;
  int64_t n = 0;
  std::string external;
  const std::string *raw = nullptr;
};

ProtoData protoData(const onnx::TensorProto &tensor, const std::string &baseDir,
                    const std::string &what) {
  ProtoData d;
  d.type = tensor.data_type();
  if (!isFloatType(d.type) && !isIntegerType(d.type))
    throw tpu::Error(what + ": element type " + elemTypeName(d.type) +
                     " is not supported");
  if (tensor.has_segment())
    throw tpu::Error(what + ": segmented tensors are not supported");
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      throw tpu::Error(what + ": negative dimension " + std::to_string(dim));
    d.shape.push_back(dim);
  }
  d.n = checkedNumElements(d.shape, what);
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    d.external = readExternalData(tensor, baseDir, what);
    d.raw = &d.external;
  } else if (tensor.has_raw_data()) {
    d.raw = &tensor.raw_data();
  }
  return d;
}

/// Throws unless the data hold \p have == d.n values.
void requireCount(const ProtoData &d, int64_t have, const std::string &what) {
  if (have != d.n)
    throw tpu::Error(what + ": holds " + std::to_string(have) +
                     " values but its shape " + shapeToString(d.shape) +
                     " needs " + std::to_string(d.n));
}

/// Checks that d.raw holds d.n whole elements.
void checkRawCount(const ProtoData &d, const std::string &what) {
  size_t esize = rawElemSize(d.type);
  if (d.raw->size() % esize != 0)
    throw tpu::Error(what + ": raw data of " + std::to_string(d.raw->size()) +
                     " bytes is not a whole number of " + elemTypeName(d.type) +
                     " elements");
  requireCount(d, static_cast<int64_t>(d.raw->size() / esize), what);
}

} // namespace

std::optional<tpu::npz::Array>
float32ArrayFromProto(const onnx::TensorProto &tensor,
                      const std::string &baseDir, const std::string &what) {
  if (tensor.data_type() != elem::Float)
    return std::nullopt;
  ProtoData d = protoData(tensor, baseDir, what);
  tpu::npz::Array a(tpu::npz::DType::F32, d.shape);
  const void *src = nullptr;
  if (d.raw) {
    checkRawCount(d, what);
    // raw_data is little-endian, as the host.
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
    src = d.raw->data();
  } else {
    requireCount(d, tensor.float_data_size(), what);
    src = tensor.float_data().data();
  }
  if (!a.data.empty()) // (no elements: src may be null)
    std::memcpy(a.data.data(), src, a.data.size());
  return a;
}

ConstTensor constTensorFromProto(const onnx::TensorProto &tensor,
                                 const std::string &baseDir,
                                 const std::string &what) {
  ProtoData d = protoData(tensor, baseDir, what);
  ElemType type = d.type;
  Shape &shape = d.shape;
  int64_t n = d.n;
  const std::string *raw = d.raw;
  std::vector<double> values;
  // Reserved only once the data is known to hold n values.
  auto checkCount = [&](int64_t have) {
    requireCount(d, have, what);
    values.reserve(static_cast<size_t>(n));
  };

  if (raw) {
    size_t esize = rawElemSize(type);
    checkRawCount(d, what);
    values.reserve(static_cast<size_t>(n));
    const auto *p = reinterpret_cast<const uint8_t *>(raw->data());
    std::vector<int64_t> ints;
    bool integer = isIntegerType(type);
    if (integer)
      ints.reserve(n);
    for (int64_t k = 0; k < n; ++k, p += esize) {
      switch (type) {
      case elem::Float:
        values.push_back(loadLE<float>(p));
        break;
      case elem::Double:
        values.push_back(loadLE<double>(p));
        break;
      case elem::Float16:
        values.push_back(tpu::isa::fp16ToFp32(loadLE<uint16_t>(p)));
        break;
      case elem::BFloat16:
        values.push_back(tpu::isa::bf16ToFp32(loadLE<uint16_t>(p)));
        break;
      case elem::UInt8:
      case elem::Bool:
        ints.push_back(*p);
        break;
      case elem::Int8:
        ints.push_back(static_cast<int8_t>(*p));
        break;
      case elem::UInt16:
        ints.push_back(loadLE<uint16_t>(p));
        break;
      case elem::Int16:
        ints.push_back(loadLE<int16_t>(p));
        break;
      case elem::Int32:
        ints.push_back(loadLE<int32_t>(p));
        break;
      case elem::UInt32:
        ints.push_back(loadLE<uint32_t>(p));
        break;
      case elem::Int64:
        ints.push_back(loadLE<int64_t>(p));
        break;
      case elem::UInt64:
        ints.push_back(static_cast<int64_t>(loadLE<uint64_t>(p)));
        break;
      default:
        break;
      }
    }
    if (integer)
      return ConstTensor::ofInts(std::move(shape), std::move(ints), type);
    return ConstTensor::ofDoubles(std::move(shape), std::move(values), type);
  }

  switch (type) {
  case elem::Float:
    checkCount(tensor.float_data_size());
    return ConstTensor::ofDoubles(
        shape,
        std::vector<double>(tensor.float_data().begin(),
                            tensor.float_data().end()),
        type);
  case elem::Double:
    checkCount(tensor.double_data_size());
    return ConstTensor::ofDoubles(
        shape,
        std::vector<double>(tensor.double_data().begin(),
                            tensor.double_data().end()),
        type);
  case elem::Float16:
  case elem::BFloat16: {
    // fp16/bf16 bit patterns sit in the low 16 bits of int32_data.
    checkCount(tensor.int32_data_size());
    for (int32_t bits : tensor.int32_data()) {
      auto b = static_cast<uint16_t>(bits);
      values.push_back(type == elem::Float16 ? tpu::isa::fp16ToFp32(b)
                                             : tpu::isa::bf16ToFp32(b));
    }
    return ConstTensor::ofDoubles(shape, std::move(values), type);
  }
  case elem::Int64:
    checkCount(tensor.int64_data_size());
    return ConstTensor::ofInts(shape,
                               std::vector<int64_t>(tensor.int64_data().begin(),
                                                    tensor.int64_data().end()),
                               type);
  case elem::UInt32:
  case elem::UInt64: {
    checkCount(tensor.uint64_data_size());
    std::vector<int64_t> ints;
    for (uint64_t v : tensor.uint64_data())
      ints.push_back(static_cast<int64_t>(v));
    return ConstTensor::ofInts(shape, std::move(ints), type);
  }
  default: {
    checkCount(tensor.int32_data_size());
    return ConstTensor::ofInts(shape,
                               std::vector<int64_t>(tensor.int32_data().begin(),
                                                    tensor.int32_data().end()),
                               type);
  }
  }
}

} // namespace tpuc::frontend
