//===- Backend.h - BM1684X command generation for single operations -*- C++
//-*-===//
//
// The open equivalent of the closed "global" kernels of Sophgo's backend: each
// function below takes one operation on tensors in global memory (DDR),
// slices it through local memory and appends the TIU and GDMA commands that
// compute it to a CmdEmitter, with the cmd_id / cmd_id_dep synchronisation
// between the two engines (isa/docs/bm1684x.md 6). Every compute op runs as
// one or more groups of one of its local form (runAlone, LayerGroup.h), the
// scheduler of the layer groups; only data movement (permute, concat,
// slice, pad, gather, broadcastTo) has code of its own, GDMA copies.
//
// Division of labour with the MLIR side: the caller decides element types,
// global addresses and the weight blobs (built with the layout helpers at
// the end of this file); the backend decides slicing, local-memory use, the
// commands and their ids. Every tensor is static, dense and row-major in DDR.
//
// Precision is a parameter of every kernel (F32, F16, BF16 today; the types
// are the hardware's precision codes so INT8 paths fit the same API).
// A kernel that cannot run an operation (a shape whose smallest slice does not
// fit local memory, a field that does not fit its command) throws tpu::Error
// whose message starts with the kernel and the operation's name, e.g.
// "conv2d 'layer1.conv': does not fit in local memory: ...".
//
// What every kernel supports (F32, F16, BF16 activations throughout):
//  conv2d           groups, depthwise (sPorD), dilation, strides and pads up
//                   to 15, fp32 bias, fused activation (Relu inside the
//                   command, the others as commands on the output tile)
//  convTranspose2d  strides up to 16, pads, output padding, groups
//  matmul           batched with broadcasting, right operand [K, N] or
//                   [N, K], fp32 bias, any K (a weight's K cut into
//                   reduced-axis slices accumulating in fp32, INT8 int32),
//                   any N (column chunks past 16 bits)
//  pool2d           max / avg (count_include_pad either way), global
//  pool3d           max / avg over (D, H, W): 2-D pooling of every depth
//                   tap, combined across depth
//  unary            every UnaryKind (transcendentals in fp32, see
//                   describeUnaryMethod), binary / binaryConst (add, sub,
//                   mul, div, max, min, pow) with numpy broadcasting, prelu,
//                   where, compare / compareConst (eq, ne, lt, le, gt, ge),
//                   cast (float and integer types, any round mode)
//  softmax / log-softmax (any axis), layerNorm (trailing axes), reduce
//  (sum, mean, max, min, sum of squares, L2; the reduced axes adjacent)
//  permute, concat, slice (negative steps), pad (constant, reflect, edge),
//  broadcastTo
//  (expand and tile), copy, gather (int32 or float-encoded indices,
//  negative allowed), resize (nearest / linear, ONNX coordinate modes)
//
// Numerics: conv / matmul accumulate in fp32 inside the cube and round once
// to the output precision; element-wise AR operations compute in fp32 and
// round once (correctly rounded for F16 / BF16 operands); the depthwise
// bias is applied in the activation precision (sPorD's bias operand has the
// input's type), the convolution bias in fp32.
//
// Slicing and overlap: each kernel cuts its work into tiles that fit local
// memory (batch, channel slots of 64 lanes, rows; columns only for
// element-wise work), keeps weights resident across the tiles that share
// them, and double-buffers inputs and outputs so GDMA moves tile i + 1 while
// the TIU computes tile i (at least four tiles once a tile exceeds 16 KiB per
// lane). The CmdEmitter derives every cmd_id_dep from the local memory each
// command reads and writes.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_BACKEND_BACKEND_H
#define TPUC_BACKEND_BACKEND_H

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Types.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpu::backend {

//===----------------------------------------------------------------------===//
// Tensors and the command emitter
//===----------------------------------------------------------------------===//

/// A tensor in global memory: `addr` is its 40-bit unified address (DDR
/// starts at ChipParams::gmemBase), elements dense and row-major, `shape`
/// outermost first (NCHW for feature maps). A rank-0 tensor is a scalar.
struct GTensor {
  uint64_t addr = 0;
  isa::Prec prec = isa::Prec::Fp32;
  bool isSigned = true;
  std::vector<int64_t> shape;

  int64_t numElements() const;
  uint64_t bytes() const;
};

/// A byte range of every lane of local memory: [offset, offset + bytes).
/// Kernels describe the local memory each command reads and writes with
/// these so the emitter can derive the dependencies.
struct LocalRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct GroupOptions;

/// How an op that ran in reduced-axis slices (GroupPlan::kSlices) cut its
/// reduced index (a reduction's extent, the flattened reduced dims in
/// order; a matmul's K): share i is [bounds[i], bounds[i + 1]), summed in
/// fp32 from +0 and added to the shares before it (max: maxed), which
/// rounds otherwise than one pass over the whole index. `colBegin` /
/// `colEnd`: the output columns it holds for (a matmul's column chunk;
/// 0, 0: all of them). The tpu interpreter reproduces the partial sums
/// from this (the op's k_shares attribute).
struct ReducedShares {
  std::string op;
  int64_t colBegin = 0, colEnd = 0;
  std::vector<int64_t> bounds;
};

/// One command group under construction: a TIU and a GDMA stream with id
/// bookkeeping. Ids start at 1 in each stream; cmd_id_dep = 0 means "no
/// wait". Commands may be added with an explicit dependency (tiu / gdma) or
/// with the local memory they touch (tiuAccess / gdmaAccess), in which case
/// the emitter makes the command wait for the last command of the other
/// engine that conflicts with it (read-after-write, write-after-read,
/// write-after-write on overlapping local bytes). The history of local
/// memory use persists across kernels, so consecutive operations overlap
/// wherever their local buffers do not conflict. Global memory needs no
/// tracking: only GDMA touches it, in stream order.
class CmdEmitter {
public:
  explicit CmdEmitter(const isa::ChipParams &chip = isa::ChipParams::bm1684x());
  ~CmdEmitter();
  CmdEmitter(CmdEmitter &&) noexcept;
  CmdEmitter &operator=(CmdEmitter &&) noexcept;

  const isa::ChipParams &chip() const { return chip_; }

  /// Appends a TIU command: sets cmd_id = ++lastTiu and cmd_id_dep =
  /// `waitGdmaId` (which must be <= lastGdma()). Returns the id.
  uint32_t tiu(isa::RawCommand c, uint32_t waitGdmaId);
  /// Appends a GDMA command; `waitTiuId` must be <= lastTiu().
  uint32_t gdma(isa::RawCommand c, uint32_t waitTiuId);

  /// Appends a command whose dependency follows from the local memory it
  /// reads and writes (see the class comment).
  uint32_t tiuAccess(isa::RawCommand c, const std::vector<LocalRange> &reads,
                     const std::vector<LocalRange> &writes);
  uint32_t gdmaAccess(isa::RawCommand c, const std::vector<LocalRange> &reads,
                      const std::vector<LocalRange> &writes);

  uint32_t lastTiu() const { return uint32_t(tiuCmds_.size()); }
  uint32_t lastGdma() const { return uint32_t(gdmaCmds_.size()); }
  size_t numTiu() const { return tiuCmds_.size(); }
  size_t numGdma() const { return gdmaCmds_.size(); }
  /// The commands so far (without end commands).
  const std::vector<isa::RawCommand> &tiuCommands() const { return tiuCmds_; }
  const std::vector<isa::RawCommand> &gdmaCommands() const { return gdmaCmds_; }

  /// True when the next operation should go into a new group because the
  /// 20-bit ids are close to running out (callers that emit very large
  /// nets start a fresh emitter then).
  bool nearIdLimit() const;

  /// Appends the end commands (TIU SYSID sys.end waiting for the last GDMA
  /// command, GDMA sDMA_sys end waiting for the last TIU command) and packs
  /// both streams. The emitter is empty afterwards.
  isa::bmodel::CmdGroup finish();
  /// The streams finish() would pack, end commands included, leaving the
  /// emitter as it is (for cost estimates of what was emitted so far).
  std::pair<std::vector<isa::RawCommand>, std::vector<isa::RawCommand>>
  streamsWithEnd() const;

  /// Global-memory scratch for intermediate results. No kernel needs it
  /// today (reserved for multi-pass kernels); not owned by the emitter.
  void setScratch(uint64_t addr, uint64_t bytes) {
    scratchAddr_ = addr;
    scratchBytes_ = bytes;
  }
  uint64_t scratchAddr() const { return scratchAddr_; }
  uint64_t scratchBytes() const { return scratchBytes_; }

  /// Commands emitted from now on belong to op `tag` (-1: to none), for the
  /// per-op profile (tpu/isa/OpMap.h).
  void setOpTag(int32_t tag) { tag_ = tag; }
  /// The op tag of every command of the group the last finish() packed,
  /// per engine, in stream order (the end commands: -1).
  const std::vector<int32_t> &lastTiuTags() const { return lastTiuTags_; }
  const std::vector<int32_t> &lastGdmaTags() const { return lastGdmaTags_; }

  /// The slicing options of an op that runs alone as a group of one
  /// (runAlone, LayerGroup.h): those the module's layer groups were formed
  /// with, so `--no-width-slices` and the like hold for it too (null: the
  /// defaults, GroupOptions{}).
  void setAloneOptions(std::shared_ptr<const GroupOptions> options) {
    aloneOptions_ = std::move(options);
  }
  const GroupOptions *aloneOptions() const { return aloneOptions_.get(); }

  /// The reduced-axis shares of the groups emitted so far (emitGroup notes
  /// one per group in reduced-axis slices); take() empties the list.
  void noteReducedShares(ReducedShares s) {
    reducedShares_.push_back(std::move(s));
  }
  std::vector<ReducedShares> &reducedShares() { return reducedShares_; }
  std::vector<ReducedShares> takeReducedShares() {
    return std::exchange(reducedShares_, {});
  }

  /// Internal: the local-memory hazard history (see the class comment).
  class Tracker;

private:
  isa::ChipParams chip_;
  std::vector<isa::RawCommand> tiuCmds_, gdmaCmds_;
  std::vector<int32_t> tiuTags_, gdmaTags_, lastTiuTags_, lastGdmaTags_;
  int32_t tag_ = -1;
  std::unique_ptr<Tracker> tracker_;
  uint64_t scratchAddr_ = 0, scratchBytes_ = 0;
  std::shared_ptr<const GroupOptions> aloneOptions_;
  std::vector<ReducedShares> reducedShares_;
};

//===----------------------------------------------------------------------===//
// Fused activations
//===----------------------------------------------------------------------===//

/// Element-wise functions (unary kernels and the activation fused into
/// conv2d, matmul, binary).
enum class UnaryKind {
  None,        ///< Identity (a copy).
  Relu,        ///< max(x, 0)
  LeakyRelu,   ///< x >= 0 ? x : alpha * x
  Clip,        ///< min(max(x, alpha), beta)
  HardSigmoid, ///< clip(alpha * x + beta, 0, 1)
  HardSwish,   ///< x * clip(x / 6 + 1/2, 0, 1)
  Sigmoid,     ///< 1 / (1 + exp(-x))
  Tanh,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Erf,
  Gelu, ///< x * (1 + erf(x / sqrt 2)) / 2
  Silu, ///< x * sigmoid(x)
  Abs,
  Neg,
  Reciprocal, ///< 1 / x
  Softplus,   ///< log(1 + exp(x))
  Mish,       ///< x * tanh(softplus(x))
  Square,     ///< x * x
  Floor,
  Ceil,
  Round, ///< nearest, ties to even (ONNX Round)
  Sign,
  Scale, ///< alpha * x + beta (also mul/add by a constant)
  Pow,   ///< x ^ alpha (alpha constant; x > 0 unless alpha is an integer)
};

struct Activation {
  UnaryKind kind = UnaryKind::None;
  float alpha = 0.0f;
  float beta = 0.0f;
};

/// How each transcendental is computed and its accuracy, for reports.
std::string describeUnaryMethod(UnaryKind kind);

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// 2-D convolution (1-D: rank-3 tensors, H = 1). Input [N, IC, IH, IW],
/// output [N, OC, OH, OW], float precisions. `filterAddr` holds the filter
/// as built by reorderConvFilter (depthwise filters included); `biasAddr`
/// (optional) fp32 [OC]. Pads, strides and dilations up to 15; groups divide
/// IC and OC; all IC / groups input channels of a group must fit one tile.
/// INT8 form of a convolution (isa/docs/bm1684x.md 8.5 and the decision in
/// compiler/docs/design.md "INT8"): int8 / uint8 input, int8 filter, the
/// CONV (or depthwise sPorD) accumulating into int32, then an AR add of
/// the int32 bias and an RQ1 per output channel to the int8 / uint8
/// output. `coeffAddr` holds OC records of four int32 words [bias,
/// multiplier, -rshift, output zero point]; the input zero point pads.
/// One RQ1 step with immediates: rightShiftRound(x * multiplier, rshift,
/// round).
struct RequantStep {
  int32_t multiplier = 1;
  int rshift = 0;
  isa::RoundMode round = isa::RoundMode::HalfUp;
};

struct ConvQuant {
  uint64_t coeffAddr = 0;
  /// TFLite's arithmetic: records of eight words [bias, m1, -r1, 0, m2,
  /// -r2, zp, 0], two RQ1 per channel, the first (`round`) back into the
  /// int32 accumulator, the second (`round2`) into the output.
  bool twoSteps = false;
  isa::RoundMode round2 = isa::RoundMode::HalfAwayFromZero;
  int32_t inputZeroPoint = 0;
  isa::RoundMode round = isa::RoundMode::HalfUp;
  /// A relu on a signed int8 output: an AR max(y, 0) after the RQ1 (an
  /// unsigned output needs none: the RQ1 saturates at 0).
  bool reluSigned = false;
  /// A relu's upper limit inside the code range (RELU6): an AR min(y,
  /// reluHigh) after that.
  std::optional<int32_t> reluHigh;
};

struct ConvParams {
  std::string name;
  GTensor input, output;
  uint64_t filterAddr = 0;
  std::optional<uint64_t> biasAddr;
  /// Set for an integer convolution (then biasAddr is unused and `act`
  /// must be None: a relu is the saturation to an unsigned output).
  std::optional<ConvQuant> quant;
  int64_t kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
  int64_t groups = 1;
  Activation act; ///< Applied to the result (Relu is fused into the conv).
  /// The form of a transposed convolution (transposedAsConv): `ins` zeros
  /// inserted between input rows / columns and the kernel rotated by 180
  /// degrees. Its pads may be negative (they crop the input) and it always
  /// runs the general path (its filter is never in the depthwise layout).
  int64_t insH = 0, insW = 0;
  bool rotate = false;
};
void conv2d(CmdEmitter &em, const ConvParams &p);

/// Transposed 2-D convolution: input [N, IC, IH, IW], filter as ONNX
/// ConvTranspose [IC, OC/groups, KH, KW] reordered by
/// reorderConvTransposeFilter; output [N, OC, OH, OW] with
/// OH = (IH - 1) * strideH - padTop - padBottom + dilationH * (KH - 1) + 1
/// + outputPadH. Computed as a convolution of the zero-inserted input with
/// the rotated filter.
struct ConvTransposeParams {
  std::string name;
  GTensor input, output;
  uint64_t filterAddr = 0;
  std::optional<uint64_t> biasAddr;
  int64_t kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
  int64_t outputPadH = 0, outputPadW = 0;
  int64_t groups = 1;
  Activation act;
  /// Set for an integer deconvolution, as ConvParams::quant (the input's
  /// zero point must be 0: the inserted zeros are code 0).
  std::optional<ConvQuant> quant;
};
void convTranspose2d(CmdEmitter &em, const ConvTransposeParams &p);

/// The convolution a transposed one is, as convTranspose2d runs it and a
/// layer group holds it: stride 1 over the input with stride - 1 zeros
/// inserted, the kernel rotated, pads dilation * (k - 1) - pad (the output
/// padding added at the bottom and right), the same filter, bias, INT8
/// records and fused activation.
ConvParams transposedAsConv(const ConvTransposeParams &p);

/// Whether `p` is a transposed convolution's form (transposedAsConv): zeros
/// inserted or the kernel rotated.
inline bool isTransposedForm(const ConvParams &p) {
  return p.rotate || p.insH || p.insW;
}

/// Batched matrix multiply: left [..., M, K] x right [..., K, N] (or
/// [..., N, K] when `rightTransposed`) -> output [..., M, N], batch dims
/// broadcast numpy-style (a rank-2 right operand is shared by all batches:
/// a fully connected layer). `biasAddr` (optional) fp32 [N].
struct MatMulParams {
  std::string name;
  GTensor left, right, output;
  bool rightTransposed = false;
  /// Elements from one stored row of a right weight (2-D, not transposed)
  /// to the next, when its N columns are a share of a wider matrix's (the
  /// groups of one of a matmul cut into column chunks); 0: N.
  int64_t rightRowStride = 0;
  std::optional<uint64_t> biasAddr;
  Activation act;
  /// INT8 (int8 / uint8 left, int8 right, int8 / uint8 output): MM into an
  /// int32 accumulator (shift 0; K chunks accumulate), an AR add of the
  /// int32 bias [N] (`biasAddr` here, none: no bias), then one RQ1 with
  /// these immediates. `act` must be None (a relu is the saturation to an
  /// unsigned output).
  struct Quant {
    std::optional<uint64_t> biasAddr;
    int32_t multiplier = 1;
    int rshift = 0;
    int32_t zeroPoint = 0;
    isa::RoundMode round = isa::RoundMode::HalfUp;
    /// TFLite's arithmetic: a second RQ1 step. The first (the fields
    /// above, zero point 0) writes int32 back into the accumulator; this
    /// one takes it to the output and adds `zeroPoint`.
    std::optional<RequantStep> second;
  };
  std::optional<Quant> quant;
};
void matmul(CmdEmitter &em, const MatMulParams &p);

enum class PoolKind { Max, Avg };

/// 2-D pooling on [N, C, H, W]; a global pool is kernel = (H, W).
struct PoolParams {
  std::string name;
  GTensor input, output;
  PoolKind kind = PoolKind::Max;
  int64_t kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
  /// Average pooling: divide by the full window (true) or by the number of
  /// real input elements under it (false, ONNX's default).
  bool countIncludePad = false;
  Activation act;
  /// INT8 average pooling: the int32 window sum (pads add 0, so zero
  /// points must be 0 and the window counted whole) requantised by one
  /// RQ1 with these immediates to the int8 / uint8 output. INT8 max
  /// pooling needs none (input and output share one type and scale).
  struct Requant {
    int32_t multiplier = 1;
    int rshift = 0;
    isa::RoundMode round = isa::RoundMode::HalfUp;
    /// Asymmetric: the pads read the input zero point, an AR adds
    /// -k * inZeroPoint to the sum, the RQ1 adds outZeroPoint.
    int32_t inZeroPoint = 0, outZeroPoint = 0;
  };
  std::optional<Requant> quant;
  /// The output depths of a 3-D pooling (pool3d runs each batch and each
  /// run of output depths with the same real depth taps as a group of one
  /// of this op): the op reads one input per real depth tap, all of the
  /// output's shape (n: the output depths; input t holds, at n = o, the
  /// depth slice that tap t of output depth o reads). Each input is pooled
  /// over (H, W) by sPorD into fp32 window sums or maxima, combined into
  /// one fp32 tile by AR add / max in tap order, and an average divides
  /// that sum by the window's element count: kernel x kernelH x kernelW,
  /// or, excluding the pads, `taps` times the real (H, W) inputs under
  /// the window. Float only.
  struct Depth {
    /// The depth window (kernelD) and the real taps (the op's inputs).
    int64_t kernel = 1, taps = 1;
    /// The depth axis has pads (front or back).
    bool padded = false;
  };
  std::optional<Depth> depth;
};
void pool2d(CmdEmitter &em, const PoolParams &p);

/// 3-D pooling on [N, C, D, H, W] -> [N, C, OD, OH, OW] (ONNX MaxPool /
/// AveragePool with three spatial dims; ceil mode folded into the end pads
/// as the frontend does). Runs as groups of one of a pooling with depth
/// taps (PoolParams::depth), one per batch and run of output depths whose
/// real depth taps are the same: every tap's depth slices are pooled over
/// (H, W) by sPorD into fp32 and combined by AR max / add in tap order;
/// averages divide the fp32 sum by the window's element count once.
/// H / W pads and strides up to 15 (sPorD fields); depth kernel, stride,
/// dilation and pads are free. Windows must not overhang the pads (the
/// ONNX output-size formula guarantees it).
struct Pool3dParams {
  std::string name;
  GTensor input, output;
  PoolKind kind = PoolKind::Max;
  int64_t kernelD = 1, kernelH = 1, kernelW = 1;
  int64_t strideD = 1, strideH = 1, strideW = 1;
  int64_t dilationD = 1, dilationH = 1, dilationW = 1;
  int64_t padFront = 0, padBack = 0, padTop = 0, padBottom = 0, padLeft = 0,
          padRight = 0;
  /// As PoolParams::countIncludePad.
  bool countIncludePad = false;
  Activation act;
};
void pool3d(CmdEmitter &em, const Pool3dParams &p);

/// Element-wise unary function; input and output of the same shape (their
/// precisions may differ: the function is computed, then converted).
struct UnaryParams {
  std::string name;
  GTensor input, output;
  Activation fn;
};
void unary(CmdEmitter &em, const UnaryParams &p);

enum class BinaryKind { Add, Sub, Mul, Div, Max, Min, Pow };

/// Element-wise binary operation with numpy broadcasting: the output shape
/// is the broadcast of both input shapes. `act` is applied to the result.
struct BinaryParams {
  std::string name;
  GTensor lhs, rhs, output;
  BinaryKind kind = BinaryKind::Add;
  Activation act;
};
void binary(CmdEmitter &em, const BinaryParams &p);

/// Per-channel scale and shift (an unfolded BatchNorm): output = input *
/// scale + bias with `scale` and `bias` of shape (1, C, 1, ...) (numpy
/// broadcasting to the input's shape, C its axis 1), all of one float
/// precision. Two AR commands per tile, each rounding to that precision
/// (the product, then the sum); `act` is applied to the result.
struct ScaleParams {
  std::string name;
  GTensor input, scale, bias, output;
  Activation act;
};
void scale(CmdEmitter &em, const ScaleParams &p);

/// Binary operation with a constant: output = input (op) value, or
/// value (op) input when `constOnLeft`.
struct BinaryConstParams {
  std::string name;
  GTensor input, output;
  BinaryKind kind = BinaryKind::Add;
  float value = 0.0f;
  bool constOnLeft = false;
  Activation act;
};
void binaryConst(CmdEmitter &em, const BinaryConstParams &p);

/// Element-wise comparisons (ONNX Equal, Less, LessOrEqual, Greater,
/// GreaterOrEqual; Ne = Not(Equal)). NaN compares false except for Ne.
enum class CompareKind { Eq, Ne, Lt, Le, Gt, Ge };

/// output = (lhs kind rhs) ? 1 : 0 with numpy broadcasting (a scalar rhs is
/// a rank-0 or [1] tensor). lhs and rhs are F32 / F16 / BF16 (compared in
/// fp32 when their precisions differ, exactly otherwise); the output may
/// have any precision (float or integer 0 / 1).
struct CompareParams {
  std::string name;
  GTensor lhs, rhs, output;
  CompareKind kind = CompareKind::Eq;
};
void compare(CmdEmitter &em, const CompareParams &p);

/// Comparison with a constant: output = (input kind value) ? 1 : 0, or
/// (value kind input) when `constOnLeft`. `value` is rounded to the input's
/// precision first (as a constant tensor of that type would be).
struct CompareConstParams {
  std::string name;
  GTensor input, output;
  CompareKind kind = CompareKind::Eq;
  float value = 0.0f;
  bool constOnLeft = false;
};
void compareConst(CmdEmitter &em, const CompareConstParams &p);

/// Parametric ReLU: x >= 0 ? x : slope * x, slope broadcast to x
/// (numpy rules; typically [C, 1, 1] or [1, C, 1, 1]).
struct PReluParams {
  std::string name;
  GTensor input, slope, output;
};
void prelu(CmdEmitter &em, const PReluParams &p);

/// An integer element type (Int8, Int16 or Int32, signed or not).
struct IntType {
  isa::Prec prec = isa::Prec::Int32;
  bool isSigned = true;
};

/// Element type conversion by the AR data-convert command, same element
/// count: any of F32, F16, BF16, Int8, Int16, Int32 (GTensor::isSigned
/// selects uint8 / uint16 / uint32) to any other. Float to integer rounds
/// per `round` and saturates to the integer range (NaN gives 0); float to
/// float rounds per `round`; integer to float converts through fp32 (exact
/// for int8 / int16), then rounds per `round`; integer to integer
/// saturates.
///
/// With `viaInt` (float input and output only) the value is first
/// converted to that integer type (round + saturate) and then back to the
/// output's float type (nearest even): the float-mode form of ONNX Cast to
/// an integer type (top.Cast keeps floats; pass RoundMode::TowardsZero).
struct CastParams {
  std::string name;
  GTensor input, output;
  isa::RoundMode round = isa::RoundMode::HalfToEven;
  std::optional<IntType> viaInt = std::nullopt;
  /// Quantisation between a float and an int8 / uint8 side of scale
  /// `scale` and zero point `zeroPoint` (the integer side's): float ->
  /// integer is rq0 with the fp32 immediate fl32(1 / scale), q =
  /// sat(round(fl32(fl32(x * fl32(1 / scale)) + zp))) with `round`;
  /// integer -> float is dq0, x = fl32(float(q - zp) * scale), rounded to
  /// the output type (nearest even).
  struct Quant {
    double scale = 1.0;
    int32_t zeroPoint = 0;
  };
  std::optional<Quant> quant = std::nullopt;
};
void cast(CmdEmitter &em, const CastParams &p);

/// INT8 add / sub of two int8 / uint8 tensors (numpy broadcasting), both
/// rescaled to the output (isa/docs/bm1684x.md 8.5 Add, our command
/// sequence in compiler/docs/design.md "INT8"): per tile
///   t_a = rightShiftRound(a * m_a, r_a)            (AR mul, int32)
///   t_b = rightShiftRound(b * m_b, r_b)            (AR mul, int32)
///   y   = sat(rightShiftRound(t_a +/- t_b, shift)) (AR add/sub saturating;
///         for an unsigned output an int32 add, then a saturating cast)
/// with every rounding `round`. Zero points are 0 (symmetric).
/// Mul (kind Mul): t = (a - zp_a) (b - zp_b) in int32 (AR sub, AR mul), y
/// = RQ1(t; multiplier[0], rshift[0], outZeroPoint).
struct BinaryInt8Params {
  std::string name;
  GTensor lhs, rhs, output;
  BinaryKind kind = BinaryKind::Add;
  int32_t multiplier[2] = {1, 1};
  int rshift[2] = {0, 0};
  /// Asymmetric (any of them non-zero): t_x = rightShiftRound((x - zp_x) *
  /// m_x, r_x) (an AR sub, then the mul-shift, in int32), y = sat(
  /// rightShiftRound(t_a +/- t_b, shift) + outZeroPoint) (AR add-shift, AR
  /// add of the zero point, saturating cast).
  int32_t zeroPoint[2] = {0, 0};
  int32_t outZeroPoint = 0;
  int shift = 0;
  isa::RoundMode round = isa::RoundMode::HalfUp;
  /// Always None (a relu is the saturation to an unsigned output); kept so
  /// that every local op's parameters have one.
  Activation act;
  /// TFLite's ADD / SUB instead (multiplier, rshift and shift unused): per
  /// input t_k = x_k - zp_k (AR, int32), then its two RQ1 steps
  /// (steps[k]) in int32; t_a +/- t_b (AR); then steps[2] into the output,
  /// outZeroPoint added by the second. Nine commands per tile.
  struct Tflite {
    RequantStep steps[3][2];
  };
  std::optional<Tflite> tflite;
};
void binaryInt8(CmdEmitter &em, const BinaryInt8Params &p);

/// INT8 element-wise function through a 256-entry lookup table at
/// `tableAddr` (int8 codes of the output type, entry b for input byte b):
/// the table is loaded into every lane once, then one sSG
/// pe_s_gather_d1coor per tile reads output[i] = table[byte(input[i])].
struct LutParams {
  std::string name;
  GTensor input, output;
  uint64_t tableAddr = 0;
  /// Always None (kept so that every local op's parameters have one).
  Activation act;
};
void lut(CmdEmitter &em, const LutParams &p);

/// Softmax (or log-softmax) along `axis`.
struct SoftmaxParams {
  std::string name;
  GTensor input, output;
  int64_t axis = -1;
  bool log = false;
};
void softmax(CmdEmitter &em, const SoftmaxParams &p);

/// Layer normalisation over the dimensions from `axis` to the end:
/// y = (x - mean) / sqrt(var + eps) * scale + bias; `scaleAddr` and
/// `biasAddr` (optional) are fp32 with the normalised dims' element count.
struct LayerNormParams {
  std::string name;
  GTensor input, output;
  int64_t axis = -1;
  float epsilon = 1e-5f;
  std::optional<uint64_t> scaleAddr, biasAddr;
};
void layerNorm(CmdEmitter &em, const LayerNormParams &p);

enum class ReduceKind { Sum, Mean, Max, Min, Prod, SumSquare, L2 };

/// Reduction over `axes` (any subset; negative counts from the end). The
/// output holds the kept dims (its shape may or may not keep the reduced
/// dims as 1: only the element count matters).
struct ReduceParams {
  std::string name;
  GTensor input, output;
  ReduceKind kind = ReduceKind::Sum;
  std::vector<int64_t> axes;
};
void reduce(CmdEmitter &em, const ReduceParams &p);

/// Transpose: output dim i = input dim order[i].
struct PermuteParams {
  std::string name;
  GTensor input, output;
  std::vector<int64_t> order;
};
void permute(CmdEmitter &em, const PermuteParams &p);

/// Concatenation along `axis` (DMA only). An input already at its place in
/// the output (every output dim before the axis 1, its address the block's:
/// tpu-address-assign puts concat inputs there) is not copied.
struct ConcatParams {
  std::string name;
  std::vector<GTensor> inputs;
  GTensor output;
  int64_t axis = 0;
};
void concat(CmdEmitter &em, const ConcatParams &p);

/// Strided slice: output[i] = input[starts + i * steps] per dim (steps may
/// be negative; starts already normalised to valid indices). Split is one
/// slice per output.
struct SliceParams {
  std::string name;
  GTensor input, output;
  std::vector<int64_t> starts, steps;
};
void slice(CmdEmitter &em, const SliceParams &p);

/// How pad() fills the border (ONNX Pad modes).
enum class PadMode {
  Constant, ///< `value`
  Reflect,  ///< mirrored without repeating the edge (pads < dim)
  Edge,     ///< the edge element repeated
};

/// Padding: `pads` = [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]
/// (ONNX order, non-negative).
struct PadParams {
  std::string name;
  GTensor input, output;
  std::vector<int64_t> pads;
  float value = 0.0f;
  PadMode mode = PadMode::Constant;
};
void pad(CmdEmitter &em, const PadParams &p);

/// Broadcast copy (ONNX Expand and Tile): output[i] = input[i mod in_dim]
/// per dim, so `input` dims must divide the output dims (1 = broadcast).
struct BroadcastParams {
  std::string name;
  GTensor input, output;
};
void broadcastTo(CmdEmitter &em, const BroadcastParams &p);

/// Copy between tensors of equal element count (reshape, identity).
void copy(CmdEmitter &em, const std::string &name, const GTensor &input,
          const GTensor &output);

enum class ResizeMode { Nearest, Linear };
/// How output coordinates map to input coordinates (ONNX names).
enum class ResizeCoord {
  HalfPixel,
  AlignCorners,
  Asymmetric,
  PytorchHalfPixel
};
/// Nearest rounding (ONNX nearest_mode).
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

/// Resize of the two innermost dims of [N, C, H, W].
struct ResizeParams {
  std::string name;
  GTensor input, output;
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  /// Explicit scales (output / input); 0 = derived from the shapes.
  float scaleH = 0.0f, scaleW = 0.0f;
};
void resize(CmdEmitter &em, const ResizeParams &p);

/// The whole factors {fh, fw} of a nearest resize that repeats every input
/// element fh x fw times: output dims the input's times the factors, and
/// every output index o reading input index o / f under the resize's
/// coordinate and rounding modes. None for any other resize. resize() runs
/// such a one as fh * fw strided copies per tile, and a layer group holds
/// it as a local op.
std::optional<std::array<int64_t, 2>>
nearestWholeFactors(const ResizeParams &p);

/// Gather along `axis` (ONNX Gather); output shape = input[:axis] +
/// indices + input[axis+1:]. `indices` is Int32 or float-encoded (F32, F16,
/// BF16: the tpu dialect's activations; converted toward zero, saturating).
/// Indices in [-dim, 0) count from the end (ONNX); indices outside
/// [-dim, dim) select zeros (ONNX calls them an error; DMA_gather writes its
/// constant for them). The indices are read at run time (the output of an
/// earlier operation is fine).
struct GatherParams {
  std::string name;
  GTensor input, indices, output;
  int64_t axis = 0;
};
void gather(CmdEmitter &em, const GatherParams &p);

/// output = cond != 0 ? x : y with numpy broadcasting; cond may be of any
/// precision (non-zero = true).
struct WhereParams {
  std::string name;
  GTensor cond, x, y, output;
};
void where(CmdEmitter &em, const WhereParams &p);

//===----------------------------------------------------------------------===//
// Weight layouts (pure functions for building the coefficient blob)
//===----------------------------------------------------------------------===//

/// True when conv2d treats the convolution as depthwise (one input channel
/// per group, as many groups as output channels).
bool isDepthwise(int64_t inChannels, int64_t outChannels, int64_t groups);

/// Bytes of a reordered convolution filter.
uint64_t convFilterBytes(int64_t oc, int64_t icPerGroup, int64_t kh, int64_t kw,
                         isa::Prec prec, int64_t groups,
                         const isa::ChipParams &chip);

/// Reorders an ONNX filter `w` [oc, icPerGroup, kh, kw] (fp32 values) into
/// the layout conv2d loads, converted to `prec` (round to nearest even):
/// depthwise: [oc][kh][kw]; otherwise per output channel
/// [ceil(icPerGroup / P)][kh][kw][P] with P = IC_PARALLEL of `prec`
/// (isa/docs/bm1684x.md 3.4: 1 for F32, 32 for F16/BF16), missing input channels zero.
std::vector<uint8_t>
reorderConvFilter(const float *w, int64_t oc, int64_t icPerGroup, int64_t kh,
                  int64_t kw, isa::Prec prec, int64_t groups,
                  const isa::ChipParams &chip = isa::ChipParams::bm1684x());

/// The filter of a ConvTranspose [ic, ocPerGroup, kh, kw] as the equivalent
/// convolution's reordered filter (in/out channels swapped per group; the
/// kernel is flipped by the command itself).
std::vector<uint8_t> reorderConvTransposeFilter(
    const float *w, int64_t ic, int64_t ocPerGroup, int64_t kh, int64_t kw,
    isa::Prec prec, int64_t groups,
    const isa::ChipParams &chip = isa::ChipParams::bm1684x());

/// INT8 requantisation records (oc rows of `words` = 4 or 8 int32, the
/// little-endian bytes `rows`) stored part by part, as the kernels load
/// them (requantRecordParts): the oc biases (word 0), the oc triples
/// [multiplier, -rshift, zp] (words 1-3), for eight words then the oc
/// second-step triples (words 4-6) and the oc pads (word 7).
std::vector<uint8_t> splitRequantRecords(const std::vector<uint8_t> &rows,
                                         int64_t oc, int64_t words);

/// Where the parts of channel `c`'s record start in the split layout of
/// `oc` records at `addr` (splitRequantRecords).
struct RequantRecordParts {
  uint64_t bias = 0, step1 = 0, step2 = 0;
};
RequantRecordParts requantRecordParts(uint64_t addr, int64_t oc, int64_t c);

/// Converts fp32 values to the bytes of `prec` (F32, F16, BF16; round to
/// nearest even). Matmul operands and all other weights are stored this way
/// (plain row-major); biases, layer-norm scales and offsets stay fp32.
std::vector<uint8_t> encodeFloats(const float *v, size_t count, isa::Prec prec);

} // namespace tpu::backend

#endif // TPUC_BACKEND_BACKEND_H
