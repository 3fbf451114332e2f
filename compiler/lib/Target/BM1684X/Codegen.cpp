//===- Codegen.cpp - tpu dialect -> BM1684X commands and bmodel ----------===//
//
// See Codegen.h. This is the driver: the coefficient blob, the command
// groups and the IO tensors. Each op's commands come from its
// codegenBM1684X method (BM1684XCodegenInterface, Codegen/*.cpp); a
// tpu.Group's from the layer-group scheduler (Codegen/Group.cpp).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Target/BM1684X/Codegen.h"
#include "CodegenContext.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Interpreter/Kernels.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"
#include "tpuc/Target/BM1684X/CodegenInterface.h"
#include "tpuc/Target/BM1684X/LayerGroup.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Numerics.h"
#include "tpuc/Backend/Backend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstring>

using namespace mlir;
namespace isa = ::tpu::isa;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

namespace {

/// The group count of the conv or deconv that reads filter \p w (1 if none).
int64_t filterGroups(tpu::WeightOp w) {
  for (Operation *user : w->getUsers()) {
    if (auto conv = dyn_cast<tpu::Conv2DOp>(user))
      return conv.getGroup();
    if (auto deconv = dyn_cast<tpu::Deconv2DOp>(user))
      return deconv.getGroup();
  }
  return 1;
}

/// The bytes of weight \p w in its layout.
std::vector<uint8_t> weightBytes(ModuleOp module, tpu::WeightOp w,
                                 const isa::ChipParams &chip) {
  const ::tpu::npz::Array *array = findWeight(module, w.getName());
  if (!array)
    throw CodegenError{w, "no data for weight '" + w.getName().str() + "'"};
  auto type = cast<RankedTensorType>(w.getOutput().getType());
  // Integer arrays (INT8 requantisation records) are written exactly.
  bool records = w.getLayout() == tpu::kLayoutInt8Records;
  if (array->dtype == ::tpu::npz::DType::I32 &&
      type.getElementType().isInteger(32) &&
      (w.getLayout() == tpu::kLayoutCompact || records)) {
    if (static_cast<int64_t>(array->numel()) != type.getNumElements())
      throw CodegenError{w, "weight '" + w.getName().str() +
                                "' holds a different element count than its "
                                "type"};
    if (records)
      return backend::splitRequantRecords(array->data, type.getDimSize(0),
                                          type.getDimSize(1));
    return array->data;
  }
  if (records)
    throw CodegenError{w, "weight '" + w.getName().str() +
                              "': INT8 records must be an int32 array"};
  std::vector<float> data = array->toFloat();
  if (static_cast<int64_t>(data.size()) != type.getNumElements())
    throw CodegenError{w, "weight '" + w.getName().str() +
                              "' holds a different element count than its "
                              "type"};
  std::optional<isa::Prec> prec = getPrec(type.getElementType());
  if (!prec)
    throw CodegenError{w, "no BM1684X precision for the weight's type"};
  StringRef layout = w.getLayout();
  if (layout == tpu::kLayoutTransposed) {
    // [R, C] stored [C, R]; then written as compact data.
    std::vector<float> t(data.size());
    kernels::permute({type.getDimSize(0), type.getDimSize(1)}, data.data(),
                     {1, 0}, t.data());
    data = std::move(t);
    layout = tpu::kLayoutCompact;
  }
  if (layout == tpu::kLayoutDeconv)
    return backend::reorderConvTransposeFilter(
        data.data(), type.getDimSize(0), type.getDimSize(1), type.getDimSize(2),
        type.getDimSize(3), *prec, filterGroups(w), chip);
  if (layout != tpu::kLayoutCompact)
    return backend::reorderConvFilter(
        data.data(), type.getDimSize(0), type.getDimSize(1), type.getDimSize(2),
        type.getDimSize(3), *prec, filterGroups(w), chip);
  if (isa::isFloat(*prec))
    return backend::encodeFloats(data.data(), data.size(), *prec);
  // Integer data (gather indices, later quantised weights): little-endian
  // values of the element width, rounded and saturated.
  unsigned bytes = isa::precBytes(*prec);
  bool isSigned = isSignedType(type.getElementType());
  std::vector<uint8_t> out(data.size() * bytes);
  for (size_t i = 0; i < data.size(); ++i) {
    int64_t v = isa::floatToInt(data[i], *prec, isSigned,
                                isa::RoundMode::HalfAwayFromZero);
    for (unsigned b = 0; b < bytes; ++b)
      out[i * bytes + b] =
          static_cast<uint8_t>((uint64_t(v) >> (8 * b)) & 0xFF);
  }
  return out;
}

isa::bmodel::Tensor ioTensor(Value v, const std::string &name, int32_t hidden,
                             int32_t index, const isa::ChipParams &chip) {
  isa::bmodel::Tensor t;
  t.name = name;
  std::optional<isa::DataType> dt = getDataType(tpu::getElementType(v));
  if (!dt)
    throw CodegenError{v.getDefiningOp(),
                       "IO tensor '" + name + "' has no bmodel data type"};
  t.dataType = *dt;
  std::optional<uint64_t> addr = tpu::getAddress(v);
  if (!addr)
    throw CodegenError{v.getDefiningOp(),
                       "IO tensor '" + name + "' has no device address"};
  t.deviceAddr = *addr;
  t.size = tpu::getDeviceBytes(v, chip);
  std::vector<uint64_t> dims;
  for (int64_t d : module::getShape(v))
    dims.push_back(static_cast<uint64_t>(d));
  t.shapes = {dims};
  t.hidden = hidden;
  t.index = index;
  // A quantised IO tensor (deploy --quant-input / --quant-output): the
  // zero point, and as scale what tpu-mlir stores: 1 / scale for a net
  // input (float * scale + zp gives the code), the scale for an output.
  if (auto q = dyn_cast<quant::UniformQuantizedType>(tpu::getElementType(v))) {
    t.scale = hidden == isa::bmodel::kHiddenInput ? float(1.0 / q.getScale())
                                                  : float(q.getScale());
    t.zeroPoint = int32_t(q.getZeroPoint());
  }
  return t;
}

uint64_t moduleAttr(ModuleOp module, StringRef name) {
  auto attr = module->getAttrOfType<IntegerAttr>(name);
  if (!attr)
    throw CodegenError{module, "module attribute " + name.str() +
                                   " is missing (run --tpu-address-assign)"};
  return static_cast<uint64_t>(attr.getInt());
}

/// The op map record of DDR tensor \p v named \p name (its address, shape,
/// bmodel data type and, for a !quant.uniform type, scale and zero point).
/// None for a value without an address or a bmodel data type (nothing to
/// read back; the op map stays usable for the profile).
std::optional<isa::OpMapTensor> opMapTensor(Value v) {
  isa::OpMapTensor t;
  t.name = top::getTensorName(v);
  std::optional<uint64_t> addr = tpu::getAddress(v);
  Type element = tpu::getElementType(v);
  std::optional<isa::DataType> dt = getDataType(element);
  if (!addr || !dt || t.name.empty())
    return std::nullopt;
  t.addr = *addr;
  t.shape = module::getShape(v);
  t.dtype = *dt;
  if (auto q = dyn_cast<quant::UniformQuantizedType>(element)) {
    t.quantized = true;
    t.scale = q.getScale();
    t.zeroPoint = q.getZeroPoint();
  }
  return t;
}

/// The op map entry of top-level op \p op. Its tensors are what the op
/// writes to DDR: a group's stored results, otherwise every result (see
/// tpu/isa/OpMap.h).
isa::OpMapEntry opMapEntry(Operation &op) {
  isa::OpMapEntry entry;
  for (Value r : op.getResults())
    if (std::optional<isa::OpMapTensor> t = opMapTensor(r))
      entry.tensors.push_back(std::move(*t));
  entry.name = top::getTensorName(op.getResult(0));
  entry.type = op.getName().getStringRef().str();
  auto addMember = [&](Operation *m) {
    entry.members += (entry.members.empty() ? "" : ",") +
                     top::getTensorName(m->getResult(0));
  };
  if (auto group = dyn_cast<tpu::GroupOp>(op)) {
    entry.name = group.getName().str();
    entry.lmemBytes = uint64_t(group.getLmemBytes());
    for (Operation &inner : group.getBody().front().without_terminator())
      addMember(&inner);
  }
  return entry;
}

/// Sets tpu::kKSharesAttr on the op (\p op, or the member of a tpu.Group)
/// each of \p shares names, replacing what an earlier codegen set: one
/// entry per distinct column range (the batches of one op share their
/// plan).
void recordReducedShares(Operation &op,
                         std::vector<backend::ReducedShares> shares) {
  SmallVector<Operation *> members{&op};
  if (auto group = dyn_cast<tpu::GroupOp>(op))
    for (Operation &inner : group.getBody().front().without_terminator())
      members.push_back(&inner);
  for (Operation *m : members)
    m->removeAttr(tpu::kKSharesAttr);
  for (const backend::ReducedShares &r : shares) {
    Operation *target = nullptr;
    for (Operation *m : members)
      if (m->getNumResults() && top::getTensorName(m->getResult(0)) == r.op)
        target = m;
    if (!target)
      throw CodegenError{&op, "reduced-axis slices of '" + r.op +
                                  "', which is not this op"};
    SmallVector<int64_t> entry{r.colBegin, r.colEnd};
    entry.append(r.bounds.begin(), r.bounds.end());
    Builder b(target->getContext());
    SmallVector<Attribute> all;
    if (auto old = target->getAttrOfType<ArrayAttr>(tpu::kKSharesAttr))
      all.assign(old.begin(), old.end());
    auto attr = b.getDenseI64ArrayAttr(entry);
    if (llvm::is_contained(all, Attribute(attr)))
      continue;
    all.push_back(attr);
    target->setAttr(tpu::kKSharesAttr, b.getArrayAttr(all));
  }
}

} // namespace

uint64_t getWeightBytes(Operation *weightOp, const isa::ChipParams &chip) {
  auto w = cast<tpu::WeightOp>(weightOp);
  auto type = cast<RankedTensorType>(w.getOutput().getType());
  std::optional<isa::Prec> prec = getPrec(type.getElementType());
  unsigned elemBytes = prec ? isa::precBytes(*prec) : 4;
  StringRef layout = w.getLayout();
  if (!prec || layout == tpu::kLayoutCompact ||
      layout == tpu::kLayoutInt8Records || layout == tpu::kLayoutTransposed)
    return static_cast<uint64_t>(type.getNumElements()) * elemBytes;
  int64_t groups = filterGroups(w);
  if (layout == tpu::kLayoutDeconv) {
    // reorderConvTransposeFilter: the conv filter (oc, ic / g, kh, kw) with
    // input channels padded to IC_PARALLEL, never the depthwise form.
    int64_t icPerGroup = type.getDimSize(0) / groups;
    int64_t oc = type.getDimSize(1) * groups;
    int64_t icp = chip.icParallel(*prec);
    int64_t padded = (icPerGroup + icp - 1) / icp * icp;
    return static_cast<uint64_t>(oc * padded * type.getDimSize(2) *
                                 type.getDimSize(3)) *
           elemBytes;
  }
  return backend::convFilterBytes(type.getDimSize(0), type.getDimSize(1),
                                  type.getDimSize(2), type.getDimSize(3), *prec,
                                  groups, chip);
}

FailureOr<isa::bmodel::Model> buildBmodel(ModuleOp module,
                                          const isa::Machine &machine,
                                          const CodegenOptions &options,
                                          CodegenSummary *summary) {
  const isa::ChipParams &chip = machine.chip;
  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return module.emitError("codegen: no main function");
  if (failed(loadWeights(module)))
    return failure();
  Block &body = func.getBody().front();
  try {
    isa::bmodel::Stage stage;
    stage.coeffAddr = moduleAttr(module, tpu::kCoeffAddrAttr);
    uint64_t coeffSize = moduleAttr(module, tpu::kCoeffSizeAttr);
    stage.ctxAddr = moduleAttr(module, tpu::kNeuronAddrAttr);
    stage.ctxSize = moduleAttr(module, tpu::kNeuronSizeAttr);
    stage.ctxSizes = {stage.ctxSize};

    // Coefficient blob.
    stage.coeff.assign(coeffSize, 0);
    for (auto w : body.getOps<tpu::WeightOp>()) {
      std::optional<uint64_t> addr = tpu::getAddress(w.getOutput());
      if (!addr)
        throw CodegenError{w, "weight has no device address"};
      std::vector<uint8_t> bytes = weightBytes(module, w, chip);
      uint64_t offset = *addr - stage.coeffAddr;
      if (*addr < stage.coeffAddr || offset + bytes.size() > coeffSize)
        throw CodegenError{w, "weight lies outside the coefficient region"};
      std::memcpy(stage.coeff.data() + offset, bytes.data(), bytes.size());
    }

    // Commands, each tagged with the op it is for (the per-op profile).
    backend::CmdEmitter em(chip);
    // Ops alone run as groups of one under the options the layer groups
    // were formed with, chosen for the machine.
    auto alone =
        std::make_shared<backend::GroupOptions>(getSlicingAttr(module));
    alone->timing = &machine.timing;
    em.setAloneOptions(alone);
    CodegenContext ctx(module, em);
    isa::OpMap opMap;
    auto finishGroup = [&] {
      stage.groups.push_back(em.finish());
      opMap.groups.push_back({em.lastTiuTags(), em.lastGdmaTags()});
    };
    bool pending = false;
    for (Operation &op : body) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        break;
      // Data (inputs, weights, none) and aliases emit no commands.
      if (llvm::isa<top::InputOp, top::NoneOp, tpu::WeightOp, tpu::ReshapeOp>(
              op))
        continue;
      auto gen = dyn_cast<BM1684XCodegenInterface>(&op);
      if (!gen)
        throw CodegenError{&op, "no BM1684X kernel for this op"};
      try {
        em.setOpTag(int32_t(opMap.ops.size()));
        opMap.ops.push_back(opMapEntry(op));
        gen.codegenBM1684X(ctx);
        em.setOpTag(-1);
        recordReducedShares(op, em.takeReducedShares());
      } catch (const ::tpu::Error &e) {
        throw CodegenError{&op, e.what()};
      }
      pending = true;
      if (options.groupPerOp || em.nearIdLimit()) {
        finishGroup();
        pending = false;
      }
    }
    if (pending || stage.groups.empty())
      finishGroup();
    // Reshapes emit nothing and alias their input: their result is in DDR
    // as soon as the op that wrote the input has completed.
    for (auto reshape : body.getOps<tpu::ReshapeOp>()) {
      std::string in = top::getTensorName(reshape->getOperand(0));
      for (isa::OpMapEntry &e : opMap.ops) {
        bool writesInput = llvm::any_of(
            e.tensors, [&](const isa::OpMapTensor &t) { return t.name == in; });
        if (!writesInput)
          continue;
        if (std::optional<isa::OpMapTensor> t =
                opMapTensor(reshape->getResult(0)))
          e.tensors.push_back(std::move(*t));
        break;
      }
    }

    // IO.
    int32_t index = 0;
    for (auto input : body.getOps<top::InputOp>())
      stage.inputs.push_back(ioTensor(input.getOutput(), input.getName().str(),
                                      isa::bmodel::kHiddenInput, index++,
                                      chip));
    index = 0;
    for (Value v : body.getTerminator()->getOperands())
      stage.outputs.push_back(ioTensor(
          v, top::getTensorName(v), isa::bmodel::kHiddenOutput, index++, chip));

    isa::bmodel::Net net;
    net.name = options.netName;
    if (net.name.empty())
      net.name = module.getSymName() ? module.getSymName()->str() : "net";
    net.stages.push_back(std::move(stage));

    isa::bmodel::Model model;
    // ctime() form, as Sophgo's files; SOURCE_DATE_EPOCH makes it
    // reproducible.
    model.time = isa::formatTimestamp("%a %b %d %H:%M:%S %Y");
    model.nets.push_back(std::move(net));

    if (summary) {
      const isa::bmodel::Stage &s = model.nets[0].stages[0];
      summary->numGroups = s.groups.size();
      summary->numTiu = summary->numGdma = 0;
      for (const isa::bmodel::CmdGroup &g : s.groups) {
        summary->numTiu += g.bdcNum;
        summary->numGdma += g.gdmaNum;
      }
      summary->coeffBytes = s.coeff.size();
      summary->neuronBytes = s.ctxSize;
      summary->opMap = std::move(opMap);
    }
    return model;
  } catch (const CodegenError &e) {
    return e.op->emitError("codegen: ") << e.message;
  } catch (const ::tpu::Error &e) {
    return module.emitError("codegen: ") << e.what();
  }
}

} // namespace tpuc::bm1684x
