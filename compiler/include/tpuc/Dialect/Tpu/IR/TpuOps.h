//===- TpuOps.h - Ops of the tpu dialect --------------------------*- C++
//-*-===//
//
// Declares every op of the `tpu` dialect (tpuc::tpu::<Name>Op) and the
// helpers that read what passes attach to them: device addresses, weight
// layouts and the module's memory regions. Include this, not the
// per-family .h.inc files.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_TPUOPS_H
#define TPUC_DIALECT_TPU_IR_TPUOPS_H

#include "tpuc/Dialect/Tpu/IR/TpuDialect.h"
#include "tpuc/Interfaces/InferenceInterface.h"
#include "tpuc/Target/BM1684X/CodegenInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cstdint>
#include <optional>
#include <string>

#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuCoreOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuNNOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuElementwiseOps.h.inc"
#define GET_OP_CLASSES
#include "tpuc/Dialect/Tpu/IR/TpuShapeOps.h.inc"

namespace tpuc::tpu {

/// Name of the attribute holding a result's device address (TpuBase.td).
inline constexpr llvm::StringLiteral kAddrAttr("addr");
/// Module attributes written by --tpu-address-assign.
inline constexpr llvm::StringLiteral kCoeffAddrAttr("tpu.coeff_addr");
inline constexpr llvm::StringLiteral kCoeffSizeAttr("tpu.coeff_size");
inline constexpr llvm::StringLiteral kNeuronAddrAttr("tpu.neuron_addr");
inline constexpr llvm::StringLiteral kNeuronSizeAttr("tpu.neuron_size");
/// Module attribute written by the lowering: "F32", "F16", "BF16".
inline constexpr llvm::StringLiteral kModeAttr("tpu.mode");
/// top.state values of lowered modules.
inline constexpr llvm::StringLiteral kStateLowered("TPU_LOWERED");
inline constexpr llvm::StringLiteral kStateAddressed("TPU_ADDRESSED");

/// Weight layouts (tpu.Weight `layout`, see TpuCoreOps.td).
inline constexpr llvm::StringLiteral kLayoutCompact("compact");
inline constexpr llvm::StringLiteral kLayoutConv1IC("conv_1ic");
inline constexpr llvm::StringLiteral kLayoutConv32IC("conv_32ic");
/// int8 filters: 64 input channels per block (isa/docs/bm1684x.md 3.4).
inline constexpr llvm::StringLiteral kLayoutConv64IC("conv_64ic");
inline constexpr llvm::StringLiteral kLayoutDepthwise("depthwise");
inline constexpr llvm::StringLiteral kLayoutDeconv("deconv");
/// INT8 requantisation records, stored part by part (TpuCoreOps.td).
inline constexpr llvm::StringLiteral kLayoutInt8Records("int8_records");
/// A 2-D weight [R, C] stored transposed, [C, R] row-major: a matmul's
/// right operand [N, K] read transposed (Gemm transB) stored as [K, N].
inline constexpr llvm::StringLiteral kLayoutTransposed("transposed");
/// True if \p layout is one of the names above.
bool isKnownLayout(llvm::StringRef layout);

/// INT8 requantisation parameters of ops without a coefficient weight
/// (tpu.Pool2D avg: one multiplier / rshift; tpu.Add / tpu.Sub: one per
/// input), I64ArrayAttrs; see compiler/docs/design.md "INT8".
inline constexpr llvm::StringLiteral kQuantMultiplierAttr("quant_multiplier");
inline constexpr llvm::StringLiteral kQuantRShiftAttr("quant_rshift");
/// The reduced-axis shares of a tpu.Reduce / tpu.MatMul whose commands
/// cut its reduced index into slices that accumulate (codegen
/// sets it, from backend::ReducedShares): an ArrayAttr of
/// DenseI64ArrayAttrs [col_begin, col_end, b0, b1, ..., bk], share i
/// summing [b_i, b_(i+1)) of the reduced index (a reduction's flattened
/// reduced dims, a matmul's K) for the output columns [col_begin, col_end)
/// (0, 0: all). The interpreter sums a float op share by share, as the
/// commands do (an integer sum is exact either way); compiler/docs/
/// design.md "Reduced-axis slices and the interpreter".
inline constexpr llvm::StringLiteral kKSharesAttr("k_shares");

/// Fraction bits of the rescaled inputs of an INT8 add / sub.
inline constexpr int kAddFractionBits = 8;
/// The roundings of INT8 are in tpuc/Dialect/Tpu/IR/Int8.h.

/// The device address of \p v (a result of a tpu op or top.Input), if
/// assigned.
std::optional<uint64_t> getAddress(mlir::Value v);
/// Records \p addr as the device address of \p v.
void setAddress(mlir::Value v, uint64_t addr);

/// The element type of a tensor type (the storage type for quantised
/// types is not unwrapped).
mlir::Type getElementType(mlir::Value v);

/// Rounds \p x to a value \p elementType holds: identity for f32, nearest
/// even for f16 / bf16 (isa numerics), round half away from zero and
/// saturation for integers and the storage of !quant.uniform types.
float roundToType(float x, mlir::Type elementType);
/// roundToType over a buffer.
void roundBuffer(std::vector<float> &data, mlir::Type elementType);

/// The value that aliases the memory of \p v, following tpu.Reshape chains
/// to the producer that owns the buffer.
mlir::Value getMemoryRoot(mlir::Value v);

} // namespace tpuc::tpu

#endif // TPUC_DIALECT_TPU_IR_TPUOPS_H
