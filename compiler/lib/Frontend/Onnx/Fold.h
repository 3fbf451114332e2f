//===- Fold.h - Import-time evaluation of ONNX ops on constants ---*- C++
//-*-===//
//
// The small evaluator that folds shape subgraphs (and any other op whose
// inputs are all constants) while importing. It works on ConstTensor: int64
// arithmetic for integer types, double rounded to the element type for
// float types.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_FRONTEND_ONNX_FOLD_H
#define TPUC_LIB_FRONTEND_ONNX_FOLD_H

#include "ConstTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <vector>

namespace tpuc::frontend {

/// Elementwise op over inputs broadcast numpy-style. The integer function is
/// used when every input is an integer type (exact int64 arithmetic), the
/// float one otherwise. Results are rounded/wrapped to \p outType.
ConstTensor
foldElementwise(llvm::ArrayRef<const ConstTensor *> inputs, ElemType outType,
                llvm::function_ref<double(llvm::ArrayRef<double>)> floatFn,
                llvm::function_ref<int64_t(llvm::ArrayRef<int64_t>)> intFn,
                const std::string &what);

/// A tensor of \p outShape whose element k is src element srcIndex[k].
ConstTensor takeElements(const ConstTensor &src, Shape outShape,
                         const std::vector<int64_t> &srcIndex);

/// Transpose: output axis i is input axis perm[i].
ConstTensor foldTranspose(const ConstTensor &src, llvm::ArrayRef<int64_t> perm);

/// Strided slice with normalised per-axis starts and steps and the output
/// shape.
ConstTensor foldSlice(const ConstTensor &src, llvm::ArrayRef<int64_t> starts,
                      llvm::ArrayRef<int64_t> steps, Shape outShape);

/// Concatenation along \p axis (already normalised).
ConstTensor foldConcat(llvm::ArrayRef<const ConstTensor *> inputs,
                       int64_t axis);

/// ONNX Gather along \p axis (normalised); negative indices count from the
/// end. Throws tpu::Error naming \p what for an index out of range.
ConstTensor foldGather(const ConstTensor &data, const ConstTensor &indices,
                       int64_t axis, const std::string &what);

/// Broadcast \p src to \p outShape (ONNX Expand once the shape is resolved).
ConstTensor foldBroadcast(const ConstTensor &src, Shape outShape);

/// Tile with one repeat count per axis.
ConstTensor foldTile(const ConstTensor &src, llvm::ArrayRef<int64_t> repeats);

/// Reduction kinds of foldReduce.
enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// Reduces \p axes (normalised, sorted, unique); keeps them as 1 with
/// \p keepDims.
ConstTensor foldReduce(const ConstTensor &src, llvm::ArrayRef<int64_t> axes,
                       bool keepDims, ReduceKind kind);

} // namespace tpuc::frontend

#endif // TPUC_LIB_FRONTEND_ONNX_FOLD_H
