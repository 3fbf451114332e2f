//===- InferenceInterface.h - Reference interpreter hook ---------*- C++ -*-===//
//
// InferenceContext holds one float32 buffer per SSA value while ops run
// their `inference` method; the op interface itself is generated from
// InferenceInterface.td.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_INTERFACES_INFERENCEINTERFACE_H
#define TPUC_INTERFACES_INFERENCEINTERFACE_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace tpuc {

/// Float32 buffers of SSA values, row-major, shaped by the values' types.
/// References returned by get() and output() stay valid until the value is
/// erased, however many other buffers are added meanwhile.
class InferenceContext {
public:
  InferenceContext();
  ~InferenceContext();
  InferenceContext(const InferenceContext &) = delete;
  InferenceContext &operator=(const InferenceContext &) = delete;

  /// True if \p v has a buffer.
  bool contains(mlir::Value v) const;
  /// The buffer of \p v, which must exist (an operand computed earlier).
  const std::vector<float> &get(mlir::Value v) const;
  /// The buffer a result is written to, created if needed and resized to
  /// the element count of \p v's (static) type.
  std::vector<float> &output(mlir::Value v);
  /// Stores \p data as the buffer of \p v (replacing any previous one).
  void set(mlir::Value v, std::vector<float> data);
  /// Drops the buffer of \p v (its memory is kept for later outputs).
  void erase(mlir::Value v);
  /// Drops every buffer and the kept memory.
  void clear();

  /// Worker threads kernels may use (at least 1).
  unsigned getNumThreads() const { return numThreads; }
  void setNumThreads(unsigned n) { numThreads = n == 0 ? 1 : n; }

  /// Runs \p fn(begin, end) over [0, n) split into at most getNumThreads()
  /// contiguous chunks of at least \p grain items, in parallel.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn) const;

private:
  using Buffer = std::unique_ptr<std::vector<float>>;
  llvm::DenseMap<mlir::Value, Buffer> buffers;
  /// Memory of erased buffers by capacity, reused by output() so repeated
  /// runs neither allocate nor zero-fill.
  std::multimap<size_t, Buffer> spare;
  unsigned numThreads;
};

/// Element count of a ranked tensor type (1 for rank 0; 0 if not a ranked
/// tensor with a static shape).
int64_t getNumElements(mlir::Type type);

} // namespace tpuc

/// Include the generated interface declarations.
#include "tpuc/Interfaces/InferenceInterface.h.inc"

#endif // TPUC_INTERFACES_INFERENCEINTERFACE_H
