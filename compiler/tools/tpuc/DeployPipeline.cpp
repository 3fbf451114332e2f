//===- DeployPipeline.cpp - The deploy pipeline as a library --------------===//
#include "DeployPipeline.h"

#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringRef.h"

namespace tpuc::deploy {

std::string compile(mlir::ModuleOp module, const PipelineOptions &opts,
                    const PipelineHooks &hooks, PipelineResult &result) {
  const ::tpu::isa::ChipParams &chip = opts.machine.chip;
  llvm::StringRef modeName = quantModeName(opts.mode);
  Int8Options int8;
  int8.cali = opts.cali;
  int8.fallback = opts.int8Fallback;
  int8.asymmetric = opts.asymmetric;
  int8.quantInput = opts.quantInput;
  int8.quantOutput = opts.quantOutput;
  int8.floatOps = &result.floatOps;
  if (mlir::failed(lowerTopToTpu(module, opts.mode, opts.quantTable, int8)))
    return ("lowering to " + modeName + " failed").str();
  if (mlir::failed(tpu::reorderWeights(module)))
    return "choosing the weight layouts failed";
  if (mlir::failed(mlir::verify(module)))
    return "the lowered module does not verify";
  // The model's own outputs, which the reference must hold.
  result.modelOutputs.clear();
  for (mlir::Value v : module::getMainFunc(module)
                           .getBody()
                           .front()
                           .getTerminator()
                           ->getOperands())
    result.modelOutputs.push_back(top::getTensorName(v));
  if (hooks.afterLowering)
    if (std::string e = hooks.afterLowering(module); !e.empty())
      return e;

  {
    std::optional<bm1684x::GroupStrategy> strategy =
        bm1684x::parseGroupStrategy(opts.layerGroup);
    if (!strategy)
      return "--layer-group '" + opts.layerGroup +
             "' is not none, greedy or dp";
    bm1684x::LayerGroupOptions lg;
    lg.strategy = *strategy;
    long long len = 0, hs = 0;
    if (llvm::StringRef(opts.lgMaxLength).getAsInteger(10, len) || len < 1)
      return "--lg-max-length '" + opts.lgMaxLength +
             "' is not a positive integer";
    if (llvm::StringRef(opts.lgMaxHSlices).getAsInteger(10, hs) || hs < 0)
      return "--lg-max-h-slices '" + opts.lgMaxHSlices +
             "' is not a non-negative integer";
    lg.maxLength = len;
    lg.slicing.maxHSlices = hs;
    lg.slicing.hFirst = opts.lgHFirst;
    lg.slicing.weightResident = opts.weightResident;
    lg.slicing.channelSlices = opts.channelSlices;
    lg.slicing.widthSlices = opts.widthSlices;
    lg.prefetchWeights = opts.weightPrefetch;
    lg.kernels = opts.lgKernels;
    lg.slicing.timing = &opts.machine.timing;
    if (mlir::failed(
            bm1684x::formLayerGroups(module, chip, lg, &result.groups)))
      return "forming the layer groups failed";
  }

  if (mlir::failed(tpu::assignAddresses(module, chip)))
    return "assigning device addresses failed";

  bm1684x::CodegenOptions codegen;
  codegen.groupPerOp = opts.groupPerOp;
  mlir::FailureOr<::tpu::isa::bmodel::Model> model =
      bm1684x::buildBmodel(module, opts.machine, codegen, &result.summary);
  if (mlir::failed(model))
    return "generating BM1684X commands failed";
  if (hooks.afterCodegen)
    if (std::string e = hooks.afterCodegen(module); !e.empty())
      return e;
  result.model = std::move(*model);
  result.model.machine = opts.machine.toText();
  return "";
}

} // namespace tpuc::deploy
