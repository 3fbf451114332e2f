//===- FlatbufferLocate.cpp - Where a FlatBuffer fails verification -------===//
//
// Mirrors flatbuffers::Verifier (FlatBuffers 2.0: verifier.h, table.h and the
// generated T::Verify) check by check and in the same order, so that the
// first check failing here is the one that made the verifier say no.
//
//===----------------------------------------------------------------------===//
#include "FlatbufferLocate.h"

#include "tpu/isa/Format.h"

namespace tpu::isa::detail {

namespace {

using flatbuffers::ElementaryType;
using flatbuffers::TypeTable;

/// The Verifier's default limits (flatbuffers::Verifier::Options).
constexpr unsigned kMaxDepth = 64;
constexpr unsigned kMaxTables = 1000000;
constexpr size_t kUOffset = sizeof(flatbuffers::uoffset_t);
/// FLATBUFFERS_MIN_BUFFER_SIZE (whose definition needs the names unqualified).
constexpr size_t kMinBufferSize = sizeof(flatbuffers::uoffset_t) +
                                  sizeof(flatbuffers::soffset_t) +
                                  2 * sizeof(flatbuffers::voffset_t);

size_t scalarSize(ElementaryType t) {
  switch (t) {
  case flatbuffers::ET_UTYPE:
  case flatbuffers::ET_BOOL:
  case flatbuffers::ET_CHAR:
  case flatbuffers::ET_UCHAR:
    return 1;
  case flatbuffers::ET_SHORT:
  case flatbuffers::ET_USHORT:
    return 2;
  case flatbuffers::ET_INT:
  case flatbuffers::ET_UINT:
  case flatbuffers::ET_FLOAT:
    return 4;
  case flatbuffers::ET_LONG:
  case flatbuffers::ET_ULONG:
  case flatbuffers::ET_DOUBLE:
    return 8;
  default:
    return 0;
  }
}

/// Size of a struct: mini-reflection stores it after the field offsets.
size_t structSize(const TypeTable *tt) {
  return size_t(tt->values[tt->num_elems]);
}

/// Alignment of a struct: that of its largest scalar (nested structs
/// included), as flatc lays it out.
size_t structAlign(const TypeTable *tt) {
  size_t align = 1;
  for (size_t i = 0; i < tt->num_elems; ++i) {
    flatbuffers::TypeCode tc = tt->type_codes[i];
    auto et = ElementaryType(tc.base_type);
    if (et == flatbuffers::ET_SEQUENCE && tc.sequence_ref >= 0)
      align = std::max(align, structAlign(tt->type_refs[tc.sequence_ref]()));
    else
      align = std::max(align, scalarSize(et));
  }
  return align;
}

class Locator {
public:
  Locator(const uint8_t *buf, size_t size) : buf_(buf), size_(size) {}

  std::optional<VerifyFailure> run(const TypeTable *root,
                                   const std::string &name) {
    if (size_ < kMinBufferSize) {
      fail(0, name,
           std::to_string(size_) + " bytes are too few for a FlatBuffer");
      return failure_;
    }
    size_t t;
    if (offset(0, name + " (root offset)", t))
      table(t, root, name, 0);
    return failure_;
  }

private:
  bool fail(size_t at, const std::string &path, const std::string &what) {
    if (!failure_)
      failure_ = VerifyFailure{at, path, what};
    return false;
  }
  /// Verifier::Verify(elem, len).
  bool inBounds(size_t elem, size_t len) const {
    return len < size_ && elem <= size_ - len;
  }
  static bool aligned(size_t elem, size_t align) {
    return (elem & (align - 1)) == 0;
  }
  uint32_t u32(size_t p) const {
    return uint32_t(buf_[p]) | uint32_t(buf_[p + 1]) << 8 |
           uint32_t(buf_[p + 2]) << 16 | uint32_t(buf_[p + 3]) << 24;
  }
  uint16_t u16(size_t p) const { return uint16_t(buf_[p] | buf_[p + 1] << 8); }
  std::string past() const {
    return " runs past the end of the FlatBuffer (" + std::to_string(size_) +
           " bytes)";
  }

  /// Verifier::VerifyOffset: the uoffset stored at \p pos.
  bool offset(size_t pos, const std::string &path, size_t &target) {
    if (!aligned(pos, kUOffset))
      return fail(pos, path,
                  "offset at " + formatHex(pos) + " is not 4-byte aligned");
    if (!inBounds(pos, kUOffset))
      return fail(pos, path, "offset" + past());
    uint32_t o = u32(pos);
    if (o == 0)
      return fail(pos, path, "offset is 0");
    if (int32_t(o) < 0)
      return fail(pos, path, "offset " + formatHex(o) + " is negative");
    if (!inBounds(pos + o, 1))
      return fail(pos, path,
                  "offset " + formatHex(o) + " points to " +
                      formatHex(pos + o) + ", outside the FlatBuffer (" +
                      std::to_string(size_) + " bytes)");
    target = pos + o;
    return true;
  }

  /// Verifier::VerifyVectorOrString.
  bool vector(size_t vec, size_t elemSize, const std::string &path,
              const char *kind, uint32_t &len, size_t &end) {
    if (!aligned(vec, kUOffset))
      return fail(vec, path,
                  std::string(kind) + " at " + formatHex(vec) +
                      " is not 4-byte aligned");
    if (!inBounds(vec, kUOffset))
      return fail(vec, path, std::string(kind) + " length" + past());
    len = u32(vec);
    if (len >= FLATBUFFERS_MAX_BUFFER_SIZE / elemSize)
      return fail(vec, path,
                  std::string(kind) + " length " + std::to_string(len) +
                      " is impossibly large");
    size_t bytes = kUOffset + elemSize * size_t(len);
    end = vec + bytes;
    if (!inBounds(vec, bytes))
      return fail(vec, path,
                  std::string(kind) + " of " + std::to_string(len) +
                      " element(s) (" + std::to_string(bytes) + " bytes)" +
                      past());
    return true;
  }

  /// Verifier::VerifyString.
  bool string(size_t str, const std::string &path) {
    uint32_t len;
    size_t end;
    if (!vector(str, 1, path, "string", len, end))
      return false;
    if (!inBounds(end, 1))
      return fail(end, path,
                  "the terminating zero of the " + std::to_string(len) +
                      "-byte string" + past());
    if (buf_[end] != 0)
      return fail(end, path,
                  "the " + std::to_string(len) +
                      "-byte string does not end with a zero byte");
    return true;
  }

  /// Verifier::VerifyTableStart, then the fields as T::Verify checks them.
  bool table(size_t t, const TypeTable *tt, const std::string &path,
             unsigned depth) {
    if (depth + 1 > kMaxDepth)
      return fail(t, path, "tables nest deeper than 64");
    if (++tables_ > kMaxTables)
      return fail(t, path, "more than 1000000 tables");
    if (!aligned(t, kUOffset))
      return fail(t, path,
                  "table at " + formatHex(t) + " is not 4-byte aligned");
    if (!inBounds(t, kUOffset))
      return fail(t, path, "table" + past());
    // Unsigned, as the verifier computes it.
    size_t vt = t - size_t(int64_t(int32_t(u32(t))));
    if (!aligned(vt, 2) || !inBounds(vt, 2))
      return fail(t, path,
                  "the table's vtable offset points to " + formatHex(vt) +
                      ", outside the FlatBuffer or misaligned");
    uint16_t vsize = u16(vt);
    if (vsize & 1)
      return fail(vt, path,
                  "the table's vtable size " + std::to_string(vsize) +
                      " is odd");
    if (!inBounds(vt, vsize))
      return fail(vt, path,
                  "the table's vtable (" + std::to_string(vsize) + " bytes)" +
                      past());
    for (size_t i = 0; i < tt->num_elems; ++i) {
      size_t slot = 4 + 2 * i;
      uint16_t fo = slot < vsize ? u16(vt + slot) : 0;
      if (!fo)
        continue;
      std::string fpath = path + "." + tt->names[i];
      size_t f = t + fo;
      flatbuffers::TypeCode tc = tt->type_codes[i];
      auto et = ElementaryType(tc.base_type);
      const TypeTable *ref =
          tc.sequence_ref >= 0 ? tt->type_refs[tc.sequence_ref]() : nullptr;
      bool isTable = et == flatbuffers::ET_SEQUENCE && ref &&
                     ref->st == flatbuffers::ST_TABLE;
      bool isStruct = et == flatbuffers::ET_SEQUENCE && ref &&
                      ref->st == flatbuffers::ST_STRUCT;
      if (tc.is_repeating) {
        size_t vec, end;
        uint32_t len;
        if (!offset(f, fpath, vec))
          return false;
        size_t elemSize = isStruct ? structSize(ref)
                          : (isTable || et == flatbuffers::ET_STRING)
                              ? kUOffset
                              : scalarSize(et);
        if (elemSize == 0)
          continue; // unions are not in the bmodel schema
        if (!vector(vec, elemSize, fpath, "vector", len, end))
          return false;
        if (isTable || et == flatbuffers::ET_STRING) {
          for (uint32_t k = 0; k < len; ++k) {
            size_t p = vec + kUOffset + kUOffset * size_t(k);
            size_t target = p + u32(p);
            std::string epath = fpath + "[" + std::to_string(k) + "]";
            if (isTable ? !table(target, ref, epath, depth + 1)
                        : !string(target, epath))
              return false;
          }
        }
      } else if (et == flatbuffers::ET_STRING) {
        size_t s;
        if (!offset(f, fpath, s) || !string(s, fpath))
          return false;
      } else if (isTable) {
        size_t sub;
        if (!offset(f, fpath, sub) || !table(sub, ref, fpath, depth + 1))
          return false;
      } else {
        size_t bytes = isStruct ? structSize(ref) : scalarSize(et);
        size_t align = isStruct ? structAlign(ref) : bytes;
        if (bytes == 0)
          continue;
        if (!inBounds(f, bytes))
          return fail(f, fpath, "field" + past());
        if (!aligned(f, align))
          return fail(f, fpath,
                      "field at " + formatHex(f) + " is not " +
                          std::to_string(align) + "-byte aligned");
      }
    }
    return true;
  }

  const uint8_t *buf_;
  size_t size_;
  unsigned tables_ = 0;
  std::optional<VerifyFailure> failure_;
};

} // namespace

std::optional<VerifyFailure>
locateVerifyFailure(const uint8_t *buf, size_t size,
                    const flatbuffers::TypeTable *root, const char *rootName) {
  return Locator(buf, size).run(root, rootName);
}

} // namespace tpu::isa::detail
