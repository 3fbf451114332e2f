//===- Npz.h - numpy .npy / .npz reader and writer ---------------*- C++
//-*-===//
//
// Every tool's inputs and outputs are numpy files. This is our own reader and
// writer: .npy (format versions 1.0, 2.0 and 3.0) and .npz zip archives
// (stored or deflated members, data descriptors, zip64), built on zlib.
//
// Only little-endian, C-order arrays of the plain numeric dtypes are
// supported; anything else (big-endian, fortran_order, complex, strings,
// structured dtypes, pickled objects) is rejected with a tpu::Error naming
// the file and member.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_NPZ_H
#define TPU_ISA_NPZ_H

#include "tpu/isa/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tpu::npz {

/// Element types of the arrays we read and write.
enum class DType : uint8_t {
  F32,
  F16,
  F64,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  Bool,
};

/// Bytes per element.
size_t dtypeSize(DType t);
/// numpy's `descr` string, e.g. "<f4", "|i1", "|b1".
const char *dtypeDescr(DType t);
/// numpy's dtype name, e.g. "float32", "bool".
const char *dtypeName(DType t);
/// Parses a numpy `descr`; nullopt for anything unsupported (big-endian
/// multi-byte types included).
std::optional<DType> dtypeFromDescr(std::string_view descr);

/// The DType of a C++ element type (float -> F32, uint8_t -> U8, bool ->
/// Bool, ...). fp16 has no C++ type: use uint16_t bit patterns with
/// Array::bits16().
template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::U16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::U32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::U64;
  else {
    static_assert(std::is_same_v<T, bool>, "no numpy dtype for this type");
    return DType::Bool;
  }
}

/// Number of elements of \p shape (1 for a 0-d shape); throws tpu::Error on
/// a negative extent or overflow.
size_t shapeNumel(const std::vector<int64_t> &shape);
/// "(2, 3)" style text of a shape, for messages.
std::string shapeString(const std::vector<int64_t> &shape);

/// An n-d array: little-endian elements in C order. An empty shape is a 0-d
/// array with one element. Bool elements are bytes holding 0 or 1.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  Array() = default;
  /// Zero-filled array.
  Array(DType dtype, std::vector<int64_t> shape);

  size_t numel() const { return shapeNumel(shape); }
  size_t nbytes() const { return data.size(); }

  /// Typed element pointer; throws tpu::Error unless dtype is dtypeOf<T>().
  template <typename T> const T *as() const {
    checkType(dtypeOf<T>());
    return reinterpret_cast<const T *>(data.data());
  }
  template <typename T> T *as() {
    checkType(dtypeOf<T>());
    return reinterpret_cast<T *>(data.data());
  }
  /// Raw 16-bit patterns of an F16 (or I16/U16) array.
  const uint16_t *bits16() const;
  uint16_t *bits16();

  /// Every element converted to float (fp16 widened exactly, integers
  /// rounded to nearest, bool 0/1).
  std::vector<float> toFloat() const;
  std::vector<double> toDouble() const;
  /// Every element converted to int64 (floats truncated toward zero; uint64
  /// above INT64_MAX wraps). Intended for integer arrays.
  std::vector<int64_t> toInt64() const;

  /// Array of dtype dtypeOf<T>() copying numel(shape) values.
  template <typename T>
  static Array from(std::vector<int64_t> shape, const T *values) {
    Array a(dtypeOf<T>(), std::move(shape));
    copyIn(a, values);
    return a;
  }
  template <typename T>
  static Array from(std::vector<int64_t> shape, const std::vector<T> &values) {
    Array a(dtypeOf<T>(), std::move(shape));
    if (values.size() != a.numel())
      throwSizeMismatch(a, values.size());
    copyIn(a, values.data());
    return a;
  }
  static Array fromFloat(std::vector<int64_t> shape, const float *values) {
    return from<float>(std::move(shape), values);
  }

private:
  void checkType(DType wanted) const;
  static void copyIn(Array &a, const void *values);
  [[noreturn]] static void throwSizeMismatch(const Array &a, size_t given);
};

template <>
inline Array Array::from<bool>(std::vector<int64_t> shape, const bool *values) {
  Array a(DType::Bool, std::move(shape));
  for (size_t i = 0, e = a.numel(); i < e; ++i)
    a.data[i] = values[i] ? 1 : 0;
  return a;
}

/// The arrays of one .npz file, in file order, with lookup by name (the
/// member name without its ".npy" suffix).
class Npz {
public:
  using Entry = std::pair<std::string, Array>;

  /// Adds \p array under \p name, replacing (in place) an existing one.
  void set(const std::string &name, Array array);
  bool contains(const std::string &name) const;
  /// The array called \p name or nullptr.
  const Array *find(const std::string &name) const;
  Array *find(const std::string &name);
  /// The array called \p name; throws tpu::Error naming the file and the
  /// names present if it is missing.
  const Array &get(const std::string &name) const;
  Array &get(const std::string &name);

  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
  const std::vector<Entry> &entries() const { return items; }
  std::vector<std::string> names() const;
  std::vector<Entry>::const_iterator begin() const { return items.begin(); }
  std::vector<Entry>::const_iterator end() const { return items.end(); }

  /// Where the arrays came from (for messages); empty if built in memory.
  const std::string &source() const { return sourceName; }
  void setSource(std::string source) { sourceName = std::move(source); }

private:
  std::vector<Entry> items;
  std::unordered_map<std::string, size_t> byName;
  std::string sourceName;
};

/// Options of writeNpz.
struct NpzWriteOptions {
  /// Deflate members (np.savez_compressed) or store them (np.savez).
  bool compress = true;
  /// Write zip64 records even when no size or offset needs them (for tests;
  /// zip64 is always used where a size or offset reaches 4 GiB).
  bool forceZip64 = false;
};

/// Parses a .npy image; \p what names it in errors (e.g. "x.npz: member
/// 'a.npy'").
Array parseNpy(const uint8_t *bytes, size_t size, const std::string &what);
/// Serialises \p array as a .npy image (version 1.0, or 2.0 if the header
/// needs it).
std::vector<uint8_t> serializeNpy(const Array &array);

/// Parses a .npz (zip) image; \p what names it in errors.
Npz parseNpz(const uint8_t *bytes, size_t size, const std::string &what);
/// Serialises \p npz as a zip image.
std::vector<uint8_t> serializeNpz(const Npz &npz,
                                  const NpzWriteOptions &options = {});

Array readNpy(const std::string &path);
Npz readNpz(const std::string &path);

/// What a model expects of one input array.
struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  /// A float32 array is also taken (and converted by a documented rule:
  /// tpusim rounds it to an F16 / BF16 tensor, quantises it with the scale
  /// of an integer tensor).
  bool alsoFloat32 = false;
};

/// The rule for an input .npz, the same in every tool (tpuc transform
/// --test-input, tpuc run, tpuc deploy --test-input, tpuc qtable, tpusim
/// run -i): one array per model input, named as the input, with its shape
/// and its dtype (no float conversion: float64 or float16 for a float32
/// input is refused; a float32 input also takes integers it holds exactly;
/// InputSpec::alsoFloat32 admits float32 arrays), and no other array. Throws
/// tpu::Error naming \p source and the first array or input that breaks it.
void checkInputs(const Npz &inputs, const std::vector<InputSpec> &specs,
                 const std::string &source);
/// Writes through a temporary file in the same directory and a rename, so
/// \p path is never left half-written.
void writeNpy(const std::string &path, const Array &array);
void writeNpz(const std::string &path, const Npz &npz, bool compress = true);
void writeNpz(const std::string &path, const Npz &npz,
              const NpzWriteOptions &options);
/// writeNpz of arrays held elsewhere, in this order (the bytes of an Npz
/// of copies of them): nothing is copied, the data go to the file from
/// where they are.
void writeNpz(const std::string &path,
              const std::vector<std::pair<std::string, const Array *>> &arrays,
              const NpzWriteOptions &options);

} // namespace tpu::npz

#endif // TPU_ISA_NPZ_H
