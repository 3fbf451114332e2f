//===- Module.cpp - Module-level attributes and small IR helpers ----------===//
#include "tpuc/Support/Module.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace tpuc::module {

namespace {

StringRef getStringAttr(ModuleOp module, StringRef name) {
  if (auto attr = module->getAttrOfType<StringAttr>(name))
    return attr.getValue();
  return "";
}

void setStringAttr(ModuleOp module, StringRef name, StringRef value) {
  module->setAttr(name, StringAttr::get(module.getContext(), value));
}

/// The file name of a location, looking through fused/named/callsite
/// wrappers; "" if none.
StringRef getFileName(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().getValue();
  if (auto named = dyn_cast<NameLoc>(loc))
    return getFileName(named.getChildLoc());
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return getFileName(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = getFileName(inner); !name.empty())
        return name;
  return "";
}

} // namespace

StringRef getWeightFile(ModuleOp module) {
  return getStringAttr(module, kWeightFileAttr);
}
void setWeightFile(ModuleOp module, StringRef file) {
  setStringAttr(module, kWeightFileAttr, file);
}
StringRef getChip(ModuleOp module) { return getStringAttr(module, kChipAttr); }
void setChip(ModuleOp module, StringRef chip) {
  setStringAttr(module, kChipAttr, chip);
}
StringRef getState(ModuleOp module) {
  return getStringAttr(module, kStateAttr);
}
void setState(ModuleOp module, StringRef state) {
  setStringAttr(module, kStateAttr, state);
}

std::string getSourceDirectory(ModuleOp module) {
  StringRef file = getFileName(module.getLoc());
  if (file.empty() || file == "-" || file == "<stdin>")
    return "";
  return llvm::sys::path::parent_path(file).str();
}

func::FuncOp getMainFunc(ModuleOp module) {
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    return main;
  for (auto func : module.getOps<func::FuncOp>())
    return func;
  return nullptr;
}

ModuleOp getModule(Operation *op) {
  if (!op)
    return nullptr;
  if (auto module = dyn_cast<ModuleOp>(op))
    return module;
  return op->getParentOfType<ModuleOp>();
}

std::vector<int64_t> getShape(Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type))
    return std::vector<int64_t>(ranked.getShape().begin(),
                                ranked.getShape().end());
  return {};
}

std::vector<int64_t> getShape(Value v) { return getShape(v.getType()); }

int64_t getNumElements(Value v) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  if (!ranked || !ranked.hasStaticShape())
    return 0;
  return ranked.getNumElements();
}

RankedTensorType getF32Type(MLIRContext *ctx, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, Float32Type::get(ctx));
}

std::vector<int64_t> toI64(ArrayAttr attr) {
  std::vector<int64_t> out;
  if (!attr)
    return out;
  for (Attribute a : attr)
    out.push_back(cast<IntegerAttr>(a).getInt());
  return out;
}

} // namespace tpuc::module
