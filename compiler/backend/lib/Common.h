//===- Common.h - Shared pieces of the backend kernels -----------*- C++
//-*-===//
//
// Private to compiler/backend/lib: local tensors and their allocation, the
// command builders (one function per TIU / GDMA command shape the kernels
// use, each declaring the local memory it touches so the emitter derives the
// ids), tiling helpers and the element-wise function sequences.
//
// Conventions: a local tensor starts in lane 0 (its TIU address is its
// byte offset in the lane) unless it is a channel range of another
// (channelRange: the start lane in the address's lane bits, as the
// hardware addresses it); channels spread over lanes as
// isa/docs/bm1684x.md 3.1 describes. TIU commands use the short layouts
// whenever one can express the command; GDMA commands use the long layouts
// (isa/docs/bm1684x.md 5.1: the runtime sizes every GDMA command except sys as
// 96 bytes).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_BACKEND_LIB_COMMON_H
#define TPUC_BACKEND_LIB_COMMON_H

#include "tpuc/Backend/Backend.h"

#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Numerics.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace tpu::backend::detail {

using isa::Prec;
using isa::Shape4;
using isa::Stride4;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The kernel and operation names for messages.
struct OpCtx {
  const char *kernel;
  std::string name;
  [[noreturn]] void fail(const std::string &what) const;
};

/// Runs `fn`, re-throwing errors of the command builders (which do not know
/// the operation) with the kernel and operation name in front.
void withCtx(const OpCtx &ctx, const std::function<void()> &fn);

//===----------------------------------------------------------------------===//
// Local tensors and allocation
//===----------------------------------------------------------------------===//

/// Layout codes of the TIU `*_str` fields (isa/docs/bm1684x.md 3.2).
constexpr unsigned kStrEuAligned = 0;
constexpr unsigned kStrCompact = 1;
constexpr unsigned kStrFree = 3;

/// A tensor in local memory at TIU address `offset`: the byte offset in the
/// lane, and in the lane bits above it the start lane (0 but for a
/// channelRange view).
struct LTensor {
  uint64_t offset = 0;
  Prec prec = Prec::Fp32;
  Shape4 shape{1, 1, 1, 1};
  Stride4 stride{0, 0, 0, 0};
  unsigned layout = kStrEuAligned; ///< kStrEuAligned, kStrCompact or kStrFree
  /// Integer elements are signed (the command's sign bits); floats ignore it.
  bool isSigned = true;

  /// Bytes of each lane the tensor spans (from offset).
  LocalRange range(const isa::ChipParams &chip) const;
  /// The same memory seen with another precision and shape (layout kept).
  LTensor as(Prec p, Shape4 s) const;
};

/// EU-aligned (or compact) tensor at `offset`.
LTensor localTensor(const isa::ChipParams &chip, uint64_t offset, Prec prec,
                    Shape4 shape,
                    isa::LocalLayout layout = isa::LocalLayout::EuAligned);
/// Tensor with explicit element strides (TIU layout code 3).
LTensor freeTensor(uint64_t offset, Prec prec, Shape4 shape, Stride4 stride);
/// Channels [c0, c0 + count) of `t` (which starts in lane 0) as a tensor
/// of its own: it starts in lane c0 mod lanes, at channel slot c0 div lanes
/// of `t`, with `t`'s strides (free-stride layout: an EU-aligned or
/// compact layout would restart the slots at the new lane). A grouped
/// convolution's groups read and write such ranges.
LTensor channelRange(const isa::ChipParams &chip, const LTensor &t, int64_t c0,
                     int64_t count);
/// A GDMA copy of local tensor `src` into local tensor `dst` (same shape
/// and precision; either may start in any lane: channelRange).
void copyLocal(CmdEmitter &em, const LTensor &src, const LTensor &dst);
/// The start lane and the byte offset inside the lane of TIU address `addr`.
unsigned laneOf(const isa::ChipParams &chip, uint64_t addr);
uint64_t laneOffset(const isa::ChipParams &chip, uint64_t addr);
/// Bytes per lane of an EU-aligned tensor of this shape.
uint64_t euBytes(const isa::ChipParams &chip, Prec prec, Shape4 shape);

/// Bump allocator over one lane's local memory (the same offsets in every
/// lane). Buffers are aligned to localAlign bytes.
class LocalAlloc {
public:
  LocalAlloc(const isa::ChipParams &chip, const OpCtx &ctx);
  /// Throws the kernel's "does not fit" error naming `what`.
  uint64_t alloc(uint64_t bytes, const char *what);
  uint64_t used() const { return used_; }
  uint64_t capacity() const { return chip_.lmemBytes; }
  /// Bytes per lane not yet allocated.
  uint64_t remaining() const { return capacity() - used_; }

private:
  const isa::ChipParams &chip_;
  const OpCtx &ctx_;
  uint64_t used_ = 0;
};

//===----------------------------------------------------------------------===//
// Global-memory views and GDMA builders
//===----------------------------------------------------------------------===//

/// A 4-D strided view of global memory (element strides; may be 0 for
/// broadcast reads).
struct DView {
  uint64_t addr = 0;
  Prec prec = Prec::Fp32;
  Shape4 shape{1, 1, 1, 1};
  Stride4 stride{0, 0, 0, 0};
};

/// Dense row-major 4-D view of a global tensor of dims (n, c, h, w).
DView denseView(uint64_t addr, Prec prec, Shape4 shape);
/// The view moved by (n, c, h, w) elements and resized to `shape`.
DView subView(const DView &v, Shape4 at, Shape4 shape);

/// Global -> local tensor move (DMA_tensor); shapes must have equal element
/// counts (normally identical).
void load(CmdEmitter &em, const DView &src, const LTensor &dst);
/// Local -> global.
void store(CmdEmitter &em, const LTensor &src, const DView &dst);
/// Global -> global, 4-D, identical shapes; dims above 65535 are split.
void copyGlobal(CmdEmitter &em, const DView &src, const DView &dst);
/// Fills a global view with raw `bits` of its precision.
void fillGlobal(CmdEmitter &em, const DView &dst, uint32_t bits);
/// Fills a local tensor with raw `bits` of its precision (GDMA fill).
void fillLocal(CmdEmitter &em, const LTensor &dst, uint32_t bits);
/// Global matrix rows x cols (row stride in elements) <-> local matrix(w)
/// layout tensor (rows, ceil(cols / w), 1, w) (DMA_matrix).
/// With `transpose`, the global rows x cols matrix lands transposed: local
/// (cols, ceil(rows / w), 1, w).
void loadMatrix(CmdEmitter &em, uint64_t addr, Prec prec, uint32_t rows,
                uint32_t cols, uint64_t rowStride, const LTensor &dst,
                bool transpose = false);
void storeMatrix(CmdEmitter &em, const LTensor &src, uint64_t addr,
                 uint32_t rows, uint32_t cols, uint64_t rowStride);

/// N-d strided global -> global copy: dims merged where both sides allow,
/// blocks of at most 4 dims and 65535 elements per dim.
void copyGlobalNd(CmdEmitter &em, Prec prec, uint64_t srcAddr,
                  std::vector<int64_t> srcStrides, uint64_t dstAddr,
                  std::vector<int64_t> dstStrides, std::vector<int64_t> dims);

/// Dense row-major strides of `dims`.
std::vector<int64_t> denseStrides(const std::vector<int64_t> &dims);

//===----------------------------------------------------------------------===//
// TIU builders
//===----------------------------------------------------------------------===//

/// A source operand of an element-wise command: a local tensor or an
/// immediate (raw bits of `prec`).
struct Opd {
  bool isConst = false;
  uint32_t bits = 0;
  Prec prec = Prec::Fp32;
  bool isSigned = true; ///< integer operands only
  LTensor t;

  static Opd of(const LTensor &t);
  /// `v` rounded to `p` (F32 / F16 / BF16) or converted to an integer.
  static Opd imm(float v, Prec p);
  static Opd immInt(int32_t v, Prec p = Prec::Int32);
};

/// Raw bits of `v` in precision `p` (float types round to nearest even).
uint32_t floatBits(float v, Prec p);

/// AR sub-ops used by the kernels (isa/docs/bm1684x.md 4.2).
enum class ArOp : unsigned {
  Mul = 0,
  Add = 2,
  Sub = 3,
  Max = 4,
  Min = 5,
  LogicShift = 6,
  Div = 12,
  Cast = 14,
  AddSat = 15,
  SubSat = 16,
  Mac = 18,
  Copy = 19,
  Abs = 26,
};

/// The local tile conv2d loads the filters of `oc` output channels into:
/// compact (1, oc, h, w), one output channel per lane, depthwise
/// (1, oc, kh, kw), otherwise (1, oc, ceil(icg / P), kh * kw * P) with P the
/// IC_PARALLEL of `prec` (the layout reorderConvFilter writes).
Shape4 convFilterTile(const isa::ChipParams &chip, Prec prec, int64_t oc,
                      int64_t icg, int64_t kh, int64_t kw, bool depthwise);

/// The AR sub-op of a binary kind (throws for Pow, which has none).
ArOp arOpOf(BinaryKind k);

/// res = a (op) b, element-wise over res.shape (sAR). Unary ops (Copy,
/// Cast, Abs) ignore `b`. `round` is the rounding of casts (which saturate
/// to an integer result; its signedness is res.isSigned).
void ar(CmdEmitter &em, ArOp op, const LTensor &res, const Opd &a,
        const Opd &b = Opd(),
        isa::RoundMode round = isa::RoundMode::HalfToEven);

/// CMP select sub-ops (isa/docs/bm1684x.md 4.2).
enum class CmpOp : unsigned { SelGt = 23, SelEq = 24, SelLt = 26 };
/// res = (a cmp b) ? t : f (sCMP); a, b of one type; t, f of res's type.
/// Tensor operands must be EU-aligned or compact of res's shape.
void cmpSelect(CmdEmitter &em, CmpOp op, const LTensor &res, const Opd &a,
               const Opd &b, const Opd &t, const Opd &f);

/// res = x * mul + add (sLIN mac); mul / add immediates of res's type.
void linMac(CmdEmitter &em, const LTensor &res, const LTensor &x, float mul,
            float add);

/// SFU: Horner polynomial with `len` fp32 coefficients at local `table`
/// (the same in every lane, lowest order first): res = sum k_i x^i.
void sfuTaylor(CmdEmitter &em, const LTensor &res, const LTensor &x,
               uint64_t table, unsigned len);
/// SFU rsqrt.
void sfuRsqrt(CmdEmitter &em, const LTensor &res, const LTensor &x);
/// SFU normalize: x = sign * m * 2^e with m in [1, 2); a float `res` gets
/// sign * m, an Int32 `res` gets e.
void sfuNormalize(CmdEmitter &em, const LTensor &res, const LTensor &x);

/// Convolution of an EU-aligned input tile (n, ic, ih, iw) into an
/// EU-aligned output tile, weights in the IC_PARALLEL layout, optional fp32
/// per-channel bias (compact, one value per channel slot).
struct ConvCmd {
  LTensor input, output;
  uint64_t weights = 0;
  uint64_t weightBytes = 0; ///< per lane, for dependency tracking
  bool hasBias = false;
  uint64_t bias = 0;
  unsigned kh = 1, kw = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  unsigned insH = 0, insW = 0; ///< zeros inserted between input rows/cols
  unsigned padT = 0, padB = 0, padL = 0, padR = 0;
  bool relu = false;
  bool rotate = false; ///< kernel rotated 180 degrees
  bool accumulate = false;
  /// Integer convolutions (int8 / uint8 input, int8 weights, int32
  /// result): the weights' sign and the pad value (raw bits of the input
  /// type: the input zero point). The kernel zero point is 0.
  bool weightSigned = true;
  uint32_t padBits = 0;
};
void conv(CmdEmitter &em, const ConvCmd &c);

/// Depthwise convolution / pooling (sPorD).
struct PorDCmd {
  enum Kind { Depthwise = 0, AvgPool = 1, DepthwiseRelu = 2, MaxPool = 4 };
  Kind kind = MaxPool;
  LTensor input, output;
  uint64_t weights = 0; ///< depthwise: (1, c, kh, kw) compact
  bool hasBias = false;
  uint64_t bias = 0; ///< depthwise: (1, c, 1, 1) compact, input precision
  unsigned kh = 1, kw = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  unsigned insH = 0, insW = 0;
  unsigned padT = 0, padB = 0, padL = 0, padR = 0;
  /// Pad value bits (input precision) and average-pool scale (fp32);
  /// scale 0 = 1 / (kh * kw).
  uint32_t padBits = 0;
  float avgScale = 0.0f;
  bool rotate = false;
  /// Integer input: the depthwise weights' sign (bias int32 compact).
  /// The result is the int64 sum (+ bias) saturated to the result type
  /// (no shift, multiplier 1).
  bool weightSigned = true;
};
void pord(CmdEmitter &em, const PorDCmd &c);

/// Fixed-point requantisation (sRQ&sDQ rq1, isa/docs/bm1684x.md 8.3):
/// res = sat(rightShiftRound(in * multiplier, rshift) + zp) to res's
/// integer type. Parameters are immediates, or, with `perChannel`, one
/// record [multiplier, -rshift, zp] (int32) at the start of every channel
/// slot of `params` (a (1, C, 1, 3) EU-aligned int32 tensor).
struct RqCmd {
  LTensor input, output;
  bool perChannel = false;
  uint64_t params = 0;
  int32_t multiplier = 1;
  int rshift = 0;
  int32_t zeroPoint = 0;
  isa::RoundMode round = isa::RoundMode::HalfUp;
};
void rq(CmdEmitter &em, const RqCmd &c);

/// Float <-> integer conversion with a scale (sRQ&sDQ rq0 / dq0, fp32
/// immediates): quantise res = sat(round(fl32(fl32(x * scale) + zp)))
/// (input float, result integer), or dequantise res = fl32(float(x - zp) *
/// scale) (input integer, result float), rounded to the result type.
void rqFloat(CmdEmitter &em, const LTensor &res, const LTensor &in,
             float scale, int32_t zeroPoint, isa::RoundMode round);
void dqFloat(CmdEmitter &em, const LTensor &res, const LTensor &in,
             float scale, int32_t zeroPoint);

/// res = rightShiftRound(a (op) b, shift) (sAR with three operands, integer
/// operands; op Add/Sub/Mul, or their saturating forms); the shift is an
/// immediate.
void arShift(CmdEmitter &em, ArOp op, const LTensor &res, const Opd &a,
             const Opd &b, int shift, isa::RoundMode round);

/// res = table[idx] element-wise (sSG pe_s_gather_d1coor, opd0_str 4): the
/// 256-entry int8 table at local offset `table` in every lane (one line),
/// the indices the raw bytes of `idx` (EU-aligned, read as u8), res
/// EU-aligned of idx's shape (may be idx itself).
void lutGather(CmdEmitter &em, const LTensor &res, const LTensor &idx,
               uint64_t table);

/// The commands of one tile of binaryInt8 (BinaryInt8Params), with two
/// int32 scratch tiles of the output's shape; shared by the per-op kernel
/// and the layer groups.
void emitBinaryInt8Tile(CmdEmitter &em, const BinaryInt8Params &p,
                        const LTensor &a, const LTensor &b, const LTensor &out,
                        const LTensor &ta, const LTensor &tb);

/// The commands of one tile of cast (CastParams) from `in` to `out`: rq0 /
/// dq0 for a quantising cast (both EU-aligned), an AR copy between equal
/// types, else an AR cast; through the integer tile `viaInt` (of `in`'s
/// shape; required when p.viaInt is set). Shared by the per-op kernel and
/// the layer groups.
void castTile(CmdEmitter &em, const CastParams &p, const LTensor &in,
              const LTensor &out, const LTensor *viaInt = nullptr);

/// Matrix multiply (sMM mm.normal): left (M, ceil(K / lw), 1, lw) and right
/// (K, ceil(N / rw), 1, rw) in matrix(w) layout, result (M, ceil(N / rw),
/// 1, rw); optional fp32 bias (1, ceil(N / rw), 1, rw).
struct MMCmd {
  LTensor left, right, output;
  uint32_t m = 0, k = 0, n = 0;
  bool hasBias = false;
  LTensor bias;
};
void mm(CmdEmitter &em, const MMCmd &c);

/// Matrix multiply 2 (sMM2 mm2.nn / mm2.nt, isa/docs/bm1684x.md 3.3 and
/// 4.5): every operand in matrix2 layout, one matrix row per channel. left
/// (1, M, 1, K) and right (1, K, 1, N) EU-aligned, or with `rightTransposed`
/// (mm2.nt) the right matrix stored (1, N, 1, K); the result (1, M, 1, N),
/// EU-aligned, each element summed over K ascending (no bias operand).
struct MM2Cmd {
  LTensor left, right, output;
  bool rightTransposed = false;
};
void mm2(CmdEmitter &em, const MM2Cmd &c);

/// An INT8 matmul's int32 accumulator `acc` requantised into `out`: one RQ1
/// with q's immediates, or TFLite's two steps (the first back into `acc`).
/// The layer groups' matmul tiles (both layouts) end with it.
void matmulRequant(CmdEmitter &em, const MatMulParams::Quant &q,
                   const LTensor &acc, const LTensor &out);

/// Softmax of a tile's rows (along W when `alongW`, else along H): the
/// softmax kernel's commands, shared with the layer groups. `in` may be a
/// free-stride view; `out` is EU-aligned. Scratch: four fp32 tiles of the
/// input's shape, the row max and row sum (fp32, one element per row), the
/// Exp (and for `log` the Log) tables and four row-sized log temps.
struct SoftmaxScratch {
  uint64_t tables = 0;
  std::array<uint64_t, 4> temps{};
  uint64_t max = 0, sum = 0;
  std::array<uint64_t, 4> logTemps{};
};
void softmaxTile(CmdEmitter &em, const LTensor &in, const LTensor &out,
                 bool alongW, bool log, const SoftmaxScratch &s);

/// Layer normalisation of a tile's rows along W (the layerNorm kernel's
/// commands, shared with the layer groups): x the fp32 copy of the input
/// (unused when the input is an EU-aligned fp32 tile), d and q fp32 tiles
/// of the input's shape, mean and var one fp32 element per row; scale and
/// bias (1, lanes, 1, W) fp32, every lane the same row.
struct LayerNormScratch {
  uint64_t x = 0, d = 0, q = 0, mean = 0, var = 0;
  std::optional<uint64_t> scale, bias;
};
void layerNormTile(CmdEmitter &em, const LTensor &in, const LTensor &out,
                   float epsilon, const LayerNormScratch &s);

//===----------------------------------------------------------------------===//
// Element-wise function sequences
//===----------------------------------------------------------------------===//

/// Number of fp32 scratch tiles emitUnary needs for `kind` (each as large
/// as the largest tile), and the bytes of constant tables it needs.
unsigned unaryTemps(UnaryKind kind);
uint64_t unaryTableBytes();

/// Scratch for emitUnary: local offsets of `unaryTemps` fp32 tiles, and of
/// an area of unaryTableBytes() for coefficient tables (filled once per
/// kernel by prepareUnaryTables).
struct UnaryScratch {
  std::vector<uint64_t> temps;
  uint64_t tables = 0;
};

/// Scratch tiles (UnaryScratch::temps, each of the output tile's shape in
/// fp32) one tile of compare needs: two for operands of different
/// precisions (compared in fp32), one for Le / Ge (the equality).
unsigned compareTemps(CompareKind kind, bool mixed);

/// The commands of one tile of compare: out = (a kind b) ? 1 : 0 (out's
/// isSigned as the result's). Shared by the per-op kernel and the layer
/// groups.
void compareTile(CmdEmitter &em, CompareKind kind, const LTensor &out,
                 const LTensor &a, const LTensor &b, const UnaryScratch &s);

/// The commands of one tile of compareConst (the constant of `in`'s
/// precision; Le / Ge use temps[0]). Shared as compareTile.
void compareConstTile(CmdEmitter &em, const CompareConstParams &p,
                      const LTensor &out, const LTensor &in,
                      const UnaryScratch &s);

/// out = x > 0 ? x : slope * x with the product in temp 0 (of out's
/// shape and precision): the tile of prelu. `x` may be `out`.
void emitPReluTile(CmdEmitter &em, const LTensor &x, const Opd &slope,
                   const LTensor &out, const UnaryScratch &s);

/// The commands of one tile of where: out = cond != 0 ? x : y.
void whereTile(CmdEmitter &em, const LTensor &out, const LTensor &cond,
               const LTensor &x, const LTensor &y);

/// Writes the coefficient tables `kind` needs into local memory (once per
/// kernel, before the first emitUnary).
void prepareUnaryTables(CmdEmitter &em, UnaryKind kind, const UnaryScratch &s);

/// out = fn(in), element-wise over in.shape (both EU-aligned tiles of one
/// shape). `in` and `out` may be the same tile and may differ in
/// precision; transcendentals run in fp32 in the temps.
void emitUnary(CmdEmitter &em, const Activation &fn, const LTensor &in,
               const LTensor &out, const UnaryScratch &s);

/// out = a ^ b element-wise (fp32 inside: exp(b log a)); needs
/// unaryTemps(UnaryKind::Pow) + 1 temps and the Pow tables.
void emitPowTensor(CmdEmitter &em, const LTensor &a, const LTensor &b,
                   const LTensor &out, const UnaryScratch &s);

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

/// One element-wise job: inputs and output views of one 4-D shape (input
/// strides may be 0 to broadcast).
struct EltJob {
  Shape4 shape;
  std::vector<DView> inputs;
  DView output;
};

/// Jobs for an element-wise op whose output has `outDims` and whose inputs
/// have `inDims` (numpy broadcasting), all dense in global memory: 4-D
/// views of them (unit dims dropped, neighbours merged, a dense run
/// flattened onto the lanes as (1, 64, 1, q) plus a remainder, dims beyond
/// four looped over), broadcasting as zero strides.
std::vector<EltJob> broadcastJobs(const isa::ChipParams &chip,
                                  const std::vector<GTensor> &inputs,
                                  const GTensor &output);

/// Emits steps so that GDMA prefetches step i + 1 while the TIU computes
/// step i: load(0); then for each i: load(i + 1), compute(i), store(i).
/// Buffers alternate with i % 2; the emitter derives the waits from the
/// order of emission, so load(i + 1) must not write anything compute(i)
/// reads (single-buffered data is loaded from compute(i) instead).
void pipeline(size_t steps, const std::function<void(size_t)> &load,
              const std::function<void(size_t)> &compute,
              const std::function<void(size_t)> &store);

/// The largest v in [lo, hi] with ok(v), for ok monotone (true up to some
/// point, false after it); `lo` is taken to hold without asking ok.
int64_t largestFitting(int64_t lo, int64_t hi,
                       const std::function<bool(int64_t)> &ok);

/// The input rows [first, first + count) output rows [o0, o0 + count) of
/// a resize read (both taps of a linear one).
std::pair<int64_t, int64_t> resizeRows(const ResizeParams &p, int64_t o0,
                                       int64_t count);
/// One tile of a resize that is not nearest by whole factors, as the
/// resize kernel computes it: input rows [inRow0, inRow0 + in.shape.h) of
/// every column (`in`, any layout) to output rows [outRow0, outRow0 +
/// out.shape.h) (`out`, EU-aligned): a float input cast to fp32
/// (scratch[0]), a pass over the output columns (scratch[1]: one AR copy
/// per nearest column, a Mul and a Mac per linear one), a pass over the
/// output rows (scratch[2]) and a cast to the output precision; an integer
/// (nearest) resize copies its codes with no fp32 staging (scratch[1]
/// only). Scratch tiles are EU-aligned of (n, c, rows, max(iw, ow)) fp32.
void resizeTile(CmdEmitter &em, const ResizeParams &p, const LTensor &in,
                int64_t inRow0, const LTensor &out, int64_t outRow0,
                const std::array<uint64_t, 3> &scratch);

/// The tile commands of a nearest resize by whole factors (fh, fw)
/// (nearestWholeFactors): `out` holds output rows from `outRow0`, `in` the
/// input rows from `inRow0` they read (rows outRow0 / fh on), both of one
/// precision; one AR copy per (row phase, column phase) writes every fh-th
/// row and fw-th column of `out` from `in`.
void nearestRepeat(CmdEmitter &em, const LTensor &in, int64_t inRow0,
                   const LTensor &out, int64_t outRow0, int64_t fh, int64_t fw);

/// Whether nearestRepeat's output strides (fh rows of `ow`, fw columns) fit
/// the commands' 16-bit stride fields.
inline bool nearestRepeatFits(int64_t fh, int64_t fw, int64_t ow) {
  constexpr int64_t kMaxStride = 65535;
  return fh * ow <= kMaxStride && fw <= kMaxStride;
}

/// Splits [0, total) into chunks of at most `chunk`.
struct Range1 {
  int64_t begin, size;
};
std::vector<Range1> splitRange(int64_t total, int64_t chunk);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t alignUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
/// The largest divisor of `n` (> 0) that is at most `cap` (>= 1): how many
/// lanes a dense run of n elements fills evenly.
inline int64_t largestDivisorUpTo(int64_t n, int64_t cap) {
  int64_t c = std::min(n, cap);
  while (n % c)
    --c;
  return c;
}

/// Bytes of one element.
inline unsigned elemBytes(Prec p) { return isa::precBytes(p); }

/// Checks the tensor is float F32 / F16 / BF16.
void requireFloat(const OpCtx &ctx, const GTensor &t, const char *what);
/// Checks a dims product.
void requireElements(const OpCtx &ctx, const GTensor &t, int64_t count,
                     const char *what);

} // namespace tpu::backend::detail

#endif // TPUC_BACKEND_LIB_COMMON_H
