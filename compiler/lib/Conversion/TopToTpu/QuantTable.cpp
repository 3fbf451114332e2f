//===- QuantTable.cpp - Quantize tables: per-op float modes ---------------===//
//
// The text format of TPU-MLIR's `model_deploy --quantize_table`: one
// `op_name MODE` per line, `#` to the end of the line is a comment, blank
// lines are ignored. Op names contain no whitespace (ONNX names like
// "onnx::Conv_5" are fine). Every error names the file and the line.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Module.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

namespace tpuc {

namespace {

llvm::Error lineError(StringRef path, unsigned line, const Twine &message) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      (path + ":" + Twine(line) + ": " + message).str());
}

/// TPU-MLIR's other integer and weight-only modes: valid table syntax, but
/// this compiler has no lowering for them.
bool isLaterMode(StringRef upper) {
  return upper == "UINT8" || upper == "INT4" ||
         upper == "W8F16" || upper == "W8BF16" || upper == "W4F16" ||
         upper == "W4BF16" || upper == "F8E4M3" || upper == "F8E5M2";
}

} // namespace

llvm::Expected<QuantTable> parseQuantTable(StringRef text, StringRef path) {
  QuantTable table;
  table.path = path.str();
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [index, raw] : llvm::enumerate(lines)) {
    unsigned line = static_cast<unsigned>(index) + 1;
    StringRef content = raw.split('#').first.trim();
    if (content.empty())
      continue;
    SmallVector<StringRef> fields;
    content.split(fields, ' ', -1, /*KeepEmpty=*/false);
    // Tabs separate fields too.
    SmallVector<StringRef> words;
    for (StringRef f : fields) {
      SmallVector<StringRef> parts;
      f.split(parts, '\t', -1, /*KeepEmpty=*/false);
      words.append(parts.begin(), parts.end());
    }
    if (words.size() != 2)
      return lineError(path, line,
                       "expected 'op_name MODE', got '" + content + "'");
    StringRef name = words[0], modeText = words[1];
    std::optional<QuantMode> mode = parseQuantMode(modeText);
    if (!mode) {
      std::string upper = modeText.upper();
      if (isLaterMode(upper))
        return lineError(path, line,
                         "mode '" + modeText + "' of '" + name +
                             "' is not supported yet (no " + upper +
                             " lowering exists; use F32, F16, BF16 or INT8)");
      return lineError(path, line,
                       "unknown mode '" + modeText + "' for '" + name +
                           "' (F32, F16, BF16 or INT8)");
    }
    auto [it, inserted] =
        table.entries.try_emplace(name, QuantTable::Entry{*mode, line});
    if (!inserted) {
      if (it->second.mode != *mode)
        return lineError(path, line,
                         "'" + name + "' is " + quantModeName(*mode) +
                             " here but " + quantModeName(it->second.mode) +
                             " on line " + Twine(it->second.line));
      continue; // the same entry twice: harmless
    }
    table.order.push_back(name.str());
  }
  return table;
}

llvm::Expected<QuantTable> readQuantTable(StringRef path) {
  if (std::string why = ::tpu::isa::bmodel::notAFile(path.str()); !why.empty())
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "cannot read the quantize table '" + path.str() + "': it " + why);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read the quantize table '" + path +
                                       "': " + buffer.getError().message());
  return parseQuantTable((*buffer)->getBuffer(), path);
}

llvm::Error checkQuantTable(ModuleOp module, const QuantTable &table) {
  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the module has no main function");
  llvm::StringSet<> ops, inputs, weights;
  func.walk([&](Operation *op) {
    auto name = op->getAttrOfType<StringAttr>("name");
    if (isa<top::InputOp>(op)) {
      if (name)
        inputs.insert(name.getValue());
      return;
    }
    if (isa<top::WeightOp>(op)) {
      if (name)
        weights.insert(name.getValue());
      return;
    }
    if (!isa_and_nonnull<top::TopDialect>(op->getDialect()) ||
        isa<top::NoneOp>(op))
      return;
    if (name)
      ops.insert(name.getValue());
    for (Value r : op->getResults())
      ops.insert(top::getTensorName(r));
  });
  for (const std::string &name : table.order) {
    if (ops.contains(name))
      continue;
    unsigned line = table.entries.lookup(name).line;
    if (inputs.contains(name))
      return lineError(table.path, line,
                       "'" + name +
                           "' is a model input, which keeps its declared "
                           "type; list the ops that read it instead");
    if (weights.contains(name))
      return lineError(table.path, line,
                       "'" + name +
                           "' is a weight, which takes the type of the op "
                           "reading it; list that op instead");
    return lineError(table.path, line,
                     "no op named '" + name + "' in the model");
  }
  return llvm::Error::success();
}

} // namespace tpuc
