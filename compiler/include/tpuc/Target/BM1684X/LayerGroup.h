//===- LayerGroup.h - Choosing the layer groups of a tpu module ---*- C++ -*-===//
//
// The BM1684X side of the tpu-layer-group pass: which tpu ops run as local
// operations (their backend::LocalOpParams), the GroupSpec of a run of ops,
// the search for the groups (none / greedy / dp), and the wrapping of each
// chosen group into a tpu.Group op. The group's codegen (GroupOp's
// codegenBM1684X) builds the same GroupSpec from the body and emits it.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TARGET_BM1684X_LAYERGROUP_H
#define TPUC_TARGET_BM1684X_LAYERGROUP_H

#include "tpuc/Backend/LayerGroup.h"

#include "tpu/isa/ChipParams.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace tpuc::bm1684x {

enum class GroupStrategy { None, Greedy, Dp };

/// "none", "greedy" or "dp"; nullopt for anything else.
std::optional<GroupStrategy> parseGroupStrategy(llvm::StringRef name);

struct LayerGroupOptions {
  GroupStrategy strategy = GroupStrategy::Dp;
  /// Most ops in one group.
  int64_t maxLength = 24;
  ::tpu::backend::GroupOptions slicing;
  /// A group followed directly by another loads the other's first weights
  /// during its last timestep, where the cost model finds that faster
  /// (needs resident weights; `tpuc deploy --no-weight-prefetch` turns it
  /// off, for comparison).
  bool prefetchWeights = true;
  /// An op with a local form may run its per-op kernel: alone, the cost
  /// model chooses between its kernel and its group of one, and under
  /// GroupStrategy::None every op runs its kernel (`tpuc deploy
  /// --lg-kernels`: the per-op backend, to compare with and the compiler
  /// configuration the timing model was calibrated with). Default: such an
  /// op always runs in a group, of one at least; the per-op kernels, all
  /// of them data movement, run only the ops without a local form.
  bool kernels = false;
};

/// The tpu.Group attributes of the weight prefetch (offsets in local
/// memory, per lane): the group's first op's resident weights were loaded
/// there by the previous group (backend::GroupOptions::firstWeightsAt); the
/// group loads the next group's first weights there (nextWeightsAt). The
/// two groups of a prefetch follow each other and carry the same offset.
inline constexpr llvm::StringLiteral kGroupFirstWeightsAt("first_weights_at");
inline constexpr llvm::StringLiteral kGroupNextWeightsAt("next_weights_at");
/// The tpu.Group attribute of the order of the resident weights in local
/// memory (backend::WeightOrder, by its name: "first_apart" or "parity");
/// absent: op order.
inline constexpr llvm::StringLiteral kGroupWeightOrder("weight_order");
/// The tpu.Group attribute of its channel slices (backend::GroupPlan::
/// cSlices); absent: one, all channels in every slice.
inline constexpr llvm::StringLiteral kGroupCSlices("c_slices");
/// The tpu.Group attribute of its column slices (backend::GroupPlan::
/// wSlices, the last resort); absent: one, whole rows in every slice.
inline constexpr llvm::StringLiteral kGroupWSlices("w_slices");
/// The tpu.Group attribute of its reduced-axis slices (backend::GroupPlan::
/// kSlices, a group of one whose reduced extent is cut, the slices
/// accumulating); absent: one.
inline constexpr llvm::StringLiteral kGroupKSlices("k_slices");
/// The tpu.Group attribute of the matrix(w) layout (backend::GroupPlan::
/// matrixColumns, the block width of the result's columns); absent: the
/// group runs in its ops' own layout.
inline constexpr llvm::StringLiteral kGroupMatrixColumns("matrix_columns");

/// The module attribute recording the slicing options the layer groups were
/// formed with (max_h_slices, h_first, weight_resident, channel_slices,
/// width_slices): codegen runs the ops left alone as groups of one under
/// the same options (CmdEmitter::setAloneOptions).
inline constexpr llvm::StringLiteral kSlicingAttr("tpu.lg_slicing");
/// Records `options` as the module's tpu.lg_slicing.
void setSlicingAttr(mlir::ModuleOp module,
                    const ::tpu::backend::GroupOptions &options);
/// The options tpu.lg_slicing records (the defaults for a module without
/// it); `timing` is left null.
::tpu::backend::GroupOptions getSlicingAttr(mlir::ModuleOp module);

/// One group the pass formed, for the compile report.
struct GroupReport {
  std::string name;
  std::vector<std::string> ops;
  /// The slicing and its figures (plan.estimatedCycles: the search's cost).
  ::tpu::backend::GroupPlan plan;
};

/// Forms the layer groups of the main function of \p module (before
/// address assignment). Appends one report per tpu.Group formed.
mlir::LogicalResult formLayerGroups(mlir::ModuleOp module,
                                    const ::tpu::isa::ChipParams &chip,
                                    const LayerGroupOptions &options,
                                    std::vector<GroupReport> *reports = nullptr);

} // namespace tpuc::bm1684x

#endif // TPUC_TARGET_BM1684X_LAYERGROUP_H
