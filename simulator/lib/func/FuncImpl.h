//===- FuncImpl.h - Shared helpers of the functional kernels ------*- C++
//-*-===//
//
// Private to simulator/lib/func: checked views of local-memory operands,
// operand construction from canonical TIU fields, and error helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_LIB_FUNC_FUNCIMPL_H
#define TPUSIM_LIB_FUNC_FUNCIMPL_H

#include "SimdImpl.h"
#include "tpusim/Func.h"

#include "tpu/isa/Numerics.h"

#include <string>
#include <vector>

namespace tpu::sim::detail {

/// Mnemonic-prefixed tpu::Error for a command the kernels reject.
[[noreturn]] void failOp(const TiuOp &op, const std::string &what);
[[noreturn]] void failOp(const GdmaOp &op, const std::string &what);
std::string opName(const TiuOp &op);
std::string opName(const GdmaOp &op);

/// The round-mode code of `opd2_n_str` (isa/docs/bm1684x.md 8.1, kernel-side enum);
/// codes without a meaning throw.
isa::RoundMode roundModeOf(const TiuOp &op);

/// Precision code of a field; throws naming the field for code 7.
isa::Prec precOf(const TiuOp &op, uint64_t code, const char *field);

/// A bounds-checked view of a TIU operand: a local tensor (or, for an
/// address in static memory, the same bytes seen from every lane).
/// Construction validates the whole extent once; element access is then
/// unchecked.
class OperandView {
public:
  /// `op` names the command in error messages (built only on error).
  OperandView(const MachineState &m, const LocalTensor &t, const char *what,
              const TiuOp &op);

  const LocalTensor &tensor() const { return t_; }
  const Shape4 &shape() const { return t_.shape; }
  ElemType type() const { return t_.type; }

  /// Element index (from laneStart(c)) of (n, c, h, w).
  int64_t index(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return chanOff_[c] + int64_t(n) * t_.stride.n + int64_t(h) * t_.stride.h +
           int64_t(w) * t_.stride.w;
  }
  uint8_t *laneStart(uint32_t c) const { return laneStart_[c]; }
  unsigned lane(uint32_t c) const { return lane_[c]; }

  /// Whether the view is in local memory (else in static memory).
  bool local() const { return local_; }
  /// The bytes [first, second) from a lane's start that the view may touch
  /// in any lane (local views).
  std::pair<uint64_t, uint64_t> laneBytes() const { return laneBytes_; }

  uint64_t bits(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return loadBits(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type.prec);
  }
  int64_t getInt(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return loadInt(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type);
  }
  float getFloat(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return loadFloat(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type);
  }
  double get(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return loadValue(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type);
  }

  /// `count` elements from (n, c, h, 0) along w, converted to float /
  /// int64 (as loadFloat / loadInt do), one type dispatch per call. `count`
  /// may exceed shape().w when h and w are contiguous (one merged row).
  void rowFloat(uint32_t n, uint32_t c, uint32_t h, float *out,
                uint32_t count) const;
  void rowInt(uint32_t n, uint32_t c, uint32_t h, int64_t *out,
              uint32_t count) const;

protected:
  LocalTensor t_;
  bool local_ = false;
  std::pair<uint64_t, uint64_t> laneBytes_{0, 0};
  std::vector<uint8_t *> laneStart_;
  std::vector<int64_t> chanOff_;
  std::vector<unsigned> lane_;
};

/// A writable view: like OperandView, but must be in local memory, and
/// channels whose lane is disabled by `laneMask` are not written.
class ResultView : public OperandView {
public:
  ResultView(MachineState &m, const LocalTensor &t, const char *what,
             const TiuOp &op, uint64_t laneMask = ~uint64_t(0));

  bool enabled(uint32_t c) const { return (laneMask_ >> lane_[c]) & 1; }

  /// Whether no two elements of the view share a byte: then the elements
  /// (and so the channels) can be written in any order, on any threads,
  /// with the same result (checked by strides: in a lane, the n, slot, h
  /// and w strides each step past everything the smaller ones reach).
  bool elementsApart() const { return apart_; }
  void setBits(uint32_t n, uint32_t c, uint32_t h, uint32_t w,
               uint64_t v) const {
    if (enabled(c))
      storeBits(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type.prec, v);
  }
  void setInt(uint32_t n, uint32_t c, uint32_t h, uint32_t w, int64_t v) const {
    if (enabled(c))
      storeInt(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type, v);
  }
  void setFloat(uint32_t n, uint32_t c, uint32_t h, uint32_t w, float v,
                isa::RoundMode mode = isa::RoundMode::HalfToEven) const {
    if (enabled(c))
      storeFloat(laneStart_[c], uint64_t(index(n, c, h, w)), t_.type, v, mode);
  }

  /// Stores `count` elements from (n, c, h, 0) like setFloat / setInt; with
  /// `wrap`, integers keep their low bits instead of saturating.
  void storeRowFloat(uint32_t n, uint32_t c, uint32_t h, const float *v,
                     uint32_t count,
                     isa::RoundMode mode = isa::RoundMode::HalfToEven) const;
  void storeRowInt(uint32_t n, uint32_t c, uint32_t h, const int64_t *v,
                   uint32_t count, bool wrap) const;

private:
  uint64_t laneMask_;
  bool apart_ = false;
};

/// Whether the channels of `out` may be computed in any order, on any
/// threads, with the bytes of computing them in channel order while
/// reading `in`: out's elements lie apart (ResultView::elementsApart), and
/// `in` is in static memory, or touches none of out's bytes, or is `out`
/// itself (same address, shape, strides and element type: each element is
/// then read and written by the same channel's step).
bool channelOrderFree(const ResultView &out, const OperandView &in);

/// fn(c) for every channel c < count whose lane `out` writes: in channel
/// order, or on the kernel threads (any order) with `anyOrder`, which the
/// caller sets only when the order cannot show (channelOrderFree of `out`
/// against everything fn reads but its own results). fn(c) writes only
/// channel c of `out` and must not throw.
template <typename Fn>
void forEachChannel(const ResultView &out, uint32_t count, bool anyOrder,
                    Fn fn) {
  if (anyOrder) {
    // Runs of channels per task, some per thread: a channel of a small
    // plane is less work than handing out a task.
    int64_t tasks = std::min<int64_t>(count, int64_t(kernelThreads()) * 8);
    parallelTasks(tasks, [&](int64_t t) {
      uint32_t c1 = uint32_t(int64_t(count) * (t + 1) / tasks);
      for (uint32_t c = uint32_t(int64_t(count) * t / tasks); c < c1; ++c)
        if (out.enabled(c))
          fn(c);
    });
    return;
  }
  for (uint32_t c = 0; c < count; ++c)
    if (out.enabled(c))
      fn(c);
}

/// A scalar operand: an immediate (raw bits in its precision) or nothing.
struct Immediate {
  ElemType type;
  uint64_t bits = 0;
  int64_t asInt() const;
  float asFloat() const;
};

/// Operand `i` (0..2) of a TIU op as a local tensor with layout code
/// `strCode` and the command's free strides for that operand (opd2 and res0
/// included: index 3 = res0).
enum class Opd { Opd0 = 0, Opd1 = 1, Opd2 = 2, Res0 = 3 };
LocalTensor tiuTensor(const TiuOp &op, const LaneGeometry &geo, Opd which,
                      uint64_t addr, ElemType type, Shape4 shape,
                      unsigned strCode);

/// Lane mask of a TIU op restricted to existing lanes.
uint64_t tiuLaneMask(const TiuOp &op, const LaneGeometry &geo);

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
inline uint64_t ceilDiv(uint64_t v, uint64_t d) { return (v + d - 1) / d; }

/// Signed interpretation of the low `bits` bits of `v`.
inline int64_t signExtend(uint64_t v, unsigned bits) {
  if (bits >= 64)
    return int64_t(v);
  uint64_t m = uint64_t(1) << (bits - 1);
  v &= (m << 1) - 1;
  return int64_t((v ^ m) - m);
}

/// Low `bits` bits of `v` (two's-complement wrap-around).
inline uint64_t wrapBits(int64_t v, unsigned bits) {
  return bits >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << bits) - 1);
}

// Family kernels (one file each).
void execConv(const TiuOp &op, MachineState &m);
void execPorD(const TiuOp &op, MachineState &m);
void execMM(const TiuOp &op, MachineState &m);
void execMM2(const TiuOp &op, MachineState &m);
void execAR(const TiuOp &op, MachineState &m);
void execCMP(const TiuOp &op, MachineState &m);
void execRQDQ(const TiuOp &op, MachineState &m);
void execSFU(const TiuOp &op, MachineState &m);
void execLIN(const TiuOp &op, MachineState &m);
void execVC(const TiuOp &op, MachineState &m);
void execTransBC(const TiuOp &op, MachineState &m);
void execSG(const TiuOp &op, MachineState &m);

} // namespace tpu::sim::detail

#endif // TPUSIM_LIB_FUNC_FUNCIMPL_H
