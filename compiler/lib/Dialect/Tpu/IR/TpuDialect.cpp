//===- TpuDialect.cpp - The tpu dialect and its shared helpers ------------===//
#include "TpuCommon.h"

#include "tpu/isa/Numerics.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

#include <cmath>

using namespace mlir;
using namespace tpuc::tpu;

#include "tpuc/Dialect/Tpu/IR/TpuDialect.cpp.inc"

void TpuDialect::initialize() {
  registerCoreOps();
  registerNNOps();
  registerElementwiseOps();
  registerShapeOps();
}

namespace tpuc::tpu {

bool isKnownLayout(llvm::StringRef layout) {
  return layout == kLayoutCompact || layout == kLayoutConv1IC ||
         layout == kLayoutConv32IC || layout == kLayoutConv64IC ||
         layout == kLayoutDepthwise || layout == kLayoutDeconv ||
         layout == kLayoutInt8Records || layout == kLayoutTransposed;
}

std::optional<uint64_t> getAddress(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  Attribute attr = op->getAttr(kAddrAttr);
  if (auto single = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<uint64_t>(single.getInt());
  if (auto many = dyn_cast_or_null<ArrayAttr>(attr)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (i < many.size())
      if (auto entry = dyn_cast<IntegerAttr>(many[i]))
        return static_cast<uint64_t>(entry.getInt());
  }
  return std::nullopt;
}

void setAddress(Value v, uint64_t addr) {
  Operation *op = v.getDefiningOp();
  assert(op && "block arguments have no address");
  Builder b(op->getContext());
  auto value = b.getI64IntegerAttr(static_cast<int64_t>(addr));
  if (op->getNumResults() == 1) {
    op->setAttr(kAddrAttr, value);
    return;
  }
  SmallVector<Attribute> entries(op->getNumResults(), b.getI64IntegerAttr(0));
  if (auto old = op->getAttrOfType<ArrayAttr>(kAddrAttr))
    for (unsigned i = 0; i < old.size() && i < entries.size(); ++i)
      entries[i] = old[i];
  entries[cast<OpResult>(v).getResultNumber()] = value;
  op->setAttr(kAddrAttr, b.getArrayAttr(entries));
}

Type getElementType(Value v) {
  if (auto shaped = dyn_cast<ShapedType>(v.getType()))
    return shaped.getElementType();
  return v.getType();
}

float roundToType(float x, Type elementType) {
  using namespace ::tpu::isa;
  if (elementType.isF32())
    return x;
  if (elementType.isF16())
    return roundToPrec(x, Prec::Fp16);
  if (elementType.isBF16())
    return roundToPrec(x, Prec::Bf16);
  unsigned width = 0;
  bool isSigned = true;
  if (auto q = dyn_cast<quant::QuantizedType>(elementType)) {
    if (std::isnan(x))
      return 0.0f;
    double lo = double(q.getStorageTypeMin()),
           hi = double(q.getStorageTypeMax());
    return static_cast<float>(
        std::clamp(double(roundToInt(x, RoundMode::HalfAwayFromZero)), lo, hi));
  }
  if (auto i = dyn_cast<IntegerType>(elementType)) {
    width = i.getWidth();
    isSigned = !i.isUnsigned();
  }
  if (width == 0 || width > 32)
    return x;
  if (std::isnan(x))
    return 0.0f;
  double lo = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double hi =
      isSigned ? std::ldexp(1.0, width - 1) - 1 : std::ldexp(1.0, width) - 1;
  return static_cast<float>(
      std::clamp(double(roundToInt(x, RoundMode::HalfAwayFromZero)), lo, hi));
}

void roundBuffer(std::vector<float> &data, Type elementType) {
  if (elementType.isF32())
    return;
  for (float &x : data)
    x = roundToType(x, elementType);
}

Value getMemoryRoot(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

} // namespace tpuc::tpu
