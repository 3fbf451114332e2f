//===- Lowering.h - Shared state of the top-to-tpu lowering -------*- C++
//-*-===//
//
// Private to lib/Conversion/TopToTpu. The pass walks the function in program
// order and calls, for every top op, the lowering registered under its name
// (one file per op family registers its ops). A lowering builds the tpu
// op(s) before the top op, replaces the top op's results and erases it.
// Each op is lowered in its own mode (the module's, or the quantize
// table's); getMode() / actType() answer for the op being lowered.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_CONVERSION_TOPTOTPU_LOWERING_H
#define TPUC_LIB_CONVERSION_TOPTOTPU_LOWERING_H

#include "tpuc/Conversion/TopToTpu/TopToTpu.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Support/Module.h"

#include "tpuc/Support/CaliTable.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace tpuc::lowering {

using Shape = std::vector<int64_t>;

class Lowering {
public:
  Lowering(mlir::ModuleOp module, QuantMode mode,
           const CaliTable *cali = nullptr);

  mlir::ModuleOp getModule() const { return module; }
  /// The mode of the op being lowered.
  QuantMode getMode() const { return mode; }
  /// Switches to the mode of the next op to lower.
  void setMode(QuantMode m) { mode = m; }
  mlir::MLIRContext *getContext() const { return context; }

  /// The element type activations have in this mode (f32, f16, bf16), or
  /// the type setActTypeOverride gave (INT8 data movement: its input's
  /// quantised type).
  mlir::Type actType() const;
  /// While set, actType() answers \p t (null: the mode's type again).
  void setActTypeOverride(mlir::Type t) { actOverride = t; }
  bool hasActTypeOverride() const { return bool(actOverride); }
  /// The activation element type of \p m.
  mlir::Type actType(QuantMode m) const;
  /// A ranked tensor of \p shape and \p elementType (default: actType()).
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type elementType = {}) const;
  /// \p v's shape with the activation element type.
  mlir::RankedTensorType actTypeOf(mlir::Value v) const;

  /// True if \p v is produced by top.Weight.
  static bool isWeight(mlir::Value v);
  /// The tpu.Weight standing for the top.Weight \p v, of \p elementType and
  /// \p layout (created once per combination, next to the top.Weight). A
  /// non-empty \p shape (same element count) replaces v's shape, e.g. the
  /// (oc, ic, 1, kw) filter of a 1-D conv.
  mlir::Value weight(mlir::Value v, mlir::Type elementType,
                     llvm::StringRef layout = tpu::kLayoutCompact,
                     llvm::ArrayRef<int64_t> shape = {});
  /// An activation operand in the mode's type: weights become tpu.Weight
  /// (compact), values of another element type get a tpu.Cast.
  mlir::Value activation(mlir::OpBuilder &b, mlir::Value v);
  /// \p v converted to \p elementType: one tpu.Cast per value and type,
  /// named <v's name>_<type> and placed right after v's definition so that
  /// it serves every later reader.
  mlir::Value castTo(mlir::Value v, mlir::Type elementType);
  /// The cast castTo(v, elementType) made, or null.
  mlir::Value findCast(mlir::Value v, mlir::Type elementType) const;
  /// A new weight with \p data (float32, logical order) stored in the
  /// module's in-memory weight store under a fresh name based on \p base.
  mlir::Value newWeight(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::StringRef base, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<float> data, mlir::Type elementType);
  /// The float32 data of the top.Weight \p v (throws tpu::Error when it
  /// cannot be read).
  std::vector<float> weightData(mlir::Value v) const;

  /// Emits "<op> '<name>' cannot be lowered to <mode>: <why>" and fails.
  mlir::LogicalResult unsupported(mlir::Operation *op,
                                  const llvm::Twine &why) const;

  //===--------------------------------------------------------------------===//
  // INT8 (LowerInt8.cpp)
  //===--------------------------------------------------------------------===//

  /// Drops the casts remembered for \p values (the results of a top op
  /// the lowering replaced and erased): a later op's result may be
  /// allocated where they were and must not inherit their casts.
  void forget(llvm::ArrayRef<mlir::Value> values);

  const CaliTable *getCaliTable() const { return cali; }
  /// The model carries its own quantisation (a quantised TFLite model, no
  /// --calibration-table): INT8 keeps its scales, zero points and weight
  /// codes and follows TFLite's integer arithmetic.
  bool tfliteArithmetic() const { return cali && cali->hasModelQuant(); }
  /// The model's own quantisation of the top value or weight \p v, or
  /// null.
  const ModelQuant *modelQuant(mlir::Value v) const;
  void setAsymmetric(bool on) { asymmetric = on; }
  /// The int8 / uint8 type of the top value \p v from the calibration
  /// table (symmetric: scale threshold / 127, or threshold / 255 and uint8
  /// when the calibrated minimum is >= 0 and no reader needs it signed);
  /// null when the table has no entry for it. Decided once per value.
  mlir::quant::UniformQuantizedType quantType(mlir::Value v);
  /// \p v as an int8 operand: a quantised value as it is, any other one
  /// through a quantising tpu.Cast to quantType(v) (null if v has no
  /// table entry).
  mlir::Value int8Operand(mlir::Value v);
  /// A new weight holding int32 \p data (exact, unlike newWeight's
  /// float32).
  mlir::Value newIntWeight(mlir::OpBuilder &b, mlir::Location loc,
                           llvm::StringRef base, llvm::ArrayRef<int64_t> shape,
                           llvm::ArrayRef<int32_t> data,
                           mlir::Type elementType);

  /// An INT8 lookup table's result: the int8 value the first table of its
  /// chain reads and the chain's real result for each of its 256 raw bytes
  /// (lowerLutInt8 fuses a table into its only reader's, so that a chain
  /// of element-wise functions rounds once).
  struct LutChain {
    mlir::Value source;
    std::vector<double> values;
  };
  llvm::DenseMap<mlir::Value, LutChain> &lutChains() { return chains; }

private:
  mlir::ModuleOp module;
  mlir::MLIRContext *context;
  QuantMode mode;
  const CaliTable *cali = nullptr;
  bool asymmetric = false;
  mlir::Type actOverride;
  /// By tensor name: values are replaced (and their memory reused) as the
  /// lowering goes, names stay.
  llvm::StringMap<mlir::quant::UniformQuantizedType> qtypes;
  /// Unique weight name from \p base (IR and store checked).
  std::string freshWeightName(llvm::StringRef base);
  std::map<std::tuple<mlir::Operation *, const void *, std::string, Shape>,
           mlir::Value>
      weights;
  llvm::DenseMap<std::pair<mlir::Value, mlir::Type>, mlir::Value> casts;
  llvm::DenseMap<mlir::Value, LutChain> chains;
};

/// "f32", "f16", "bf16": the suffix of a value's name in that type.
std::string typeSuffix(mlir::Type elementType);

/// Lowers one op; on success the op has been replaced and erased.
using LowerFn = mlir::LogicalResult (*)(mlir::Operation *op, Lowering &l);
/// Op name ("top.Conv") -> lowering.
using LoweringTable = llvm::StringMap<LowerFn>;

/// An INT8 lowering: true when it lowered the op, false when the op has no
/// INT8 form in this configuration (it is then lowered in the fallback
/// float mode; `why` says why), failure on an error.
using Int8LowerFn = mlir::FailureOr<bool> (*)(mlir::Operation *op,
                                              Lowering &l, std::string &why);
using Int8LoweringTable = llvm::StringMap<Int8LowerFn>;
void registerInt8Lowerings(Int8LoweringTable &table);

void registerNNLowerings(LoweringTable &table);

/// An inference BatchNorm as y = x * scale + shift per channel: scale =
/// gamma / sqrt(var + eps), shift = beta - mean * scale (fp32, as every
/// mode uses them); none with `why` when its parameters are not weights.
struct BatchNormAffine {
  std::vector<float> scale, shift;
};
std::optional<BatchNormAffine> batchNormAffine(top::BatchNormOp op, Lowering &l,
                                               std::string &why);
void registerElementwiseLowerings(LoweringTable &table);
void registerShapeLowerings(LoweringTable &table);

using module::normalizeAxis;
using module::toI64;
/// The framework name of \p op (its `name` attribute).
llvm::StringRef nameOf(mlir::Operation *op);

/// Replaces \p op's results by \p values and erases it.
void replaceOp(mlir::Operation *op, mlir::ValueRange values);

} // namespace tpuc::lowering

#endif // TPUC_LIB_CONVERSION_TOPTOTPU_LOWERING_H
