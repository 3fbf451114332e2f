//===- Int8.h - The roundings of the INT8 ops ------------------*- C++ -*-===//
//
// Shared by the tpu interpreter and the BM1684X codegen so that both round
// alike (compiler/docs/design.md "INT8"). Kept out of TpuOps.h, which must
// not pull the isa library's `tpu` namespace into every file of the dialect.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_DIALECT_TPU_IR_INT8_H
#define TPUC_DIALECT_TPU_IR_INT8_H

#include "tpu/isa/Types.h"

namespace tpuc::tpu {

/// Every INT8 requantisation (conv, pool, add) rounds half up, TPU-MLIR's
/// default for BM1684X convolutions (isa/docs/bm1684x.md 8.5).
inline constexpr ::tpu::isa::RoundMode kInt8RoundMode =
    ::tpu::isa::RoundMode::HalfUp;
/// Float-to-int8 casts round half away from zero (TPU-MLIR's quantise).
inline constexpr ::tpu::isa::RoundMode kQuantizeRoundMode =
    ::tpu::isa::RoundMode::HalfAwayFromZero;

/// TFLite's requantisation as two RQ1 steps (compiler/docs/design.md,
/// "TFLite arithmetic"): its rounding doubling high multiply rounds half up,
/// its rounding divide by a power of two half away from zero.
inline constexpr ::tpu::isa::RoundMode kTfliteRoundModes[2] = {
    ::tpu::isa::RoundMode::HalfUp, ::tpu::isa::RoundMode::HalfAwayFromZero};

/// The attribute of an INT8 op lowered with TFLite's arithmetic (a model
/// that carries its own quantisation): quant_multiplier / quant_rshift
/// then hold the two steps of each requantisation.
inline constexpr char kTfliteArithmeticAttr[] = "tflite_arithmetic";

} // namespace tpuc::tpu

#endif // TPUC_DIALECT_TPU_IR_INT8_H
