//===- LayerGroup.h - Groups of local operations through local memory -*- C++
//-*-===//
//
// A layer group is a run of operations whose intermediate values never
// leave local memory. Each operation of a group is a *local operation*: it
// computes one slice of its output from local-memory operands into a
// local-memory result with TIU commands only, and tells the scheduler what
// it needs (LocalOpInfo): the input rows an output row range reads (the
// halo and, at the image edges, the pads), whether it can be sliced along
// H at all, the weights it keeps resident, its scratch.
//
// The scheduler (planGroup / emitGroup) owns everything else:
//  - slicing: the batch first (N slices), then the rows of the group's last
//    output (H slices); the rows every other value needs in a slice follow
//    backwards through the ops (localInputRows), values read by several
//    ops take the union, values the group stores also cover their own
//    share of rows, so every stored row is written by some slice; when no
//    such slicing fits, the channels too (C slices of whole lane slots:
//    the ops compute channel by channel, but a convolution that mixes
//    channels, whose input is then loaded whole in every slice; each slice
//    loads its channels' weights);
//  - the timestep pipeline: load slice i + 1, compute slice i, store slice
//    i (CmdEmitter derives every cmd_id_dep from the local memory the
//    commands touch, so GDMA loads the next slice and stores the last one
//    while the TIU computes);
//  - local memory: resident weights and coefficient tables once; values
//    loaded from or stored to DDR double-buffered; values that live only
//    inside a slice share memory by lifetime (first fit over the op order);
//  - reduced-axis slices, for a group of one whose reduction (a reduce's
//    extent, a matmul's K) fits no other slicing, or a matmul by a weight
//    where the cost model finds them faster: the reduced axis cut in
//    shares whose partial results accumulate in a scratch tile of its own,
//    the last slice finishing and storing the result (accumulatedAxis);
//  - the weights are loaded once, before the first slice (or, for an
//    architect's comparison, again before every slice);
//  - the next group's first weights: a group may load the resident weights
//    of the next group's first op during its last slice
//    (GroupOptions::nextWeightsAt), right after the last op of that slice
//    that touches their region (memory it never uses, or memory its
//    earlier ops are done with); the next group then finds them there
//    (GroupOptions::firstWeightsAt) and its first op starts without
//    waiting for them.
// A group runs in the command group of its neighbours: its first slice's
// loads overlap the previous group's last computation wherever their local
// memory does not conflict.
//
// Precision is a property of the values (F32, F16, BF16, int8 / uint8).
// INT8 ops are local operations too, with the per-op kernels' command
// sequences (ConvParams::quant: CONV or sPorD to an int32 scratch tile, AR
// bias add, RQ1 per channel from resident records; PoolParams::quant: the
// window sum, then RQ1; BinaryInt8Params: two AR mul-shifts into int32
// scratch, then a saturating AR add-shift; LutParams: the sSG gather of a
// 256-entry table, resident, copied to every lane; MatMulParams::quant:
// mm2.nn to int32, the int32 bias, RQ1); GroupValue carries the signedness
// of integer values.
//
// Matrices (matmul, softmax and layer norm along the last axis, and the
// element-wise ops between them) are held a row per channel
// (matrixRowsLayout), the layout MM2 reads and writes; a linear layer and
// the element-wise ops after it may instead be held with the result's
// columns across the lanes, the matrix(w) layout of MM
// (matrixColumnsLayout), which suits matrices of few rows.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_BACKEND_LAYERGROUP_H
#define TPUC_BACKEND_LAYERGROUP_H

#include "tpuc/Backend/Backend.h"

#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Machine.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tpu::backend {

/// Real input rows (or columns) an output range of a sliding window reads,
/// and the pads the command needs before and after them. `count` = 0 when
/// the range reads only padding.
struct RowSpan {
  int64_t begin = 0, count = 0, padBefore = 0, padAfter = 0;
  int64_t end() const { return begin + count; }
};

/// The input rows output rows [o0, o0 + count) of a window of `k` taps
/// (dilation `dil`, stride `stride`, `pad` rows of padding before the input,
/// `ins` zeros inserted between input rows) read from an input of `inSize`
/// rows. The one place this arithmetic lives: the per-op kernels and the
/// group scheduler both use it.
RowSpan windowRows(int64_t o0, int64_t count, int64_t stride, int64_t pad,
                   int64_t k, int64_t dil, int64_t ins, int64_t inSize);

/// The description of one local operation: the parameters of its kernel.
/// Addresses of activations (GTensor::addr) are ignored inside a group; the
/// weight addresses (filters, biases, scales) are used.
using LocalOpParams =
    std::variant<ConvParams, PoolParams, BinaryParams, BinaryConstParams,
                 UnaryParams, ScaleParams, BinaryInt8Params, LutParams,
                 ResizeParams, CastParams, MatMulParams, SoftmaxParams,
                 LayerNormParams, ReduceParams, CompareParams,
                 CompareConstParams, WhereParams, PReluParams, PermuteParams,
                 ConcatParams, SliceParams>;

/// One value of a group, a 4-D (n, c, h, w) activation.
struct GroupValue {
  std::string name;
  isa::Prec prec = isa::Prec::Fp32;
  bool isSigned = true;
  std::array<int64_t, 4> shape{1, 1, 1, 1};
  /// Produced before the group: loaded from `addr` slice by slice.
  bool loaded = false;
  /// Read after the group (or a model output): stored to `addr`.
  bool stored = false;
  uint64_t addr = 0;
  /// Element strides (n, c, h, w) of the value in DDR when it is not dense
  /// (a view of a larger tensor; zeros repeat it along a dim, which a load
  /// materialises): the element-wise ops alone, over broadcastJobs' views.
  std::optional<isa::Stride4> gstride;
  /// Held in the matrix(w) layout of MM (matrixColumnsLayout): the value
  /// is a dense [rows, matrixCols] matrix in DDR, held as (rows,
  /// ceil(matrixCols / w), 1, w), its columns in blocks of w across the
  /// lanes, and moved by DMA_matrix (0: a 4-D tensor, moved as one).
  int64_t matrixCols = 0;
};

/// One op of a group: its parameters and the group values it reads (in the
/// kernel's operand order: conv / pool / unary / scale / binaryConst
/// `input`; binary `lhs`, `rhs`) and writes.
struct GroupOp {
  LocalOpParams params;
  std::vector<int> inputs;
  int output = -1;
};

struct GroupSpec {
  std::string name;
  std::vector<GroupValue> values;
  std::vector<GroupOp> ops; ///< in a topological order
  /// The block width of the results' columns when the group is held in
  /// MM's matrix(w) layout (matrixColumnsLayout); 0: it is not.
  int64_t matrixColumns = 0;
};

/// The order of the resident weights in local memory. They load in op
/// order while earlier ops compute, and a GDMA beat into a bank that a
/// running TIU command uses waits for it (simulator/docs/timing.md, "TIU
/// against GDMA"): packed in op order, the weights of the next ops share a
/// bank with those the running op reads. The other orders trade up to one
/// or two banks of padding for keeping neighbours apart.
enum class WeightOrder {
  /// Op order, packed (large weights on bank boundaries when that fits).
  InOrder,
  /// The first op's weights, then the others from the next bank boundary:
  /// what loads while the first op runs misses its weights' banks.
  FirstApart,
  /// The first op's weights; from the next bank boundary those of the odd
  /// ops, from the one after those of the even ops: the weights of an op
  /// and of the op after it never share a bank.
  Parity,
};

/// The name of `order` as a tpu.Group attribute records it
/// ("in_order", "first_apart", "parity").
const char *weightOrderName(WeightOrder order);
/// The order a name gives; false for an unknown name.
bool parseWeightOrder(const std::string &name, WeightOrder &order);

/// What an architect varies.
struct GroupOptions {
  /// Largest number of H slices tried (0 = the group's output height).
  int64_t maxHSlices = 0;
  /// Slice H before N (default: N first, as TPU-MLIR does).
  bool hFirst = false;
  /// Keep the weights in local memory for the whole group (default), or
  /// load them again before every slice.
  bool weightResident = true;
  /// Also try cutting the channels (whole lane slots; each slice then
  /// loads its channels' weights): what runs a convolution whose weights
  /// exceed local memory, and is taken wherever the cost model finds it
  /// faster (weight slices small enough for two copies load while the
  /// previous slice computes).
  bool channelSlices = true;
  /// When nothing else fits (not even one row of every value), cut each
  /// row's columns too, into 2, 3, ... slices (columnSliceError says which
  /// groups cannot be).
  bool widthSlices = true;
  /// The timing the slicing is chosen for (isa::estimateGroup); the BM1684X
  /// defaults with the chip planGroup is given when null.
  const isa::TimingParams *timing = nullptr;
  /// The resident weights of the first op were loaded by the previous
  /// group, laid out from this offset (firstWeightBytes): the group loads
  /// them no more and keeps everything else below this offset (-1: the
  /// group loads its own weights).
  int64_t firstWeightsAt = -1;
  /// The next group, whose first op's resident weights this group loads
  /// during its last slice at offset `nextWeightsAt` (null: no prefetch).
  /// The load follows the last op of that slice that touches the region
  /// (CmdEmitter makes it wait for that op's commands); the region must
  /// lie inside local memory and miss the values the last slice stores.
  const GroupSpec *next = nullptr;
  int64_t nextWeightsAt = -1;
};

/// The slicing the scheduler chose and what it costs.
struct GroupPlan {
  int64_t nSlices = 1, hSlices = 1;
  /// Channel slices (whole lane slots of the last output's channels; the
  /// inputs of convolutions that mix channels are loaded whole in each).
  int64_t cSlices = 1;
  /// Column slices of every row, the last resort (when one row of each
  /// value fits no other way); each value holds the columns its slice of
  /// the last output reads, with the halo (localInputCols).
  int64_t wSlices = 1;
  /// Reduced-axis slices of a group of one (accumulatedAxis), after all
  /// the others: what runs an op whose reduced extent does not fit.
  int64_t kSlices = 1;
  /// The group runs in MM's matrix(w) layout with result columns in
  /// blocks of this width (matrixColumnsLayout; emitGroup applies it to
  /// the spec it is given); 0: in the spec's own layout.
  int64_t matrixColumns = 0;
  bool weightResident = true;
  /// The order of the resident weights; planGroup takes, for each slicing,
  /// the order the cost model finds fastest.
  WeightOrder weightOrder = WeightOrder::InOrder;
  /// GroupOptions::firstWeightsAt and nextWeightsAt as planned (-1: none).
  int64_t firstWeightsAt = -1, nextWeightsAt = -1;
  /// Local memory bytes per lane used at the peak.
  uint64_t lmemBytes = 0;
  /// Of which resident weights and tables.
  uint64_t weightBytes = 0;
  /// Timesteps of the load / compute / store pipeline (slices + 2; the
  /// slices are nSlices x cSlices x hSlices x wSlices x kSlices).
  int64_t timesteps = 0;
  /// Bytes the group moves between DDR and local memory.
  uint64_t ddrReadBytes = 0, ddrWriteBytes = 0;
  size_t numTiu = 0, numGdma = 0;
  /// Multiply-accumulates of the convolutions, counting the halo rows
  /// that neighbouring slices compute twice.
  uint64_t macs = 0;
  /// The cost model's cycles of the group alone (isa::estimateGroup of its
  /// commands, without the command group's launch).
  uint64_t estimatedCycles = 0;
  /// Of the GDMA's time, the cycles its transfers wait for banks a TIU
  /// command uses (isa::Estimate::gdmaConflictCycles).
  uint64_t stallCycles = 0;
};

/// An activation broadcast along H and / or W: (N, C, 1 or H, 1 or W)
/// against (N, C, H, W), which a local op reads through zero strides along
/// its unit dims (per (n, c): a squeeze-excite gate).
bool broadcastsHW(const GTensor &t, const std::vector<int64_t> &out);
/// A per-channel operand: (1, C, 1, 1) or (C, 1, 1) against (N, C, H, W),
/// which a local op holds as a resident weight.
bool isPerChannel(const GTensor &t, int64_t channels);

/// Whether the op described by `params` can run as a local operation, and
/// if not why (empty when it can). Checked per op before grouping.
std::string localOpSupport(const LocalOpParams &params,
                           const isa::ChipParams &chip);

/// The input rows an output row range of op `op` reads from its operand
/// `k` (the full input when the op cannot slice H).
RowSpan localInputRows(const GroupOp &op, const GroupSpec &spec, unsigned k,
                       int64_t o0, int64_t count);

/// The input columns an output column range of op `op` reads from its
/// operand `k` (the window's, with the halo and the pads at the edges, as
/// for rows; one column of a value broadcast along W; else the same).
RowSpan localInputCols(const GroupOp &op, const GroupSpec &spec, unsigned k,
                       int64_t o0, int64_t count);

/// Why the columns of `spec`'s rows cannot be cut (empty when they can):
/// matrices whose rows an op reads whole (matmul, softmax along W, layer
/// norm, the matrix(w) layout), a resize, a reduction along W, a deconv in
/// sub-pixel phases.
std::string columnSliceError(const GroupSpec &spec);

/// Why `spec` cannot be cut along H (empty when it can): an op each of
/// whose output rows reads every input row (a softmax along H; a
/// reduction over H has one output row, so never more than one slice).
std::string rowSliceError(const GroupSpec &spec);

/// The input axis along which a group of one may be cut into reduced-axis
/// slices (GroupPlan::kSlices): 2 for rows, 3 for columns; -1 when it has
/// none. A reduction over H (and W) cuts its input's rows, one over W
/// alone its columns; each slice reduces its share into fp32 (a mean
/// scaled by the whole extent), the first into an accumulator, the others
/// added (max: maxed) to it, and the last converts the accumulator into
/// the result and stores it. The one form of an op whose reduced extent
/// fits no other slicing of local memory.
int accumulatedAxis(const GroupSpec &spec);

/// Element-wise groups. When every op of `spec` is element-wise over
/// operands of its own shape (unary functions, binaries of two activations
/// or with a constant, casts, INT8 add / sub / mul and table lookups) and
/// every value has one element count, the values' logical shapes do not
/// matter: the group may hold them as any 4-D shape of that count over the
/// dense DDR data. This gives every value, and the ops' tensors, the
/// lane-filling shape (1, C, H, W) (C the largest divisor of the count up
/// to the lanes, H at most 256 rows for the slicing) when that fills more
/// lanes than the values' own channels: a tensor of one channel (a
/// detection head's sigmoid) or a rank-3 value, held as (1, 1, 1, count)
/// by its builder, would otherwise use one lane. Returns whether it did.
bool flattenElementwise(GroupSpec &spec, const isa::ChipParams &chip);

/// Matrix rows. Values of rank 2 or 3, [M, K] or [B, M, K], are held in a
/// group as (1, M, 1, K) or (B, M, 1, K): a matrix row per channel, so
/// across the lanes, the matrix2 layout of MM2 (isa/docs/bm1684x.md 3.3),
/// in which a matmul by a weight (mm2.nn), softmax and layer norm along
/// the last axis, and element-wise ops all work on whole rows. The group's
/// builder gives the values that shape; this gives the ops' tensors of rank
/// 2 and 3 the same 4-D shape (not a matmul's 2-D right matrix, a weight)
/// and maps the softmax and layer norm axes onto it (the last axis to W).
/// With `rows4` (a group with a matmul, whose 4-D matrices, attention's
/// [B, H, M, K], are rows too) the ops' 4-D tensors become (B H, M, 1, K)
/// (the builder gives the values that shape); false when an op of the group
/// needs the (n, c, h, w) of its values: convolution, pooling, resize,
/// scale or a per-channel or per-(n, c) operand.
bool matrixRowsLayout(GroupSpec &spec, bool rows4 = false);

/// Matrix columns. A group whose first op is a matmul by a 2-D weight,
/// reading a matrix loaded from DDR and read by nothing else, followed by
/// element-wise ops on matrices of the matmul's result shape only (unary
/// functions, casts, table lookups, binaries of two such matrices or with
/// a constant), can run in the matrix(w) layout of the per-op matmul's MM
/// (isa/docs/bm1684x.md 3.3) instead of a row per channel: the left matrix
/// [R, K] as (R, ceil(K / lw), 1, lw) with lw = ceil(K / lanes), every
/// other value [R, N] as (R, ceil(N / w), 1, w), the right matrix as
/// (K, ceil(N / w), 1, w). A few rows (a sequence of 40 steps, one feature
/// vector) then fill the lanes with columns where the row layout fills
/// one lane per row; the rows are the N slices and the column blocks,
/// whole lane slots of them, the C slices, each loading its columns of
/// the weight while the previous slice computes. Takes a spec in the row
/// layout (matrixRowsLayout, 2-D and 3-D matrices) and returns false,
/// leaving it unchanged, when the group has no such form.
bool matrixColumnsLayout(GroupSpec &spec, int64_t w,
                         const isa::ChipParams &chip);

/// Chooses the slicing of `spec`: among the slicings that fit local memory
/// (from the fewest slices up), the one whose commands the cost model
/// (isa::estimateGroup) finds fastest; more slices overlap loads, stores
/// and computation better but recompute more halo rows and issue more
/// commands. For each slicing the weight orders are compared the same way.
/// A group with a matrix-column form (matrixColumnsLayout) is also planned
/// in it, for a few block widths (the result's columns over one lane slot,
/// two, four, ...), unless its first weights are prefetched; the fastest
/// plan wins and records its width (GroupPlan::matrixColumns).
/// Returns false with the reason in `why` when no slicing fits.
bool planGroup(const GroupSpec &spec, const isa::ChipParams &chip,
               const GroupOptions &options, GroupPlan &plan, std::string &why);

/// Local memory bytes per lane the resident weights of the first op of
/// `spec` take when a previous group prefetches them (GroupOptions::
/// firstWeightsAt); 0 when that op has none.
uint64_t firstWeightBytes(const GroupSpec &spec, const isa::ChipParams &chip);

/// DDR element strides (n, c, h, w) of runAlone's inputs and output, one
/// entry each (inputs, then the output); nullopt: dense.
using AloneStrides = std::vector<std::optional<isa::Stride4>>;

/// Runs one op between DDR tensors as a group of one: its inputs (the
/// values it reads, in its operand order) loaded, its result stored, the
/// slicing planGroup chooses under the emitter's options
/// (CmdEmitter::setAloneOptions). The per-op entry point of the op families
/// whose every case has a local form (convolutions, resize, 2-D pooling,
/// the element-wise ops), so that they have one path. `strides` (empty:
/// every tensor dense) makes tensors views of larger ones.
/// Throws Error naming `kernel` and the op when the op has no local form,
/// or fits no slicing and `noFit` is null; with `noFit`, returns false and
/// says why there instead (true: emitted).
bool runAlone(CmdEmitter &em, const char *kernel, const LocalOpParams &params,
              const std::vector<GTensor> &inputs, const GTensor &output,
              std::string *noFit = nullptr, const AloneStrides &strides = {});

/// Emits `spec` with the slicing of `plan` (from planGroup), in the
/// matrix(w) layout of plan.matrixColumns when `spec` is not in it already;
/// `next` is the next group when plan.nextWeightsAt >= 0 (its first weights
/// are loaded).
void emitGroup(CmdEmitter &em, const GroupSpec &spec, const GroupPlan &plan,
               const GroupSpec *next = nullptr);

/// The cost model's cycles of what `em` holds, as one command group without
/// its launch (isa::estimateGroup): the cost of a group or of a kernel.
uint64_t estimateCycles(const CmdEmitter &em, const isa::Machine &machine);

} // namespace tpu::backend

#endif // TPUC_BACKEND_LAYERGROUP_H
