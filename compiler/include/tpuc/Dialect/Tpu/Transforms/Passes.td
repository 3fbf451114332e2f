//===- Passes.td - Passes on the tpu dialect -------------------*- tablegen -*-===//
#ifndef TPUC_DIALECT_TPU_TRANSFORMS_PASSES
#define TPUC_DIALECT_TPU_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def WeightReorder : Pass<"tpu-weight-reorder", "mlir::ModuleOp"> {
  let summary = "Chooses the coefficient layout of every weight";
  let description = [{
    Sets `layout` on each tpu.Weight to the layout the kernel reading it
    expects: convolution filters `conv_1ic` (f32), `conv_32ic` (f16 / bf16)
    or `depthwise`; everything else `compact`. A filter weight that other
    ops also read is duplicated so each copy has one layout. The bytes are
    produced in that layout when the coefficient blob is written.
  }];
  let constructor = "::tpuc::tpu::createWeightReorderPass()";
}

def LayerGroup : Pass<"tpu-layer-group", "mlir::ModuleOp"> {
  let summary = "Wraps runs of local operations into tpu.Group ops";
  let description = [{
    Before address assignment: cuts the op sequence of the main function
    into layer groups, each a run of consecutive ops that the BM1684X
    backend can run as local operations (conv, depthwise conv, pooling,
    element-wise ops, scale, activations) and whose slices fit local
    memory, and wraps each group into a tpu.Group recording its slicing
    (an op alone is a group of one, unless `kernels` lets its per-op
    kernel run). `strategy`: `none` (every op alone), `greedy` (each
    group grows by the next op while it fits and the op costs no more
    inside it than apart) or `dp` (dynamic programming over the op
    sequence, minimising the summed cost of the groups: the cycles the
    machine's cost model, isa::estimateGroup, gives each group's commands;
    then, of its cut and the greedy one, the cheaper with the weight
    prefetch between neighbouring groups, which the sum leaves out).
  }];
  let constructor = "::tpuc::tpu::createLayerGroupPass()";
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"\"dp\"",
           "none, greedy or dp">,
    Option<"maxLength", "max-length", "int64_t", /*default=*/"24",
           "Most ops in one group">,
    Option<"maxHSlices", "max-h-slices", "int64_t", /*default=*/"0",
           "Most H slices of a group (0: its output height)">,
    Option<"hFirst", "h-first", "bool", /*default=*/"false",
           "Slice H before N">,
    Option<"noWeightResident", "no-weight-resident", "bool",
           /*default=*/"false",
           "Load a group's weights again before every slice">,
    Option<"noChannelSlices", "no-channel-slices", "bool",
           /*default=*/"false",
           "Never cut a group's channels (else: when no slicing of the "
           "batch and rows fits, or the cost model finds it faster)">,
    Option<"noWidthSlices", "no-width-slices", "bool",
           /*default=*/"false",
           "Never cut a group's rows into column slices (else: the last "
           "resort, when nothing else fits)">,
    Option<"kernels", "kernels", "bool", /*default=*/"false",
           "An op with a local form may run its per-op kernel: alone, the "
           "cheaper of its kernel and its group of one; with strategy none, "
           "every op runs its kernel (default: a group of one; convolutions, "
           "pooling, resizes, matmuls, softmax, layer norm, reductions and "
           "element-wise ops have no kernel but their group of one)">,
  ];
}

def AddressAssign : Pass<"tpu-address-assign", "mlir::ModuleOp"> {
  let summary = "Assigns device (DDR) addresses to weights and activations";
  let description = [{
    Coefficients first, from the DDR base (0x1_0000_0000), each at a
    4 KiB-aligned offset; then the activation (neuron) region, 4 KiB
    aligned: activations with lifetime-based reuse (first fit, 64-byte
    aligned), then the model inputs and outputs, which are never reused.
    Reshapes alias their input. Writes `addr` on every defining op and the
    region attributes on the module; fails with a clear error when the
    weights or activations do not fit the global memory.
  }];
  let constructor = "::tpuc::tpu::createAddressAssignPass()";
}

def Codegen : Pass<"tpu-codegen", "mlir::ModuleOp"> {
  let summary = "Generates BM1684X commands and writes the bmodel";
  let description = [{
    Calls the backend kernel of every tpu op in program order, packs the
    commands into command groups, builds the coefficient blob and writes a
    .bmodel to `file`. Needs an addressed module (--tpu-address-assign).
  }];
  let constructor = "::tpuc::tpu::createCodegenPass()";
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Path of the .bmodel to write">,
    Option<"groupPerOp", "group-per-op", "bool", /*default=*/"false",
           "One command group per op (default: as few groups as the ids allow)">,
  ];
}

#endif // TPUC_DIALECT_TPU_TRANSFORMS_PASSES
