//===- Elements.cpp - Element access and local tensor views ---------------===//
//
// Loading and storing single elements of every precision (conversions via
// isa/Numerics), local tensor views (isa/docs/bm1684x.md 3.1-3.2) and the checked
// operand views the kernels use.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"
#include "SimdImpl.h"

#include "tpu/isa/Format.h"
#include "tpu/isa/Numerics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace tpu::sim {

using isa::Prec;

namespace {

constexpr unsigned kBitsPerByte = 8;
constexpr unsigned kNibbleBits = 4;
constexpr uint64_t kNibbleMask = 0xF;

} // namespace

//===----------------------------------------------------------------------===//
// Raw element access
//===----------------------------------------------------------------------===//

uint64_t loadBits(const uint8_t *base, uint64_t index, Prec prec) {
  switch (prec) {
  case Prec::Int4: {
    uint8_t b = base[index / 2];
    return (index & 1) ? (b >> kNibbleBits) : (b & kNibbleMask);
  }
  case Prec::Int8:
    return base[index];
  case Prec::Fp16:
  case Prec::Bf16:
  case Prec::Int16: {
    uint16_t v;
    std::memcpy(&v, base + index * 2, 2);
    return v;
  }
  case Prec::Fp32:
  case Prec::Int32: {
    uint32_t v;
    std::memcpy(&v, base + index * 4, 4);
    return v;
  }
  }
  return 0;
}

void storeBits(uint8_t *base, uint64_t index, Prec prec, uint64_t bits) {
  switch (prec) {
  case Prec::Int4: {
    uint8_t &b = base[index / 2];
    uint8_t nib = uint8_t(bits & kNibbleMask);
    b = (index & 1) ? uint8_t((b & kNibbleMask) | (nib << kNibbleBits))
                    : uint8_t((b & ~kNibbleMask) | nib);
    return;
  }
  case Prec::Int8:
    base[index] = uint8_t(bits);
    return;
  case Prec::Fp16:
  case Prec::Bf16:
  case Prec::Int16: {
    uint16_t v = uint16_t(bits);
    std::memcpy(base + index * 2, &v, 2);
    return;
  }
  case Prec::Fp32:
  case Prec::Int32: {
    uint32_t v = uint32_t(bits);
    std::memcpy(base + index * 4, &v, 4);
    return;
  }
  }
}

namespace {

float bitsToFloatOf(uint64_t bits, Prec p) {
  switch (p) {
  case Prec::Fp16:
    return detail::fp16ToFp32Fast(uint16_t(bits));
  case Prec::Bf16:
    return detail::bf16ToFp32Fast(uint16_t(bits));
  default:
    return isa::bitsToFloat(uint32_t(bits));
  }
}

int64_t bitsToIntOf(uint64_t bits, ElemType t) {
  unsigned width = isa::precBits(t.prec);
  return t.isSigned ? detail::signExtend(bits, width) : int64_t(bits);
}

} // namespace

int64_t loadInt(const uint8_t *base, uint64_t index, ElemType t) {
  // The common integer types without the generic bit path.
  switch (t.prec) {
  case Prec::Int8:
    return t.isSigned ? int64_t(int8_t(base[index])) : int64_t(base[index]);
  case Prec::Int16: {
    uint16_t v;
    std::memcpy(&v, base + index * 2, 2);
    return t.isSigned ? int64_t(int16_t(v)) : int64_t(v);
  }
  case Prec::Int32: {
    uint32_t v;
    std::memcpy(&v, base + index * 4, 4);
    return t.isSigned ? int64_t(int32_t(v)) : int64_t(v);
  }
  default:
    break;
  }
  uint64_t bits = loadBits(base, index, t.prec);
  if (isa::isFloat(t.prec))
    return isa::roundToInt(double(bitsToFloatOf(bits, t.prec)),
                           isa::RoundMode::TowardsZero);
  return bitsToIntOf(bits, t);
}

float loadFloat(const uint8_t *base, uint64_t index, ElemType t) {
  uint64_t bits = loadBits(base, index, t.prec);
  if (isa::isFloat(t.prec))
    return bitsToFloatOf(bits, t.prec);
  return float(bitsToIntOf(bits, t));
}

double loadValue(const uint8_t *base, uint64_t index, ElemType t) {
  uint64_t bits = loadBits(base, index, t.prec);
  if (isa::isFloat(t.prec))
    return double(bitsToFloatOf(bits, t.prec));
  return double(bitsToIntOf(bits, t));
}

void storeInt(uint8_t *base, uint64_t index, ElemType t, int64_t v) {
  switch (t.prec) {
  case Prec::Int8:
    base[index] = uint8_t(t.isSigned ? std::clamp<int64_t>(v, -128, 127)
                                     : std::clamp<int64_t>(v, 0, 255));
    return;
  case Prec::Int16: {
    uint16_t x = uint16_t(t.isSigned ? std::clamp<int64_t>(v, -32768, 32767)
                                     : std::clamp<int64_t>(v, 0, 65535));
    std::memcpy(base + index * 2, &x, 2);
    return;
  }
  default:
    break;
  }
  if (isa::isFloat(t.prec)) {
    // Integers reach floats through fp32 (exact below 2^24); see
    // semantics.md "Conversions".
    storeFloat(base, index, t, float(v));
    return;
  }
  storeBits(base, index, t.prec,
            uint64_t(isa::saturate(v, t.prec, t.isSigned)));
}

void storeFloat(uint8_t *base, uint64_t index, ElemType t, float v,
                isa::RoundMode mode) {
  switch (t.prec) {
  case Prec::Fp32:
    storeBits(base, index, t.prec, isa::floatToBits(v));
    return;
  case Prec::Fp16:
    storeBits(base, index, t.prec,
              mode == isa::RoundMode::HalfToEven ? detail::fp32ToFp16Fast(v)
                                                 : isa::fp32ToFp16(v, mode));
    return;
  case Prec::Bf16:
    storeBits(base, index, t.prec,
              mode == isa::RoundMode::HalfToEven ? detail::fp32ToBf16Fast(v)
                                                 : isa::fp32ToBf16(v, mode));
    return;
  default:
    storeBits(base, index, t.prec,
              uint64_t(isa::floatToInt(v, t.prec, t.isSigned, mode)));
    return;
  }
}

//===----------------------------------------------------------------------===//
// Local tensors
//===----------------------------------------------------------------------===//

LaneGeometry::LaneGeometry(const isa::ChipParams &chip)
    : lanes(chip.npuNum), laneShift(chip.laneShift()),
      laneBytes(chip.lmemBytes), euBytes(chip.euBytes) {}

unsigned LaneGeometry::euNum(Prec p) const {
  return euBytes * kBitsPerByte / isa::precBits(p);
}

LocalPos LocalTensor::pos(const LaneGeometry &geo, uint32_t n, uint32_t c,
                          uint32_t h, uint32_t w) const {
  unsigned start = startLane(geo);
  uint64_t slot = (uint64_t(start) + c) / geo.lanes;
  int64_t elem = int64_t(n) * stride.n + int64_t(slot) * stride.c +
                 int64_t(h) * stride.h + int64_t(w) * stride.w;
  uint64_t bits = isa::precBits(type.prec);
  // Element index from the lane start: the start offset counted in elements
  // of this precision (a byte offset not divisible by the element size is
  // handled by the byte-based accessors; here it is exact for INT4/INT8 and
  // for aligned wider types).
  uint64_t startElems = startOffset(geo) * kBitsPerByte / bits;
  return {unsigned((start + c) % geo.lanes), startElems + uint64_t(elem)};
}

namespace {

/// Byte pointer and element index of one element, checked against its lane.
struct CheckedElem {
  const uint8_t *base;
  uint64_t index;
};

CheckedElem checkedElem(const MachineState &m, const LocalTensor &t, uint32_t n,
                        uint32_t c, uint32_t h, uint32_t w) {
  LaneGeometry geo(m.chip);
  unsigned start = t.startLane(geo);
  uint64_t slot = (uint64_t(start) + c) / geo.lanes;
  int64_t elem = int64_t(n) * t.stride.n + int64_t(slot) * t.stride.c +
                 int64_t(h) * t.stride.h + int64_t(w) * t.stride.w;
  unsigned bits = isa::precBits(t.type.prec);
  int64_t bitPos = int64_t(t.startOffset(geo) * kBitsPerByte) + elem * bits;
  if (elem < 0 || bitPos < 0 ||
      uint64_t(bitPos) + bits > geo.laneBytes * kBitsPerByte)
    throw MemoryError("element (" + std::to_string(n) + ", " +
                      std::to_string(c) + ", " + std::to_string(h) + ", " +
                      std::to_string(w) + ") of the local tensor at " +
                      isa::formatHex(t.addr) + " leaves its lane");
  const uint8_t *lane =
      m.lmem.at(unsigned((start + c) % geo.lanes), 0, geo.laneBytes);
  return {lane + t.startOffset(geo), uint64_t(elem)};
}

} // namespace

double LocalTensor::get(const MachineState &m, uint32_t n, uint32_t c,
                        uint32_t h, uint32_t w) const {
  CheckedElem e = checkedElem(m, *this, n, c, h, w);
  return loadValue(e.base, e.index, type);
}

int64_t LocalTensor::getInt(const MachineState &m, uint32_t n, uint32_t c,
                            uint32_t h, uint32_t w) const {
  CheckedElem e = checkedElem(m, *this, n, c, h, w);
  return loadInt(e.base, e.index, type);
}

float LocalTensor::getFloat(const MachineState &m, uint32_t n, uint32_t c,
                            uint32_t h, uint32_t w) const {
  CheckedElem e = checkedElem(m, *this, n, c, h, w);
  return loadFloat(e.base, e.index, type);
}

void LocalTensor::setInt(MachineState &m, uint32_t n, uint32_t c, uint32_t h,
                         uint32_t w, int64_t v) const {
  CheckedElem e = checkedElem(m, *this, n, c, h, w);
  storeInt(const_cast<uint8_t *>(e.base), e.index, type, v);
}

void LocalTensor::setFloat(MachineState &m, uint32_t n, uint32_t c, uint32_t h,
                           uint32_t w, float v, isa::RoundMode mode) const {
  CheckedElem e = checkedElem(m, *this, n, c, h, w);
  storeFloat(const_cast<uint8_t *>(e.base), e.index, type, v, mode);
}

LocalTensor makeLocalTensor(const isa::ChipParams &chip, uint32_t addr,
                            ElemType type, Shape4 shape, LocalLayout layout) {
  LocalTensor t;
  t.addr = addr;
  t.type = type;
  t.shape = shape;
  LaneGeometry geo(chip);
  t.stride =
      isa::localStrides(chip, shape, t.startLane(geo), type.prec, layout);
  return t;
}

//===----------------------------------------------------------------------===//
// Checked operand views
//===----------------------------------------------------------------------===//

namespace detail {

OperandView::OperandView(const MachineState &m, const LocalTensor &t,
                         const char *what, const TiuOp &op)
    : t_(t) {
  LaneGeometry geo(m.chip);
  const Shape4 &s = t.shape;
  if (s.n == 0 || s.c == 0 || s.h == 0 || s.w == 0)
    throw Error(opName(op) + ": " + what + " has an empty shape (" +
                std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
                std::to_string(s.h) + ", " + std::to_string(s.w) + ")");
  laneStart_.resize(s.c);
  chanOff_.resize(s.c);
  lane_.resize(s.c);
  unsigned bits = isa::precBits(t.type.prec);
  int64_t inner = int64_t(s.n - 1) * t.stride.n +
                  int64_t(s.h - 1) * t.stride.h + int64_t(s.w - 1) * t.stride.w;
  uint64_t total = m.chip.lmemTotal();
  if (t.addr >= total) {
    // A unified address above local memory: static memory seen by every
    // lane (semantics.md "Operands in static memory").
    uint64_t lastSlot = s.c - 1;
    int64_t maxElem = inner + int64_t(lastSlot) * t.stride.c;
    uint64_t bytes =
        (uint64_t(maxElem + 1) * bits + kBitsPerByte - 1) / kBitsPerByte;
    if (isa::classifyAddr(m.chip, t.addr) != isa::MemRegion::Static ||
        !m.smem.contains(t.addr, bytes))
      throw MemoryError(opName(op) + ": " + what + " at " +
                        isa::formatHex(t.addr) +
                        " is neither in local nor in static memory");
    auto *base = const_cast<uint8_t *>(m.smem.at(t.addr, bytes));
    for (uint32_t c = 0; c < s.c; ++c) {
      laneStart_[c] = base;
      chanOff_[c] = int64_t(c) * t.stride.c;
      lane_[c] = c % geo.lanes;
    }
    return;
  }
  unsigned start = t.startLane(geo);
  uint64_t offset = t.startOffset(geo);
  if (bits >= kBitsPerByte && offset % (bits / kBitsPerByte) != 0)
    throw MemoryError(opName(op) + ": " + what + " at " +
                      isa::formatHex(t.addr) + " is not aligned to its " +
                      std::to_string(bits / kBitsPerByte) + "-byte elements");
  uint64_t lastSlot = (uint64_t(start) + s.c - 1) / geo.lanes;
  int64_t maxElem = inner + int64_t(lastSlot) * t.stride.c;
  if (t.stride.n < 0 || t.stride.c < 0 || t.stride.h < 0 || t.stride.w < 0 ||
      offset * kBitsPerByte + uint64_t(maxElem + 1) * bits >
          geo.laneBytes * kBitsPerByte)
    throw MemoryError(opName(op) + ": " + what + " at " +
                      isa::formatHex(t.addr) + " leaves its lane: it needs " +
                      std::to_string((uint64_t(maxElem + 1) * bits + 7) / 8) +
                      " bytes from offset " + isa::formatHex(offset) +
                      " (lanes hold " + isa::formatHex(geo.laneBytes) + ")");
  local_ = true;
  laneBytes_ = {offset,
                offset + (uint64_t(maxElem + 1) * bits + kBitsPerByte - 1) /
                             kBitsPerByte};
  for (uint32_t c = 0; c < s.c; ++c) {
    unsigned lane = unsigned((start + c) % geo.lanes);
    uint64_t slot = (uint64_t(start) + c) / geo.lanes;
    laneStart_[c] =
        const_cast<uint8_t *>(m.lmem.at(lane, 0, geo.laneBytes)) + offset;
    chanOff_[c] = int64_t(slot) * t.stride.c;
    lane_[c] = lane;
  }
}

ResultView::ResultView(MachineState &m, const LocalTensor &t, const char *what,
                       const TiuOp &op, uint64_t laneMask)
    : OperandView(m, t, what, op), laneMask_(laneMask) {
  if (t.addr >= m.chip.lmemTotal())
    throw MemoryError(opName(op) + ": " + what + " at " +
                      isa::formatHex(t.addr) +
                      " is not in local memory (results are written there)");
  // Sub-byte elements share bytes; otherwise sort the dimensions of one
  // lane (n, slot, h, w; strides are non-negative, see OperandView) by
  // stride, and each must step past the reach of the smaller ones.
  if (isa::precBits(t.type.prec) < kBitsPerByte)
    return;
  LaneGeometry geo(m.chip);
  const Shape4 &s = t.shape;
  uint64_t slots = (uint64_t(t.startLane(geo)) + s.c - 1) / geo.lanes + 1;
  std::array<std::pair<int64_t, uint64_t>, 4> dims = {{
      {t.stride.n, s.n},
      {t.stride.c, slots},
      {t.stride.h, s.h},
      {t.stride.w, s.w},
  }};
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0; // the largest element offset the smaller dims reach
  for (auto [stride, size] : dims) {
    if (size <= 1)
      continue;
    if (stride <= reach)
      return;
    reach += stride * int64_t(size - 1);
  }
  apart_ = true;
}

bool channelOrderFree(const ResultView &out, const OperandView &in) {
  if (!out.elementsApart())
    return false;
  if (!in.local())
    return true;
  auto [lo, hi] = in.laneBytes();
  auto [outLo, outHi] = out.laneBytes();
  if (hi <= outLo || outHi <= lo)
    return true;
  const LocalTensor &a = in.tensor(), &b = out.tensor();
  auto same = [](const auto &x, const auto &y) {
    return x.n == y.n && x.c == y.c && x.h == y.h && x.w == y.w;
  };
  return a.addr == b.addr && a.type.prec == b.type.prec &&
         same(a.shape, b.shape) && same(a.stride, b.stride);
}

namespace {

template <typename T> T rd(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void wr(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// The contiguous integer store of storeRowInt: v[w] wrapped or clamped to
/// [lo, hi], as T. One body, built for the baseline and for AVX2 (whose
/// 64-bit compares let the compiler vectorise the clamp; integer values, so
/// the same bits either way).
template <typename T>
TPUSIM_INLINE void storeIntRowBody(uint8_t *base, const int64_t *v,
                                   uint32_t width, bool wrap, int64_t lo,
                                   int64_t hi) {
  if (wrap) {
    for (uint32_t w = 0; w < width; ++w)
      wr<T>(base + size_t(w) * sizeof(T), T(v[w]));
    return;
  }
  for (uint32_t w = 0; w < width; ++w)
    wr<T>(base + size_t(w) * sizeof(T), T(std::clamp(v[w], lo, hi)));
}
template <typename T>
void storeIntRowPortable(uint8_t *base, const int64_t *v, uint32_t width,
                         bool wrap, int64_t lo, int64_t hi) {
  storeIntRowBody<T>(base, v, width, wrap, lo, hi);
}
#if TPUSIM_X86_PATHS
template <typename T>
TPUSIM_TARGET_AVX2 void storeIntRowAvx2(uint8_t *base, const int64_t *v,
                                        uint32_t width, bool wrap, int64_t lo,
                                        int64_t hi) {
  storeIntRowBody<T>(base, v, width, wrap, lo, hi);
}
#endif
/// The contiguous widening read of rowInt (T the element type), built for
/// the baseline and for AVX2 as storeIntRow.
template <typename T>
TPUSIM_INLINE void readIntRowBody(const uint8_t *base, int64_t *out,
                                  uint32_t width) {
  for (uint32_t w = 0; w < width; ++w)
    out[w] = int64_t(rd<T>(base + size_t(w) * sizeof(T)));
}
template <typename T>
void readIntRowPortable(const uint8_t *base, int64_t *out, uint32_t width) {
  readIntRowBody<T>(base, out, width);
}
#if TPUSIM_X86_PATHS
template <typename T>
TPUSIM_TARGET_AVX2 void readIntRowAvx2(const uint8_t *base, int64_t *out,
                                       uint32_t width) {
  readIntRowBody<T>(base, out, width);
}
#endif
template <typename T>
void readIntRow(const uint8_t *base, int64_t *out, uint32_t width) {
#if TPUSIM_X86_PATHS
  if (simdPath() != SimdPath::Portable)
    return readIntRowAvx2<T>(base, out, width);
#endif
  readIntRowPortable<T>(base, out, width);
}

template <typename T>
void storeIntRow(uint8_t *base, const int64_t *v, uint32_t width, bool wrap,
                 int64_t lo, int64_t hi) {
#if TPUSIM_X86_PATHS
  if (simdPath() != SimdPath::Portable)
    return storeIntRowAvx2<T>(base, v, width, wrap, lo, hi);
#endif
  storeIntRowPortable<T>(base, v, width, wrap, lo, hi);
}

/// isa::floatToInt of a row of floats into contiguous T (T's low bits of
/// the result: the integer results of rq0 and of float-to-int casts): NaN
/// gives 0, anything else is rounded per M and clamped to [lo, hi]. The
/// rounding is done on the double, where it is exact for every float: a
/// float has at most 24 significant bits, so d + 0.5 and d - 0.5 (HalfUp,
/// HalfDown) are exact below 2^52 and already integral above 2^23.
template <typename T, isa::RoundMode M>
TPUSIM_INLINE void roundRowBody(uint8_t *base, const float *v, uint32_t width,
                                double lo, double hi) {
  for (uint32_t w = 0; w < width; ++w) {
    double d = v[w], r;
    if constexpr (M == isa::RoundMode::HalfToEven)
      r = std::nearbyint(d);
    else if constexpr (M == isa::RoundMode::HalfAwayFromZero)
      r = std::round(d);
    else if constexpr (M == isa::RoundMode::TowardsZero)
      r = std::trunc(d);
    else if constexpr (M == isa::RoundMode::Down)
      r = std::floor(d);
    else if constexpr (M == isa::RoundMode::Up)
      r = std::ceil(d);
    else if constexpr (M == isa::RoundMode::HalfUp)
      r = std::floor(d + 0.5);
    else
      r = std::ceil(d - 0.5);
    r = d != d ? 0.0 : std::min(std::max(r, lo), hi);
    wr<T>(base + size_t(w) * sizeof(T), T(int64_t(r)));
  }
}
TPUSIM_BUILDS(roundRow, roundRowBody, typename T TPUSIM_COMMA isa::RoundMode M,
              T TPUSIM_COMMA M,
              (uint8_t * base, const float *v, uint32_t width, double lo,
               double hi),
              (base, v, width, lo, hi))
template <typename T>
void roundRow(uint8_t *base, const float *v, uint32_t width,
              isa::RoundMode mode, double lo, double hi) {
  withRoundMode(mode, [&](auto m) {
    roundRow<T, decltype(m)::value>(base, v, width, lo, hi);
  });
}

} // namespace

void OperandView::rowFloat(uint32_t n, uint32_t c, uint32_t h, float *out,
                           uint32_t count) const {
  uint32_t width = count;
  Prec p = t_.type.prec;
  if (p == Prec::Int4 || (!isa::isFloat(p) && !t_.type.isSigned)) {
    for (uint32_t w = 0; w < width; ++w)
      out[w] = getFloat(n, c, h, w);
    return;
  }
  unsigned bytes = isa::precBits(p) / kBitsPerByte;
  const uint8_t *base = laneStart_[c] + index(n, c, h, 0) * bytes;
  int64_t step = t_.stride.w * bytes;
  switch (p) {
  case Prec::Fp32:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = rd<float>(base + w * step);
    return;
  case Prec::Fp16:
    if (step == 2) {
      // Contiguous (the usual case): the vectorised row conversion.
      halfRowToFloat(base, out, width, /*testNan=*/false);
      return;
    }
    for (uint32_t w = 0; w < width; ++w)
      out[w] = fp16ToFp32Fast(rd<uint16_t>(base + w * step));
    return;
  case Prec::Bf16:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = bf16ToFp32Fast(rd<uint16_t>(base + w * step));
    return;
  case Prec::Int8:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = float(rd<int8_t>(base + w * step));
    return;
  case Prec::Int16:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = float(rd<int16_t>(base + w * step));
    return;
  default:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = float(rd<int32_t>(base + w * step));
    return;
  }
}

void OperandView::rowInt(uint32_t n, uint32_t c, uint32_t h, int64_t *out,
                         uint32_t count) const {
  uint32_t width = count;
  Prec p = t_.type.prec;
  if (p == Prec::Int4 || isa::isFloat(p)) {
    for (uint32_t w = 0; w < width; ++w)
      out[w] = getInt(n, c, h, w);
    return;
  }
  unsigned bytes = isa::precBits(p) / kBitsPerByte;
  const uint8_t *base = laneStart_[c] + index(n, c, h, 0) * bytes;
  int64_t step = t_.stride.w * bytes;
  bool s = t_.type.isSigned;
  if (step == int64_t(bytes)) {
    // Contiguous: typed loops the compiler vectorises.
    switch (p) {
    case Prec::Int8:
      return s ? readIntRow<int8_t>(base, out, width)
               : readIntRow<uint8_t>(base, out, width);
    case Prec::Int16:
      return s ? readIntRow<int16_t>(base, out, width)
               : readIntRow<uint16_t>(base, out, width);
    default:
      return s ? readIntRow<int32_t>(base, out, width)
               : readIntRow<uint32_t>(base, out, width);
    }
  }
  switch (p) {
  case Prec::Int8:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = s ? int64_t(rd<int8_t>(base + w * step))
                 : int64_t(rd<uint8_t>(base + w * step));
    return;
  case Prec::Int16:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = s ? int64_t(rd<int16_t>(base + w * step))
                 : int64_t(rd<uint16_t>(base + w * step));
    return;
  default:
    for (uint32_t w = 0; w < width; ++w)
      out[w] = s ? int64_t(rd<int32_t>(base + w * step))
                 : int64_t(rd<uint32_t>(base + w * step));
    return;
  }
}

void ResultView::storeRowFloat(uint32_t n, uint32_t c, uint32_t h,
                               const float *v, uint32_t count,
                               isa::RoundMode mode) const {
  if (!enabled(c))
    return;
  uint32_t width = count;
  Prec p = t_.type.prec;
  if (p != Prec::Int4 && !isa::isFloat(p) && t_.stride.w == 1) {
    // Contiguous integers: roundRow, floatToInt's values.
    unsigned bytes = isa::precBits(p) / kBitsPerByte;
    uint8_t *base = laneStart_[c] + index(n, c, h, 0) * bytes;
    double lo = double(isa::precMin(p, t_.type.isSigned));
    double hi = double(isa::precMax(p, t_.type.isSigned));
    switch (bytes) {
    case 1:
      return roundRow<uint8_t>(base, v, width, mode, lo, hi);
    case 2:
      return roundRow<uint16_t>(base, v, width, mode, lo, hi);
    default:
      return roundRow<uint32_t>(base, v, width, mode, lo, hi);
    }
  }
  if (p == Prec::Int4 || !isa::isFloat(p)) {
    for (uint32_t w = 0; w < width; ++w)
      setFloat(n, c, h, w, v[w], mode);
    return;
  }
  unsigned bytes = isa::precBits(p) / kBitsPerByte;
  uint8_t *base = laneStart_[c] + index(n, c, h, 0) * bytes;
  int64_t step = t_.stride.w * bytes;
  switch (p) {
  case Prec::Fp32:
    for (uint32_t w = 0; w < width; ++w)
      wr<float>(base + w * step, v[w]);
    return;
  case Prec::Fp16:
    if (mode == isa::RoundMode::HalfToEven && step == 2) {
      floatRowToHalf(v, base, width);
      return;
    }
    if (mode == isa::RoundMode::HalfToEven) {
      for (uint32_t w = 0; w < width; ++w)
        wr<uint16_t>(base + w * step, fp32ToFp16Fast(v[w]));
      return;
    }
    for (uint32_t w = 0; w < width; ++w)
      wr<uint16_t>(base + w * step, isa::fp32ToFp16(v[w], mode));
    return;
  default:
    if (mode == isa::RoundMode::HalfToEven) {
      for (uint32_t w = 0; w < width; ++w)
        wr<uint16_t>(base + w * step, fp32ToBf16Fast(v[w]));
      return;
    }
    for (uint32_t w = 0; w < width; ++w)
      wr<uint16_t>(base + w * step, isa::fp32ToBf16(v[w], mode));
    return;
  }
}

void ResultView::storeRowInt(uint32_t n, uint32_t c, uint32_t h,
                             const int64_t *v, uint32_t count,
                             bool wrap) const {
  if (!enabled(c))
    return;
  uint32_t width = count;
  Prec p = t_.type.prec;
  if (p == Prec::Int4 || isa::isFloat(p)) {
    for (uint32_t w = 0; w < width; ++w) {
      if (wrap && !isa::isFloat(p))
        setBits(n, c, h, w, detail::wrapBits(v[w], isa::precBits(p)));
      else
        setInt(n, c, h, w, v[w]);
    }
    return;
  }
  unsigned bytes = isa::precBits(p) / kBitsPerByte;
  uint8_t *base = laneStart_[c] + index(n, c, h, 0) * bytes;
  int64_t step = t_.stride.w * bytes;
  int64_t lo = isa::precMin(p, t_.type.isSigned);
  int64_t hi = isa::precMax(p, t_.type.isSigned);
  if (step == int64_t(bytes)) {
    // Contiguous: typed loops the compiler vectorises.
    switch (bytes) {
    case 1:
      return storeIntRow<uint8_t>(base, v, width, wrap, lo, hi);
    case 2:
      return storeIntRow<uint16_t>(base, v, width, wrap, lo, hi);
    default:
      return storeIntRow<uint32_t>(base, v, width, wrap, lo, hi);
    }
  }
  for (uint32_t w = 0; w < width; ++w) {
    int64_t x = wrap ? v[w] : std::clamp(v[w], lo, hi);
    switch (bytes) {
    case 1:
      wr<uint8_t>(base + w * step, uint8_t(x));
      break;
    case 2:
      wr<uint16_t>(base + w * step, uint16_t(x));
      break;
    default:
      wr<uint32_t>(base + w * step, uint32_t(x));
      break;
    }
  }
}

int64_t Immediate::asInt() const {
  return loadInt(reinterpret_cast<const uint8_t *>(&bits), 0, type);
}

float Immediate::asFloat() const {
  return loadFloat(reinterpret_cast<const uint8_t *>(&bits), 0, type);
}

} // namespace detail
} // namespace tpu::sim
