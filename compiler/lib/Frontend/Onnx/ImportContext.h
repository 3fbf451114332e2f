//===- ImportContext.h - State shared by the ONNX op handlers -----*- C++
//-*-===//
//
// The importer walks the graph in node order. Every ONNX tensor name maps to
// a TensorEntry: either an SSA value of the top module (a float tensor the
// model computes at run time) or a ConstTensor (known at import time). Each
// handler reads its node's inputs through ImportContext, folds the node when
// everything it needs is constant, and otherwise emits top ops.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_LIB_FRONTEND_ONNX_IMPORTCONTEXT_H
#define TPUC_LIB_FRONTEND_ONNX_IMPORTCONTEXT_H

#include "ConstTensor.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tpuc::frontend {

/// What an ONNX tensor name stands for during import.
struct TensorEntry {
  /// The run-time value (null for constants not materialised yet).
  mlir::Value value;
  /// The data when known at import time (decoded from `proto` on first
  /// use for initialisers).
  mutable std::shared_ptr<const ConstTensor> constant;
  /// The initialiser holding the data, if not decoded yet.
  const onnx::TensorProto *proto = nullptr;
  /// ONNX element type.
  ElemType type = elem::Float;
};

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, std::string path, int64_t opset,
                std::string baseDir);

  //===--------------------------------------------------------------------===//
  // Node inputs
  //===--------------------------------------------------------------------===//

  /// The model's opset of the default domain.
  int64_t getOpset() const { return opset; }
  const std::string &getBaseDir() const { return baseDir; }
  mlir::OpBuilder &getBuilder() { return builder; }

  /// Number of inputs of \p node (absent trailing ones included).
  static unsigned numInputs(const onnx::NodeProto &node) {
    return static_cast<unsigned>(node.input_size());
  }
  /// True if input \p i is given (present with a non-empty name).
  bool hasInput(const onnx::NodeProto &node, unsigned i) const;
  /// True if input \p i is present and known at import time.
  bool isConstant(const onnx::NodeProto &node, unsigned i) const;
  /// True if every present input is known at import time.
  bool allConstant(const onnx::NodeProto &node) const;
  /// The data of input \p i; fails naming \p what unless it is known.
  const ConstTensor &getConstant(const onnx::NodeProto &node, unsigned i,
                                 llvm::StringRef what) const;
  /// The SSA value of input \p i (a constant is materialised as top.Weight);
  /// top.None for an absent input.
  mlir::Value getValue(const onnx::NodeProto &node, unsigned i);
  /// Shape of input \p i.
  Shape getShape(const onnx::NodeProto &node, unsigned i) const;
  int64_t getRank(const onnx::NodeProto &node, unsigned i) const {
    return static_cast<int64_t>(getShape(node, i).size());
  }
  /// ONNX element type of input \p i.
  ElemType getType(const onnx::NodeProto &node, unsigned i) const;

  //===--------------------------------------------------------------------===//
  // Node outputs
  //===--------------------------------------------------------------------===//

  /// True if output \p i exists and some node or the graph uses it.
  bool isOutputUsed(const onnx::NodeProto &node, unsigned i) const;
  /// Binds output \p i to a run-time value / a constant.
  void setValue(const onnx::NodeProto &node, unsigned i, mlir::Value value,
                ElemType type);
  void setConstant(const onnx::NodeProto &node, unsigned i, ConstTensor value);

  //===--------------------------------------------------------------------===//
  // Attributes
  //===--------------------------------------------------------------------===//

  const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                       llvm::StringRef name) const;
  bool hasAttr(const onnx::NodeProto &node, llvm::StringRef name) const {
    return findAttr(node, name) != nullptr;
  }
  int64_t getAttrInt(const onnx::NodeProto &node, llvm::StringRef name,
                     int64_t defaultValue) const;
  float getAttrFloat(const onnx::NodeProto &node, llvm::StringRef name,
                     float defaultValue) const;
  std::string getAttrString(const onnx::NodeProto &node, llvm::StringRef name,
                            llvm::StringRef defaultValue) const;
  std::vector<int64_t> getAttrInts(const onnx::NodeProto &node,
                                   llvm::StringRef name) const;
  std::vector<float> getAttrFloats(const onnx::NodeProto &node,
                                   llvm::StringRef name) const;

  //===--------------------------------------------------------------------===//
  // Errors
  //===--------------------------------------------------------------------===//

  /// Throws tpu::Error "<file>: node '<name>' (<OpType>): <message>".
  [[noreturn]] void fail(const onnx::NodeProto &node,
                         const llvm::Twine &message) const;
  /// fail() for an attribute value we cannot honour.
  [[noreturn]] void failAttr(const onnx::NodeProto &node, llvm::StringRef attr,
                             const llvm::Twine &message) const;
  /// The node's name for messages (its first output if it has none).
  static std::string nodeName(const onnx::NodeProto &node);
  const std::string &getPath() const { return path; }

  //===--------------------------------------------------------------------===//
  // Building top ops
  //===--------------------------------------------------------------------===//

  /// An f32 attribute value as the double of its shortest decimal form
  /// (0.2f becomes 0.2, not 0.20000000298023224).
  static double floatAttrValue(float f);
  mlir::IntegerAttr i64Attr(int64_t v) { return builder.getI64IntegerAttr(v); }
  mlir::FloatAttr f64Attr(double v) { return builder.getF64FloatAttr(v); }
  mlir::ArrayAttr i64ArrayAttr(llvm::ArrayRef<int64_t> v) {
    return builder.getI64ArrayAttr(v);
  }
  mlir::StringAttr strAttr(llvm::StringRef v) {
    return builder.getStringAttr(v);
  }
  mlir::BoolAttr boolAttr(bool v) { return builder.getBoolAttr(v); }

  /// The top.None value of the function.
  mlir::Value getNone() const { return none; }

  /// Creates top op \p OpTy for \p node named after its first output (plus
  /// "_<suffix>" for helper ops of a decomposition), with the given operands
  /// and attributes, then infers its result types (or uses \p resultTypes).
  /// Fails naming the node if shape inference rejects it.
  template <typename OpTy>
  mlir::Operation *
  create(const onnx::NodeProto &node, mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attrs,
         llvm::StringRef suffix = "", mlir::TypeRange resultTypes = {},
         unsigned numResults = 1) {
    return createOp(OpTy::getOperationName(), node, operands, attrs, suffix,
                    resultTypes, numResults);
  }
  /// create() for single-result ops, returning the result.
  template <typename OpTy>
  mlir::Value emit(const onnx::NodeProto &node, mlir::ValueRange operands,
                   llvm::ArrayRef<mlir::NamedAttribute> attrs = {},
                   llvm::StringRef suffix = "",
                   mlir::Type resultType = nullptr) {
    mlir::Operation *op = resultType
                              ? create<OpTy>(node, operands, attrs, suffix,
                                             mlir::TypeRange(resultType))
                              : create<OpTy>(node, operands, attrs, suffix);
    return op->getResult(0);
  }
  /// A named attribute.
  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value) {
    return builder.getNamedAttr(name, value);
  }

  /// A new top.Weight holding \p data, named \p base or a unique variant.
  mlir::Value createWeight(llvm::StringRef base, const ConstTensor &data);
  /// A weight with one value (a scalar of shape [1]... or \p shape).
  mlir::Value createScalarWeight(const onnx::NodeProto &node,
                                 llvm::StringRef suffix, double value,
                                 llvm::ArrayRef<int64_t> shape = {1});
  /// Reshapes \p v to \p shape (returns \p v if it already has it).
  mlir::Value reshape(const onnx::NodeProto &node, mlir::Value v,
                      llvm::ArrayRef<int64_t> shape, llvm::StringRef suffix);

  /// Shape of a ranked tensor value.
  static Shape shapeOf(mlir::Value v);

  /// Input \p i as a value of \p shape (same element count): a reshaped
  /// weight for a constant, else a top.Reshape named with \p suffix.
  mlir::Value getValueReshaped(const onnx::NodeProto &node, unsigned i,
                               llvm::ArrayRef<int64_t> shape,
                               llvm::StringRef suffix);

  /// \p axis in [-rank, rank) made non-negative; fails naming \p what.
  int64_t normalizeAxis(const onnx::NodeProto &node, int64_t axis, int64_t rank,
                        llvm::StringRef what) const;
  /// normalizeAxis on each, then sorted; fails on duplicates.
  std::vector<int64_t> normalizeAxes(const onnx::NodeProto &node,
                                     llvm::ArrayRef<int64_t> axes, int64_t rank,
                                     llvm::StringRef what) const;

  /// Fails if run-time arithmetic on \p type would not match ONNX (8- and
  /// 16-bit integers wrap around; top computes in float32).
  void checkRuntimeArithmetic(const onnx::NodeProto &node, ElemType type) const;

  //===--------------------------------------------------------------------===//
  // Used by the driver
  //===--------------------------------------------------------------------===//

  void setNone(mlir::Value v) { none = v; }
  void setUseCounts(llvm::StringMap<unsigned> counts) {
    useCounts = std::move(counts);
  }
  /// Defines tensor \p name (graph inputs and initialisers).
  void define(const std::string &name, TensorEntry entry);
  const TensorEntry *lookup(llvm::StringRef name) const;
  /// The value of tensor \p name, materialising a constant.
  mlir::Value valueOf(llvm::StringRef name);
  /// Names used so far for ops and weights.
  void reserveName(llvm::StringRef name) { usedNames.insert(name); }

private:
  mlir::Operation *createOp(llvm::StringRef opName, const onnx::NodeProto &node,
                            mlir::ValueRange operands,
                            llvm::ArrayRef<mlir::NamedAttribute> attrs,
                            llvm::StringRef suffix, mlir::TypeRange resultTypes,
                            unsigned numResults);
  const TensorEntry &entryOf(const onnx::NodeProto &node, unsigned i) const;
  std::string uniqueName(llvm::StringRef base);

  mlir::OpBuilder &builder;
  std::string path;
  int64_t opset;
  std::string baseDir;
  mlir::Value none;
  llvm::StringMap<TensorEntry> tensors;
  llvm::StringMap<unsigned> useCounts;
  llvm::StringSet<> usedNames;
};

/// Handler of one ONNX operator.
using OpHandler = void (*)(ImportContext &, const onnx::NodeProto &);

// Declarations of every handler named in OnnxOps.def.
#define OPERANDS(...)
#define ONNX_OP(Name, MinOpset, MaxOpset, ConstOperands, Handler, Note)        \
  void Handler(ImportContext &ctx, const onnx::NodeProto &node);
#include "tpuc/Frontend/OnnxOps.def"
#undef OPERANDS

} // namespace tpuc::frontend

#endif // TPUC_LIB_FRONTEND_ONNX_IMPORTCONTEXT_H
