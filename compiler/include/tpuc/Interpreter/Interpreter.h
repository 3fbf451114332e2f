//===- Interpreter.h - Reference interpreter of top modules ------*- C++ -*-===//
//
// Runs the main function of a module op by op through each op's
// InferenceInterface on float32 buffers. Tensors are addressed by their
// framework names (the ops' `name` attributes).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERPRETER_INTERPRETER_H
#define TPUC_INTERPRETER_INTERPRETER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tpuc {

class ModuleInterpreter {
public:
  /// Prepares to run the main function of \p module (see
  /// module::getMainFunc). Weights are loaded on the first run.
  explicit ModuleInterpreter(mlir::ModuleOp module);
  ~ModuleInterpreter();
  ModuleInterpreter(const ModuleInterpreter &) = delete;
  ModuleInterpreter &operator=(const ModuleInterpreter &) = delete;

  /// Names of the top.Input ops, in argument order.
  std::vector<std::string> inputNames() const;
  /// Names of the tensors the function returns, in order.
  std::vector<std::string> outputNames() const;
  /// Every tensor name the function produces (inputs and op results, not
  /// weights), in program order.
  std::vector<std::string> tensorNames() const;

  /// Sets input \p name (row-major, the input's element count). Unknown
  /// names and wrong sizes are reported by run().
  void setInput(llvm::StringRef name, std::vector<float> data);

  /// Runs the function. With \p keepAll every intermediate tensor is kept
  /// for tensor(); otherwise only inputs and outputs stay and buffers are
  /// freed after their last use. Errors are emitted as diagnostics on the
  /// failing op.
  mlir::LogicalResult run(bool keepAll = false);

  /// True if tensor \p name was kept by the last run (weights count too).
  bool hasTensor(llvm::StringRef name) const;
  /// Data of tensor \p name from the last run; throws tpu::Error if it is
  /// unknown or was not kept.
  const std::vector<float> &tensor(llvm::StringRef name) const;
  /// Shape of tensor \p name (any tensor of the function, run or not);
  /// throws tpu::Error if unknown.
  std::vector<int64_t> shape(llvm::StringRef name) const;

  /// Threads the kernels use (default: the hardware's concurrency).
  void setNumThreads(unsigned n);

  /// Called by run() with every tensor of tensorNames() (index into it,
  /// name, data) as soon as it is computed, before any buffer is freed, in
  /// program order; model inputs when their top.Input op runs, weights
  /// never. Lets a caller reduce each tensor (e.g. calibration statistics)
  /// without run(keepAll) holding every activation. An empty function
  /// removes the observer.
  using Observer = std::function<void(unsigned index, llvm::StringRef name,
                                      llvm::ArrayRef<float> data)>;
  void setObserver(Observer observer);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace tpuc

#endif // TPUC_INTERPRETER_INTERPRETER_H
