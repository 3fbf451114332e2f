//===- OnnxImporter.cpp - ONNX model -> top dialect -----------------------===//
//
// Loads the model, checks that every operator is in OnnxOps.def, fixes the
// input shapes, walks the nodes in order through their handlers and returns
// the graph outputs from @main.
//
//===----------------------------------------------------------------------===//

#include "tpuc/Frontend/OnnxImporter.h"

#include "ImportContext.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <sstream>

namespace tpuc::frontend {

namespace {

/// The ONNX domain names of the default operator set.
bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// Every supported op: name -> table row and handler.
struct OpRow {
  OnnxOpInfo info;
  OpHandler handler;
};

const std::vector<OpRow> &opRows() {
  static const std::vector<OpRow> rows = [] {
    // Owns the constant-operand lists the rows point into (a deque never
    // moves its elements).
    static std::deque<std::vector<unsigned>> lists;
    std::vector<OpRow> r;
#define OPERANDS(...)                                                          \
  std::vector<unsigned> { __VA_ARGS__ }
#define ONNX_OP(Name, MinOpset, MaxOpset, ConstOperands, Handler, Note)        \
  lists.push_back(ConstOperands);                                              \
  r.push_back(OpRow{OnnxOpInfo{#Name, MinOpset, MaxOpset, lists.back(), Note}, \
                    &Handler});
#include "tpuc/Frontend/OnnxOps.def"
#undef OPERANDS
    return r;
  }();
  return rows;
}

const llvm::StringMap<const OpRow *> &opIndex() {
  static const llvm::StringMap<const OpRow *> index = [] {
    llvm::StringMap<const OpRow *> m;
    for (const OpRow &row : opRows())
      m[row.info.name] = &row;
    return m;
  }();
  return index;
}

std::string dimsToString(const onnx::TensorShapeProto &shape) {
  std::string s = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    if (i)
      s += ", ";
    const auto &d = shape.dim(i);
    if (d.has_dim_value())
      s += std::to_string(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      s += d.dim_param();
    else
      s += "?";
  }
  return s + "]";
}

/// Checks every node's operator against the table; throws one error listing
/// each unsupported op type with the first node that uses it.
void checkSupported(const onnx::GraphProto &graph, int64_t opset,
                    const std::string &path) {
  llvm::MapVector<std::string, std::string, std::map<std::string, unsigned>>
      unsupported;
  for (const onnx::NodeProto &node : graph.node()) {
    std::string key;
    std::string detail = "node '" + ImportContext::nodeName(node) + "'";
    if (!isDefaultDomain(node.domain())) {
      key = node.domain() + "." + node.op_type();
      detail += "; custom domain";
    } else if (const OnnxOpInfo *info = lookupOnnxOp(node.op_type())) {
      // Without a default-domain opset the caller reports that instead.
      if (opset < 0 || (opset >= info->minOpset && opset <= info->maxOpset))
        continue;
      key = node.op_type();
      detail += "; supported for opsets " + std::to_string(info->minOpset) +
                " to " + std::to_string(info->maxOpset) + ", model has " +
                std::to_string(opset);
    } else {
      key = node.op_type();
    }
    unsupported.insert({key, detail});
  }
  if (unsupported.empty())
    return;
  std::string msg = path + ": unsupported ONNX operators: ";
  bool first = true;
  for (const auto &[op, detail] : unsupported) {
    if (!first)
      msg += ", ";
    first = false;
    msg += op + " (" + detail + ")";
  }
  msg += " (supported operators: tpuc transform --list-ops)";
  throw tpu::Error(msg);
}

/// The element type of a graph input/output's tensor type; fails for
/// sequences, maps and optionals.
ElemType valueInfoElemType(const onnx::ValueInfoProto &vi,
                           const std::string &path, const char *kind) {
  if (!vi.type().has_tensor_type())
    throw tpu::Error(path + ": graph " + kind + " '" + vi.name() +
                     "' is not a tensor (sequence, map and optional values "
                     "are not supported)");
  ElemType t = vi.type().tensor_type().elem_type();
  if (!isFloatType(t) && !isIntegerType(t))
    throw tpu::Error(path + ": graph " + kind + " '" + vi.name() +
                     "' has element type " + elemTypeName(t) +
                     ", which is not supported");
  return t;
}

} // namespace

//===----------------------------------------------------------------------===//
// Dispatch table queries
//===----------------------------------------------------------------------===//

llvm::ArrayRef<OnnxOpInfo> getSupportedOnnxOps() {
  static const std::vector<OnnxOpInfo> infos = [] {
    std::vector<OnnxOpInfo> v;
    for (const OpRow &row : opRows())
      v.push_back(row.info);
    return v;
  }();
  return infos;
}

const OnnxOpInfo *lookupOnnxOp(llvm::StringRef opType) {
  auto it = opIndex().find(opType);
  return it == opIndex().end() ? nullptr : &it->second->info;
}

bool isConstantOperand(llvm::StringRef opType, unsigned index) {
  const OnnxOpInfo *info = lookupOnnxOp(opType);
  return info && llvm::is_contained(info->constantOperands, index);
}

std::string onnxSupportMatrixMarkdown() {
  std::ostringstream os;
  os << "# ONNX operator support\n\n"
     << "Generated by `tpuc transform --list-ops` from\n"
     << "`compiler/include/tpuc/Frontend/OnnxOps.def`; do not edit by hand.\n\n"
     << "Opsets are the model's opset of the default ONNX domain. Constant\n"
     << "operands must be known when the model is imported: initializers,\n"
     << "Constant nodes, or values computed from them and from the input\n"
     << "shapes (shape subgraphs are evaluated at import time).\n\n"
     << "| Operator | Opsets | Constant operands | Notes |\n"
     << "|---|---|---|---|\n";
  std::vector<OnnxOpInfo> ops(getSupportedOnnxOps().begin(),
                              getSupportedOnnxOps().end());
  std::sort(
      ops.begin(), ops.end(),
      [](const OnnxOpInfo &a, const OnnxOpInfo &b) { return a.name < b.name; });
  for (const OnnxOpInfo &op : ops) {
    os << "| " << op.name.str() << " | " << op.minOpset << "-" << op.maxOpset
       << " | ";
    for (size_t i = 0; i < op.constantOperands.size(); ++i)
      os << (i ? ", " : "") << op.constantOperands[i];
    os << " | " << op.note.str() << " |\n";
  }
  os << "\n" << ops.size() << " operators.\n";
  return os.str();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

onnx::ModelProto loadOnnxModel(const std::string &path) {
  if (llvm::sys::fs::is_directory(path))
    throw tpu::Error(path + ": is a directory, not an ONNX model file");
  // Parsed where the page cache holds it: no copy of a model that may be
  // half a gigabyte of weights.
  tpu::isa::bmodel::FileBytes bytes(path, "ONNX model");
  if (bytes.size() == 0)
    throw tpu::Error(path + ": ONNX model file is empty");
  if (bytes.size() > size_t(std::numeric_limits<int>::max()))
    throw tpu::Error(path + ": " + std::to_string(bytes.size()) +
                     " bytes, past protobuf's 2 GiB limit (a model that "
                     "large keeps its weights in external data files)");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    throw tpu::Error(path + ": not a valid ONNX model: parsing its " +
                     std::to_string(bytes.size()) +
                     " bytes as a protobuf ModelProto failed (the file is "
                     "truncated or corrupt)");
  if (!model.has_graph())
    throw tpu::Error(path + ": ONNX model has no graph (truncated or not a "
                            "model file)");
  return model;
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

namespace {

std::string describeNode(const onnx::NodeProto &node) {
  return "node '" + ImportContext::nodeName(node) + "' (" + node.op_type() +
         ")";
}

/// What a valid graph must have and the importer would otherwise let pass:
/// at least one output, and one definition per tensor name (ONNX is SSA; a
/// second writer would silently win).
void checkGraphStructure(const onnx::GraphProto &graph,
                         const std::string &path) {
  if (graph.output_size() == 0)
    throw tpu::Error(path + ": the graph has no outputs (nothing to compute)");
  llvm::StringMap<std::string> definedBy;
  for (const onnx::ValueInfoProto &vi : graph.input())
    definedBy.try_emplace(vi.name(), "graph input '" + vi.name() + "'");
  for (const onnx::TensorProto &t : graph.initializer())
    definedBy.try_emplace(t.name(), "initializer '" + t.name() + "'");
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &o : node.output()) {
      if (o.empty())
        continue; // an omitted optional output
      auto [it, inserted] = definedBy.try_emplace(o, describeNode(node));
      if (!inserted)
        throw tpu::Error(path + ": tensor '" + o + "' is written by " +
                         it->second + " and again by " + describeNode(node) +
                         "; every tensor must have one producer");
    }
}

/// Every tensor name \p graph and its subgraphs define or read.
void collectNames(const onnx::GraphProto &graph, llvm::StringSet<> &names) {
  for (const onnx::ValueInfoProto &vi : graph.input())
    names.insert(vi.name());
  for (const onnx::TensorProto &t : graph.initializer())
    names.insert(t.name());
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &i : node.input())
      names.insert(i);
    for (const std::string &o : node.output())
      names.insert(o);
    for (const onnx::AttributeProto &a : node.attribute()) {
      if (a.has_g())
        collectNames(a.g(), names);
      for (const onnx::GraphProto &g : a.graphs())
        collectNames(g, names);
    }
  }
}

bool hasIf(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "If" && isDefaultDomain(node.domain()))
      return true;
  return false;
}

/// A name of the form \p base that \p taken does not hold yet (then taken).
std::string freshName(const std::string &base, llvm::StringSet<> &taken) {
  std::string name = base;
  for (unsigned k = 1; taken.contains(name); ++k)
    name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

/// Replaces every ONNX If of \p graph by the nodes of both its branches and
/// one Where(cond, then_j, else_j) per output: both branches are computed
/// and the condition chooses the result. An ONNX subgraph has no side
/// effects, so computing the branch not taken changes no result, only the
/// work; this is how a compiler without control flow on the device runs a
/// data-dependent If (openWakeWord's hey_jarvis runs a verifier network when
/// the first score passes 0.5). The branches' own names are renamed apart
/// (`<if>/then/<name>`); names of the enclosing graph they read are kept.
/// Nested Ifs are inlined first.
void inlineIfs(onnx::GraphProto &graph, const std::string &path,
               llvm::StringSet<> &taken) {
  if (!hasIf(graph))
    return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph.mutable_node());
  for (onnx::NodeProto &node : nodes) {
    if (node.op_type() != "If" || !isDefaultDomain(node.domain())) {
      *graph.add_node() = std::move(node);
      continue;
    }
    std::string where = path + ": " + describeNode(node);
    if (node.input_size() != 1 || node.input(0).empty())
      throw tpu::Error(where + ": an If takes exactly one input, the "
                               "condition");
    const onnx::GraphProto *branches[2] = {nullptr, nullptr};
    for (const onnx::AttributeProto &a : node.attribute()) {
      if (a.name() == "then_branch" && a.has_g())
        branches[0] = &a.g();
      else if (a.name() == "else_branch" && a.has_g())
        branches[1] = &a.g();
    }
    if (!branches[0] || !branches[1])
      throw tpu::Error(where + ": needs both a then_branch and an "
                               "else_branch graph attribute");
    std::string base = ImportContext::nodeName(node);
    std::vector<std::string> outs[2];
    for (int b = 0; b < 2; ++b) {
      onnx::GraphProto sub = *branches[b];
      const char *label = b == 0 ? "then_branch" : "else_branch";
      if (sub.input_size() != 0)
        throw tpu::Error(where + ": its " + label + " declares " +
                         std::to_string(sub.input_size()) +
                         " input(s); If branches take none");
      if (sub.output_size() != node.output_size())
        throw tpu::Error(where + ": its " + label + " has " +
                         std::to_string(sub.output_size()) +
                         " output(s) but the If has " +
                         std::to_string(node.output_size()));
      if (sub.sparse_initializer_size() > 0)
        throw tpu::Error(where + ": sparse initializers in its " +
                         std::string(label) + " are not supported");
      inlineIfs(sub, path, taken);
      std::string prefix = base + (b == 0 ? "/then/" : "/else/");
      llvm::StringMap<std::string> rename;
      for (onnx::TensorProto &t : *sub.mutable_initializer()) {
        std::string fresh = freshName(prefix + t.name(), taken);
        rename[t.name()] = fresh;
        t.set_name(fresh);
        *graph.add_initializer() = std::move(t);
      }
      for (const onnx::NodeProto &n : sub.node())
        for (const std::string &o : n.output())
          if (!o.empty())
            rename[o] = freshName(prefix + o, taken);
      auto renamed = [&](const std::string &name) {
        auto it = rename.find(name);
        return it == rename.end() ? name : it->second;
      };
      for (onnx::NodeProto &n : *sub.mutable_node()) {
        // Named from the branch's own name (or first output) before the
        // outputs get the prefix, so that it appears once.
        n.set_name(prefix + ImportContext::nodeName(n));
        for (std::string &i : *n.mutable_input())
          if (!i.empty())
            i = renamed(i);
        for (std::string &o : *n.mutable_output())
          if (!o.empty())
            o = renamed(o);
        *graph.add_node() = std::move(n);
      }
      for (const onnx::ValueInfoProto &vi : sub.output())
        outs[b].push_back(renamed(vi.name()));
    }
    for (int j = 0; j < node.output_size(); ++j) {
      if (node.output(j).empty())
        continue;
      onnx::NodeProto *w = graph.add_node();
      w->set_op_type("Where");
      w->set_name(base + "/where_" + std::to_string(j));
      w->add_input(node.input(0));
      w->add_input(outs[0][j]);
      w->add_input(outs[1][j]);
      w->add_output(node.output(j));
    }
  }
}

} // namespace

void registerImportDialects(mlir::MLIRContext &context) {
  context.loadDialect<top::TopDialect, mlir::func::FuncDialect>();
}

OnnxImportResult importOnnxModel(mlir::MLIRContext &context,
                                 const onnx::ModelProto &model,
                                 const std::string &path,
                                 const OnnxImportOptions &options) {
  registerImportDialects(context);
  // A model with If nodes is imported from a copy whose Ifs are inlined.
  onnx::GraphProto inlined;
  const onnx::GraphProto *source = &model.graph();
  if (hasIf(*source)) {
    inlined = *source;
    llvm::StringSet<> taken;
    collectNames(inlined, taken);
    inlineIfs(inlined, path, taken);
    source = &inlined;
  }
  const onnx::GraphProto &graph = *source;

  int64_t opset = -1;
  for (const auto &imp : model.opset_import())
    if (isDefaultDomain(imp.domain()))
      opset = imp.version();
  checkSupported(graph, opset, path);
  if (opset < 0)
    throw tpu::Error(path + ": the model imports no opset of the default "
                            "ONNX domain (truncated or not an ONNX model?)");
  checkGraphStructure(graph, path);

  // Initialisers, and the graph inputs that are not initialisers.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  for (const onnx::TensorProto &t : graph.initializer())
    initializers[t.name()] = &t;
  if (graph.sparse_initializer_size() > 0)
    throw tpu::Error(path + ": sparse initializers are not supported");
  std::vector<const onnx::ValueInfoProto *> inputs;
  for (const onnx::ValueInfoProto &vi : graph.input())
    if (!initializers.count(vi.name()))
      inputs.push_back(&vi);

  if (!options.inputShapes.empty() &&
      options.inputShapes.size() != inputs.size())
    throw tpu::Error(path + ": --input-shapes gives " +
                     std::to_string(options.inputShapes.size()) +
                     " shapes but the model has " +
                     std::to_string(inputs.size()) + " inputs");

  mlir::OpBuilder builder(&context);
  OnnxImportResult result;
  std::vector<mlir::Type> argTypes;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const onnx::ValueInfoProto &vi = *inputs[k];
    ElemType type = valueInfoElemType(vi, path, "input");
    const auto &tt = vi.type().tensor_type();
    Shape shape;
    if (!options.inputShapes.empty()) {
      shape = options.inputShapes[k];
      if (tt.has_shape()) {
        const auto &dims = tt.shape();
        bool fits = dims.dim_size() == static_cast<int>(shape.size());
        for (int d = 0; fits && d < dims.dim_size(); ++d)
          if (dims.dim(d).has_dim_value() && dims.dim(d).dim_value() > 0 &&
              dims.dim(d).dim_value() != shape[d])
            fits = false;
        if (!fits)
          throw tpu::Error(path + ": input '" + vi.name() +
                           "': --input-shapes gives " + shapeToString(shape) +
                           " but the model declares " + dimsToString(dims));
      }
      for (int64_t d : shape)
        if (d <= 0)
          throw tpu::Error(path + ": input '" + vi.name() +
                           "': --input-shapes gives " + shapeToString(shape) +
                           "; every dimension must be positive");
    } else {
      if (!tt.has_shape())
        throw tpu::Error(path + ": input '" + vi.name() +
                         "' has no shape in the model; give it with "
                         "--input-shapes");
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto &dim = tt.shape().dim(d);
        if (!dim.has_dim_value() || dim.dim_value() <= 0)
          throw tpu::Error(path + ": input '" + vi.name() +
                           "' has dynamic dimension " + std::to_string(d) +
                           " in " + dimsToString(tt.shape()) +
                           "; give its shape with --input-shapes");
        shape.push_back(dim.dim_value());
      }
    }
    // The element count and the f32 byte size must fit 64 bits (a huge
    // --input-shapes entry would otherwise overflow every size after it).
    checkedNumElements(shape, path + ": input '" + vi.name() + "'",
                       /*elemBytes=*/4);
    argTypes.push_back(module::getF32Type(&context, shape));
    result.inputNames.push_back(vi.name());
    result.inputTypes.push_back(type);
  }

  // Module and @main.
  std::string modelName = options.modelName;
  if (modelName.empty())
    modelName = graph.name();
  if (modelName.empty())
    modelName = "model";
  auto fileLoc = mlir::FileLineColLoc::get(&context, path, 0, 0);
  result.module = mlir::ModuleOp::create(fileLoc, llvm::StringRef(modelName));
  mlir::ModuleOp moduleOp = *result.module;
  // The weights created from here on live in the context's store, keyed by
  // the module: a model refused below must take them along, or a later
  // module allocated at the same address would see them (Weights.h).
  auto releaseOnError =
      llvm::make_scope_exit([&] { releaseWeights(moduleOp); });
  // Without a weight file every weight lives in the in-memory store until
  // saveWeights() writes it (and sets top.weight_file).
  if (!options.weightFile.empty())
    module::setWeightFile(moduleOp, options.weightFile);
  module::setChip(moduleOp, module::kChipAll);
  module::setState(moduleOp, module::kStateTopF32);

  builder.setInsertionPointToEnd(moduleOp.getBody());
  auto func = builder.create<mlir::func::FuncOp>(
      fileLoc, "main", builder.getFunctionType(argTypes, {}));
  mlir::Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  std::string baseDir = llvm::sys::path::parent_path(path).str();
  ImportContext ctx(builder, path, opset, baseDir);

  // Names already taken: every tensor name of the graph.
  for (const auto &[name, t] : initializers)
    ctx.reserveName(name);
  for (const onnx::ValueInfoProto &vi : graph.input())
    ctx.reserveName(vi.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &o : node.output())
      ctx.reserveName(o);

  llvm::StringMap<unsigned> uses;
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &i : node.input())
      if (!i.empty())
        ++uses[i];
  for (const onnx::ValueInfoProto &vi : graph.output())
    ++uses[vi.name()];
  ctx.setUseCounts(std::move(uses));

  ctx.setNone(builder.create<top::NoneOp>(fileLoc, builder.getNoneType()));
  for (const auto &[name, t] : initializers) {
    TensorEntry e;
    e.proto = t;
    e.type = t->data_type();
    ctx.define(name.str(), std::move(e));
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string &name = inputs[k]->name();
    auto input = builder.create<top::InputOp>(
        mlir::NameLoc::get(builder.getStringAttr(name)), argTypes[k],
        entry->getArgument(k), builder.getStringAttr(name));
    TensorEntry e;
    e.value = input.getResult();
    e.type = result.inputTypes[k];
    ctx.define(name, std::move(e));
  }

  // Nodes, in (topological) order.
  for (const onnx::NodeProto &node : graph.node()) {
    const OpRow *row = opIndex().lookup(node.op_type());
    row->handler(ctx, node);
    for (int o = 0; o < node.output_size(); ++o) {
      if (ctx.isOutputUsed(node, o) && !ctx.lookup(node.output(o)))
        ctx.fail(node, "output '" + node.output(o) +
                           "' is used but the importer cannot produce it");
      // Every size computed from this output's shape must fit 64 bits.
      if (const TensorEntry *e = ctx.lookup(node.output(o)); e && e->value)
        if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(e->value.getType()))
          try {
            checkedNumElements(t.getShape(), "output '" + node.output(o) + "'",
                               /*elemBytes=*/4);
          } catch (const tpu::Error &err) {
            ctx.fail(node, err.what());
          }
    }
  }

  // Results.
  std::vector<mlir::Value> results;
  for (const onnx::ValueInfoProto &vi : graph.output()) {
    const TensorEntry *e = ctx.lookup(vi.name());
    if (!e)
      throw tpu::Error(path + ": graph output '" + vi.name() +
                       "' is not produced by any node");
    results.push_back(ctx.valueOf(vi.name()));
    result.outputNames.push_back(vi.name());
    result.outputTypes.push_back(ctx.lookup(vi.name())->type);
  }
  builder.create<mlir::func::ReturnOp>(fileLoc, results);
  std::vector<mlir::Type> resultTypes;
  for (mlir::Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));

  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (!diagnostics.empty())
      diagnostics += "; ";
    diagnostics += d.str();
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(moduleOp)))
    throw tpu::Error(path +
                     ": the imported module does not verify: " + diagnostics);
  releaseOnError.release();
  return result;
}

OnnxImportResult importOnnxFile(mlir::MLIRContext &context,
                                const std::string &path,
                                const OnnxImportOptions &options) {
  onnx::ModelProto model = loadOnnxModel(path);
  return importOnnxModel(context, model, path, options);
}

tpu::npz::Array tensorProtoToArray(const onnx::TensorProto &tensor,
                                   const std::string &baseDir,
                                   const std::string &what) {
  ConstTensor t = constTensorFromProto(tensor, baseDir, what);
  using tpu::npz::Array;
  if (t.isFloat())
    return Array::from<float>(t.getShape(), t.toFloats());
  if (t.getType() == elem::Bool) {
    Array a(tpu::npz::DType::Bool, t.getShape());
    std::vector<int64_t> v = t.toInts();
    for (size_t k = 0; k < v.size(); ++k)
      a.data[k] = v[k] != 0;
    return a;
  }
  return Array::from<int64_t>(t.getShape(), t.toInts());
}

} // namespace tpuc::frontend
