//===- ImportContext.cpp - State shared by the ONNX op handlers -----------===//

#include "ImportContext.h"

#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tpuc::frontend {

namespace {

/// The npz array a constant is stored as: float32 for the float types, the
/// ONNX type itself for integer data (so indices and shapes stay exact in
/// the weight file).
tpu::npz::Array toNpzArray(const ConstTensor &t) {
  using tpu::npz::Array;
  const Shape &shape = t.getShape();
  if (t.isFloat())
    return Array::from<float>(shape, t.toFloats());
  std::vector<int64_t> v = t.toInts();
  auto narrow = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> out(v.begin(), v.end());
    return Array::from<T>(shape, out);
  };
  switch (t.getType()) {
  case elem::UInt8:
    return narrow(uint8_t());
  case elem::Int8:
    return narrow(int8_t());
  case elem::UInt16:
    return narrow(uint16_t());
  case elem::Int16:
    return narrow(int16_t());
  case elem::Int32:
    return narrow(int32_t());
  case elem::UInt32:
    return narrow(uint32_t());
  case elem::UInt64:
    return narrow(uint64_t());
  case elem::Bool: {
    Array a(tpu::npz::DType::Bool, shape);
    for (size_t k = 0; k < v.size(); ++k)
      a.data[k] = v[k] != 0;
    return a;
  }
  default:
    return Array::from<int64_t>(shape, v);
  }
}

} // namespace

ImportContext::ImportContext(mlir::OpBuilder &builder, std::string path,
                             int64_t opset, std::string baseDir)
    : builder(builder), path(std::move(path)), opset(opset),
      baseDir(std::move(baseDir)) {}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

void ImportContext::define(const std::string &name, TensorEntry entry) {
  tensors[name] = std::move(entry);
}

const TensorEntry *ImportContext::lookup(llvm::StringRef name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

const TensorEntry &ImportContext::entryOf(const onnx::NodeProto &node,
                                          unsigned i) const {
  if (!hasInput(node, i))
    fail(node, "input " + llvm::Twine(i) + " is required but absent");
  const TensorEntry *e = lookup(node.input(i));
  if (!e)
    fail(node, "input '" + node.input(i) +
                   "' is not a graph input, initialiser or output of an "
                   "earlier node");
  return *e;
}

bool ImportContext::hasInput(const onnx::NodeProto &node, unsigned i) const {
  return i < numInputs(node) && !node.input(i).empty();
}

bool ImportContext::isConstant(const onnx::NodeProto &node, unsigned i) const {
  if (!hasInput(node, i))
    return false;
  const TensorEntry &e = entryOf(node, i);
  return e.constant || e.proto;
}

bool ImportContext::allConstant(const onnx::NodeProto &node) const {
  for (unsigned i = 0, e = numInputs(node); i < e; ++i)
    if (hasInput(node, i) && !isConstant(node, i))
      return false;
  return true;
}

const ConstTensor &ImportContext::getConstant(const onnx::NodeProto &node,
                                              unsigned i,
                                              llvm::StringRef what) const {
  if (!hasInput(node, i))
    fail(node, "input '" + what + "' is required but absent");
  const TensorEntry &e = entryOf(node, i);
  if (!e.constant && e.proto)
    e.constant = std::make_shared<ConstTensor>(constTensorFromProto(
        *e.proto, baseDir, path + ": initializer '" + e.proto->name() + "'"));
  if (!e.constant)
    fail(node, "input '" + what + "' ('" + node.input(i) +
                   "') must be a constant (an initializer, a Constant, or "
                   "computable from input shapes), but it depends on "
                   "run-time data");
  return *e.constant;
}

mlir::Value ImportContext::valueOf(llvm::StringRef name) {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw tpu::Error(path + ": tensor '" + name.str() + "' is never defined");
  TensorEntry &e = it->second;
  if (e.value)
    return e.value;
  std::optional<tpu::npz::Array> array;
  if (!e.constant && e.proto) {
    std::string what = path + ": initializer '" + e.proto->name() + "'";
    array = float32ArrayFromProto(*e.proto, baseDir, what);
    if (!array)
      e.constant = std::make_shared<ConstTensor>(
          constTensorFromProto(*e.proto, baseDir, what));
  }
  if (!array && !e.constant)
    throw tpu::Error(path + ": tensor '" + name.str() + "' has no value");
  usedNames.insert(name);
  e.value = tpuc::createWeight(
                builder, mlir::NameLoc::get(builder.getStringAttr(name)), name,
                array ? std::move(*array) : toNpzArray(*e.constant))
                .getResult();
  return e.value;
}

mlir::Value ImportContext::getValue(const onnx::NodeProto &node, unsigned i) {
  if (!hasInput(node, i))
    return none;
  entryOf(node, i);
  return valueOf(node.input(i));
}

Shape ImportContext::getShape(const onnx::NodeProto &node, unsigned i) const {
  const TensorEntry &e = entryOf(node, i);
  if (e.constant)
    return e.constant->getShape();
  if (e.proto)
    return Shape(e.proto->dims().begin(), e.proto->dims().end());
  return shapeOf(e.value);
}

ElemType ImportContext::getType(const onnx::NodeProto &node, unsigned i) const {
  return entryOf(node, i).type;
}

bool ImportContext::isOutputUsed(const onnx::NodeProto &node,
                                 unsigned i) const {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return false;
  auto it = useCounts.find(node.output(i));
  return it != useCounts.end() && it->second > 0;
}

void ImportContext::setValue(const onnx::NodeProto &node, unsigned i,
                             mlir::Value value, ElemType type) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  TensorEntry e;
  e.value = value;
  e.type = type;
  tensors[node.output(i)] = std::move(e);
}

void ImportContext::setConstant(const onnx::NodeProto &node, unsigned i,
                                ConstTensor value) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  TensorEntry e;
  e.type = value.getType();
  e.constant = std::make_shared<ConstTensor>(std::move(value));
  tensors[node.output(i)] = std::move(e);
}

Shape ImportContext::shapeOf(mlir::Value v) {
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  if (!type)
    return {};
  return Shape(type.getShape().begin(), type.getShape().end());
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *
ImportContext::findAttr(const onnx::NodeProto &node,
                        llvm::StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t ImportContext::getAttrInt(const onnx::NodeProto &node,
                                  llvm::StringRef name,
                                  int64_t defaultValue) const {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return defaultValue;
  if (a->type() != onnx::AttributeProto::INT)
    failAttr(node, name, "expected an int attribute");
  return a->i();
}

float ImportContext::getAttrFloat(const onnx::NodeProto &node,
                                  llvm::StringRef name,
                                  float defaultValue) const {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return defaultValue;
  if (a->type() == onnx::AttributeProto::INT)
    return static_cast<float>(a->i());
  if (a->type() != onnx::AttributeProto::FLOAT)
    failAttr(node, name, "expected a float attribute");
  return a->f();
}

std::string ImportContext::getAttrString(const onnx::NodeProto &node,
                                         llvm::StringRef name,
                                         llvm::StringRef defaultValue) const {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return defaultValue.str();
  if (a->type() != onnx::AttributeProto::STRING)
    failAttr(node, name, "expected a string attribute");
  return a->s();
}

std::vector<int64_t> ImportContext::getAttrInts(const onnx::NodeProto &node,
                                                llvm::StringRef name) const {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return {};
  if (a->type() == onnx::AttributeProto::INT)
    return {a->i()};
  if (a->type() != onnx::AttributeProto::INTS)
    failAttr(node, name, "expected an ints attribute");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> ImportContext::getAttrFloats(const onnx::NodeProto &node,
                                                llvm::StringRef name) const {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return {};
  if (a->type() == onnx::AttributeProto::FLOAT)
    return {a->f()};
  if (a->type() != onnx::AttributeProto::FLOATS)
    failAttr(node, name, "expected a floats attribute");
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string ImportContext::nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  if (node.output_size() > 0)
    return node.output(0);
  return "<unnamed>";
}

void ImportContext::fail(const onnx::NodeProto &node,
                         const llvm::Twine &message) const {
  throw tpu::Error(path + ": node '" + nodeName(node) + "' (" + node.op_type() +
                   "): " + message.str());
}

void ImportContext::failAttr(const onnx::NodeProto &node, llvm::StringRef attr,
                             const llvm::Twine &message) const {
  fail(node, "attribute '" + attr + "': " + message);
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

double ImportContext::floatAttrValue(float f) {
  // The shortest decimal that reads back as the same float (at most 9
  // significant digits, the float32 round-trip bound).
  constexpr int kMaxFloatDigits = 9;
  char buf[32];
  for (int digits = 1; digits <= kMaxFloatDigits; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(f));
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return f;
}

std::string ImportContext::uniqueName(llvm::StringRef base) {
  std::string name = base.str();
  for (unsigned k = 1; usedNames.contains(name); ++k)
    name = (base + "_" + llvm::Twine(k)).str();
  usedNames.insert(name);
  return name;
}

mlir::Operation *ImportContext::createOp(
    llvm::StringRef opName, const onnx::NodeProto &node,
    mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs,
    llvm::StringRef suffix, mlir::TypeRange resultTypes, unsigned numResults) {
  std::string base = node.output_size() > 0 && !node.output(0).empty()
                         ? node.output(0)
                         : nodeName(node);
  std::string name;
  if (suffix.empty()) {
    name = base;
    usedNames.insert(name);
  } else {
    name = uniqueName(base + "_" + suffix.str());
  }
  mlir::MLIRContext *ctx = builder.getContext();
  mlir::OperationState state(mlir::NameLoc::get(builder.getStringAttr(name)),
                             opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addAttribute("name", builder.getStringAttr(name));
  if (resultTypes.empty()) {
    auto unranked = mlir::UnrankedTensorType::get(mlir::Float32Type::get(ctx));
    for (unsigned k = 0; k < numResults; ++k)
      state.addTypes(unranked);
  } else {
    state.addTypes(resultTypes);
  }
  mlir::Operation *op = builder.create(state);

  std::string diagnostics;
  {
    mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
      if (!diagnostics.empty())
        diagnostics += "; ";
      diagnostics += d.str();
      return mlir::success();
    });
    auto shapeOp = mlir::dyn_cast<ShapeInterface>(op);
    if (shapeOp && mlir::failed(shapeOp.inferShapes()))
      fail(node,
           "cannot build " + opName + ": " +
               (diagnostics.empty() ? "shape inference failed" : diagnostics));
  }
  for (mlir::Value r : op->getResults())
    if (!mlir::isa<mlir::RankedTensorType>(r.getType()))
      fail(node, "shape inference left " + opName + " without a shape");
  return op;
}

mlir::Value ImportContext::getValueReshaped(const onnx::NodeProto &node,
                                            unsigned i,
                                            llvm::ArrayRef<int64_t> shape,
                                            llvm::StringRef suffix) {
  if (isConstant(node, i)) {
    const ConstTensor &c = getConstant(node, i, node.input(i));
    if (c.getShape() == Shape(shape.begin(), shape.end()))
      return getValue(node, i);
    return createWeight(node.input(i) + "_" + suffix.str(),
                        c.reshaped(Shape(shape.begin(), shape.end())));
  }
  return reshape(node, getValue(node, i), shape, suffix);
}

int64_t ImportContext::normalizeAxis(const onnx::NodeProto &node, int64_t axis,
                                     int64_t rank, llvm::StringRef what) const {
  if (axis < -rank || axis >= rank)
    fail(node, what + " " + llvm::Twine(axis) + " is out of range for rank " +
                   llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> ImportContext::normalizeAxes(const onnx::NodeProto &node,
                                                  llvm::ArrayRef<int64_t> axes,
                                                  int64_t rank,
                                                  llvm::StringRef what) const {
  std::vector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(normalizeAxis(node, a, rank, what));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail(node, what + " has a repeated axis");
  return out;
}

void ImportContext::checkRuntimeArithmetic(const onnx::NodeProto &node,
                                           ElemType type) const {
  switch (type) {
  case elem::UInt8:
  case elem::Int8:
  case elem::UInt16:
  case elem::Int16:
    fail(node, "arithmetic on run-time " + elemTypeName(type) +
                   " tensors is not supported: top computes in float32 and "
                   "cannot reproduce integer wrap-around");
  default:
    break;
  }
}

mlir::Value ImportContext::createWeight(llvm::StringRef base,
                                        const ConstTensor &data) {
  std::string name = uniqueName(base);
  return tpuc::createWeight(builder,
                            mlir::NameLoc::get(builder.getStringAttr(name)),
                            name, toNpzArray(data))
      .getResult();
}

mlir::Value ImportContext::createScalarWeight(const onnx::NodeProto &node,
                                              llvm::StringRef suffix,
                                              double value,
                                              llvm::ArrayRef<int64_t> shape) {
  std::string base = node.output_size() > 0 ? node.output(0) : nodeName(node);
  return createWeight(base + "_" + suffix.str(),
                      ConstTensor::filled(shape, value, elem::Float));
}

mlir::Value ImportContext::reshape(const onnx::NodeProto &node, mlir::Value v,
                                   llvm::ArrayRef<int64_t> shape,
                                   llvm::StringRef suffix) {
  if (shapeOf(v) == Shape(shape.begin(), shape.end()))
    return v;
  return emit<top::ReshapeOp>(node, v, {named("shape", i64ArrayAttr(shape))},
                              suffix);
}

} // namespace tpuc::frontend
