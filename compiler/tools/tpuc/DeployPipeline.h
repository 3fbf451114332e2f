//===- DeployPipeline.h - The deploy pipeline as a library --------*- C++ -*-===//
//
// What `tpuc deploy` does between parsing the top module and writing the
// bmodel, as one function: lowering (with an optional quantize and
// calibration table), weight layouts, layer groups, address assignment and
// BM1684X codegen, returning the bmodel in memory. `tpuc deploy` calls it
// with hooks that write its side files (<stem>_tpu.mlir, the weights,
// <stem>_final.mlir) and run the --test-input check at the points of the
// pipeline where it always did; `tpuc explore` calls it without hooks and
// writes nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_DEPLOYPIPELINE_H
#define TPUC_TOOLS_TPUC_DEPLOYPIPELINE_H

#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Target/BM1684X/Codegen.h"
#include "tpuc/Target/BM1684X/LayerGroup.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Machine.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <vector>

namespace tpuc::deploy {

struct PipelineOptions {
  QuantMode mode = QuantMode::F32;
  const QuantTable *quantTable = nullptr;
  const CaliTable *cali = nullptr;
  QuantMode int8Fallback = QuantMode::F32;
  bool asymmetric = false;
  bool quantInput = false, quantOutput = false;
  /// The machine (already validated); the module gets it as tpu.machine.
  ::tpu::isa::Machine machine = ::tpu::isa::Machine::bm1684x();
  std::string layerGroup = "dp";
  /// Text, as deploy takes them (errors quote them).
  std::string lgMaxLength = "24", lgMaxHSlices = "0";
  bool lgHFirst = false;
  bool weightResident = true;
  /// A group may cut the channels (backend::GroupOptions::channelSlices).
  bool channelSlices = true;
  /// A group may cut its rows' columns, the last resort
  /// (backend::GroupOptions::widthSlices).
  bool widthSlices = true;
  /// A group loads the next group's first weights (LayerGroupOptions).
  bool weightPrefetch = true;
  /// The per-op kernels of ops with a local form allowed
  /// (LayerGroupOptions::kernels).
  bool lgKernels = false;
  bool groupPerOp = false;
};

/// A hook returns an error message (empty: go on). It may throw.
using Hook = std::function<std::string(mlir::ModuleOp)>;

struct PipelineHooks {
  /// After lowering, weight layouts and verification (modelOutputs known).
  Hook afterLowering;
  /// After layer groups, addresses and codegen: the module as the commands
  /// compute it (codegen records the shares of every op it cut into
  /// reduced-axis slices, tpu::kKSharesAttr, which the interpreter follows).
  Hook afterCodegen;
};

struct PipelineResult {
  ::tpu::isa::bmodel::Model model;
  bm1684x::CodegenSummary summary;
  std::vector<bm1684x::GroupReport> groups;
  /// INT8: the ops left in the fallback mode (Int8Options::floatOps).
  std::vector<std::string> floatOps;
  /// The names of the model's own outputs (before any --expose-all).
  std::vector<std::string> modelOutputs;
};

/// Runs the pipeline on \p module (a loaded top module carrying
/// options.machine as tpu.machine, module::setMachine; it is rewritten in
/// place). Returns the error message (tpuc deploy's wording), empty on
/// success; may throw tpu::Error. result.model.machine is set.
std::string compile(mlir::ModuleOp module, const PipelineOptions &options,
                    const PipelineHooks &hooks, PipelineResult &result);

} // namespace tpuc::deploy

#endif // TPUC_TOOLS_TPUC_DEPLOYPIPELINE_H
