//===- Gdma.cpp - GDMA functional kernels and work descriptions -----------===//
//
// Every GDMA type of isa/docs/bm1684x.md 5: tensor moves (special functions 0..6),
// fill, general 1-D copies, matrix moves, cw_transpose, gather/scatter,
// masked_select and nonzero. Operands are 40-bit unified addresses; the
// region (local, static, L2, global) comes from isa::classifyAddr. Elements
// move as bit patterns (GDMA formats carry only a width); INT4 elements are
// nibbles, two per byte, addressed by element offsets (semantics.md "GDMA").
//
// A move reads its source into a dense buffer in source (n, c, h, w) order,
// permutes it into destination order, and writes it; lane masks filter the
// local side (semantics.md "GDMA").
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"

#include "tpu/isa/Format.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>

namespace tpu::sim {

using isa::GdmaType;
using isa::MemRegion;

namespace {

using detail::ceilDiv;
using detail::failOp;

constexpr uint64_t kAllLanes = ~uint64_t(0);
constexpr unsigned kBitsPerByte = 8;

// Tensor special functions (isa/docs/bm1684x.md 5.1).
enum TensorSp : unsigned {
  kSpNone = 0,
  kSpNcTrans = 1,
  kSpCollect = 2,
  kSpBroadcast = 3,
  kSpDistribute = 4,
  kSpBankCopy = 5,
  kSpBankBroadcast = 6,
};
constexpr unsigned kBankCopies = 4;

/// A 4-D tensor in the unified address space.
struct GTensor {
  MemRegion region = MemRegion::None;
  uint64_t addr = 0;
  Shape4 shape{1, 1, 1, 1};
  Stride4 stride{0, 0, 0, 0};
};

/// Fills `count` dense elements of `eb` bytes with the low bytes of `value`
/// (constant_value of a fill).
void fillElems(uint8_t *dst, uint64_t count, unsigned eb, uint32_t value) {
  for (uint64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * eb, &value, eb);
}

/// Element access to the unified address space for one GDMA command.
/// Elements of `elemBits` = 4 (INT4) are nibbles: element e of a tensor
/// sits in byte e / 2 from its base, even elements in the low nibble
/// (semantics.md "GDMA"); dense buffers then hold one nibble per byte.
class Space {
public:
  Space(MachineState &m, const GdmaOp &op, unsigned elemBits)
      : m_(m), op_(op), eb_(std::max(1u, elemBits / kBitsPerByte)),
        nibbles_(elemBits < kBitsPerByte), geo_(m.chip) {}

  MemRegion region(uint64_t addr, const char *what) const {
    MemRegion r = isa::classifyAddr(m_.chip, addr);
    if (r == MemRegion::None)
      throw MemoryError(detail::opName(op_) + ": " + what + " address " +
                        isa::formatHex(addr) + " is in no memory region");
    return r;
  }

  /// Default strides when stride_enable = 0: dense for flat memories,
  /// compact per lane for local memory.
  Stride4 defaultStrides(const GTensor &t) const {
    const Shape4 &s = t.shape;
    int64_t hw = int64_t(s.h) * s.w;
    if (t.region == MemRegion::Local) {
      unsigned start = localStart(t.addr).first;
      int64_t slots = int64_t(ceilDiv(uint64_t(start) + s.c, geo_.lanes));
      return {slots * hw, hw, int64_t(s.w), 1};
    }
    return {int64_t(s.c) * hw, hw, int64_t(s.w), 1};
  }

  std::pair<unsigned, uint64_t> localStart(uint64_t addr) const {
    uint64_t la = addr - m_.chip.lmemBase;
    return {unsigned(la >> geo_.laneShift), la & (geo_.laneBytes - 1)};
  }

  unsigned laneOf(const GTensor &t, uint32_t c) const {
    return unsigned((localStart(t.addr).first + c) % geo_.lanes);
  }

  /// Pointer to `count` elements of row (n, c, h) starting at w = 0 when
  /// they are contiguous (w stride 1); the range is checked.
  uint8_t *rowPtr(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
                  uint64_t bytes) {
    int64_t off;
    switch (t.region) {
    case MemRegion::Local: {
      auto [start, offset] = localStart(t.addr);
      uint64_t slot = (uint64_t(start) + c) / geo_.lanes;
      off = int64_t(n) * t.stride.n + int64_t(slot) * t.stride.c +
            int64_t(h) * t.stride.h;
      return m_.lmem.at(unsigned((start + c) % geo_.lanes),
                        offset + uint64_t(off) * eb_, bytes);
    }
    case MemRegion::Static:
    case MemRegion::L2: {
      FlatMemory &fm = t.region == MemRegion::Static ? m_.smem : m_.l2;
      off = int64_t(n) * t.stride.n + int64_t(c) * t.stride.c +
            int64_t(h) * t.stride.h;
      return fm.at(t.addr + uint64_t(off) * eb_, bytes);
    }
    default:
      return nullptr;
    }
  }

  uint64_t flatAddr(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
                    uint32_t w) const {
    int64_t off = int64_t(n) * t.stride.n + int64_t(c) * t.stride.c +
                  int64_t(h) * t.stride.h + int64_t(w) * t.stride.w;
    return t.addr + uint64_t(off) * eb_;
  }

  /// Element offset of (n, c, h, w) from the tensor's base (local: inside
  /// the channel's lane, slot-relative as isa/docs/bm1684x.md 3.1).
  int64_t elemOffset(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
                     uint32_t w) const {
    int64_t cPart = int64_t(c);
    if (t.region == MemRegion::Local)
      cPart = int64_t((uint64_t(localStart(t.addr).first) + c) / geo_.lanes);
    return int64_t(n) * t.stride.n + cPart * t.stride.c +
           int64_t(h) * t.stride.h + int64_t(w) * t.stride.w;
  }

  /// Reads (`write` = false) or writes one element between the tensor and
  /// `buf` (eb_ bytes; a nibble in the low 4 bits for INT4). A nibble write
  /// keeps the other nibble of its byte.
  void accessElem(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
                  uint32_t w, uint8_t *buf, bool write) {
    int64_t e = elemOffset(t, n, c, h, w);
    uint64_t byteOff = nibbles_ ? uint64_t(e) / 2 : uint64_t(e) * eb_;
    unsigned len = nibbles_ ? 1 : eb_;
    uint8_t *p = nullptr;
    uint8_t globalByte[4];
    switch (t.region) {
    case MemRegion::Local: {
      auto [start, offset] = localStart(t.addr);
      p = m_.lmem.at(unsigned((start + c) % geo_.lanes), offset + byteOff, len);
      break;
    }
    case MemRegion::Static:
      p = m_.smem.at(t.addr + byteOff, len);
      break;
    case MemRegion::L2:
      p = m_.l2.at(t.addr + byteOff, len);
      break;
    case MemRegion::Global:
      p = globalByte;
      if (!write || nibbles_)
        m_.gmem.read(t.addr + byteOff, p, len);
      break;
    default:
      return;
    }
    if (!nibbles_) {
      if (write)
        std::memcpy(p, buf, eb_);
      else
        std::memcpy(buf, p, eb_);
    } else if (write) {
      // p is the byte of element e: its nibble index there is e & 1.
      storeBits(p, uint64_t(e) & 1, isa::Prec::Int4, *buf);
    } else {
      *buf = uint8_t(loadBits(p, uint64_t(e) & 1, isa::Prec::Int4));
    }
    if (write && t.region == MemRegion::Global)
      m_.gmem.write(t.addr + byteOff, p, len);
  }

  /// Reads row (n, c, h): W elements into `out` (packed); `count` (> W)
  /// reads on into the next rows, when they follow (h stride W, w stride
  /// 1).
  void readRow(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
               uint8_t *out, uint32_t count = 0) {
    uint32_t w = count ? count : t.shape.w;
    if (nibbles_) {
      for (uint32_t i = 0; i < w; ++i)
        accessElem(t, n, c, h, i, out + i, false);
      return;
    }
    if (t.region == MemRegion::Global) {
      if (t.stride.w == 1) {
        m_.gmem.read(flatAddr(t, n, c, h, 0), out, uint64_t(w) * eb_);
        return;
      }
      for (uint32_t i = 0; i < w; ++i)
        m_.gmem.read(flatAddr(t, n, c, h, i), out + size_t(i) * eb_, eb_);
      return;
    }
    uint64_t span = (uint64_t(w - 1) * uint64_t(t.stride.w) + 1) * eb_;
    const uint8_t *p = rowPtr(t, n, c, h, span);
    if (t.stride.w == 1) {
      std::memcpy(out, p, size_t(w) * eb_);
      return;
    }
    for (uint32_t i = 0; i < w; ++i)
      std::memcpy(out + size_t(i) * eb_, p + uint64_t(i) * t.stride.w * eb_,
                  eb_);
  }

  /// Writes row (n, c, h) from `in`; `valid` (optional) skips elements;
  /// `count` as readRow's.
  void writeRow(const GTensor &t, uint32_t n, uint32_t c, uint32_t h,
                const uint8_t *in, const uint8_t *valid, uint32_t count = 0) {
    uint32_t w = count ? count : t.shape.w;
    if (nibbles_) {
      for (uint32_t i = 0; i < w; ++i)
        if (!valid || valid[i]) {
          uint8_t v = in[i];
          accessElem(t, n, c, h, i, &v, true);
        }
      return;
    }
    if (t.region == MemRegion::Global) {
      if (t.stride.w == 1 && !valid) {
        m_.gmem.write(flatAddr(t, n, c, h, 0), in, uint64_t(w) * eb_);
        return;
      }
      for (uint32_t i = 0; i < w; ++i)
        if (!valid || valid[i])
          m_.gmem.write(flatAddr(t, n, c, h, i), in + size_t(i) * eb_, eb_);
      return;
    }
    uint64_t span = (uint64_t(w - 1) * uint64_t(t.stride.w) + 1) * eb_;
    uint8_t *p = rowPtr(t, n, c, h, span);
    if (t.stride.w == 1 && !valid) {
      std::memcpy(p, in, size_t(w) * eb_);
      return;
    }
    for (uint32_t i = 0; i < w; ++i)
      if (!valid || valid[i])
        std::memcpy(p + uint64_t(i) * t.stride.w * eb_, in + size_t(i) * eb_,
                    eb_);
  }

  /// Copies row (n, c, h) of `src` (count elements as readRow's) to the
  /// same row of `dst` without a staging buffer when one side is DDR and
  /// both rows are contiguous whole-byte elements (DDR's read / write
  /// straight from or into the other memory's row); false (nothing done)
  /// otherwise.
  bool copyRowDirect(const GTensor &src, const GTensor &dst, uint32_t n,
                     uint32_t c, uint32_t h, uint32_t count) {
    if (nibbles_ || src.stride.w != 1 || dst.stride.w != 1 ||
        (src.region == MemRegion::Global) == (dst.region == MemRegion::Global))
      return false;
    uint64_t bytes = uint64_t(count) * eb_;
    // A DDR row out of range takes the staged path and its error; the
    // source is checked before the destination, as there.
    if (src.region == MemRegion::Global) {
      uint64_t from = flatAddr(src, n, c, h, 0);
      if (!m_.gmem.contains(from, bytes))
        return false;
      m_.gmem.read(from, rowPtr(dst, n, c, h, bytes), bytes);
      return true;
    }
    const uint8_t *p = rowPtr(src, n, c, h, bytes);
    uint64_t to = flatAddr(dst, n, c, h, 0);
    if (!m_.gmem.contains(to, bytes))
      return false;
    m_.gmem.write(to, p, bytes);
    return true;
  }

  /// Contiguous bytes at a unified address (local memory is contiguous per
  /// lane; a range may run on into the next lane).
  void readFlat(uint64_t addr, uint8_t *out, uint64_t bytes, const char *what) {
    forFlat(
        addr, bytes, what,
        [&](uint8_t *p, uint64_t done, uint64_t n, unsigned) {
          std::memcpy(out + done, p, n);
        },
        [&](uint64_t a, uint64_t done, uint64_t n) {
          m_.gmem.read(a, out + done, n);
        });
  }
  void writeFlat(uint64_t addr, const uint8_t *in, uint64_t bytes,
                 uint64_t laneMask, const char *what) {
    forFlat(
        addr, bytes, what,
        [&](uint8_t *p, uint64_t done, uint64_t n, unsigned lane) {
          if ((laneMask >> lane) & 1)
            std::memcpy(p, in + done, n);
        },
        [&](uint64_t a, uint64_t done, uint64_t n) {
          m_.gmem.write(a, in + done, n);
        });
  }

  /// Writes `count` elements held one per `eb_` bytes in `dense` to the
  /// contiguous range at `addr`; nibbles are packed two per byte and an odd
  /// count keeps the high nibble of the last byte.
  void writeFlatElems(uint64_t addr, const uint8_t *dense, uint64_t count,
                      uint64_t laneMask, const char *what) {
    if (!nibbles_) {
      writeFlat(addr, dense, count * eb_, laneMask, what);
      return;
    }
    std::vector<uint8_t> packed((count + 1) / 2);
    if (count & 1) // the last byte keeps its high nibble
      readFlat(addr + count / 2, &packed.back(), 1, what);
    for (uint64_t i = 0; i < count; ++i)
      storeBits(packed.data(), i, isa::Prec::Int4, dense[i]);
    writeFlat(addr, packed.data(), packed.size(), laneMask, what);
  }

  /// For a local tensor of whole-byte elements: per channel c, the address
  /// of its element (0, c, 0, 0), after checking once that every element
  /// of the channel lies in its lane; then element (n, c, h, w) is at
  /// bases[c] + (n * stride.n + h * stride.h + w * stride.w) * elemBytes().
  /// Empty when the
  /// elements are nibbles or the check fails: the caller takes the element
  /// path, whose error names the first element outside.
  std::vector<uint8_t *> localChannelBases(const GTensor &t) {
    std::vector<uint8_t *> bases;
    const Shape4 &s = t.shape;
    const Stride4 &st = t.stride;
    if (nibbles_ || t.region != MemRegion::Local || st.n < 0 || st.c < 0 ||
        st.h < 0 || st.w < 0)
      return bases;
    uint64_t last = uint64_t(int64_t(s.n - 1) * st.n + int64_t(s.h - 1) * st.h +
                             int64_t(s.w - 1) * st.w);
    auto [start, offset] = localStart(t.addr);
    bases.resize(s.c);
    for (uint32_t c = 0; c < s.c; ++c) {
      uint64_t slot = (uint64_t(start) + c) / geo_.lanes;
      uint64_t first = offset + slot * uint64_t(st.c) * eb_;
      unsigned lane = unsigned((start + c) % geo_.lanes);
      if (first + (last + 1) * eb_ > geo_.laneBytes)
        return {};
      bases[c] = m_.lmem.at(lane, first, (last + 1) * eb_);
    }
    return bases;
  }

  unsigned elemBytes() const { return eb_; }
  bool nibbles() const { return nibbles_; }
  const LaneGeometry &geo() const { return geo_; }

private:
  template <typename LocalFn, typename GlobalFn>
  void forFlat(uint64_t addr, uint64_t bytes, const char *what, LocalFn lf,
               GlobalFn gf) {
    MemRegion r = region(addr, what);
    switch (r) {
    case MemRegion::Global:
      gf(addr, 0, bytes);
      return;
    case MemRegion::Static:
      lf(m_.smem.at(addr, bytes), 0, bytes, 0);
      return;
    case MemRegion::L2:
      lf(m_.l2.at(addr, bytes), 0, bytes, 0);
      return;
    case MemRegion::Local: {
      uint64_t done = 0;
      while (done < bytes) {
        auto [lane, off] = localStart(addr + done);
        uint64_t n = std::min(bytes - done, geo_.laneBytes - off);
        if (lane >= geo_.lanes)
          throw MemoryError(detail::opName(op_) + ": " + what +
                            " runs past the end of local memory");
        lf(m_.lmem.at(lane, off, n), done, n, lane);
        done += n;
      }
      return;
    }
    default:
      return;
    }
  }

  MachineState &m_;
  const GdmaOp &op_;
  unsigned eb_;  ///< Bytes per element in dense buffers (1 for INT4).
  bool nibbles_; ///< INT4: two elements per byte in memory.
  LaneGeometry geo_;
};

Shape4 srcShapeOf(const isa::cmd::DmaTensor &f) {
  return {uint32_t(f.src_nsize), uint32_t(f.src_csize), uint32_t(f.src_hsize),
          uint32_t(f.src_wsize)};
}
Shape4 dstShapeOf(const isa::cmd::DmaTensor &f) {
  return {uint32_t(f.dst_nsize), uint32_t(f.dst_csize), uint32_t(f.dst_hsize),
          uint32_t(f.dst_wsize)};
}

std::string shapeText(const Shape4 &s) {
  return "(" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
         std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
}

bool sameShape(const Shape4 &a, const Shape4 &b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

void checkShape(const GdmaOp &op, const Shape4 &s, const char *what) {
  if (elementCount(s) == 0)
    failOp(op, std::string(what) + " shape " + shapeText(s) + " is empty");
}

/// Builds a tensor operand from the canonical fields.
GTensor makeTensor(Space &sp, const GdmaOp &op, bool isSrc, Shape4 shape,
                   bool unitW) {
  const isa::cmd::DmaTensor &f = op.f;
  GTensor t;
  t.addr = isSrc ? op.srcAddr() : op.dstAddr();
  t.region = sp.region(t.addr, isSrc ? "source" : "destination");
  t.shape = shape;
  if (f.stride_enable) {
    t.stride = isSrc ? Stride4{int64_t(f.src_nstride), int64_t(f.src_cstride),
                               int64_t(f.src_hstride), int64_t(f.src_wstride)}
                     : Stride4{int64_t(f.dst_nstride), int64_t(f.dst_cstride),
                               int64_t(f.dst_hstride), int64_t(f.dst_wstride)};
    if (unitW)
      t.stride.w = 1;
  } else {
    t.stride = sp.defaultStrides(t);
  }
  return t;
}

/// A staging buffer for one row, kept across commands.
std::vector<uint8_t> &rowStage() {
  thread_local std::vector<uint8_t> buf;
  return buf;
}

/// Whether the rows of each (n, c) of `t` follow one another (w stride 1,
/// h stride W, whole-byte elements): then readRow / writeRow move an (n, c)
/// plane as one row.
bool planeRows(const Space &sp, const GTensor &t) {
  return !sp.nibbles() && t.shape.h > 1 && t.stride.w == 1 &&
         t.stride.h == int64_t(t.shape.w) &&
         uint64_t(t.shape.h) * t.shape.w <=
             std::numeric_limits<uint32_t>::max();
}

/// Reads a whole tensor into a dense buffer in (n, c, h, w) order.
std::vector<uint8_t> readTensor(Space &sp, const GTensor &t) {
  unsigned eb = sp.elemBytes();
  const Shape4 &s = t.shape;
  std::vector<uint8_t> buf(elementCount(s) * eb);
  uint8_t *p = buf.data();
  if (planeRows(sp, t)) {
    uint32_t count = s.h * s.w;
    for (uint32_t n = 0; n < s.n; ++n)
      for (uint32_t c = 0; c < s.c; ++c, p += size_t(count) * eb)
        sp.readRow(t, n, c, 0, p, count);
    return buf;
  }
  size_t row = size_t(s.w) * eb;
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c)
      for (uint32_t h = 0; h < s.h; ++h, p += row)
        sp.readRow(t, n, c, h, p);
  return buf;
}

/// Writes a dense buffer (destination order) to a tensor; channels in
/// disabled lanes (local destination) and elements whose `valid` byte is 0
/// are skipped.
void writeTensor(Space &sp, const GTensor &t, const uint8_t *buf,
                 uint64_t laneMask, const std::vector<uint8_t> *valid) {
  unsigned eb = sp.elemBytes();
  const Shape4 &s = t.shape;
  size_t idx = 0;
  bool planes = planeRows(sp, t);
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c) {
      bool on =
          t.region != MemRegion::Local || ((laneMask >> sp.laneOf(t, c)) & 1);
      if (planes) {
        if (on)
          sp.writeRow(t, n, c, 0, buf + idx * eb,
                      valid ? valid->data() + idx : nullptr, s.h * s.w);
        idx += size_t(s.h) * s.w;
        continue;
      }
      for (uint32_t h = 0; h < s.h; ++h, idx += s.w) {
        if (on)
          sp.writeRow(t, n, c, h, buf + idx * eb,
                      valid ? valid->data() + idx : nullptr);
      }
    }
}

/// Loads from DDR into local memory of at least this many bytes run on the
/// kernel threads (copyRowsParallel): below it, handing out the tasks
/// costs about as much as the copy (a few microseconds).
constexpr uint64_t kParallelLoadBytes = uint64_t(64) << 10;

/// copyRows for a large load from DDR into local memory whose every row is
/// in range (checked first: each channel in its lane, the source's extent
/// in DDR, strides not negative, whole-byte elements, w stride 1 on both
/// sides), each row read from DDR straight into its place, with the lanes
/// shared among the kernel threads: a task takes every (n, c) in copyRows'
/// order and writes those of its own lanes. Lanes are disjoint memory and
/// each lane's rows are written in copyRows' order (which decides the
/// bytes when strides make rows of one lane overlap), so the bytes are
/// copyRows'. False, nothing done, when the load does not qualify.
bool copyRowsParallel(Space &sp, MachineState &m, const GTensor &src,
                      const GTensor &dst, uint64_t laneMask) {
  const Shape4 &s = src.shape;
  unsigned eb = sp.elemBytes();
  if (src.region != MemRegion::Global || dst.region != MemRegion::Local ||
      sp.nibbles() || src.stride.w != 1 || dst.stride.w != 1 ||
      elementCount(s) * eb < kParallelLoadBytes)
    return false;
  const Stride4 &ss = src.stride;
  if (ss.n < 0 || ss.c < 0 || ss.h < 0)
    return false;
  uint64_t extent =
      (uint64_t(s.n - 1) * uint64_t(ss.n) + uint64_t(s.c - 1) * uint64_t(ss.c) +
       uint64_t(s.h - 1) * uint64_t(ss.h) + s.w) *
      eb;
  if (!m.gmem.contains(src.addr, extent))
    return false;
  std::vector<uint8_t *> bases = sp.localChannelBases(dst);
  if (bases.empty())
    return false;
  bool planes = planeRows(sp, src) && planeRows(sp, dst);
  uint32_t count = planes ? s.h * s.w : s.w;
  uint32_t rows = planes ? 1 : s.h;
  uint64_t rowBytes = uint64_t(count) * eb;
  unsigned lanes = sp.geo().lanes;
  int64_t tasks = std::min<int64_t>(std::min<int64_t>(s.c, lanes),
                                    int64_t(kernelThreads()));
  detail::parallelTasks(tasks, [&](int64_t t) {
    for (uint32_t n = 0; n < s.n; ++n)
      for (uint32_t c = 0; c < s.c; ++c) {
        unsigned lane = sp.laneOf(dst, c);
        if (int64_t(lane) % tasks != t || !((laneMask >> lane) & 1))
          continue;
        for (uint32_t h = 0; h < rows; ++h)
          m.gmem.read(sp.flatAddr(src, n, c, h, 0),
                      bases[c] + uint64_t(int64_t(n) * dst.stride.n +
                                          int64_t(h) * dst.stride.h) *
                                     eb,
                      rowBytes);
      }
  });
  return true;
}

/// Copies `src` to `dst` (same shape, different memories, whole-byte
/// elements) a row at a time, an (n, c) plane per row where both sides
/// allow it (planeRows). Channels in disabled lanes are read but not
/// written: lanes of the destination when it is local (as writeTensor),
/// else of the source when it is local (as sourceValidity).
void copyRows(Space &sp, const GTensor &src, const GTensor &dst,
              uint64_t laneMask) {
  const Shape4 &s = src.shape;
  bool planes = planeRows(sp, src) && planeRows(sp, dst);
  uint32_t count = planes ? s.h * s.w : s.w;
  uint32_t rows = planes ? 1 : s.h;
  std::vector<uint8_t> &buf = rowStage();
  buf.resize(size_t(count) * sp.elemBytes());
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c) {
      bool on = dst.region == MemRegion::Local
                    ? ((laneMask >> sp.laneOf(dst, c)) & 1)
                : src.region == MemRegion::Local
                    ? ((laneMask >> sp.laneOf(src, c)) & 1)
                    : true;
      // Read either way: a source outside its memory fails as it would
      // in readTensor.
      for (uint32_t h = 0; h < rows; ++h) {
        if (on && sp.copyRowDirect(src, dst, n, c, h, count))
          continue;
        sp.readRow(src, n, c, h, buf.data(), count);
        if (on)
          sp.writeRow(dst, n, c, h, buf.data(), nullptr, count);
      }
    }
}

/// Validity per source element when the source is local, the destination
/// is not, and lanes are masked: elements of disabled lanes are not moved.
std::unique_ptr<std::vector<uint8_t>> sourceValidity(Space &sp,
                                                     const GTensor &src,
                                                     const GTensor &dst,
                                                     uint64_t laneMask) {
  if (src.region != MemRegion::Local || dst.region == MemRegion::Local ||
      laneMask == kAllLanes)
    return nullptr;
  const Shape4 &s = src.shape;
  auto v = std::make_unique<std::vector<uint8_t>>(elementCount(s));
  size_t idx = 0;
  size_t hw = size_t(s.h) * s.w;
  for (uint32_t n = 0; n < s.n; ++n)
    for (uint32_t c = 0; c < s.c; ++c, idx += hw)
      std::fill_n(v->begin() + idx, hw,
                  uint8_t((laneMask >> sp.laneOf(src, c)) & 1));
  return v;
}

/// Permutes a dense buffer: dst(n, c, h, w) = src(map(n, c, h, w)).
template <typename Map>
std::vector<uint8_t> permute(const std::vector<uint8_t> &src,
                             const Shape4 &srcShape, const Shape4 &dstShape,
                             unsigned eb, Map map) {
  std::vector<uint8_t> out(elementCount(dstShape) * eb);
  uint8_t *o = out.data();
  for (uint32_t n = 0; n < dstShape.n; ++n)
    for (uint32_t c = 0; c < dstShape.c; ++c)
      for (uint32_t h = 0; h < dstShape.h; ++h)
        for (uint32_t w = 0; w < dstShape.w; ++w, o += eb) {
          auto [sn, sc, sh, sw] = map(n, c, h, w);
          size_t si =
              ((size_t(sn) * srcShape.c + sc) * srcShape.h + sh) * srcShape.w +
              sw;
          std::memcpy(o, src.data() + si * eb, eb);
        }
  return out;
}

struct Idx4 {
  uint32_t n, c, h, w;
};

/// The destination shape a tensor special function implies.
Shape4 tensorDstShape(const GdmaOp &op, const Shape4 &s) {
  const isa::cmd::DmaTensor &f = op.f;
  Shape4 given = dstShapeOf(f);
  Shape4 expect = s;
  switch (op.special) {
  case kSpNcTrans:
    expect = {s.c, s.n, s.h, s.w};
    break;
  case kSpCollect:
  case kSpDistribute:
    expect = {s.n, s.w, s.h, s.c};
    break;
  case kSpBroadcast:
  case kSpBankBroadcast:
    expect = {s.n, uint32_t(f.dst_csize), s.h, s.w};
    break;
  default:
    if (!f.nchw_copy)
      return given; // a reshape: checked by element count
    break;
  }
  if (!f.nchw_copy && !sameShape(given, expect))
    failOp(op, "destination shape " + shapeText(given) + " does not match " +
                   shapeText(expect) + " implied by the source shape " +
                   shapeText(s));
  return expect;
}

void execTensor(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  if (op.special > kSpBankBroadcast)
    failOp(op, "tensor special function " + std::to_string(op.special) +
                   " does not exist");
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  uint64_t mask = op.laneMask();
  bool isBroadcast =
      op.special == kSpBroadcast || op.special == kSpBankBroadcast;
  // Broadcast and distribute ignore the lane mask (isa/docs/bm1684x.md 5.4).
  if (isBroadcast || op.special == kSpDistribute)
    mask = kAllLanes;
  bool unitW = op.special != kSpNone;
  Shape4 s = srcShapeOf(f);
  if (isBroadcast)
    s.c = 1;
  Shape4 d = f.fill_constant_en && op.special == kSpNone
                 ? (f.nchw_copy ? s : dstShapeOf(f))
                 : (checkShape(op, s, "source"), tensorDstShape(op, s));
  checkShape(op, d, "destination");
  unsigned copies = op.special == kSpBankCopy || op.special == kSpBankBroadcast
                        ? kBankCopies
                        : 1;
  GTensor dst = makeTensor(sp, op, false, d, unitW);
  if (copies > 1 && dst.region != MemRegion::Local)
    failOp(op, "4-bank copies need a local destination");

  std::vector<uint8_t> out;
  std::unique_ptr<std::vector<uint8_t>> valid;
  if (f.fill_constant_en) {
    out.resize(elementCount(d) * eb);
    fillElems(out.data(), elementCount(d), eb, uint32_t(f.constant_value));
  } else {
    GTensor src = makeTensor(sp, op, true, s, unitW);
    if (op.special == kSpNone && copies == 1 && sameShape(s, d) &&
        src.region != dst.region && !sp.nibbles()) {
      // A plain copy between two memories (so nothing overlaps): row by
      // row, source to destination, with the bytes of the general path.
      if (!copyRowsParallel(sp, m, src, dst, mask))
        copyRows(sp, src, dst, mask);
      return;
    }
    std::vector<uint8_t> in = readTensor(sp, src);
    valid = sourceValidity(sp, src, dst, mask);
    auto remap = [&](auto map) {
      out = permute(in, s, d, eb, map);
      // Validity moves with its element (one byte per element).
      if (valid)
        *valid = permute(*valid, s, d, 1, map);
    };
    switch (op.special) {
    case kSpNcTrans:
      remap([](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
        return std::array<uint32_t, 4>{c, n, h, w};
      });
      break;
    case kSpCollect:
    case kSpDistribute:
      remap([](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
        return std::array<uint32_t, 4>{n, w, h, c};
      });
      break;
    case kSpBroadcast:
    case kSpBankBroadcast:
      remap([](uint32_t n, uint32_t, uint32_t h, uint32_t w) {
        return std::array<uint32_t, 4>{n, 0, h, w};
      });
      break;
    default:
      if (elementCount(s) != elementCount(d))
        failOp(op, "source " + shapeText(s) + " and destination " +
                       shapeText(d) + " hold different element counts");
      out = std::move(in); // same order: a copy or a reshape
      break;
    }
  }
  uint64_t bank = m.chip.bankBytes();
  for (unsigned k = 0; k < copies; ++k) {
    GTensor t = dst;
    t.addr += k * bank;
    writeTensor(sp, t, out.data(), mask, valid.get());
  }
}

void execGeneral(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  if (op.special > 1)
    failOp(op, "general special function " + std::to_string(op.special) +
                   " does not exist");
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  uint64_t count = f.src_cstride; // move length in elements
  if (count == 0)
    return;
  // Dense elements (one nibble per byte for INT4).
  std::vector<uint8_t> buf(count * eb);
  if (f.fill_constant_en) {
    fillElems(buf.data(), count, eb, uint32_t(f.constant_value));
  } else if (sp.nibbles()) {
    std::vector<uint8_t> packed((count + 1) / 2);
    sp.readFlat(op.srcAddr(), packed.data(), packed.size(), "source");
    for (uint64_t i = 0; i < count; ++i)
      buf[i] = uint8_t(loadBits(packed.data(), i, isa::Prec::Int4));
  } else {
    sp.readFlat(op.srcAddr(), buf.data(), buf.size(), "source");
  }
  uint64_t dst = op.dstAddr();
  if (op.special == 1) {
    // Lane broadcast: the block goes to dst_csize consecutive lanes.
    if (sp.region(dst, "destination") != MemRegion::Local)
      failOp(op, "lane broadcast needs a local destination");
    uint32_t lanes = std::max<uint32_t>(uint32_t(f.dst_csize), 1);
    for (uint32_t k = 0; k < lanes; ++k)
      sp.writeFlatElems(dst + uint64_t(k) * m.chip.lmemBytes, buf.data(), count,
                        op.laneMask(), "destination");
    return;
  }
  sp.region(dst, "destination");
  sp.writeFlatElems(dst, buf.data(), count, op.laneMask(), "destination");
}

void execMatrix(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  if (op.special > 1)
    failOp(op, "matrix special function " + std::to_string(op.special) +
                   " does not exist");
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  bool transpose = op.special == 1;
  uint64_t srcAddr = op.srcAddr(), dstAddr = op.dstAddr();
  bool toGlobal =
      !f.fill_constant_en && sp.region(srcAddr, "source") == MemRegion::Local;
  // The global side: an R x K matrix with row stride hstride.
  uint32_t rows = uint32_t(toGlobal ? f.dst_hsize : f.src_hsize);
  uint32_t cols = uint32_t(toGlobal ? f.dst_wsize : f.src_wsize);
  if (rows == 0 || cols == 0)
    failOp(op, "empty matrix");
  GTensor g;
  g.addr = toGlobal ? dstAddr : srcAddr;
  g.region = sp.region(g.addr, toGlobal ? "destination" : "source");
  g.shape = {1, 1, rows, cols};
  int64_t rowStride = f.stride_enable
                          ? int64_t(toGlobal ? f.dst_hstride : f.src_hstride)
                          : int64_t(cols);
  g.stride = {0, 0, rowStride, 1};
  // The local side: matrix(w) layout, rows -> N, column blocks -> C.
  uint32_t lw = uint32_t(toGlobal ? f.src_wsize : f.dst_wsize);
  if (lw == 0)
    failOp(op, "local matrix block width (wsize) is zero");
  uint32_t lRows = transpose ? cols : rows;
  uint32_t lCols = transpose ? rows : cols;
  GTensor l;
  l.addr = toGlobal ? srcAddr : dstAddr;
  l.region = sp.region(l.addr, toGlobal ? "source" : "destination");
  if (l.region != MemRegion::Local && !f.fill_constant_en)
    failOp(op, "one side of a matrix move must be local memory");
  l.shape = {lRows, uint32_t(ceilDiv(lCols, lw)), 1, lw};
  if (f.stride_enable)
    l.stride =
        toGlobal
            ? Stride4{int64_t(f.src_nstride), int64_t(f.src_cstride), 0, 1}
            : Stride4{int64_t(f.dst_nstride), int64_t(f.dst_cstride), 0, 1};
  else
    l.stride = sp.defaultStrides(l);
  uint64_t mask = op.laneMask();

  // Element (r, k) of the global matrix <-> local (n, c, w).
  auto localIdx = [&](uint32_t r, uint32_t k) {
    uint32_t lr = transpose ? k : r, lc = transpose ? r : k;
    return Idx4{lr, lc / lw, 0, lc % lw};
  };
  // Whole-byte elements whose local side lies in its lanes go through
  // pointers to each channel (Space::localChannelBases), the rest element
  // by element (same bytes either way).
  std::vector<uint8_t *> bases;
  if (l.region == MemRegion::Local)
    bases = sp.localChannelBases(l);
  auto localPtr = [&](const Idx4 &i) {
    return bases[i.c] + uint64_t(i.n * l.stride.n + i.w * l.stride.w) * eb;
  };
  if (toGlobal) {
    std::vector<uint8_t> rowBuf(size_t(cols) * eb);
    std::vector<uint8_t> rowValid(cols);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t k = 0; k < cols; ++k) {
        Idx4 i = localIdx(r, k);
        rowValid[k] = uint8_t((mask >> sp.laneOf(l, i.c)) & 1);
        if (!bases.empty())
          std::memcpy(rowBuf.data() + size_t(k) * eb, localPtr(i), eb);
        else
          sp.accessElem(l, i.n, i.c, 0, i.w, rowBuf.data() + size_t(k) * eb,
                        false);
      }
      sp.writeRow(g, 0, 0, r, rowBuf.data(),
                  mask == kAllLanes ? nullptr : rowValid.data());
    }
    return;
  }
  std::vector<uint8_t> rowBuf(size_t(cols) * eb);
  if (f.fill_constant_en) // every row is the constant
    fillElems(rowBuf.data(), cols, eb, uint32_t(f.constant_value));
  // Whether each local channel's lane is enabled (a channel's lane does not
  // depend on the row).
  std::vector<uint8_t> chanOn(l.shape.c);
  for (uint32_t c = 0; c < l.shape.c; ++c)
    chanOn[c] = uint8_t((mask >> sp.laneOf(l, c)) & 1);
  for (uint32_t r = 0; r < rows; ++r) {
    if (!f.fill_constant_en)
      sp.readRow(g, 0, 0, r, rowBuf.data());
    if (!bases.empty() && !transpose && l.stride.w == 1) {
      // Row r is local row n = r: one run of lw elements per channel.
      for (uint32_t c = 0; c < l.shape.c; ++c) {
        uint32_t k0 = c * lw;
        if (chanOn[c])
          std::memcpy(bases[c] + uint64_t(r) * l.stride.n * eb,
                      rowBuf.data() + size_t(k0) * eb,
                      size_t(std::min(lw, cols - k0)) * eb);
      }
      continue;
    }
    if (!bases.empty() && transpose) {
      // Row r is local column r (one channel, one w): element k goes to
      // local row n = k, a fixed stride apart.
      if (!chanOn[r / lw])
        continue;
      uint8_t *p = bases[r / lw] + uint64_t((r % lw) * l.stride.w) * eb;
      uint64_t step = uint64_t(l.stride.n) * eb;
      // The element size a constant for the usual ones.
      auto scatter = [&](auto size) {
        for (uint32_t k = 0; k < cols; ++k)
          std::memcpy(p + k * step, rowBuf.data() + size_t(k) * size, size);
      };
      if (eb == 1)
        scatter(std::integral_constant<size_t, 1>{});
      else if (eb == 2)
        scatter(std::integral_constant<size_t, 2>{});
      else if (eb == 4)
        scatter(std::integral_constant<size_t, 4>{});
      else
        scatter(size_t(eb));
      continue;
    }
    for (uint32_t k = 0; k < cols; ++k) {
      Idx4 i = localIdx(r, k);
      if (!((mask >> sp.laneOf(l, i.c)) & 1))
        continue;
      if (!bases.empty())
        std::memcpy(localPtr(i), rowBuf.data() + size_t(k) * eb, eb);
      else
        sp.accessElem(l, i.n, i.c, 0, i.w, rowBuf.data() + size_t(k) * eb,
                      true);
    }
  }
}

void execCwTranspose(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  Shape4 s = srcShapeOf(f);
  checkShape(op, s, "source");
  Shape4 d{s.n, s.w, s.h, s.c};
  if (!f.nchw_copy && !sameShape(dstShapeOf(f), d))
    failOp(op, "destination shape " + shapeText(dstShapeOf(f)) +
                   " is not the C<->W transpose " + shapeText(d));
  GTensor src = makeTensor(sp, op, true, s, true);
  GTensor dst = makeTensor(sp, op, false, d, true);
  std::vector<uint8_t> in = readTensor(sp, src);
  auto map = [](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
    return std::array<uint32_t, 4>{n, w, h, c};
  };
  std::vector<uint8_t> out = permute(in, s, d, eb, map);
  uint64_t mask = op.laneMask();
  auto valid = sourceValidity(sp, src, dst, mask);
  if (valid)
    *valid = permute(*valid, s, d, 1, map);
  writeTensor(sp, dst, out.data(), mask, valid.get());
}

/// The index of gather/scatter: uint32 elements (isa/docs/bm1684x.md 5.7).
constexpr unsigned kIndexBytes = 4;

void execGatherScatter(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  bool gather = op.type == GdmaType::Gather;
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  Space isp(m, op, kIndexBytes * kBitsPerByte);
  uint32_t w = uint32_t(f.src_wsize);
  uint32_t srcC = uint32_t(f.src_csize), idxC = uint32_t(op.index_csize);
  uint32_t srcH = uint32_t(f.src_hsize);
  uint32_t dstH = gather ? uint32_t(f.nchw_copy ? f.src_hsize : f.dst_hsize)
                         : uint32_t(f.dst_hsize);
  uint32_t idxH = gather ? dstH : srcH; // one index per moved row
  uint32_t chans = gather ? std::max(srcC, idxC) : uint32_t(f.dst_csize);
  if (w == 0 || srcC == 0 || idxC == 0 || srcH == 0 || dstH == 0 || chans == 0)
    failOp(op, "empty gather/scatter shape");
  if ((srcC != 1 && srcC != chans) || (idxC != 1 && idxC != chans))
    failOp(op,
           "source and index channels must be 1 or " + std::to_string(chans));
  auto strides = [&](uint64_t cs, uint64_t hs, uint32_t h) {
    return f.stride_enable ? Stride4{0, int64_t(cs), int64_t(hs), 1}
                           : Stride4{0, int64_t(h) * w, int64_t(w), 1};
  };
  GTensor src{sp.region(op.srcAddr(), "source"),
              op.srcAddr(),
              {1, srcC, srcH, w},
              strides(f.src_cstride, f.src_hstride, srcH)};
  GTensor dst{sp.region(op.dstAddr(), "destination"),
              op.dstAddr(),
              {1, gather ? chans : uint32_t(f.dst_csize), dstH, w},
              strides(f.dst_cstride, f.dst_hstride, dstH)};
  GTensor idx{isp.region(op.index_start_addr, "index"),
              op.index_start_addr,
              {1, idxC, idxH, 1},
              f.stride_enable ? Stride4{0, int64_t(op.index_cstride),
                                        int64_t(op.index_hstride), 1}
                              : Stride4{0, int64_t(idxH), 1, 1}};
  uint64_t mask = op.laneMask();
  std::vector<uint8_t> row(size_t(w) * eb);
  auto enabled = [&](const GTensor &t, uint32_t c) {
    return t.region != MemRegion::Local || ((mask >> sp.laneOf(t, c)) & 1);
  };
  for (uint32_t c = 0; c < chans; ++c) {
    if (!enabled(dst, c))
      continue;
    for (uint32_t h = 0; h < idxH; ++h) {
      uint32_t iv;
      isp.readRow(idx, 0, idxC == 1 ? 0 : c, h,
                  reinterpret_cast<uint8_t *>(&iv));
      uint32_t sc = srcC == 1 ? 0 : c;
      if (gather) {
        if (iv < srcH) {
          sp.readRow(src, 0, sc, iv, row.data());
        } else {
          fillElems(row.data(), w, eb, uint32_t(f.constant_value));
        }
        sp.writeRow(dst, 0, c, h, row.data(), nullptr);
      } else {
        if (iv >= dstH)
          continue;
        sp.readRow(src, 0, sc, h, row.data());
        sp.writeRow(dst, 0, c, iv, row.data(), nullptr);
      }
    }
  }
}

void execMaskedOrNonzero(const GdmaOp &op, MachineState &m, unsigned bits) {
  const isa::cmd::DmaTensor &f = op.f;
  bool nonzero = op.type == GdmaType::Nonzero;
  Space sp(m, op, bits);
  unsigned eb = sp.elemBytes();
  Shape4 s = srcShapeOf(f);
  checkShape(op, s, "source");
  GTensor src = makeTensor(sp, op, true, s, false);
  std::vector<uint8_t> in = readTensor(sp, src);
  std::vector<uint8_t> out;
  size_t count = elementCount(s);
  auto isNonzero = [](const uint8_t *p, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      if (p[i])
        return true;
    return false;
  };
  if (nonzero) {
    unsigned ibits = isa::gdmaFormatBits(op.index_data_format);
    if (ibits < kBitsPerByte)
      failOp(op, "index_data_format INT4 cannot hold element indices");
    unsigned ib = ibits / kBitsPerByte;
    for (size_t i = 0; i < count; ++i)
      if (isNonzero(in.data() + i * eb, eb)) {
        uint64_t v = op.base_i + i;
        size_t at = out.size();
        out.resize(at + ib);
        std::memcpy(out.data() + at, &v, ib);
      }
  } else {
    Space msp(m, op, isa::gdmaFormatBits(op.mask_data_format));
    unsigned mb = msp.elemBytes();
    GTensor mt = src;
    mt.addr = op.mask_start_addr;
    mt.region = msp.region(mt.addr, "mask");
    if (!f.stride_enable)
      mt.stride = msp.defaultStrides(mt);
    std::vector<uint8_t> maskBuf = readTensor(msp, mt);
    for (size_t i = 0; i < count; ++i)
      if (isNonzero(maskBuf.data() + i * mb, mb))
        out.insert(out.end(), in.begin() + i * eb, in.begin() + (i + 1) * eb);
  }
  if (out.empty())
    return;
  sp.region(op.dstAddr(), "destination");
  if (nonzero)
    sp.writeFlat(op.dstAddr(), out.data(), out.size(), kAllLanes,
                 "destination");
  else
    sp.writeFlatElems(op.dstAddr(), out.data(), out.size() / eb, kAllLanes,
                      "destination");
}

} // namespace

void executeGdma(const GdmaOp &op, MachineState &m) {
  if (op.type == GdmaType::Sys)
    return;
  unsigned bits = isa::gdmaFormatBits(op.format());
  switch (op.type) {
  case GdmaType::Tensor:
    return execTensor(op, m, bits);
  case GdmaType::General:
    return execGeneral(op, m, bits);
  case GdmaType::Matrix:
    return execMatrix(op, m, bits);
  case GdmaType::CwTranspose:
    return execCwTranspose(op, m, bits);
  case GdmaType::Gather:
  case GdmaType::Scatter:
    return execGatherScatter(op, m, bits);
  case GdmaType::MaskedSelect:
  case GdmaType::Nonzero:
    return execMaskedOrNonzero(op, m, bits);
  default:
    failOp(op, "cannot be executed");
  }
}

} // namespace tpu::sim
