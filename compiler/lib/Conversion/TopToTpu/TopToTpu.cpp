//===- TopToTpu.cpp - --convert-top-to-tpu
//---------------------------------===//
//
// Walks @main in program order and lowers each top op through the table the
// op families fill (LowerNN.cpp, LowerElementwise.cpp, LowerShape.cpp).
// top.Input and top.None stay; top.Weight ops become tpu.Weight ops of the
// element type and layout their readers need and are erased once unused.
// In F16 / BF16 the inputs get a tpu.Cast to the mode's type and the
// returned values a tpu.Cast back to f32: the model's IO stays f32 in DDR,
// as TPU-MLIR does. The cast at an output carries the output's framework
// name; its producer is renamed <name>_<mode>. A softmax or layer norm
// read only as outputs (they compute in fp32) writes f32 itself instead.
//
// With a quantize table (QuantTable.cpp) each listed op is lowered in its
// own mode. Values meet readers of another float type through a tpu.Cast,
// made once per value and type right after the value's definition and
// named <value>_<type> (an input read by F16 and F32 ops gets x_f16 for the
// former and stays f32 for the latter: no needless rounding).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Weights.h"

#include "Lowering.h"

#include "tpu/isa/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tpuc {

#define GEN_PASS_DEF_CONVERTTOPTOTPU
#include "tpuc/Conversion/TopToTpu/Passes.h.inc"

std::optional<QuantMode> parseQuantMode(StringRef text) {
  std::string upper = text.upper();
  if (upper == "F32")
    return QuantMode::F32;
  if (upper == "F16")
    return QuantMode::F16;
  if (upper == "BF16")
    return QuantMode::BF16;
  if (upper == "INT8")
    return QuantMode::INT8;
  return std::nullopt;
}

StringRef quantModeName(QuantMode mode) {
  switch (mode) {
  case QuantMode::F32:
    return "F32";
  case QuantMode::F16:
    return "F16";
  case QuantMode::BF16:
    return "BF16";
  case QuantMode::INT8:
    return "INT8";
  }
  return "?";
}

namespace lowering {

Lowering::Lowering(ModuleOp module, QuantMode mode, const CaliTable *cali)
    : module(module), context(module.getContext()), mode(mode), cali(cali) {}

Type Lowering::actType() const {
  return actOverride ? actOverride : actType(mode);
}

Type Lowering::actType(QuantMode m) const {
  Builder b(getContext());
  switch (m) {
  case QuantMode::F16:
    return b.getF16Type();
  case QuantMode::BF16:
    return b.getBF16Type();
  case QuantMode::F32:
  case QuantMode::INT8: // INT8 ops choose their types themselves
    break;
  }
  return b.getF32Type();
}

RankedTensorType Lowering::tensorType(ArrayRef<int64_t> shape,
                                      Type elementType) const {
  return RankedTensorType::get(shape, elementType ? elementType : actType());
}

RankedTensorType Lowering::actTypeOf(Value v) const {
  return tensorType(module::getShape(v));
}

bool Lowering::isWeight(Value v) {
  return isa_and_nonnull<top::WeightOp>(v.getDefiningOp());
}

Value Lowering::weight(Value v, Type elementType, StringRef layout,
                       ArrayRef<int64_t> shape) {
  auto topWeight = v.getDefiningOp<top::WeightOp>();
  assert(topWeight && "not a top.Weight");
  Shape newShape = shape.empty() ? module::getShape(v) : Shape(shape);
  auto key =
      std::make_tuple(topWeight.getOperation(),
                      elementType.getAsOpaquePointer(), layout.str(), newShape);
  auto it = weights.find(key);
  if (it != weights.end())
    return it->second;
  OpBuilder b(topWeight);
  b.setInsertionPointAfter(topWeight);
  auto w = b.create<tpu::WeightOp>(topWeight.getLoc(),
                                   tensorType(newShape, elementType),
                                   topWeight.getName(), layout);
  weights[key] = w.getOutput();
  return w.getOutput();
}

Value Lowering::activation(OpBuilder &, Value v) {
  if (isWeight(v))
    return weight(v, actType());
  if (tpu::getElementType(v) == actType())
    return v;
  return castTo(v, actType());
}

Value Lowering::castTo(Value v, Type elementType) {
  auto key = std::make_pair(v, elementType);
  if (Value c = casts.lookup(key))
    return c;
  OpBuilder b(getContext());
  b.setInsertionPointAfterValue(v);
  std::string name = top::getTensorName(v) + "_" + typeSuffix(elementType);
  Value c = b.create<tpu::CastOp>(v.getLoc(),
                                  tensorType(module::getShape(v), elementType),
                                  v, name)
                .getOutput();
  casts[key] = c;
  return c;
}

Value Lowering::findCast(Value v, Type elementType) const {
  return casts.lookup(std::make_pair(v, elementType));
}

void Lowering::forget(ArrayRef<Value> values) {
  // qtypes is keyed by tensor name and needs no cleaning.
  SmallVector<std::pair<Value, Type>> stale;
  for (auto &entry : casts)
    if (llvm::is_contained(values, entry.first.first))
      stale.push_back(entry.first);
  for (auto &key : stale)
    casts.erase(key);
}

std::string typeSuffix(Type elementType) {
  if (elementType.isF16())
    return "f16";
  if (elementType.isBF16())
    return "bf16";
  if (elementType.isF32())
    return "f32";
  if (auto q = dyn_cast<quant::QuantizedType>(elementType))
    return q.isSigned() ? "int8" : "uint8";
  std::string text;
  llvm::raw_string_ostream os(text);
  elementType.print(os);
  return os.str();
}

Value Lowering::newWeight(OpBuilder &b, Location loc, StringRef base,
                          ArrayRef<int64_t> shape, ArrayRef<float> data,
                          Type elementType) {
  std::string name = freshWeightName(base);
  ModuleWeights &store = getWeightRegistry(getContext()).get(module);
  store.memory[name] =
      ::tpu::npz::Array::from<float>(std::vector<int64_t>(shape), data.data());
  return b.create<tpu::WeightOp>(loc, tensorType(shape, elementType), name,
                                 tpu::kLayoutCompact);
}

Value Lowering::newIntWeight(OpBuilder &b, Location loc, StringRef base,
                             ArrayRef<int64_t> shape, ArrayRef<int32_t> data,
                             Type elementType) {
  std::string name = freshWeightName(base);
  ModuleWeights &store = getWeightRegistry(getContext()).get(module);
  store.memory[name] = ::tpu::npz::Array::from<int32_t>(
      std::vector<int64_t>(shape), data.data());
  return b.create<tpu::WeightOp>(loc, tensorType(shape, elementType), name,
                                 tpu::kLayoutCompact);
}

std::string Lowering::freshWeightName(StringRef base) {
  ModuleWeights &store = getWeightRegistry(getContext()).get(module);
  (void)loadWeights(module);
  llvm::StringSet<> used;
  module.walk([&](Operation *op) {
    if (isa<top::WeightOp, tpu::WeightOp>(op))
      used.insert(op->getAttrOfType<StringAttr>("name").getValue());
  });
  std::string name = base.str();
  for (unsigned i = 1; used.contains(name) || store.find(name); ++i)
    name = (base + "_" + Twine(i)).str();
  return name;
}

std::vector<float> Lowering::weightData(Value v) const {
  return getWeightData(cast<top::WeightOp>(v.getDefiningOp()));
}

LogicalResult Lowering::unsupported(Operation *op, const Twine &why) const {
  return op->emitError() << op->getName() << " '" << nameOf(op)
                         << "' cannot be lowered to " << quantModeName(mode)
                         << ": " << why;
}

StringRef nameOf(Operation *op) {
  if (auto name = op->getAttrOfType<StringAttr>("name"))
    return name.getValue();
  return "";
}

void replaceOp(Operation *op, ValueRange values) {
  op->replaceAllUsesWith(values);
  op->erase();
}

} // namespace lowering

using namespace lowering;

namespace {

/// The mode \p table gives \p op (by its name, else by a result's name),
/// else \p fallback.
QuantMode modeOf(Operation *op, const QuantTable *table, QuantMode fallback) {
  if (!table)
    return fallback;
  auto it = table->entries.find(nameOf(op));
  if (it != table->entries.end())
    return it->second.mode;
  for (Value r : op->getResults()) {
    it = table->entries.find(top::getTensorName(r));
    if (it != table->entries.end())
      return it->second.mode;
  }
  return fallback;
}

} // namespace

LogicalResult lowerTopToTpu(ModuleOp module, QuantMode mode,
                            const QuantTable *table, const Int8Options &int8) {
  LoweringTable lowerings;
  registerNNLowerings(lowerings);
  registerElementwiseLowerings(lowerings);
  registerShapeLowerings(lowerings);
  Int8LoweringTable int8Lowerings;
  registerInt8Lowerings(int8Lowerings);
  if (int8.fallback == QuantMode::INT8)
    return module.emitError("lowering: the INT8 fallback mode must be a "
                            "float mode");

  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return module.emitError("lowering: the module has no main function");
  if (table) {
    if (llvm::Error e = checkQuantTable(module, *table)) {
      module.emitError() << llvm::toString(std::move(e));
      return failure();
    }
  }
  if (failed(loadWeights(module)))
    return failure();
  bool anyInt8 = mode == QuantMode::INT8;
  if (table)
    for (auto &e : table->entries)
      anyInt8 = anyInt8 || e.second.mode == QuantMode::INT8;
  if (anyInt8 && !int8.cali)
    return module.emitError("lowering: INT8 needs a calibration table "
                            "(tpuc calibrate; deploy --calibration-table)");
  Lowering l(module, mode, int8.cali);
  l.setAsymmetric(int8.asymmetric);
  Block &body = func.getBody().front();

  // Inputs stay f32 in DDR: the readers' activation() casts them once per
  // type, right after the top.Input. With --quant-input an input read in
  // INT8 takes its table type instead (F32 readers then get a dequantising
  // cast).
  if (int8.quantInput) {
    for (auto in : body.getOps<top::InputOp>()) {
      Value v = in.getOutput();
      auto qt = l.quantType(v);
      if (!qt)
        return in.emitError("--quant-input: the calibration table has no "
                            "entry for input '")
               << in.getName() << "'";
      auto t = RankedTensorType::get(module::getShape(v), qt);
      in.getInput().setType(t);
      v.setType(t);
    }
  }

  // Every other op, in program order, each in its mode.
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (isa<top::InputOp, top::NoneOp, top::WeightOp>(op) ||
        op->hasTrait<OpTrait::IsTerminator>())
      continue;
    if (op->getDialect() && isa<tpu::TpuDialect>(op->getDialect()))
      continue;
    QuantMode opMode = modeOf(op, table, mode);
    l.setMode(opMode);
    // The op is erased once lowered: its results' entries must go.
    SmallVector<Value> results(op->getResults().begin(),
                               op->getResults().end());
    if (opMode == QuantMode::INT8) {
      std::string why = "no INT8 form exists for this op";
      auto i8 = int8Lowerings.find(op->getName().getStringRef());
      if (i8 != int8Lowerings.end()) {
        std::string name = nameOf(op).str();
        FailureOr<bool> done = failure();
        try {
          done = i8->second(op, l, why);
        } catch (const ::tpu::Error &e) {
          return op->emitError() << e.what();
        }
        if (failed(done))
          return failure();
        if (*done) {
          if (int8.int8Ops)
            int8.int8Ops->push_back(name);
          l.forget(results);
          l.setActTypeOverride({});
          continue;
        }
      }
      // A data movement op keeps its input's quantised type: the INT8
      // lowering set it as the activation type and the float lowering
      // below moves the values unchanged.
      if (!l.hasActTypeOverride()) {
        if (int8.floatOps)
          int8.floatOps->push_back(nameOf(op).str() + " (" +
                                   op->getName().getStringRef().str() +
                                   "): " + why);
        l.setMode(int8.fallback);
      }
    }
    auto it = lowerings.find(op->getName().getStringRef());
    if (it == lowerings.end())
      return l.unsupported(op, "no lowering exists for this op");
    try {
      if (failed(it->second(op, l)))
        return failure();
    } catch (const ::tpu::Error &e) {
      return op->emitError() << e.what();
    }
    l.forget(results);
    l.setActTypeOverride({});
  }

  // Outputs: back to f32. The cast takes the output's name (reusing the
  // f32 cast an F32 reader already made), the producer <name>_<type>.
  Operation *terminator = body.getTerminator();
  Type f32 = Builder(module.getContext()).getF32Type();
  llvm::DenseMap<Value, Value> outputCasts;
  for (OpOperand &result : terminator->getOpOperands()) {
    Value v = result.get();
    Type type = tpu::getElementType(v);
    if (type.isF32())
      continue;
    if (int8.quantOutput && isa<quant::UniformQuantizedType>(type))
      continue;
    if (Value done = outputCasts.lookup(v)) {
      result.set(done);
      continue;
    }
    Operation *producer = v.getDefiningOp();
    std::string name = top::getTensorName(v);
    OpBuilder b(terminator);
    Value cast = l.findCast(v, f32);
    // A softmax or layer norm computes in fp32 whatever its types: read
    // only as outputs, it writes f32 itself instead of rounding to the
    // mode's type for a cast to widen again (PP-OCR rec's softmax over
    // 6625 classes: one kernel less, 1.6 MB less DDR traffic).
    if (!cast && producer && isa<tpu::SoftmaxOp, tpu::LayerNormOp>(producer) &&
        isa<FloatType>(type) && llvm::all_of(v.getUsers(), [&](Operation *u) {
          return u == terminator;
        })) {
      v.setType(l.tensorType(module::getShape(v), f32));
      outputCasts[v] = v;
      continue;
    }
    if (cast)
      cast.getDefiningOp()->setAttr("name", b.getStringAttr(name));
    else
      cast = b.create<tpu::CastOp>(
                  v.getLoc(), l.tensorType(module::getShape(v), f32), v, name)
                 .getOutput();
    if (producer && producer->getAttrOfType<StringAttr>("name"))
      producer->setAttr("name", b.getStringAttr(name + "_" + typeSuffix(type)));
    outputCasts[v] = cast;
    result.set(cast);
  }

  // Weights no tpu op reads any more.
  for (auto w : llvm::make_early_inc_range(body.getOps<top::WeightOp>()))
    if (w->use_empty())
      w->erase();
  for (auto w : llvm::make_early_inc_range(body.getOps<tpu::WeightOp>()))
    if (w->use_empty())
      w->erase();
  for (auto w : body.getOps<top::WeightOp>())
    return w.emitError("lowering: weight '")
           << w.getName() << "' is still read by a top op";

  func.setType(FunctionType::get(module.getContext(), body.getArgumentTypes(),
                                 terminator->getOperandTypes()));
  module::setState(module, tpu::kStateLowered);
  module::setChip(module, "BM1684X");
  module->setAttr(tpu::kModeAttr,
                  StringAttr::get(module.getContext(), quantModeName(mode)));
  return success();
}

namespace {

struct ConvertTopToTpuPass : impl::ConvertTopToTpuBase<ConvertTopToTpuPass> {
  using ConvertTopToTpuBase::ConvertTopToTpuBase;
  void runOnOperation() override {
    std::optional<QuantMode> m = parseQuantMode(mode);
    if (!m) {
      getOperation().emitError("convert-top-to-tpu: unknown mode '")
          << mode << "' (F32, F16 or BF16)";
      return signalPassFailure();
    }
    std::optional<QuantTable> table;
    if (!qtable.empty()) {
      llvm::Expected<QuantTable> parsed = readQuantTable(qtable);
      if (!parsed) {
        getOperation().emitError(llvm::toString(parsed.takeError()));
        return signalPassFailure();
      }
      table = std::move(*parsed);
    }
    if (failed(lowerTopToTpu(getOperation(), *m, table ? &*table : nullptr)))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createConvertTopToTpuPass() {
  return std::make_unique<ConvertTopToTpuPass>();
}

} // namespace tpuc
