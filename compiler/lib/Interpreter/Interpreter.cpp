//===- Interpreter.cpp - Reference interpreter of top modules -------------===//
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Interfaces/InferenceInterface.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <thread>

using namespace mlir;

namespace tpuc {

struct ModuleInterpreter::Impl {
  ModuleOp module;
  func::FuncOp func;
  InferenceContext ctx;
  /// Tensor name -> value (inputs, op results, weights).
  llvm::StringMap<Value> byName;
  /// Non-weight tensor names in program order.
  std::vector<std::string> names;
  std::vector<std::string> inputs, outputs;
  /// Input data set by setInput, by name.
  llvm::StringMap<std::vector<float>> pendingInputs;
  /// Weights already loaded into ctx (kept across runs).
  llvm::DenseSet<Value> loadedWeights;
  /// Values each op reads last (freed after it when !keepAll).
  llvm::DenseMap<Operation *, SmallVector<Value>> lastUses;
  /// Each named non-weight result -> its index in `names`.
  llvm::DenseMap<Value, unsigned> nameIndex;
  Observer observer;
};

ModuleInterpreter::ModuleInterpreter(ModuleOp module)
    : impl(std::make_unique<Impl>()) {
  impl->module = module;
  impl->func = module::getMainFunc(module);
  if (!impl->func || impl->func.isExternal())
    return;
  Block &body = impl->func.getBody().front();
  // Ops inside tpu.Group bodies name their values too (a group's results
  // carry the names of the values it yields: the first, outer one wins).
  impl->func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == impl->func.getOperation())
      return;
    if (auto input = dyn_cast<top::InputOp>(op))
      impl->inputs.push_back(input.getName().str());
    for (Value r : op->getResults()) {
      std::string name = top::getTensorName(r);
      if (name.empty())
        continue;
      if (impl->byName.try_emplace(name, r).second &&
          !isa<top::WeightOp>(op)) {
        impl->nameIndex[r] = impl->names.size();
        impl->names.push_back(name);
      }
    }
  });
  for (Value v : body.getTerminator()->getOperands())
    impl->outputs.push_back(top::getTensorName(v));
  // Last reader of every value: walk backwards, the first use seen wins.
  llvm::DenseSet<Value> seen;
  for (Operation &op : llvm::reverse(body))
    for (Value v : op.getOperands())
      if (seen.insert(v).second)
        impl->lastUses[&op].push_back(v);
}

ModuleInterpreter::~ModuleInterpreter() = default;

std::vector<std::string> ModuleInterpreter::inputNames() const {
  return impl->inputs;
}
std::vector<std::string> ModuleInterpreter::outputNames() const {
  return impl->outputs;
}
std::vector<std::string> ModuleInterpreter::tensorNames() const {
  return impl->names;
}

void ModuleInterpreter::setInput(llvm::StringRef name,
                                 std::vector<float> data) {
  impl->pendingInputs[name] = std::move(data);
}

void ModuleInterpreter::setNumThreads(unsigned n) {
  impl->ctx.setNumThreads(n);
}

void ModuleInterpreter::setObserver(Observer observer) {
  impl->observer = std::move(observer);
}

LogicalResult ModuleInterpreter::run(bool keepAll) {
  if (!impl->func || impl->func.isExternal())
    return impl->module.emitError("interpreter: the module has no main "
                                  "function with a body");
  if (failed(loadWeights(impl->module)))
    return failure();
  InferenceContext &ctx = impl->ctx;
  Block &body = impl->func.getBody().front();
  // Drop activations of a previous run; keep the weights.
  for (Operation &op : body)
    if (!isa<top::WeightOp>(op))
      for (Value r : op.getResults())
        ctx.erase(r);
  for (auto &entry : impl->pendingInputs) {
    auto it = impl->byName.find(entry.getKey());
    auto input = it == impl->byName.end()
                     ? nullptr
                     : it->second.getDefiningOp<top::InputOp>();
    if (!input)
      return impl->func.emitError("interpreter: no input named '")
             << entry.getKey() << "'";
    ctx.set(input.getInput(), entry.getValue());
  }
  llvm::DenseSet<Value> outputs;
  for (Value v : body.getTerminator()->getOperands())
    outputs.insert(v);
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      break;
    if (auto weight = dyn_cast<top::WeightOp>(op))
      if (impl->loadedWeights.contains(weight.getOutput()))
        continue;
    auto infer = dyn_cast<InferenceInterface>(op);
    if (!infer)
      return op.emitError("interpreter: op has no inference implementation");
    for (Value r : op.getResults())
      if (!isa<NoneType>(r.getType()) && !isa<RankedTensorType>(r.getType()))
        return op.emitError("interpreter: result shape is not known (run "
                            "--shape-infer first)");
    if (failed(infer.inference(ctx)))
      return failure();
    if (auto weight = dyn_cast<top::WeightOp>(op))
      impl->loadedWeights.insert(weight.getOutput());
    else if (impl->observer)
      for (Value r : op.getResults()) {
        auto it = impl->nameIndex.find(r);
        if (it != impl->nameIndex.end() && ctx.contains(r))
          impl->observer(it->second, impl->names[it->second], ctx.get(r));
      }
    if (keepAll)
      continue;
    auto it = impl->lastUses.find(&op);
    if (it == impl->lastUses.end())
      continue;
    for (Value v : it->second) {
      bool keep = outputs.contains(v) || isa<BlockArgument>(v) ||
                  isa_and_nonnull<top::WeightOp, top::InputOp>(
                      v.getDefiningOp());
      if (!keep)
        ctx.erase(v);
    }
  }
  return success();
}

bool ModuleInterpreter::hasTensor(llvm::StringRef name) const {
  auto it = impl->byName.find(name);
  return it != impl->byName.end() && impl->ctx.contains(it->second);
}

const std::vector<float> &
ModuleInterpreter::tensor(llvm::StringRef name) const {
  auto it = impl->byName.find(name);
  if (it == impl->byName.end())
    throw tpu::Error("interpreter: no tensor named '" + name.str() + "'");
  if (!impl->ctx.contains(it->second))
    throw tpu::Error("interpreter: tensor '" + name.str() +
                     "' was not kept by the last run (run with keepAll)");
  return impl->ctx.get(it->second);
}

std::vector<int64_t> ModuleInterpreter::shape(llvm::StringRef name) const {
  auto it = impl->byName.find(name);
  if (it == impl->byName.end())
    throw tpu::Error("interpreter: no tensor named '" + name.str() + "'");
  return module::getShape(it->second);
}

} // namespace tpuc
