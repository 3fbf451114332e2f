//===- Machine.cpp - The machine a tpu module is compiled for -------------===//
#include "tpuc/Support/Machine.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "tpu/isa/Error.h"

using namespace mlir;

namespace tpuc::module {

void setMachine(ModuleOp module, const ::tpu::isa::Machine &machine) {
  MLIRContext *ctx = module.getContext();
  SmallVector<NamedAttribute> entries;
  for (auto &[key, value] : machine.list())
    entries.emplace_back(StringAttr::get(ctx, key),
                         StringAttr::get(ctx, value));
  module->setAttr(kMachineAttr, DictionaryAttr::get(ctx, entries));
}

llvm::Expected<std::optional<::tpu::isa::Machine>> getMachine(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>(kMachineAttr);
  if (!dict)
    return std::nullopt;
  ::tpu::isa::Machine machine;
  for (NamedAttribute entry : dict) {
    auto value = dyn_cast<StringAttr>(entry.getValue());
    if (!value)
      return llvm::createStringError((kMachineAttr + ": '" +
                                      entry.getName().getValue() +
                                      "' is not a string")
                                         .str());
    try {
      machine.set(entry.getName().getValue().str(), value.getValue().str());
    } catch (const ::tpu::Error &e) {
      return llvm::createStringError(
          (kMachineAttr + ": " + llvm::Twine(e.what())).str());
    }
  }
  return machine;
}

FailureOr<::tpu::isa::Machine> getMachineOrDefault(ModuleOp module,
                                                  llvm::StringRef passName) {
  llvm::Expected<std::optional<::tpu::isa::Machine>> machine =
      getMachine(module);
  if (!machine)
    return module.emitError(passName) << ": "
                                      << llvm::toString(machine.takeError());
  if (*machine)
    return **machine;
  return ::tpu::isa::Machine::bm1684x();
}

} // namespace tpuc::module
