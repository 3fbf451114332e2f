//===- TfliteReader.cpp - Checked view of a .tflite flatbuffer ------------===//

#include "TfliteReader.h"
#include "tpu/isa/Bmodel.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

namespace tpuc::frontend::tflite {

Subgraph readSubgraph(const Model &model, int32_t index);
void checkSubgraphCalls(Model &m);

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &msg) {
  throw tpu::Error(path + ": " + msg);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Element count of \p shape; fails when a dimension is negative or the
/// byte count at \p elemBytes per element overflows.
int64_t checkedCount(const std::vector<int64_t> &shape, size_t elemBytes,
                     const std::string &path, const std::string &what) {
  int64_t n = 1;
  const int64_t limit =
      std::numeric_limits<int64_t>::max() / static_cast<int64_t>(elemBytes ? elemBytes : 1);
  for (int64_t d : shape) {
    if (d < 0)
      fail(path, what + ": shape " + shapeString(shape) +
                     " has a negative dimension");
    if (d != 0 && n > limit / d)
      fail(path, what + ": shape " + shapeString(shape) +
                     " has more elements than fit 64 bits");
    n *= d;
  }
  return n;
}

/// Sorts the operators so that producers come first; fails naming an
/// operator on a cycle.
std::vector<Operator> topologicalOrder(const std::string &path, Subgraph &m,
                                       std::vector<Operator> ops) {
  size_t n = ops.size();
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t k = 0; k < n; ++k)
    for (int32_t t : ops[k].inputs) {
      if (t < 0)
        continue;
      int32_t p = m.tensors[t].producer;
      if (p >= 0) {
        users[static_cast<size_t>(p)].push_back(k);
        ++pending[k];
      }
    }
  bool inOrder = true;
  for (size_t k = 0; k < n && inOrder; ++k)
    for (int32_t t : ops[k].inputs)
      if (t >= 0 && m.tensors[t].producer >= static_cast<int32_t>(k))
        inOrder = false;
  if (inOrder)
    return ops;
  std::vector<size_t> ready;
  for (size_t k = n; k-- > 0;)
    if (pending[k] == 0)
      ready.push_back(k);
  std::vector<Operator> sorted;
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    size_t k = ready.back();
    ready.pop_back();
    done[k] = true;
    sorted.push_back(ops[k]);
    for (size_t u : users[k])
      if (--pending[u] == 0)
        ready.push_back(u);
  }
  if (sorted.size() != n) {
    // Walk back from an unsorted operator along unsorted producers until one
    // repeats: that one lies on a cycle.
    size_t k = 0;
    while (done[k])
      ++k;
    std::vector<int> seen(n, -1);
    std::vector<size_t> chain;
    while (seen[k] < 0) {
      seen[k] = static_cast<int>(chain.size());
      chain.push_back(k);
      for (int32_t t : ops[k].inputs) {
        int32_t p = t >= 0 ? m.tensors[t].producer : -1;
        if (p >= 0 && !done[static_cast<size_t>(p)]) {
          k = static_cast<size_t>(p);
          break;
        }
      }
    }
    std::string cycle;
    for (size_t i = static_cast<size_t>(seen[k]); i < chain.size(); ++i)
      cycle = describe(m, ops[chain[i]]) + (cycle.empty() ? "" : " <- ") + cycle;
    fail(path, "the operators of subgraph " + std::to_string(m.index) +
                   " form a cycle: " + cycle +
                     " (each reads a tensor the next one writes)");
  }
  return sorted;
}

} // namespace

bool hasTfliteIdentifier(const uint8_t *bytes, size_t size) {
  return size >= 8 && fb::ModelBufferHasIdentifier(bytes);
}

std::string builtinName(int32_t code) {
  if (code >= fb::BuiltinOperator_MIN && code <= fb::BuiltinOperator_MAX) {
    const char *name =
        fb::EnumNameBuiltinOperator(static_cast<fb::BuiltinOperator>(code));
    if (name && *name)
      return name;
  }
  return "BUILTIN_" + std::to_string(code);
}

std::string typeName(fb::TensorType t) {
  const char *name = fb::EnumNameTensorType(t);
  if (name && *name)
    return name;
  return "TYPE_" + std::to_string(static_cast<int>(t));
}

size_t typeSize(fb::TensorType t) {
  switch (t) {
  case fb::TensorType_FLOAT32:
  case fb::TensorType_INT32:
  case fb::TensorType_UINT32:
    return 4;
  case fb::TensorType_FLOAT16:
  case fb::TensorType_INT16:
  case fb::TensorType_UINT16:
    return 2;
  case fb::TensorType_UINT8:
  case fb::TensorType_INT8:
  case fb::TensorType_BOOL:
    return 1;
  case fb::TensorType_INT64:
  case fb::TensorType_UINT64:
  case fb::TensorType_FLOAT64:
  case fb::TensorType_COMPLEX64:
    return 8;
  case fb::TensorType_COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

std::string describe(const Subgraph &sg, const Operator &op) {
  std::string name = op.code == fb::BuiltinOperator_CUSTOM
                         ? "CUSTOM '" + op.customCode + "'"
                         : builtinName(op.code);
  std::string s = "operator " + std::to_string(op.index) + " (" + name + ")";
  return sg.index == 0 ? s : "subgraph " + std::to_string(sg.index) + " " + s;
}

std::string describeTensor(const Subgraph &m, int32_t index) {
  std::string s = "tensor " + std::to_string(index);
  if (m.index != 0)
    s = "subgraph " + std::to_string(m.index) + " " + s;
  if (index >= 0 && static_cast<size_t>(index) < m.tensors.size())
    s += " ('" + m.tensors[static_cast<size_t>(index)].name + "')";
  return s;
}

Model readModelFile(const std::string &path) {
  if (std::string why = ::tpu::isa::bmodel::notAFile(path); !why.empty())
    fail(path, why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open TFLite model: ") + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    fail(path, "cannot read TFLite model");
  return readModel(std::move(bytes), path);
}

Model readModel(std::vector<uint8_t> bytes, const std::string &path) {
  Model m;
  m.path = path;
  m.bytes = std::move(bytes);
  const uint8_t *buf = m.bytes.data();
  size_t size = m.bytes.size();
  if (size == 0)
    fail(path, "TFLite model file is empty");
  if (!hasTfliteIdentifier(buf, size)) {
    std::string found;
    for (size_t i = 4; i < 8 && i < size; ++i)
      found += std::isprint(buf[i]) ? static_cast<char>(buf[i]) : '?';
    fail(path, "not a TFLite model: no TFL3 file identifier at byte 4 (found '" +
                   found + "')");
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    fail(path, "TFLite model of " + std::to_string(size) +
                   " bytes exceeds the 2 GiB a flatbuffer can address");
  flatbuffers::Verifier verifier(buf, size);
  if (!fb::VerifyModelBuffer(verifier))
    fail(path, "corrupt or truncated TFLite model: the flatbuffers verifier "
               "rejects its " + std::to_string(size) +
                   " bytes (an offset or length points outside the buffer or "
                   "a table is malformed)");
  m.root = fb::GetModel(buf);

  const auto *subgraphs = m.root->subgraphs();
  if (!subgraphs || subgraphs->size() == 0)
    fail(path, "the model has no subgraph");
  for (unsigned k = 0; k < subgraphs->size(); ++k)
    m.subgraphs.push_back(readSubgraph(m, static_cast<int32_t>(k)));
  checkSubgraphCalls(m);
  return m;
}

namespace {

/// The subgraph indices operator \p op runs; fails when one is out of range.
std::vector<int32_t> calleesOf(const Model &model, const Subgraph &sg,
                               const Operator &op) {
  std::vector<int32_t> out;
  const fb::Operator *o = op.op;
  if (op.code == fb::BuiltinOperator_IF) {
    const fb::IfOptions *opts = o->builtin_options_as_IfOptions();
    if (!opts)
      fail(model.path, describe(sg, op) + ": has no IfOptions");
    out = {opts->then_subgraph_index(), opts->else_subgraph_index()};
  } else if (op.code == fb::BuiltinOperator_WHILE) {
    const fb::WhileOptions *opts = o->builtin_options_as_WhileOptions();
    if (!opts)
      fail(model.path, describe(sg, op) + ": has no WhileOptions");
    out = {opts->cond_subgraph_index(), opts->body_subgraph_index()};
  } else if (op.code == fb::BuiltinOperator_CALL_ONCE) {
    const fb::CallOnceOptions *opts = o->builtin_options_as_CallOnceOptions();
    if (!opts)
      fail(model.path, describe(sg, op) + ": has no CallOnceOptions");
    out = {opts->init_subgraph_index()};
  }
  size_t n = model.root->subgraphs()->size();
  for (int32_t k : out)
    if (k < 0 || static_cast<size_t>(k) >= n)
      fail(model.path, describe(sg, op) + ": subgraph index " +
                           std::to_string(k) + " is out of range (the model "
                           "has " + std::to_string(n) + " subgraphs)");
  return out;
}

} // namespace

void checkSubgraphCalls(Model &m) {
  for (Subgraph &sg : m.subgraphs)
    for (const Operator &op : sg.ops)
      for (int32_t k : calleesOf(m, sg, op))
        sg.callees.push_back(k);
  // Depth-first from every subgraph; a subgraph met again while on the
  // stack closes a cycle.
  size_t n = m.subgraphs.size();
  std::vector<int> state(n, 0); // 0 new, 1 on the stack, 2 done
  std::vector<int32_t> stack;
  std::function<void(int32_t)> visit = [&](int32_t k) {
    state[static_cast<size_t>(k)] = 1;
    stack.push_back(k);
    for (int32_t c : m.subgraphs[static_cast<size_t>(k)].callees) {
      if (state[static_cast<size_t>(c)] == 1) {
        std::string cycle;
        auto it = std::find(stack.begin(), stack.end(), c);
        for (; it != stack.end(); ++it)
          cycle += "subgraph " + std::to_string(*it) + " -> ";
        fail(m.path, "subgraph cycle: " + cycle + "subgraph " +
                         std::to_string(c) +
                         " (control-flow operators run each other forever)");
      }
      if (state[static_cast<size_t>(c)] == 0)
        visit(c);
    }
    stack.pop_back();
    state[static_cast<size_t>(k)] = 2;
  };
  for (size_t k = 0; k < n; ++k)
    if (state[k] == 0)
      visit(static_cast<int32_t>(k));
}

Subgraph readSubgraph(const Model &model, int32_t index) {
  const std::string &path = model.path;
  const fb::SubGraph *sg = model.root->subgraphs()->Get(static_cast<unsigned>(index));
  Subgraph m;
  m.index = index;
  if (sg->name())
    m.name = sg->name()->str();
  const std::string sgName = "subgraph " + std::to_string(index);
  const auto *buffers = model.root->buffers();
  size_t numBuffers = buffers ? buffers->size() : 0;
  const auto *codes = model.root->operator_codes();
  size_t numCodes = codes ? codes->size() : 0;

  // Tensors and their data.
  size_t numTensors = sg->tensors() ? sg->tensors()->size() : 0;
  m.tensors.resize(numTensors);
  for (size_t i = 0; i < numTensors; ++i) {
    const fb::Tensor *t = sg->tensors()->Get(static_cast<unsigned>(i));
    Tensor &out = m.tensors[i];
    out.name = t->name() ? t->name()->str() : "";
    std::string what = describeTensor(m, static_cast<int32_t>(i));
    out.type = t->type();
    if (t->shape())
      for (int32_t d : *t->shape())
        out.shape.push_back(d);
    if (t->shape_signature() &&
        t->shape_signature()->size() == out.shape.size()) {
      for (int32_t d : *t->shape_signature())
        out.signature.push_back(d);
    } else {
      out.signature = out.shape;
    }
    if (t->sparsity())
      fail(path, what + ": sparse tensors are not supported");
    if (const fb::QuantizationParameters *q = t->quantization()) {
      if (q->details())
        fail(path, what + ": custom quantisation is not supported");
      if (q->scale())
        out.quant.scale.assign(q->scale()->begin(), q->scale()->end());
      if (const auto *zp = q->zero_point()) {
        // The verifier aligns a vector's length (4 bytes), not its 8-byte
        // elements: copy them out byte-wise.
        const uint8_t *raw = zp->Data();
        for (unsigned k = 0; k < zp->size(); ++k) {
          int64_t v;
          std::memcpy(&v, raw + 8 * static_cast<size_t>(k), 8);
          out.quant.zeroPoint.push_back(flatbuffers::EndianScalar(v));
        }
      }
      out.quant.axis = q->quantized_dimension();
      if (!out.quant.zeroPoint.empty() &&
          out.quant.zeroPoint.size() != out.quant.scale.size())
        fail(path, what + ": quantisation has " +
                       std::to_string(out.quant.scale.size()) + " scales but " +
                       std::to_string(out.quant.zeroPoint.size()) +
                       " zero points");
      if (out.quant.scale.size() > 1 &&
          (out.quant.axis < 0 ||
           static_cast<size_t>(out.quant.axis) >= out.shape.size() ||
           out.shape[static_cast<size_t>(out.quant.axis)] !=
               static_cast<int64_t>(out.quant.scale.size())))
        fail(path, what + ": " + std::to_string(out.quant.scale.size()) +
                       " per-channel scales on axis " +
                       std::to_string(out.quant.axis) + " do not fit shape " +
                       shapeString(out.shape));
    }
    uint32_t b = t->buffer();
    if (b >= numBuffers && !(b == 0 && numBuffers == 0))
      fail(path, what + ": buffer index " + std::to_string(b) +
                     " is out of range (the model has " +
                     std::to_string(numBuffers) + " buffers)");
    const fb::Buffer *buffer = numBuffers ? buffers->Get(b) : nullptr;
    if (buffer && (buffer->offset() != 0 || buffer->size() != 0))
      fail(path, what + ": buffer " + std::to_string(b) +
                     " is stored outside the flatbuffer (offset/size), which "
                     "is not supported");
    size_t elemBytes = typeSize(out.type);
    if (buffer && buffer->data() && buffer->data()->size() > 0) {
      if (elemBytes == 0)
        fail(path, what + ": constant of type " + typeName(out.type) +
                       " is not supported");
      int64_t count = checkedCount(out.shape, elemBytes, path, what);
      uint64_t need = static_cast<uint64_t>(count) * elemBytes;
      if (buffer->data()->size() != need)
        fail(path, what + ": buffer " + std::to_string(b) + " holds " +
                       std::to_string(buffer->data()->size()) +
                       " bytes but shape " + shapeString(out.shape) + " of " +
                       typeName(out.type) + " needs " + std::to_string(need));
      out.data = buffer->data()->data();
      out.size = buffer->data()->size();
    } else {
      checkedCount(out.shape, elemBytes ? elemBytes : 8, path, what);
    }
  }

  auto checkTensor = [&](int32_t t, const std::string &where, bool optional) {
    if (t == -1 && optional)
      return;
    if (t < 0 || static_cast<size_t>(t) >= numTensors)
      fail(path, where + ": tensor index " + std::to_string(t) +
                     " is out of range (" + sgName + " has " +
                     std::to_string(numTensors) + " tensors)");
  };

  if (sg->inputs())
    for (int32_t t : *sg->inputs()) {
      checkTensor(t, sgName + " input", false);
      m.inputs.push_back(t);
    }
  if (sg->outputs())
    for (int32_t t : *sg->outputs()) {
      checkTensor(t, sgName + " output", false);
      m.outputs.push_back(t);
    }
  if (m.outputs.empty())
    fail(path, sgName + " has no outputs (nothing to compute)");

  // Operators.
  std::vector<Operator> ops;
  size_t numOps = sg->operators() ? sg->operators()->size() : 0;
  for (size_t k = 0; k < numOps; ++k) {
    const fb::Operator *o = sg->operators()->Get(static_cast<unsigned>(k));
    Operator op;
    op.index = static_cast<int32_t>(k);
    op.op = o;
    std::string where = (index ? sgName + " " : "") + "operator " +
                        std::to_string(k);
    if (o->opcode_index() >= numCodes)
      fail(path, where + ": operator code index " +
                     std::to_string(o->opcode_index()) +
                     " is out of range (the model has " +
                     std::to_string(numCodes) + " operator codes)");
    const fb::OperatorCode *c = codes->Get(o->opcode_index());
    op.code = std::max<int32_t>(c->deprecated_builtin_code(), c->builtin_code());
    op.version = c->version();
    if (c->custom_code())
      op.customCode = c->custom_code()->str();
    where = describe(m, op);
    if (o->inputs())
      for (int32_t t : *o->inputs()) {
        checkTensor(t, where + " input " + std::to_string(op.inputs.size()),
                    true);
        op.inputs.push_back(t);
      }
    if (o->outputs())
      for (int32_t t : *o->outputs()) {
        checkTensor(t, where + " output " + std::to_string(op.outputs.size()),
                    false);
        Tensor &out = m.tensors[static_cast<size_t>(t)];
        if (out.isConstant())
          fail(path, where + " writes " + describeTensor(m, t) +
                         ", which is a constant");
        if (out.producer >= 0)
          fail(path, where + " writes " + describeTensor(m, t) +
                         ", which operator " + std::to_string(out.producer) +
                         " writes too; every tensor must have one producer");
        out.producer = op.index;
        op.outputs.push_back(t);
      }
    ops.push_back(std::move(op));
  }
  for (int32_t t : m.inputs)
    if (m.tensors[static_cast<size_t>(t)].producer >= 0)
      fail(path, sgName + " input " + describeTensor(m, t) +
                     " is also written by operator " +
                     std::to_string(m.tensors[static_cast<size_t>(t)].producer));
  // Every run-time tensor read must come from somewhere.
  std::vector<bool> isInput(numTensors, false);
  for (int32_t t : m.inputs)
    isInput[static_cast<size_t>(t)] = true;
  auto checkDefined = [&](int32_t t, const std::string &where) {
    Tensor &tensor = m.tensors[static_cast<size_t>(t)];
    if (!tensor.isConstant() && tensor.producer < 0 &&
        !isInput[static_cast<size_t>(t)] && tensor.type != fb::TensorType_STRING &&
        typeSize(tensor.type) != 0 &&
        checkedCount(tensor.shape, 8, path, where) == 0) {
      // A constant with no elements (a reshape to a scalar has shape []
      // given as an empty int32 vector): its buffer is empty.
      static const uint8_t kEmpty[1] = {0};
      tensor.data = kEmpty;
      tensor.size = 0;
    }
    if (!tensor.isConstant() && tensor.producer < 0 &&
        !isInput[static_cast<size_t>(t)])
      fail(path, where + " reads " + describeTensor(m, t) +
                     ", which is neither a constant, a subgraph input nor "
                     "written by any operator");
  };
  for (const Operator &op : ops)
    for (int32_t t : op.inputs)
      if (t >= 0)
        checkDefined(t, describe(m, op));
  for (int32_t t : m.outputs)
    checkDefined(t, sgName + " output");
  m.ops = topologicalOrder(path, m, std::move(ops));
  return m;
}

} // namespace tpuc::frontend::tflite
