//===- Commands.cpp - TIU and GDMA command builders -----------------------===//
//
// One builder per command shape the kernels emit. Each fills the typed
// command struct of its layout (isa/Command.h), encodes it and hands it to
// the emitter together with the local memory it reads and writes.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <algorithm>
#include <cmath>

namespace tpu::backend::detail {

namespace {

/// Lane mask enabling every lane (isa/docs/bm1684x.md 5.4).
constexpr uint64_t kAllLanes32 = 0xFFFFFFFFu;
/// DMA_tensor special function 3: broadcast (isa/docs/bm1684x.md 5.5).
constexpr unsigned kGdmaBroadcast = 3;
/// Largest value of a 16-bit size field (MAX_TPU_DIM).
constexpr int64_t kMaxDim = 65535;
constexpr unsigned kAddrLowBits = 32;
constexpr uint64_t kLow32 = 0xFFFFFFFFu;

unsigned precCode(Prec p) { return static_cast<unsigned>(p); }
unsigned fmtCode(Prec p) {
  return static_cast<unsigned>(isa::gdmaFormatFor(p));
}

/// Sign bit of an operand: floats are marked signed (as in the published
/// register dump of an fp32 add, isa/docs/bm1684x.md 4.5 sAR).
unsigned signOf(Prec p, bool isSigned = true) {
  return isa::isFloat(p) || isSigned ? 1 : 0;
}

uint64_t unifiedLocal(const isa::ChipParams &chip, uint64_t offset) {
  return chip.lmemBase + offset;
}

template <typename T> void setAddrs(T &c, uint64_t src, uint64_t dst) {
  c.src_start_addr_l32 = src & kLow32;
  c.src_start_addr_h8 = src >> kAddrLowBits;
  c.dst_start_addr_l32 = dst & kLow32;
  c.dst_start_addr_h8 = dst >> kAddrLowBits;
}

void checkDims(const Shape4 &s, const char *what) {
  for (uint32_t d : {s.n, s.c, s.h, s.w})
    if (d == 0 || d > kMaxDim)
      throw Error(std::string("backend: ") + what + " dimension " +
                  std::to_string(d) + " is outside 1..65535");
}

void checkStride(int64_t s) {
  if (s < 0 || s > int64_t(kLow32))
    throw Error("backend: GDMA stride " + std::to_string(s) +
                " does not fit its 32-bit field");
}

isa::cmd::DmaTensor tensorMove(Prec prec, uint64_t src, const Shape4 &ss,
                               const Stride4 &st, uint64_t dst,
                               const Shape4 &ds, const Stride4 &dt) {
  checkDims(ss, "GDMA source");
  checkDims(ds, "GDMA destination");
  for (int64_t s : {st.n, st.c, st.h, st.w, dt.n, dt.c, dt.h, dt.w})
    checkStride(s);
  isa::cmd::DmaTensor c;
  c.stride_enable = 1;
  c.cmd_type = unsigned(isa::GdmaType::Tensor);
  c.src_data_format = fmtCode(prec);
  c.src_nstride = uint64_t(st.n);
  c.src_cstride = uint64_t(st.c);
  c.src_hstride = uint64_t(st.h);
  c.src_wstride = uint64_t(st.w);
  c.dst_nstride = uint64_t(dt.n);
  c.dst_cstride = uint64_t(dt.c);
  c.dst_hstride = uint64_t(dt.h);
  c.dst_wstride = uint64_t(dt.w);
  c.src_nsize = ss.n;
  c.src_csize = ss.c;
  c.src_hsize = ss.h;
  c.src_wsize = ss.w;
  c.dst_nsize = ds.n;
  c.dst_csize = ds.c;
  c.dst_hsize = ds.h;
  c.dst_wsize = ds.w;
  setAddrs(c, src, dst);
  c.localmem_mask_l32 = kAllLanes32;
  c.localmem_mask_h32 = kAllLanes32;
  return c;
}

/// A GDMA fill of the tensor at `addr` with raw `bits`.
isa::cmd::DmaTensor fillMove(Prec prec, uint64_t addr, const Shape4 &shape,
                             const Stride4 &stride, uint32_t bits) {
  isa::cmd::DmaTensor c =
      tensorMove(prec, addr, shape, stride, addr, shape, stride);
  c.fill_constant_en = 1;
  c.constant_value = bits;
  c.src_start_addr_l32 = 0;
  c.src_start_addr_h8 = 0;
  return c;
}

/// When a dim of `shape` exceeds a size field, calls fn(at, piece) for the
/// pieces of the first such dim and returns true; otherwise returns false.
bool splitOversized(const Shape4 &shape,
                    const std::function<void(Shape4, Shape4)> &fn) {
  uint32_t Shape4::*dims[] = {&Shape4::n, &Shape4::c, &Shape4::h, &Shape4::w};
  for (auto d : dims) {
    if (shape.*d <= kMaxDim)
      continue;
    for (Range1 r : splitRange(shape.*d, kMaxDim)) {
      Shape4 at{0, 0, 0, 0}, piece = shape;
      at.*d = uint32_t(r.begin);
      piece.*d = uint32_t(r.size);
      fn(at, piece);
    }
    return true;
  }
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors, tensors, allocation
//===----------------------------------------------------------------------===//

void OpCtx::fail(const std::string &what) const {
  throw Error(std::string(kernel) + " '" + name + "': " + what);
}

void withCtx(const OpCtx &ctx, const std::function<void()> &fn) {
  std::string prefix = std::string(ctx.kernel) + " '";
  try {
    fn();
  } catch (const Error &e) {
    std::string m = e.what();
    if (m.rfind(prefix, 0) == 0)
      throw;
    ctx.fail(m);
  }
}

LocalRange LTensor::range(const isa::ChipParams &chip) const {
  uint64_t slots = isa::channelSlots(chip, laneOf(chip, offset), shape.c);
  int64_t maxElem =
      int64_t(shape.n - 1) * stride.n + int64_t(slots - 1) * stride.c +
      int64_t(shape.h - 1) * stride.h + int64_t(shape.w - 1) * stride.w;
  return {laneOffset(chip, offset),
          uint64_t(std::max<int64_t>(maxElem, 0) + 1) * elemBytes(prec)};
}

unsigned laneOf(const isa::ChipParams &chip, uint64_t addr) {
  return unsigned(addr / chip.lmemBytes);
}

uint64_t laneOffset(const isa::ChipParams &chip, uint64_t addr) {
  return addr % chip.lmemBytes;
}

LTensor channelRange(const isa::ChipParams &chip, const LTensor &t, int64_t c0,
                     int64_t count) {
  if (laneOf(chip, t.offset) != 0 || c0 < 0 || count <= 0 ||
      c0 + count > int64_t(t.shape.c))
    throw Error("backend: channels " + std::to_string(c0) + ".." +
                std::to_string(c0 + count - 1) + " of a " +
                std::to_string(t.shape.c) +
                "-channel tensor starting in lane " +
                std::to_string(laneOf(chip, t.offset)));
  LTensor r = t;
  uint64_t lane = uint64_t(c0) % chip.npuNum, slot = uint64_t(c0) / chip.npuNum;
  r.offset = lane * chip.lmemBytes + t.offset +
             slot * uint64_t(t.stride.c) * elemBytes(t.prec);
  r.shape.c = uint32_t(count);
  r.layout = kStrFree;
  return r;
}

LTensor LTensor::as(Prec p, Shape4 s) const {
  LTensor t = *this;
  t.prec = p;
  t.shape = s;
  return t;
}

LTensor localTensor(const isa::ChipParams &chip, uint64_t offset, Prec prec,
                    Shape4 shape, isa::LocalLayout layout) {
  LTensor t;
  t.offset = offset;
  t.prec = prec;
  t.shape = shape;
  t.stride = isa::localStrides(chip, shape, 0, prec, layout);
  t.layout = layout == isa::LocalLayout::Compact ? kStrCompact : kStrEuAligned;
  return t;
}

LTensor freeTensor(uint64_t offset, Prec prec, Shape4 shape, Stride4 stride) {
  LTensor t;
  t.offset = offset;
  t.prec = prec;
  t.shape = shape;
  t.stride = stride;
  t.layout = kStrFree;
  return t;
}

uint64_t euBytes(const isa::ChipParams &chip, Prec prec, Shape4 shape) {
  return isa::localBytesPerLane(chip, shape, prec);
}

LocalAlloc::LocalAlloc(const isa::ChipParams &chip, const OpCtx &ctx)
    : chip_(chip), ctx_(ctx) {}

uint64_t LocalAlloc::alloc(uint64_t bytes, const char *what) {
  uint64_t at = uint64_t(alignUp(int64_t(used_), int64_t(chip_.localAlign)));
  uint64_t capacity = this->capacity();
  if (at + bytes > capacity)
    ctx_.fail(std::string("does not fit in local memory: ") + what + " needs " +
              std::to_string(bytes) + " bytes per lane, " +
              std::to_string(capacity - std::min(at, capacity)) + " of " +
              std::to_string(capacity) + " are left");
  used_ = at + bytes;
  return at;
}

//===----------------------------------------------------------------------===//
// GDMA
//===----------------------------------------------------------------------===//

DView denseView(uint64_t addr, Prec prec, Shape4 s) {
  return {addr,
          prec,
          s,
          {int64_t(s.c) * s.h * s.w, int64_t(s.h) * s.w, int64_t(s.w), 1}};
}

DView subView(const DView &v, Shape4 at, Shape4 shape) {
  DView r = v;
  r.addr += uint64_t(int64_t(at.n) * v.stride.n + int64_t(at.c) * v.stride.c +
                     int64_t(at.h) * v.stride.h + int64_t(at.w) * v.stride.w) *
            elemBytes(v.prec);
  r.shape = shape;
  return r;
}

void load(CmdEmitter &em, const DView &src, const LTensor &dst) {
  // The same DDR data into every lane (a channel stride of 0: a lookup
  // table, a layer norm's scale, an operand broadcast along C): a lane
  // broadcast reads it once, where a plain move reads it once per channel,
  // each a DDR run of its own (isa/docs/bm1684x.md 5.5, special function
  // 3). Kept to one channel per lane (dst_csize lanes from lane 0); the
  // broadcast treats W strides as 1.
  bool broadcast = src.stride.c == 0 && src.shape.c > 1 &&
                   src.shape.c <= em.chip().npuNum &&
                   (src.stride.w == 1 || src.shape.w == 1) &&
                   (dst.stride.w == 1 || dst.shape.w == 1);
  Shape4 ss = src.shape;
  if (broadcast)
    ss.c = 1;
  isa::cmd::DmaTensor c =
      tensorMove(src.prec, src.addr, ss, src.stride,
                 unifiedLocal(em.chip(), dst.offset), dst.shape, dst.stride);
  if (broadcast)
    c.cmd_special_function = kGdmaBroadcast;
  em.gdmaAccess(isa::encode(c), {}, {dst.range(em.chip())});
}

void store(CmdEmitter &em, const LTensor &src, const DView &dst) {
  isa::cmd::DmaTensor c =
      tensorMove(src.prec, unifiedLocal(em.chip(), src.offset), src.shape,
                 src.stride, dst.addr, dst.shape, dst.stride);
  em.gdmaAccess(isa::encode(c), {src.range(em.chip())}, {});
}

void copyLocal(CmdEmitter &em, const LTensor &src, const LTensor &dst) {
  isa::cmd::DmaTensor c = tensorMove(
      src.prec, unifiedLocal(em.chip(), src.offset), src.shape, src.stride,
      unifiedLocal(em.chip(), dst.offset), dst.shape, dst.stride);
  em.gdmaAccess(isa::encode(c), {src.range(em.chip())}, {dst.range(em.chip())});
}

void copyGlobal(CmdEmitter &em, const DView &src, const DView &dst) {
  // Split the first dimension that is too large, recursively.
  if (splitOversized(src.shape, [&](Shape4 at, Shape4 s) {
        copyGlobal(em, subView(src, at, s), subView(dst, at, s));
      }))
    return;
  isa::cmd::DmaTensor c = tensorMove(src.prec, src.addr, src.shape, src.stride,
                                     dst.addr, dst.shape, dst.stride);
  em.gdmaAccess(isa::encode(c), {}, {});
}

void fillGlobal(CmdEmitter &em, const DView &dst, uint32_t bits) {
  if (splitOversized(dst.shape, [&](Shape4 at, Shape4 s) {
        fillGlobal(em, subView(dst, at, s), bits);
      }))
    return;
  isa::cmd::DmaTensor c =
      fillMove(dst.prec, dst.addr, dst.shape, dst.stride, bits);
  em.gdmaAccess(isa::encode(c), {}, {});
}

void fillLocal(CmdEmitter &em, const LTensor &dst, uint32_t bits) {
  isa::cmd::DmaTensor c = fillMove(dst.prec, unifiedLocal(em.chip(), dst.offset),
                                   dst.shape, dst.stride, bits);
  em.gdmaAccess(isa::encode(c), {}, {dst.range(em.chip())});
}

namespace {

/// The size and stride fields of one side of a GDMA tensor command.
struct DmaSide {
  uint64_t &n, &c, &h, &w, &nStride, &cStride, &hStride;
};
DmaSide srcSide(isa::cmd::DmaTensor &c) {
  return {c.src_nsize,   c.src_csize,   c.src_hsize,  c.src_wsize,
          c.src_nstride, c.src_cstride, c.src_hstride};
}
DmaSide dstSide(isa::cmd::DmaTensor &c) {
  return {c.dst_nsize,   c.dst_csize,   c.dst_hsize,  c.dst_wsize,
          c.dst_nstride, c.dst_cstride, c.dst_hstride};
}

/// DMA_matrix between the global rows x cols matrix at `addr` (row stride
/// in elements) and the local matrix(w) tensor `local`, towards local
/// memory when `toLocal`; `transpose` lands the matrix transposed (loads).
void matrixMove(CmdEmitter &em, Prec prec, uint64_t addr, uint32_t rows,
                uint32_t cols, uint64_t rowStride, const LTensor &local,
                bool toLocal, bool transpose) {
  if (rows == 0 || cols == 0 || rows > kMaxDim || cols > kMaxDim)
    throw Error("backend: matrix move of " + std::to_string(rows) + " x " +
                std::to_string(cols) + " is outside 1..65535");
  checkStride(int64_t(rowStride));
  isa::cmd::DmaTensor c;
  c.stride_enable = 1;
  c.cmd_type = unsigned(isa::GdmaType::Matrix);
  c.src_data_format = fmtCode(prec);
  c.localmem_mask_l32 = kAllLanes32;
  c.localmem_mask_h32 = kAllLanes32;
  c.cmd_special_function = transpose ? 1 : 0;
  uint32_t lRows = transpose ? cols : rows, lCols = transpose ? rows : cols;
  DmaSide global = toLocal ? srcSide(c) : dstSide(c);
  DmaSide lcl = toLocal ? dstSide(c) : srcSide(c);
  global.n = 1;
  global.c = 1;
  global.h = rows;
  global.w = cols;
  global.hStride = rowStride;
  lcl.n = lRows;
  lcl.c = uint32_t(ceilDiv(lCols, local.shape.w));
  lcl.h = 1;
  lcl.w = local.shape.w;
  lcl.nStride = uint64_t(local.stride.n);
  lcl.cStride = uint64_t(local.stride.c);
  uint64_t localAddr = unifiedLocal(em.chip(), local.offset);
  LocalRange range = local.range(em.chip());
  if (toLocal) {
    setAddrs(c, addr, localAddr);
    em.gdmaAccess(isa::encode(c), {}, {range});
  } else {
    setAddrs(c, localAddr, addr);
    em.gdmaAccess(isa::encode(c), {range}, {});
  }
}

} // namespace

void loadMatrix(CmdEmitter &em, uint64_t addr, Prec prec, uint32_t rows,
                uint32_t cols, uint64_t rowStride, const LTensor &dst,
                bool transpose) {
  matrixMove(em, prec, addr, rows, cols, rowStride, dst, /*toLocal=*/true,
             transpose);
}

void storeMatrix(CmdEmitter &em, const LTensor &src, uint64_t addr,
                 uint32_t rows, uint32_t cols, uint64_t rowStride) {
  matrixMove(em, src.prec, addr, rows, cols, rowStride, src, /*toLocal=*/false,
             /*transpose=*/false);
}

std::vector<int64_t> denseStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

void copyGlobalNd(CmdEmitter &em, Prec prec, uint64_t srcAddr,
                  std::vector<int64_t> srcStrides, uint64_t dstAddr,
                  std::vector<int64_t> dstStrides, std::vector<int64_t> dims) {
  // Drop unit dims, then merge a dim into its inner neighbour when both
  // sides allow it.
  std::vector<int64_t> d, ss, ds;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0)
      return;
    if (dims[i] == 1)
      continue;
    d.push_back(dims[i]);
    ss.push_back(srcStrides[i]);
    ds.push_back(dstStrides[i]);
  }
  for (size_t i = d.size(); i-- > 1;) {
    if (ss[i - 1] == ss[i] * d[i] && ds[i - 1] == ds[i] * d[i]) {
      d[i - 1] *= d[i];
      ss[i - 1] = ss[i];
      ds[i - 1] = ds[i];
      d.erase(d.begin() + i);
      ss.erase(ss.begin() + i);
      ds.erase(ds.begin() + i);
    }
  }
  while (d.size() < 4) {
    d.insert(d.begin(), 1);
    ss.insert(ss.begin(), 0);
    ds.insert(ds.begin(), 0);
  }
  size_t outer = d.size() - 4;
  int64_t outerCount = 1;
  for (size_t i = 0; i < outer; ++i)
    outerCount *= d[i];
  unsigned eb = elemBytes(prec);
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t rem = o, so = 0, dof = 0;
    for (size_t i = outer; i-- > 0;) {
      int64_t idx = rem % d[i];
      rem /= d[i];
      so += idx * ss[i];
      dof += idx * ds[i];
    }
    Shape4 s{uint32_t(d[outer]), uint32_t(d[outer + 1]), uint32_t(d[outer + 2]),
             uint32_t(d[outer + 3])};
    auto big = [&](size_t i) { return d[i] > int64_t(UINT32_MAX); };
    for (size_t i = outer; i < d.size(); ++i)
      if (big(i))
        throw Error("backend: copy dimension " + std::to_string(d[i]) +
                    " is too large");
    DView src{srcAddr + uint64_t(so) * eb,
              prec,
              s,
              {ss[outer], ss[outer + 1], ss[outer + 2], ss[outer + 3]}};
    DView dst{dstAddr + uint64_t(dof) * eb,
              prec,
              s,
              {ds[outer], ds[outer + 1], ds[outer + 2], ds[outer + 3]}};
    copyGlobal(em, src, dst);
  }
}

//===----------------------------------------------------------------------===//
// TIU
//===----------------------------------------------------------------------===//

uint32_t floatBits(float v, Prec p) {
  switch (p) {
  case Prec::Fp32:
    return isa::floatToBits(v);
  case Prec::Fp16:
    return isa::fp32ToFp16(v);
  case Prec::Bf16:
    return isa::fp32ToBf16(v);
  default: {
    int64_t i = isa::floatToInt(v, p, true, isa::RoundMode::HalfToEven);
    unsigned bits = isa::precBits(p);
    return bits >= 32 ? uint32_t(i) : uint32_t(i) & ((1u << bits) - 1);
  }
  }
}

Opd Opd::of(const LTensor &t) {
  Opd o;
  o.t = t;
  o.prec = t.prec;
  o.isSigned = t.isSigned;
  return o;
}

Opd Opd::imm(float v, Prec p) {
  Opd o;
  o.isConst = true;
  o.prec = p;
  o.bits = floatBits(v, p);
  return o;
}

Opd Opd::immInt(int32_t v, Prec p) {
  Opd o;
  o.isConst = true;
  o.prec = p;
  unsigned bits = isa::precBits(p);
  o.bits = bits >= 32 ? uint32_t(v) : uint32_t(v) & ((1u << bits) - 1);
  return o;
}

namespace {

/// Writes a local operand's address, layout code and free strides into an
/// sAR command. Strides of dims the tensor does not step through (size 1,
/// or a single channel slot) are written as 0: the hardware never uses
/// them and the fields are narrow.
/// The address, layout and stride fields of one sAR operand (0, 1 or the
/// result).
struct ArFields {
  uint64_t &addr, &str, &n, &c, &h, &w;
};
ArFields arFields(isa::cmd::SAR &c, int which) {
  switch (which) {
  case 0:
    return {c.opd0_addr,  c.opd0_str,  c.opd0_n_str,
            c.opd0_c_str, c.opd0_h_str, c.opd0_w_str};
  case 1:
    return {c.opd1_addr,  c.opd1_str,  c.opd1_n_str,
            c.opd1_c_str, c.opd1_h_str, c.opd1_w_str};
  default:
    return {c.res0_addr,  c.res0_str,  c.res0_n_str,
            c.res0_c_str, c.res0_h_str, c.res0_w_str};
  }
}

void setArOperand(isa::cmd::SAR &c, int which, LTensor t, unsigned npu) {
  if (t.shape.n == 1)
    t.stride.n = 0;
  if (t.shape.c <= npu)
    t.stride.c = 0;
  if (t.shape.h == 1)
    t.stride.h = 0;
  if (t.shape.w == 1)
    t.stride.w = 0;
  auto fit16 = [](int64_t v) {
    if (v < 0 || v > 0xFFFF)
      throw Error("backend: AR n/c stride " + std::to_string(v) +
                  " does not fit 16 bits");
    return uint64_t(v);
  };
  auto fit20 = [](int64_t v) {
    if (v < 0 || v > 0xFFFFF)
      throw Error("backend: AR h/w stride " + std::to_string(v) +
                  " does not fit 20 bits");
    return uint64_t(v);
  };
  ArFields f = arFields(c, which);
  f.addr = t.offset;
  f.str = t.layout;
  if (t.layout == kStrFree) {
    f.n = fit16(t.stride.n);
    f.c = fit16(t.stride.c);
    f.h = fit20(t.stride.h);
    f.w = fit20(t.stride.w);
  }
}

bool isUnaryAr(ArOp op) {
  return op == ArOp::Copy || op == ArOp::Cast || op == ArOp::Abs;
}

} // namespace

void ar(CmdEmitter &em, ArOp op, const LTensor &res, const Opd &a, const Opd &b,
        isa::RoundMode round) {
  checkDims(res.shape, "AR result");
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::AR);
  c.tsk_eu_typ = unsigned(op);
  bool unary = isUnaryAr(op);
  c.tsk_opd_num = unary ? 1 : 2;
  c.res0_prec = precCode(res.prec);
  c.opd0_prec = precCode(a.prec);
  c.opd0_sign = signOf(a.prec, a.isSigned);
  c.opd0_const = a.isConst;
  c.opd2_n_str = unsigned(round);
  // Cast: the result's signedness comes from opd2_sign (isa/docs/bm1684x.md 4.5).
  c.opd2_sign = signOf(res.prec, res.isSigned);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  std::vector<LocalRange> reads, writes{res.range(em.chip())};
  setArOperand(c, 2, res, em.chip().npuNum);
  if (a.isConst)
    c.opd0_addr = a.bits;
  else {
    setArOperand(c, 0, a.t, em.chip().npuNum);
    reads.push_back(a.t.range(em.chip()));
  }
  if (!unary) {
    c.opd1_prec = precCode(b.prec);
    c.opd1_sign = signOf(b.prec, b.isSigned);
    c.opd1_const = b.isConst;
    if (b.isConst)
      c.opd1_addr = b.bits;
    else {
      setArOperand(c, 1, b.t, em.chip().npuNum);
      reads.push_back(b.t.range(em.chip()));
    }
  }
  if (op == ArOp::Mac)
    reads.push_back(res.range(em.chip()));
  em.tiuAccess(isa::encode(c), reads, writes);
}

void cmpSelect(CmdEmitter &em, CmpOp op, const LTensor &res, const Opd &a,
               const Opd &b, const Opd &t, const Opd &f) {
  checkDims(res.shape, "CMP result");
  isa::cmd::SCMP c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::CMP);
  c.tsk_eu_typ = unsigned(op);
  c.opd0_prec = precCode(a.prec);
  c.opd0_sign = signOf(a.prec, a.isSigned);
  c.opd2_prec = precCode(res.prec);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  c.res0_addr = res.offset;
  std::vector<LocalRange> reads;
  auto operand = [&](const Opd &o, uint64_t &addr, uint64_t &isConst,
                     uint64_t *str) {
    isConst = o.isConst;
    if (o.isConst) {
      addr = o.bits;
      return;
    }
    if (o.t.layout == kStrFree || (!str && o.t.layout != kStrEuAligned))
      throw Error("backend: CMP operand must be EU-aligned");
    addr = o.t.offset;
    if (str)
      *str = o.t.layout;
    reads.push_back(o.t.range(em.chip()));
  };
  operand(a, c.opd0_addr, c.opd0_const, &c.opd0_str);
  operand(b, c.opd1_addr, c.opd1_const, &c.opd1_str);
  operand(t, c.opd2_addr, c.opd2_const, nullptr);
  operand(f, c.opd3_addr, c.opd3_const, nullptr);
  em.tiuAccess(isa::encode(c), reads, {res.range(em.chip())});
}

void linMac(CmdEmitter &em, const LTensor &res, const LTensor &x, float mul,
            float add) {
  checkDims(res.shape, "LIN result");
  if (x.layout != kStrEuAligned || res.layout != kStrEuAligned ||
      x.prec != res.prec)
    throw Error("backend: LIN needs EU-aligned operands of one precision");
  isa::cmd::SLIN c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::LIN);
  c.tsk_eu_typ = 1; // mac
  c.opd1_const = 1;
  c.opd2_const = 1;
  c.res0_prec = precCode(res.prec);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  c.res0_addr = res.offset;
  c.opd0_addr = x.offset;
  c.opd1_addr = floatBits(mul, res.prec);
  c.opd2_addr = floatBits(add, res.prec);
  em.tiuAccess(isa::encode(c), {x.range(em.chip())}, {res.range(em.chip())});
}

namespace {

constexpr unsigned kSfuTaylor = 13, kSfuNormalize = 15, kSfuRsqrt = 17;
/// rsqrt iterations - 1 (2-bit field): the most the field allows.
constexpr unsigned kRsqrtIterField = 3;

isa::cmd::SSFU sfuHead(unsigned eu, const LTensor &res, const LTensor &x) {
  checkDims(res.shape, "SFU result");
  if (x.layout != kStrEuAligned || res.layout != kStrEuAligned)
    throw Error("backend: SFU needs EU-aligned operands");
  isa::cmd::SSFU c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::SFU);
  c.tsk_eu_typ = eu;
  c.res0_prec = precCode(res.prec);
  c.opd0_prec = precCode(x.prec);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  c.res0_addr = res.offset;
  c.opd0_addr = x.offset;
  return c;
}

} // namespace

void sfuTaylor(CmdEmitter &em, const LTensor &res, const LTensor &x,
               uint64_t table, unsigned len) {
  isa::cmd::SSFU c = sfuHead(kSfuTaylor, res, x);
  c.opd1_n = len;
  c.opd1_addr = table;
  em.tiuAccess(isa::encode(c),
               {x.range(em.chip()), {table, uint64_t(len) * elemBytes(x.prec)}},
               {res.range(em.chip())});
}

void sfuRsqrt(CmdEmitter &em, const LTensor &res, const LTensor &x) {
  isa::cmd::SSFU c = sfuHead(kSfuRsqrt, res, x);
  c.opd2_n_str = kRsqrtIterField;
  em.tiuAccess(isa::encode(c), {x.range(em.chip())}, {res.range(em.chip())});
}

void sfuNormalize(CmdEmitter &em, const LTensor &res, const LTensor &x) {
  isa::cmd::SSFU c = sfuHead(kSfuNormalize, res, x);
  em.tiuAccess(isa::encode(c), {x.range(em.chip())}, {res.range(em.chip())});
}

namespace {

/// `v` for a 4-bit field of a `cmd` command; throws naming `what` if it
/// does not fit.
unsigned fit4(unsigned v, const char *cmd, const char *what) {
  if (v > 15)
    throw Error(std::string("backend: ") + cmd + " " + what + " " +
                std::to_string(v) + " does not fit its 4-bit field");
  return v;
}

/// Fields sCONV and the long layout share, set for one convolution.
template <typename T> void fillConv(T &c, const ConvCmd &x) {
  c.tsk_typ = unsigned(isa::TiuTask::Conv);
  c.tsk_eu_typ = 0; // conv.normal
  // Integer: input and weight signs; opd2 (the kernel zero point, an
  // immediate 0) signed so that the int32 result is signed (4.5).
  c.opd0_sign = signOf(x.input.prec, x.input.isSigned);
  c.opd1_sign = signOf(x.input.prec, x.weightSigned);
  c.opd2_sign = 1;
  c.res_add = x.accumulate;
  c.kernel_rotate = x.rotate;
  c.res0_prec = precCode(x.output.prec);
  c.opd0_prec = precCode(x.input.prec);
  c.opd2_const = x.hasBias ? 0 : 1;
  c.opd0_up_pad = fit4(x.padT, "conv", "top pad");
  c.opd0_dn_pad = fit4(x.padB, "conv", "bottom pad");
  c.opd0_lf_pad = fit4(x.padL, "conv", "left pad");
  c.opd0_rt_pad = fit4(x.padR, "conv", "right pad");
  c.res_op_x_str = fit4(x.strideW, "conv", "stride");
  c.res_op_y_str = fit4(x.strideH, "conv", "stride");
  c.opd3_const = 1; // pad / insert value: an immediate (0 for floats)
  // The input may be a free-stride view of rows inside a larger tensor
  // (a layer group's value read by a window that starts below its first
  // row); EU-aligned otherwise.
  c.opd0_str = x.input.layout == kStrFree ? kStrFree : kStrEuAligned;
  if (x.input.layout == kStrFree) {
    auto fit16 = [](int64_t v) {
      if (v < 0 || v > 0xFFFF)
        throw Error("backend: conv input stride " + std::to_string(v) +
                    " does not fit 16 bits");
      return uint64_t(v);
    };
    c.opd0_n_str = fit16(x.input.stride.n);
    c.opd0_c_str = fit16(x.input.stride.c);
    c.opd0_h_str = fit16(x.input.stride.h);
    c.opd0_w_str = fit16(x.input.stride.w);
  }
  c.res0_addr = x.output.offset;
  c.opd0_x_ins0 = fit4(x.insW, "conv", "inserted zeros");
  c.opd0_y_ins0 = fit4(x.insH, "conv", "inserted zeros");
  c.opd1_x_ins0 = fit4(x.dilW - 1, "conv", "dilation - 1");
  c.opd1_y_ins0 = fit4(x.dilH - 1, "conv", "dilation - 1");
  c.res0_n = x.output.shape.n;
  c.res0_c = x.output.shape.c;
  c.res0_h = x.output.shape.h;
  c.res0_w = x.output.shape.w;
  c.opd0_c = x.input.shape.c;
  c.opd0_h = x.input.shape.h;
  c.opd0_w = x.input.shape.w;
  c.opd1_h = x.kh;
  c.opd1_w = x.kw;
  c.opd0_addr = x.input.offset;
  c.opd1_addr = x.weights;
  c.opd2_addr = x.hasBias ? x.bias : 0;
  c.opd3_addr = x.padBits;
}

} // namespace

void conv(CmdEmitter &em, const ConvCmd &x) {
  checkDims(x.output.shape, "conv result");
  checkDims(x.input.shape, "conv input");
  // The weights and bias may start in another lane (a group of a grouped
  // convolution, channelRange): their lane bits are not part of the range.
  const isa::ChipParams &chip = em.chip();
  std::vector<LocalRange> reads{x.input.range(chip),
                                {laneOffset(chip, x.weights), x.weightBytes}};
  if (x.hasBias)
    reads.push_back(
        {laneOffset(chip, x.bias),
         isa::channelSlots(chip, laneOf(chip, x.bias), x.output.shape.c) *
             sizeof(float)});
  if (x.accumulate)
    reads.push_back(x.output.range(em.chip()));
  isa::RawCommand raw;
  if (x.relu) {
    // sCONV has no relu bit for the float path: the long layout has one.
    isa::cmd::TiuLong c;
    fillConv(c, x);
    c.relu = 1;
    c.tsk_lane_num = ~uint64_t(0);
    c.opd0_n = x.output.shape.n;
    c.opd1_c = x.output.shape.c;
    c.opd1_prec = precCode(x.input.prec);
    c.opd2_prec = precCode(Prec::Fp32);
    c.res0_str = kStrEuAligned;
    c.opd2_str = 2; // bias: one value per channel
    raw = isa::encode(c);
  } else {
    isa::cmd::SConv c;
    c.cmd_short = 1;
    fillConv(c, x);
    raw = isa::encode(c);
  }
  em.tiuAccess(raw, reads, {x.output.range(em.chip())});
}

void pord(CmdEmitter &em, const PorDCmd &x) {
  checkDims(x.output.shape, "pooling result");
  checkDims(x.input.shape, "pooling input");
  isa::cmd::SPorD c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::PorD);
  c.tsk_eu_typ = unsigned(x.kind);
  c.kernel_rotate = x.rotate;
  bool integer = !isa::isFloat(x.input.prec);
  c.opd0_sign = signOf(x.input.prec, x.input.isSigned);
  c.opd1_sign = signOf(x.input.prec, x.weightSigned);
  c.opd2_sign = 1;
  c.res0_prec = precCode(x.output.prec);
  c.opd0_prec = precCode(x.input.prec);
  c.opd0_x_ins0 = fit4(x.insW, "pooling", "inserted zeros");
  c.opd0_y_ins0 = fit4(x.insH, "pooling", "inserted zeros");
  c.opd1_x_ins0 = fit4(x.dilW - 1, "pooling", "dilation - 1");
  c.opd1_y_ins0 = fit4(x.dilH - 1, "pooling", "dilation - 1");
  c.opd0_up_pad = fit4(x.padT, "pooling", "top pad");
  c.opd0_dn_pad = fit4(x.padB, "pooling", "bottom pad");
  c.opd0_lf_pad = fit4(x.padL, "pooling", "left pad");
  c.opd0_rt_pad = fit4(x.padR, "pooling", "right pad");
  c.res_op_x_str = fit4(x.strideW, "pooling", "stride");
  c.res_op_y_str = fit4(x.strideH, "pooling", "stride");
  c.res0_n = x.output.shape.n;
  c.res0_c = x.output.shape.c;
  c.res0_h = x.output.shape.h;
  c.res0_w = x.output.shape.w;
  c.opd0_h = x.input.shape.h;
  c.opd0_w = x.input.shape.w;
  c.opd1_h = x.kh;
  c.opd1_w = x.kw;
  c.res0_addr = x.output.offset;
  c.opd0_addr = x.input.offset;
  c.opd3_const = 1;
  c.opd3_addr = x.padBits;
  std::vector<LocalRange> reads{x.input.range(em.chip())};
  uint64_t slots = isa::channelSlots(em.chip(), 0, x.output.shape.c);
  if (x.kind == PorDCmd::Depthwise || x.kind == PorDCmd::DepthwiseRelu) {
    c.opd1_addr = x.weights;
    reads.push_back({x.weights, slots * x.kh * x.kw * elemBytes(x.input.prec)});
    c.opd2_const = x.hasBias ? 0 : 1;
    if (x.hasBias) {
      c.opd2_addr = x.bias;
      // Integer input: an int32 bias (the short form's opd2 type).
      reads.push_back(
          {x.bias, slots * (integer ? 4 : elemBytes(x.input.prec))});
    }
  } else {
    c.opd2_const = 1;
    // Integer average pooling: the plain window sum (multiplier 1, shift
    // 0); the caller rescales it with rq.
    if (x.kind == PorDCmd::AvgPool && !integer) {
      // The average scale as an fp32 immediate in opd1 (semantics.md of
      // the simulator, "Pooling").
      c.opd1_const = 1;
      float scale = x.avgScale != 0.0f ? x.avgScale : 1.0f / float(x.kh * x.kw);
      c.opd1_addr = isa::floatToBits(scale);
    }
  }
  em.tiuAccess(isa::encode(c), reads, {x.output.range(em.chip())});
}

namespace {

/// The sRQ&sDQ fields every sub-op sets: types and signs of input and
/// result, the round mode, the result's shape and both addresses.
isa::cmd::SRQDQ rqdqFields(unsigned eu, const LTensor &res, const LTensor &in,
                           isa::RoundMode round) {
  isa::cmd::SRQDQ c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::RQDQ);
  c.tsk_eu_typ = eu;
  c.opd0_prec = precCode(in.prec);
  c.opd0_sign = signOf(in.prec, in.isSigned);
  c.res0_prec = precCode(res.prec);
  c.opd2_sign = signOf(res.prec, res.isSigned);
  c.opd2_n_str = unsigned(round);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  c.res0_addr = res.offset;
  c.opd0_addr = in.offset;
  return c;
}

} // namespace

void rq(CmdEmitter &em, const RqCmd &x) {
  checkDims(x.output.shape, "requantisation result");
  if (x.input.shape.n != x.output.shape.n ||
      x.input.shape.c != x.output.shape.c ||
      x.input.shape.h != x.output.shape.h ||
      x.input.shape.w != x.output.shape.w)
    throw Error("backend: rq input and result shapes differ");
  if (x.input.layout != kStrEuAligned || x.output.layout != kStrEuAligned)
    throw Error("backend: rq operands must be EU-aligned (sRQ has no "
                "stride fields)");
  isa::cmd::SRQDQ c = rqdqFields(1 /* rq1 */, x.output, x.input, x.round);
  std::vector<LocalRange> reads{x.input.range(em.chip())};
  if (x.perChannel) {
    c.opd1_const = 0;
    c.opd1_addr = x.params;
    uint64_t slots = isa::channelSlots(em.chip(), 0, x.output.shape.c);
    reads.push_back({x.params, slots * em.chip().localAlign});
  } else {
    // opd2: bits 7..0 the shift (a left shift: -rshift), 23..8 the zero
    // point (isa/docs/bm1684x.md 8.3).
    int shift = -x.rshift;
    if (shift < -128 || shift > 127)
      throw Error("backend: rq shift " + std::to_string(x.rshift) +
                  " does not fit 8 bits");
    if (x.zeroPoint < -32768 || x.zeroPoint > 65535)
      throw Error("backend: rq zero point does not fit 16 bits");
    c.opd1_const = 1;
    c.opd1_addr = uint32_t(x.multiplier);
    c.opd2_addr = (uint32_t(uint8_t(int8_t(shift)))) |
                  (uint32_t(uint16_t(x.zeroPoint)) << 8);
  }
  em.tiuAccess(isa::encode(c), reads, {x.output.range(em.chip())});
}

namespace {

void rqdqFloat(CmdEmitter &em, unsigned eu, const LTensor &res,
               const LTensor &in, uint32_t opd1, uint32_t opd2,
               isa::RoundMode round) {
  checkDims(res.shape, "quantisation result");
  if (in.layout != kStrEuAligned || res.layout != kStrEuAligned)
    throw Error("backend: rq/dq operands must be EU-aligned");
  isa::cmd::SRQDQ c = rqdqFields(eu, res, in, round);
  c.opd1_const = 1;
  c.opd1_addr = opd1;
  c.opd2_addr = opd2;
  em.tiuAccess(isa::encode(c), {in.range(em.chip())}, {res.range(em.chip())});
}

} // namespace

void rqFloat(CmdEmitter &em, const LTensor &res, const LTensor &in,
             float scale, int32_t zeroPoint, isa::RoundMode round) {
  // rq0: opd1 = fp32 scale, opd2 = fp32 offset (the zero point).
  rqdqFloat(em, 0, res, in, isa::floatToBits(scale),
            isa::floatToBits(float(zeroPoint)), round);
}

void dqFloat(CmdEmitter &em, const LTensor &res, const LTensor &in,
             float scale, int32_t zeroPoint) {
  // dq0: opd1 = int32 zero point, opd2 = fp32 scale.
  rqdqFloat(em, 3, res, in, uint32_t(zeroPoint), isa::floatToBits(scale),
            isa::RoundMode::HalfToEven);
}

void arShift(CmdEmitter &em, ArOp op, const LTensor &res, const Opd &a,
             const Opd &b, int shift, isa::RoundMode round) {
  checkDims(res.shape, "AR result");
  if (isa::isFloat(res.prec) || isa::isFloat(a.prec) || isa::isFloat(b.prec))
    throw Error("backend: AR with a shift needs integer operands");
  isa::cmd::SAR c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::AR);
  c.tsk_eu_typ = unsigned(op);
  c.tsk_opd_num = 3;
  c.res0_prec = precCode(res.prec);
  c.opd0_prec = precCode(a.prec);
  c.opd0_sign = signOf(a.prec, a.isSigned);
  c.opd0_const = a.isConst;
  c.opd1_prec = precCode(b.prec);
  c.opd1_sign = signOf(b.prec, b.isSigned);
  c.opd1_const = b.isConst;
  // opd2: the right shift as an int8 immediate.
  if (shift < -128 || shift > 127)
    throw Error("backend: AR shift does not fit 8 bits");
  c.opd2_const = 1;
  c.opd2_prec = precCode(Prec::Int8);
  c.opd2_sign = 1;
  c.opd2_addr = uint32_t(uint8_t(int8_t(shift)));
  c.opd2_n_str = unsigned(round);
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = res.shape.h;
  c.res0_w = res.shape.w;
  std::vector<LocalRange> reads, writes{res.range(em.chip())};
  setArOperand(c, 2, res, em.chip().npuNum);
  for (auto [o, which] : {std::pair{&a, 0}, std::pair{&b, 1}}) {
    if (o->isConst) {
      (which == 0 ? c.opd0_addr : c.opd1_addr) = o->bits;
      continue;
    }
    setArOperand(c, which, o->t, em.chip().npuNum);
    reads.push_back(o->t.range(em.chip()));
  }
  em.tiuAccess(isa::encode(c), reads, writes);
}

void lutGather(CmdEmitter &em, const LTensor &res, const LTensor &idx,
               uint64_t table) {
  if (idx.layout != kStrEuAligned || res.layout != kStrEuAligned)
    throw Error("backend: a table lookup needs EU-aligned operands");
  if (res.prec != Prec::Int8 || idx.prec != Prec::Int8)
    throw Error("backend: a table lookup reads and writes int8");
  // (n, c, h, w) EU-aligned is (n, c, 1, h * w) EU-aligned.
  uint64_t w = uint64_t(res.shape.h) * res.shape.w;
  if (w > kMaxDim)
    throw Error("backend: a table lookup row of " + std::to_string(w) +
                " elements does not fit 16 bits");
  isa::cmd::SSG c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::SG);
  c.tsk_eu_typ = 5; // pe_s_gather_d1coor
  c.opd0_str = 4;   // one line-aligned table per lane, shared by its channels
  c.res0_n = res.shape.n;
  c.res0_c = res.shape.c;
  c.res0_h = 1;
  c.res0_w = w;
  c.opd0_h = 1;
  c.opd0_w = 256;
  c.opd1_w = w;
  c.res0_prec = precCode(Prec::Int8);
  c.opd0_prec = precCode(Prec::Int8);
  c.opd1_prec = precCode(Prec::Int8); // indices: unsigned 8-bit
  c.res0_addr = res.offset;
  c.opd0_addr = table;
  c.opd1_addr = idx.offset;
  em.tiuAccess(isa::encode(c), {idx.range(em.chip()), {table, 256}},
               {res.range(em.chip())});
}

void mm(CmdEmitter &em, const MMCmd &x) {
  if (x.m == 0 || x.k == 0 || x.n == 0 || x.m > kMaxDim)
    throw Error("backend: matmul of " + std::to_string(x.m) + " x " +
                std::to_string(x.k) + " x " + std::to_string(x.n) +
                " is outside the command's range");
  uint32_t lw = x.left.shape.w, rw = x.output.shape.w;
  isa::cmd::SMM c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::MM);
  c.tsk_eu_typ = 1;                 // mm.normal
  c.opd2_const = x.hasBias ? 0 : 1; // integer: an immediate shift of 0
  c.opd0_sign = signOf(x.left.prec, x.left.isSigned);
  c.opd1_sign = signOf(x.right.prec, x.right.isSigned);
  c.opd2_sign = 1;
  c.res0_prec = precCode(x.output.prec);
  c.opd0_prec = precCode(x.left.prec);
  c.res0_c = uint32_t(ceilDiv(x.n, rw));
  c.res0_w = rw;
  c.opd0_n = x.m;
  c.opd0_c = uint32_t(ceilDiv(x.k, lw));
  c.opd0_w = lw;
  c.opd1_w = x.k - lw * (uint32_t(c.opd0_c) - 1);
  c.res0_addr = x.output.offset;
  c.opd0_addr = x.left.offset;
  c.opd1_addr = x.right.offset;
  c.opd2_addr = x.hasBias ? x.bias.offset : 0;
  std::vector<LocalRange> reads{x.left.range(em.chip()),
                                x.right.range(em.chip())};
  if (x.hasBias)
    reads.push_back(x.bias.range(em.chip()));
  em.tiuAccess(isa::encode(c), reads, {x.output.range(em.chip())});
}

void mm2(CmdEmitter &em, const MM2Cmd &x) {
  uint32_t m = x.left.shape.c, k = x.left.shape.w, n = x.output.shape.w;
  auto dense = [](const LTensor &t) {
    return t.shape.n == 1 && t.shape.h == 1 && t.layout == kStrEuAligned;
  };
  // The right matrix as stored: (1, K, 1, N), or (1, N, 1, K) transposed.
  uint32_t rc = x.rightTransposed ? n : k, rw = x.rightTransposed ? k : n;
  if (!dense(x.left) || !dense(x.right) || !dense(x.output) ||
      x.right.shape.c != rc || x.output.shape.c != m || x.right.shape.w != rw ||
      m == 0 || k == 0 || n == 0)
    throw Error(std::string("backend: mm2 needs EU-aligned (1, M, 1, K) x ") +
                (x.rightTransposed ? "(1, N, 1, K)" : "(1, K, 1, N)") +
                " -> (1, M, 1, N) operands");
  if (x.left.prec != x.right.prec)
    throw Error("backend: mm2 operands of different precisions");
  isa::cmd::SMM2 c;
  c.cmd_short = 1;
  c.tsk_typ = unsigned(isa::TiuTask::MM);
  c.tsk_eu_typ = x.rightTransposed ? 5 : 4; // mm2.nt : mm2.nn
  c.opd0_sign = signOf(x.left.prec, x.left.isSigned);
  c.opd1_sign = signOf(x.right.prec, x.right.isSigned);
  c.res0_prec = precCode(x.output.prec);
  c.opd0_prec = precCode(x.left.prec);
  c.opd2_const = 1; // no zero point
  c.res0_c = m;
  c.res0_w = n;
  c.opd1_c = rc;
  c.opd1_w = rw;
  c.res0_addr = x.output.offset;
  c.opd0_addr = x.left.offset;
  c.opd1_addr = x.right.offset;
  em.tiuAccess(isa::encode(c),
               {x.left.range(em.chip()), x.right.range(em.chip())},
               {x.output.range(em.chip())});
}

//===----------------------------------------------------------------------===//
// Tiling and checks
//===----------------------------------------------------------------------===//

void pipeline(size_t steps, const std::function<void(size_t)> &load,
              const std::function<void(size_t)> &compute,
              const std::function<void(size_t)> &store) {
  if (steps == 0)
    return;
  load(0);
  for (size_t i = 0; i < steps; ++i) {
    if (i + 1 < steps)
      load(i + 1);
    compute(i);
    store(i);
  }
}

int64_t largestFitting(int64_t lo, int64_t hi,
                       const std::function<bool(int64_t)> &ok) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (ok(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

std::vector<Range1> splitRange(int64_t total, int64_t chunk) {
  std::vector<Range1> r;
  chunk = std::max<int64_t>(chunk, 1);
  for (int64_t b = 0; b < total; b += chunk)
    r.push_back({b, std::min(chunk, total - b)});
  return r;
}

void requireFloat(const OpCtx &ctx, const GTensor &t, const char *what) {
  if (!isa::isFloat(t.prec))
    ctx.fail(std::string(what) + " has precision " + isa::precName(t.prec) +
             "; this kernel supports F32, F16 and BF16");
}

void requireElements(const OpCtx &ctx, const GTensor &t, int64_t count,
                     const char *what) {
  if (t.numElements() != count)
    ctx.fail(std::string(what) + " has " + std::to_string(t.numElements()) +
             " elements, expected " + std::to_string(count));
}

} // namespace tpu::backend::detail
