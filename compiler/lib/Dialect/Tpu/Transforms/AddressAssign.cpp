//===- AddressAssign.cpp - --tpu-address-assign
//----------------------------===//
//
// Global memory of one net (isa/docs/bm1684x.md 2, "Compiler address
// assignment"):
//
//   gmem_base (0x1_0000_0000)
//   | coefficients: each tpu.Weight at a 4 KiB-aligned offset, in IR order
//   | neuron region (4 KiB-aligned start):
//   |   activations, reused by lifetime (first fit, 64-byte aligned)
//   |   model inputs and outputs, each its own slot, never reused
//
// A value lives from the op that defines it to the last op that reads it
// or any reshape alias of it; an op's output never shares memory with its
// inputs (no kernel works in place), with one exception below. Reshapes
// alias their input. Inputs and outputs stay out of the reuse so that the
// runtime can copy them in and out around the whole net.
//
// A concat whose inputs are contiguous blocks of its output (every output
// dim before the axis is 1) has its inputs placed inside its output: each
// such input is written where the concat would have copied it, and the
// concat then copies nothing for it (backend::concat skips an input
// already at its place). An input qualifies when an op other than a concat
// defines it, it is no model input or output, no reshape view, not read
// twice by the concat, of the output's element type, and its block starts
// on the 64-byte granule; the output's buffer then lives from the first
// such input's definition to the last read of the output or of any of
// them. TPU-MLIR's address assignment has in-place ops of this kind too.
//
// Activations are 64-byte aligned: one GDMA burst / one EU_BYTES row, so
// every tensor starts where the DMA engine moves whole bursts (our choice;
// TPU-MLIR uses the same granule for neurons).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Target/BM1684X/Codegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;

namespace tpuc::tpu {

#define GEN_PASS_DEF_ADDRESSASSIGN
#include "tpuc/Dialect/Tpu/Transforms/Passes.h.inc"

namespace {

/// Alignment of activations and IO tensors (see the file comment).
constexpr uint64_t kNeuronAlign = 64;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string hex(uint64_t v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format_hex(v, 0);
  return s;
}

/// One activation to place.
struct Interval {
  Value value;
  int64_t start, end;
  uint64_t bytes;
};

} // namespace

uint64_t getDeviceBytes(Value v, const ::tpu::isa::ChipParams &chip) {
  if (auto w = v.getDefiningOp<WeightOp>())
    return bm1684x::getWeightBytes(w, chip);
  auto type = cast<RankedTensorType>(v.getType());
  std::optional<::tpu::isa::Prec> prec =
      bm1684x::getPrec(type.getElementType());
  unsigned elemBytes = prec ? ::tpu::isa::precBytes(*prec) : 4;
  return static_cast<uint64_t>(type.getNumElements()) * elemBytes;
}

LogicalResult assignAddresses(ModuleOp module,
                              const ::tpu::isa::ChipParams &chip) {
  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return module.emitError("address assignment: no main function");
  Block &body = func.getBody().front();
  const uint64_t gmemEnd = chip.gmemBase + chip.gmemBytes;

  // Coefficients.
  uint64_t addr = chip.gmemBase;
  for (auto w : body.getOps<WeightOp>()) {
    setAddress(w.getOutput(), addr);
    addr = alignUp(addr + getDeviceBytes(w.getOutput(), chip), chip.globalAlign);
  }
  uint64_t coeffSize = addr - chip.gmemBase;
  if (addr > gmemEnd)
    return module.emitError("the weights need ")
           << coeffSize << " bytes of global memory, which holds "
           << chip.gmemBytes << " (gmem_bytes)";

  // Live intervals of the buffers (reshape chains resolved to their root).
  llvm::DenseMap<Operation *, int64_t> index;
  int64_t i = 0;
  for (Operation &op : body)
    index[&op] = i++;
  int64_t endOfProgram = i;

  llvm::DenseSet<Value> io;
  for (auto input : body.getOps<top::InputOp>())
    io.insert(input.getOutput());
  for (Value v : body.getTerminator()->getOperands())
    io.insert(getMemoryRoot(v));

  std::vector<Interval> intervals;
  llvm::DenseMap<Value, size_t> slot;
  for (Operation &op : body) {
    if (isa<WeightOp, ReshapeOp, top::NoneOp>(op) ||
        op.hasTrait<OpTrait::IsTerminator>())
      continue;
    Dialect *dialect = op.getDialect();
    if (!isa<top::InputOp>(op) && !(dialect && isa<TpuDialect>(dialect)))
      return op.emitError("address assignment: not a tpu op (lower the "
                          "module first)");
    for (Value r : op.getResults()) {
      if (!isa<RankedTensorType>(r.getType()))
        continue;
      slot[r] = intervals.size();
      intervals.push_back({r, index[&op], index[&op],
                           alignUp(getDeviceBytes(r, chip), kNeuronAlign)});
    }
  }
  for (Operation &op : body)
    for (Value operand : op.getOperands()) {
      Value root = getMemoryRoot(operand);
      auto it = slot.find(root);
      if (it == slot.end())
        continue;
      int64_t use =
          op.hasTrait<OpTrait::IsTerminator>() ? endOfProgram : index[&op];
      intervals[it->second].end = std::max(intervals[it->second].end, use);
    }

  // Concats whose inputs are placed inside their output: the output's
  // interval takes over the first such input's position (program order is
  // the order of the starts) and covers every input's lifetime.
  llvm::DenseMap<Value, std::pair<Value, uint64_t>> inPlace; // in -> out, off
  std::vector<bool> merged(intervals.size(), false);
  for (auto concat : body.getOps<ConcatOp>()) {
    auto outType = cast<RankedTensorType>(concat.getOutput().getType());
    int64_t axis = concat.getAxis();
    if (axis < 0 || axis >= outType.getRank() ||
        llvm::any_of(outType.getShape().take_front(axis),
                     [](int64_t d) { return d != 1; }))
      continue;
    auto outIt = slot.find(concat.getOutput());
    if (outIt == slot.end())
      continue;
    uint64_t rowBytes =
        getDeviceBytes(concat.getOutput(), chip) /
        uint64_t(std::max<int64_t>(outType.getDimSize(axis), 1));
    Interval &out = intervals[outIt->second];
    size_t first = outIt->second;
    uint64_t offset = 0;
    for (Value in : concat.getInputs()) {
      auto inType = cast<RankedTensorType>(in.getType());
      uint64_t at = offset;
      offset += rowBytes * uint64_t(inType.getDimSize(axis));
      auto it = slot.find(in);
      Operation *def = in.getDefiningOp();
      if (it == slot.end() || !def || isa<top::InputOp, ConcatOp>(def) ||
          io.contains(in) || inPlace.count(in) ||
          llvm::count(concat.getInputs(), in) > 1 ||
          inType.getElementType() != outType.getElementType() ||
          at % kNeuronAlign)
        continue;
      inPlace[in] = {concat.getOutput(), at};
      Interval &iv = intervals[it->second];
      merged[it->second] = true;
      out.start = std::min(out.start, iv.start);
      out.end = std::max(out.end, iv.end);
      first = std::min(first, it->second);
    }
    if (first != outIt->second) {
      // Move the output's interval to the earliest input's place.
      Interval moved = out;
      merged[outIt->second] = true;
      intervals[first] = moved;
      merged[first] = false; // its old place is skipped
    }
  }

  // Activations: first fit over the slots still alive, in program order.
  uint64_t neuronBase = alignUp(addr, chip.globalAlign);
  struct Live {
    uint64_t offset, bytes;
    int64_t end;
  };
  std::vector<Live> live; // sorted by offset
  uint64_t activationsSize = 0;
  for (size_t k = 0; k < intervals.size(); ++k) {
    const Interval &iv = intervals[k];
    if (merged[k] || io.contains(iv.value))
      continue;
    llvm::erase_if(live, [&](const Live &l) { return l.end < iv.start; });
    uint64_t offset = 0;
    size_t pos = 0;
    for (; pos < live.size(); ++pos) {
      if (live[pos].offset >= offset + iv.bytes)
        break;
      offset = std::max(offset, live[pos].offset + live[pos].bytes);
    }
    live.insert(live.begin() + pos, {offset, iv.bytes, iv.end});
    setAddress(iv.value, neuronBase + offset);
    activationsSize = std::max(activationsSize, offset + iv.bytes);
  }

  // Inputs and outputs after the activations.
  uint64_t ioAddr = neuronBase + alignUp(activationsSize, kNeuronAlign);
  for (size_t k = 0; k < intervals.size(); ++k) {
    const Interval &iv = intervals[k];
    if (merged[k] || !io.contains(iv.value))
      continue;
    setAddress(iv.value, ioAddr);
    ioAddr += iv.bytes;
  }
  for (auto &[in, place] : inPlace)
    setAddress(in, *getAddress(place.first) + place.second);
  uint64_t neuronSize = alignUp(ioAddr - neuronBase, chip.globalAlign);

  // Reshapes share their root's address.
  for (auto reshape : body.getOps<ReshapeOp>())
    if (std::optional<uint64_t> a = getAddress(getMemoryRoot(reshape)))
      setAddress(reshape.getOutput(), *a);

  if (neuronBase + neuronSize > gmemEnd)
    return module.emitError("the activations need ")
           << neuronSize << " bytes of global memory from " << hex(neuronBase)
           << " (after " << coeffSize
           << " bytes of weights), but global memory ends at " << hex(gmemEnd)
           << " (gmem_bytes = " << chip.gmemBytes << ")";

  Builder b(module.getContext());
  auto i64 = [&](uint64_t v) {
    return b.getI64IntegerAttr(static_cast<int64_t>(v));
  };
  module->setAttr(kCoeffAddrAttr, i64(chip.gmemBase));
  module->setAttr(kCoeffSizeAttr, i64(coeffSize));
  module->setAttr(kNeuronAddrAttr, i64(neuronBase));
  module->setAttr(kNeuronSizeAttr, i64(neuronSize));
  module::setState(module, kStateAddressed);
  return success();
}

namespace {

struct AddressAssignPass : impl::AddressAssignBase<AddressAssignPass> {
  void runOnOperation() override {
    // The machine the module records (tpuc deploy), else the BM1684X.
    FailureOr<::tpu::isa::Machine> machine =
        module::getMachineOrDefault(getOperation(), "--tpu-address-assign");
    if (failed(machine) || failed(assignAddresses(getOperation(), machine->chip)))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createAddressAssignPass() {
  return std::make_unique<AddressAssignPass>();
}

} // namespace tpuc::tpu
