//===- CodegenContext.cpp - Helpers of the BM1684X op codegen ------------===//
//
// See CodegenContext.h; also the element type -> precision / data type
// mappings declared in Codegen.h, and the generated interface definitions.
//
//===----------------------------------------------------------------------===//
#include "CodegenContext.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"

#include "mlir/Dialect/Quant/QuantTypes.h"

using namespace mlir;
namespace isa = ::tpu::isa;
namespace backend = ::tpu::backend;

#include "tpuc/Target/BM1684X/CodegenInterface.cpp.inc"

namespace tpuc::bm1684x {

std::optional<isa::Prec> getPrec(Type t) {
  if (auto q = dyn_cast<quant::QuantizedType>(t))
    t = q.getStorageType();
  if (t.isF32())
    return isa::Prec::Fp32;
  if (t.isF16())
    return isa::Prec::Fp16;
  if (t.isBF16())
    return isa::Prec::Bf16;
  if (auto i = dyn_cast<IntegerType>(t)) {
    switch (i.getWidth()) {
    case 4:
      return isa::Prec::Int4;
    case 8:
      return isa::Prec::Int8;
    case 16:
      return isa::Prec::Int16;
    case 32:
      return isa::Prec::Int32;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool isSignedType(Type t) {
  if (auto q = dyn_cast<quant::QuantizedType>(t))
    return q.isSigned();
  if (auto i = dyn_cast<IntegerType>(t))
    return !i.isUnsigned();
  return true;
}

std::optional<isa::DataType> getDataType(Type t) {
  std::optional<isa::Prec> p = getPrec(t);
  if (!p)
    return std::nullopt;
  bool s = isSignedType(t);
  switch (*p) {
  case isa::Prec::Fp32:
    return isa::DataType::F32;
  case isa::Prec::Fp16:
    return isa::DataType::F16;
  case isa::Prec::Bf16:
    return isa::DataType::BF16;
  case isa::Prec::Int8:
    return s ? isa::DataType::Int8 : isa::DataType::UInt8;
  case isa::Prec::Int16:
    return s ? isa::DataType::Int16 : isa::DataType::UInt16;
  case isa::Prec::Int32:
    return s ? isa::DataType::Int32 : isa::DataType::UInt32;
  case isa::Prec::Int4:
    return s ? isa::DataType::Int4 : isa::DataType::UInt4;
  }
  return std::nullopt;
}

backend::GTensor
CodegenContext::tensor(Operation *user, Value v,
                       std::optional<std::vector<int64_t>> shape) const {
  std::optional<uint64_t> addr = tpu::getAddress(v);
  if (!addr && lenient) {
    // A distinct place in DDR per value, so that cost estimates see the
    // value's loads and stores as DDR traffic (below gmem_base an address
    // is not DDR).
    auto [it, inserted] = synthetic.try_emplace(v, nextSynthetic);
    if (inserted) {
      uint64_t bytes = tpu::getDeviceBytes(v, em.chip());
      nextSynthetic += (bytes + 4095) / 4096 * 4096 + 4096;
    }
    addr = it->second;
  }
  if (!addr)
    throw CodegenError{user, "operand '" + top::getTensorName(v) +
                                 "' has no device address (run "
                                 "--tpu-address-assign)"};
  Type et = tpu::getElementType(v);
  std::optional<isa::Prec> prec = getPrec(et);
  if (!prec)
    throw CodegenError{user, "no BM1684X precision for element type"};
  backend::GTensor t;
  t.addr = *addr;
  t.prec = *prec;
  t.isSigned = isSignedType(et);
  t.shape = shape ? *shape : module::getShape(v);
  return t;
}

std::optional<uint64_t> CodegenContext::optionalAddr(Operation *user,
                                                     Value v) const {
  if (top::isNone(v))
    return std::nullopt;
  return tensor(user, v).addr;
}

std::optional<float> CodegenContext::scalarWeight(Value v) const {
  auto w = v.getDefiningOp<tpu::WeightOp>();
  if (!w || module::getNumElements(v) != 1)
    return std::nullopt;
  const ::tpu::npz::Array *array = findWeight(module, w.getName());
  if (!array || array->numel() != 1)
    return std::nullopt;
  return tpu::roundToType(array->toFloat()[0], tpu::getElementType(v));
}

std::vector<int64_t> nchw(Value v) {
  std::vector<int64_t> s = module::getShape(v);
  if (s.size() == 3)
    return {s[0], s[1], 1, s[2]};
  return s;
}

backend::Activation fusedActivation(bool doRelu, double limit) {
  backend::Activation a;
  if (!doRelu)
    return a;
  if (limit > 0) {
    a.kind = backend::UnaryKind::Clip;
    a.alpha = 0.0f;
    a.beta = static_cast<float>(limit);
  } else {
    a.kind = backend::UnaryKind::Relu;
  }
  return a;
}

} // namespace tpuc::bm1684x
