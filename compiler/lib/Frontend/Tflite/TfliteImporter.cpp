//===- TfliteImporter.cpp - TFLite model -> ONNX graph -> top -------------===//
//
// Each TFLite operator becomes one or a few ONNX nodes (opset 13) of an
// in-memory graph, which importOnnxModel turns into the top module: the
// ONNX importer's const folding (weight transposes, shape arithmetic),
// shape inference and op builders are reused as they are.
//
// Layout. TFLite activations are NHWC. The Translator keeps, per TFLite
// tensor, up to two ONNX names: its TFLite-layout form and its NCHW form,
// each created on first use (a Transpose from the other). Convolutions,
// pooling and resize read and write the NCHW form; elementwise operators
// work in NCHW when an input already has that form (their other operands
// are broadcast in NCHW); everything else reads the TFLite form. So a chain
// conv -> activation -> max -> pool -> conv stays in NCHW, and the only
// transposes left are at the chain's ends (the canonicaliser merges and
// drops back-to-back Permutes).
//
//===----------------------------------------------------------------------===//

#include "tpuc/Frontend/TfliteImporter.h"

#include "TfliteReader.h"

#include "tpuc/Support/CaliTable.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Numerics.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace tpuc::frontend {

namespace tfl = ::tpuc::frontend::tflite;
namespace fb = ::tpuc::tflite::fb;

namespace {

constexpr int64_t kOpset = 14;
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};

int32_t onnxType(fb::TensorType t) {
  switch (t) {
  case fb::TensorType_FLOAT32:
    return onnx::TensorProto::FLOAT;
  case fb::TensorType_FLOAT16:
    return onnx::TensorProto::FLOAT16;
  case fb::TensorType_FLOAT64:
    return onnx::TensorProto::DOUBLE;
  case fb::TensorType_INT32:
    return onnx::TensorProto::INT32;
  case fb::TensorType_INT64:
    return onnx::TensorProto::INT64;
  case fb::TensorType_INT16:
    return onnx::TensorProto::INT16;
  case fb::TensorType_INT8:
    return onnx::TensorProto::INT8;
  case fb::TensorType_UINT8:
    return onnx::TensorProto::UINT8;
  case fb::TensorType_BOOL:
    return onnx::TensorProto::BOOL;
  case fb::TensorType_UINT32:
    return onnx::TensorProto::UINT32;
  case fb::TensorType_UINT16:
    return onnx::TensorProto::UINT16;
  case fb::TensorType_UINT64:
    return onnx::TensorProto::UINT64;
  default:
    return onnx::TensorProto::UNDEFINED;
  }
}

/// A tensor the model quantises at run time (int8 / uint8 with its scale and
/// zero point): the float graph carries its real value scale * (q - zp).
bool isQuantized(const tfl::Tensor &t) {
  return (t.type == fb::TensorType_INT8 || t.type == fb::TensorType_UINT8) &&
         !t.quant.scale.empty();
}

/// The float values of a constant: float32 as is, float16 widened,
/// integers with quantisation parameters dequantised (per tensor or per
/// channel along quant.axis); std::nullopt for other integers.
std::optional<std::vector<float>> constantAsFloat(const tfl::Tensor &t) {
  size_t n = t.size / std::max<size_t>(1, tfl::typeSize(t.type));
  std::vector<float> v(n);
  if (t.type == fb::TensorType_FLOAT32) {
    std::memcpy(v.data(), t.data, n * 4);
    return v;
  }
  if (t.type == fb::TensorType_FLOAT16) {
    for (size_t k = 0; k < n; ++k) {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * k, 2);
      v[k] = tpu::isa::fp16ToFp32(h);
    }
    return v;
  }
  if (t.quant.scale.empty())
    return std::nullopt;
  size_t inner = 1;
  for (size_t d = static_cast<size_t>(t.quant.axis) + 1; d < t.shape.size(); ++d)
    inner *= static_cast<size_t>(t.shape[d]);
  size_t channels = t.quant.scale.size();
  for (size_t k = 0; k < n; ++k) {
    size_t c = channels > 1 ? (k / inner) % channels : 0;
    int64_t q;
    switch (t.type) {
    case fb::TensorType_INT8:
      q = static_cast<int8_t>(t.data[k]);
      break;
    case fb::TensorType_UINT8:
      q = t.data[k];
      break;
    case fb::TensorType_INT16: {
      int16_t x;
      std::memcpy(&x, t.data + 2 * k, 2);
      q = x;
      break;
    }
    case fb::TensorType_INT32: {
      int32_t x;
      std::memcpy(&x, t.data + 4 * k, 4);
      q = x;
      break;
    }
    default:
      return std::nullopt;
    }
    int64_t zp = t.quant.zeroPoint.empty() ? 0 : t.quant.zeroPoint[c];
    v[k] = static_cast<float>(static_cast<double>(q - zp) * t.quant.scale[c]);
  }
  return v;
}

/// What the translators of one model share: the ONNX names taken, and the
/// quantised TFLite tensor behind each ONNX name that carries one.
struct Shared {
  std::set<std::string> used;
  std::map<std::string, const tfl::Tensor *> quantized;
  /// The quantised constants (int8 weights, int32 biases with scales)
  /// behind each ONNX name that holds their values, layout changes
  /// included.
  std::map<std::string, const tfl::Tensor *> quantConsts;
};

class Translator;
using Handler = void (*)(Translator &, const tfl::Operator &);

/// Rows of TfliteOps.def with their handlers.
struct OpRow {
  TfliteOpInfo info;
  Handler handler;
};
const std::vector<OpRow> &opRows();
const OpRow *lookup(int32_t code);

class Translator {
public:
  /// Translates subgraph \p sg of \p model into \p g; \p used holds the
  /// ONNX names taken so far (shared by the translators of nested
  /// subgraphs).
  Translator(const tfl::Model &model, const tfl::Subgraph &sg,
             onnx::GraphProto &g, Shared &shared)
      : model(model), m(sg), g(g), shared(shared), used(shared.used) {
    size_t n = m.tensors.size();
    names.resize(n);
    orig.resize(n);
    nchw.resize(n);
    isOutput.assign(n, false);
    for (int32_t t : m.outputs)
      isOutput[static_cast<size_t>(t)] = true;
    // One unique ONNX name per tensor (TFLite does not require unique or
    // non-empty names).
    llvm::StringMap<unsigned> count;
    for (const tfl::Tensor &t : m.tensors)
      ++count[t.name];
    for (size_t i = 0; i < n; ++i) {
      std::string name = m.tensors[i].name;
      if (name.empty() || count[name] > 1)
        name = (name.empty() ? "tensor" : name) + "_" + std::to_string(i);
      names[i] = fresh(name);
    }
  }

  /// Translates every operator, in order.
  void run() {
    for (const tfl::Operator &op : m.ops) {
      cur = &op;
      lookup(op.code)->handler(*this, op);
    }
    cur = nullptr;
  }

  /// Makes subgraph input \p t the existing ONNX value \p name.
  void bindInput(int32_t t, const std::string &name) {
    orig[static_cast<size_t>(t)] = name;
  }

  const tfl::Model &model;
  const tfl::Subgraph &m;
  onnx::GraphProto &g;
  Shared &shared;
  std::set<std::string> &used;
  const tfl::Operator *cur = nullptr;

  /// Records that ONNX value \p name carries tensor \p t's quantisation.
  void noteQuant(const std::string &name, int32_t t) {
    const tfl::Tensor &tt = tensor(t);
    if (!tt.isConstant()) {
      if (isQuantized(tt))
        shared.quantized[name] = &tt;
    } else if (!tt.quant.scale.empty() &&
               (isQuantized(tt) || tt.type == fb::TensorType_INT32)) {
      shared.quantConsts[name] = &tt;
    }
  }

  //===------------------------------------------------------------------===//
  // Errors
  //===------------------------------------------------------------------===//

  [[noreturn]] void fail(const std::string &msg) const {
    throw tpu::Error(model.path + ": " + tfl::describe(m, *cur) + ": " + msg);
  }

  //===------------------------------------------------------------------===//
  // Operands
  //===------------------------------------------------------------------===//

  size_t numInputs(const tfl::Operator &op) const { return op.inputs.size(); }
  bool hasInput(const tfl::Operator &op, size_t i) const {
    return i < op.inputs.size() && op.inputs[i] >= 0;
  }
  int32_t input(const tfl::Operator &op, size_t i) const {
    if (!hasInput(op, i))
      fail("input " + std::to_string(i) + " is missing");
    return op.inputs[i];
  }
  int32_t output(const tfl::Operator &op, size_t i) const {
    if (i >= op.outputs.size())
      fail("output " + std::to_string(i) + " is missing");
    return op.outputs[i];
  }
  const tfl::Tensor &tensor(int32_t t) const {
    return m.tensors[static_cast<size_t>(t)];
  }
  const std::vector<int64_t> &shape(int32_t t) const { return tensor(t).shape; }
  size_t rank(int32_t t) const { return shape(t).size(); }

  /// The ONNX name of tensor \p t in its TFLite layout.
  std::string origName(int32_t t) {
    size_t i = static_cast<size_t>(t);
    if (!orig[i].empty())
      return orig[i];
    const tfl::Tensor &tt = tensor(t);
    if (tt.isConstant()) {
      addInitializer(names[i], tt);
      orig[i] = names[i];
      noteQuant(orig[i], t);
      return orig[i];
    }
    if (nchw[i].empty())
      fail("reads " + tfl::describeTensor(m, t) + " before it is computed");
    std::string out = isOutput[i] ? names[i] : fresh(names[i] + "_nhwc");
    transpose(nchw[i], out, kToNhwc);
    noteQuant(out, t);
    orig[i] = out;
    return out;
  }
  /// The ONNX name of 4-D tensor \p t in NCHW form.
  std::string nchwName(int32_t t) {
    size_t i = static_cast<size_t>(t);
    if (!nchw[i].empty())
      return nchw[i];
    if (rank(t) != 4)
      fail(tfl::describeTensor(m, t) + " has rank " + std::to_string(rank(t)) +
           "; this operator needs a 4-D NHWC tensor");
    std::string in = origName(t);
    nchw[i] = fresh(names[i] + "_nchw");
    transpose(in, nchw[i], kToNchw);
    noteQuant(nchw[i], t);
    return nchw[i];
  }
  bool hasNchwForm(int32_t t) const {
    return !nchw[static_cast<size_t>(t)].empty();
  }

  /// Registers output \p t as computed in NCHW (\p inNchw) or TFLite layout
  /// and returns the name the producing node writes.
  std::string defineOutput(int32_t t, bool inNchw) {
    size_t i = static_cast<size_t>(t);
    if (!inNchw) {
      orig[i] = names[i];
      noteQuant(orig[i], t);
      return orig[i];
    }
    nchw[i] = isOutput[i] ? fresh(names[i] + "_nchw") : names[i];
    noteQuant(nchw[i], t);
    return nchw[i];
  }

  /// The integer data of constant input \p i (INT32 / INT64).
  std::vector<int64_t> constInts(const tfl::Operator &op, size_t i,
                                 const std::string &what) const {
    int32_t t = input(op, i);
    const tfl::Tensor &tt = tensor(t);
    if (!tt.isConstant())
      fail(what + " (" + tfl::describeTensor(m, t) +
           ") must be a constant");
    std::vector<int64_t> v;
    if (tt.type == fb::TensorType_INT32) {
      for (size_t k = 0; k < tt.size / 4; ++k) {
        int32_t x;
        std::memcpy(&x, tt.data + 4 * k, 4);
        v.push_back(x);
      }
    } else if (tt.type == fb::TensorType_INT64) {
      for (size_t k = 0; k < tt.size / 8; ++k) {
        int64_t x;
        std::memcpy(&x, tt.data + 8 * k, 8);
        v.push_back(x);
      }
    } else {
      fail(what + " (" + tfl::describeTensor(m, t) + ") has type " +
           tfl::typeName(tt.type) + "; INT32 or INT64 expected");
    }
    return v;
  }

  //===------------------------------------------------------------------===//
  // Emitting ONNX
  //===------------------------------------------------------------------===//

  std::string fresh(const std::string &base) {
    std::string name = base;
    for (int k = 1; used.count(name); ++k)
      name = base + "_" + std::to_string(k);
    used.insert(name);
    return name;
  }

  onnx::NodeProto *node(const std::string &type,
                        const std::vector<std::string> &ins,
                        const std::vector<std::string> &outs) {
    onnx::NodeProto *n = g.add_node();
    n->set_op_type(type);
    n->set_name(cur ? tfl::describe(m, *cur) : "layout conversion");
    for (const std::string &i : ins)
      n->add_input(i);
    for (const std::string &o : outs)
      n->add_output(o);
    return n;
  }
  static void attr(onnx::NodeProto *n, const std::string &name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto *n, const std::string &name,
                   const std::vector<int64_t> &v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  static void attrF(onnx::NodeProto *n, const std::string &name, float v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attrS(onnx::NodeProto *n, const std::string &name,
                    const std::string &v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  void transpose(const std::string &in, const std::string &out,
                 const std::vector<int64_t> &perm) {
    attr(node("Transpose", {in}, {out}), "perm", perm);
  }

  /// A new int64 initializer of shape [values.size()] (or [] if \p scalar).
  std::string intConst(const std::string &base,
                       const std::vector<int64_t> &values,
                       bool scalar = false) {
    std::string name = fresh(base);
    onnx::TensorProto *t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar)
      t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      t->add_int64_data(v);
    return name;
  }
  /// A new float initializer of shape \p shape.
  std::string floatConst(const std::string &base,
                         const std::vector<float> &values,
                         const std::vector<int64_t> &shape) {
    std::string name = fresh(base);
    onnx::TensorProto *t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
    return name;
  }

  void addInitializer(const std::string &name, const tfl::Tensor &tt) {
    if (!tt.quant.scale.empty() && tt.type != fb::TensorType_FLOAT32 &&
        tt.type != fb::TensorType_FLOAT16) {
      // A quantised constant (weights, int32 biases) read by a float op:
      // its real values.
      std::optional<std::vector<float>> v = constantAsFloat(tt);
      if (!v)
        fail("constant '" + tt.name + "' of type " + tfl::typeName(tt.type) +
             " cannot be dequantised");
      onnx::TensorProto *t = g.add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t d : tt.shape)
        t->add_dims(d);
      t->set_raw_data(v->data(), v->size() * sizeof(float));
      return;
    }
    int32_t type = onnxType(tt.type);
    if (type == onnx::TensorProto::UNDEFINED)
      fail("constant '" + tt.name + "' has type " + tfl::typeName(tt.type) +
           ", which is not supported");
    onnx::TensorProto *t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : tt.shape)
      t->add_dims(d);
    t->set_raw_data(tt.data, tt.size);
  }

  /// Appends the fused activation \p act to \p pre, writing \p out.
  void activation(fb::ActivationFunctionType act, const std::string &pre,
                  const std::string &out) {
    switch (act) {
    case fb::ActivationFunctionType_RELU:
      node("Relu", {pre}, {out});
      return;
    case fb::ActivationFunctionType_RELU6:
      node("Clip", {pre, floatScalar(0), floatScalar(6)}, {out});
      return;
    case fb::ActivationFunctionType_RELU_N1_TO_1:
      node("Clip", {pre, floatScalar(-1), floatScalar(1)}, {out});
      return;
    case fb::ActivationFunctionType_TANH:
      node("Tanh", {pre}, {out});
      return;
    default:
      fail("fused activation " +
           std::string(fb::EnumNameActivationFunctionType(act)) +
           " is not supported");
    }
  }
  std::string floatScalar(float v) { return floatConst("const", {v}, {}); }

  /// Emits the main node of an operator writing output \p t (in NCHW form
  /// if \p inNchw), followed by fused activation \p act.
  onnx::NodeProto *emit(const std::string &type,
                        const std::vector<std::string> &ins, int32_t t,
                        bool inNchw,
                        fb::ActivationFunctionType act =
                            fb::ActivationFunctionType_NONE) {
    std::string out = defineOutput(t, inNchw);
    if (act == fb::ActivationFunctionType_NONE)
      return node(type, ins, {out});
    std::string pre = fresh(out + "_" + type);
    noteQuant(pre, t);
    onnx::NodeProto *n = node(type, ins, {pre});
    activation(act, pre, out);
    return n;
  }

  /// Layout of an elementwise operator: NCHW if some run-time input has
  /// an NCHW form and every input can be broadcast in it.
  bool elementwiseInNchw(const tfl::Operator &op) {
    bool any = false;
    for (int32_t t : op.inputs) {
      if (t < 0)
        continue;
      if (rank(t) > 4)
        return false;
      if (!tensor(t).isConstant() && hasNchwForm(t))
        any = true;
    }
    return any && rank(output(op, 0)) == 4;
  }
  /// Input \p i of an elementwise operator in the chosen layout. In NCHW a
  /// lower-rank operand (broadcast against the trailing NHWC axes) is
  /// padded to 4-D and transposed like the others.
  std::string elementwiseInput(const tfl::Operator &op, size_t i,
                               bool inNchw) {
    int32_t t = input(op, i);
    if (!inNchw)
      return origName(t);
    size_t r = rank(t);
    if (r == 4)
      return nchwName(t);
    int64_t n = 1;
    for (int64_t d : shape(t))
      n *= d;
    if (n == 1)
      return origName(t); // a scalar broadcasts in any layout
    std::vector<int64_t> axes;
    for (size_t k = 0; k < 4 - r; ++k)
      axes.push_back(static_cast<int64_t>(k));
    std::string x = fresh(names[static_cast<size_t>(t)] + "_4d");
    node("Unsqueeze", {origName(t), intConst("axes", axes)}, {x});
    std::string y = fresh(names[static_cast<size_t>(t)] + "_4d_nchw");
    transpose(x, y, kToNchw);
    return y;
  }

  /// The builtin options of \p op as \p T; fails when they are missing or
  /// of another type.
  template <typename T>
  const T *options(const tfl::Operator &op, const T *got,
                   const char *name) const {
    (void)op;
    if (!got)
      fail(std::string("missing or mismatched builtin options (expected ") +
           name + ")");
    return got;
  }

private:
  std::vector<std::string> names, orig, nchw;
  std::vector<bool> isOutput;
};

#define OPTIONS(op, T) tr.options<fb::T>(op, (op).op->builtin_options_as_##T(), #T)

std::string autoPad(fb::Padding p) {
  return p == fb::Padding_SAME ? "SAME_UPPER" : "VALID";
}

//===----------------------------------------------------------------------===//
// NN family
//===----------------------------------------------------------------------===//

/// The NCHW Conv of a CONV_2D / DEPTHWISE_CONV_2D (options \p o of either
/// table: the fields they share).
template <typename Options>
void emitConv(Translator &tr, const tfl::Operator &op,
              const std::vector<std::string> &ins, const Options *o,
              int64_t group) {
  onnx::NodeProto *n = tr.emit("Conv", ins, tr.output(op, 0), true,
                               o->fused_activation_function());
  Translator::attr(n, "strides", {o->stride_h(), o->stride_w()});
  Translator::attr(n, "dilations",
                   {o->dilation_h_factor(), o->dilation_w_factor()});
  Translator::attrS(n, "auto_pad", autoPad(o->padding()));
  Translator::attr(n, "group", group);
}

void convertConv2D(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, Conv2DOptions);
  int32_t x = tr.input(op, 0), w = tr.input(op, 1);
  if (tr.rank(x) != 4 || tr.rank(w) != 4)
    tr.fail("input and filter must be 4-D");
  int64_t cin = tr.shape(x)[3], filterIn = tr.shape(w)[3];
  if (filterIn <= 0 || cin % filterIn != 0)
    tr.fail("input channels " + std::to_string(cin) +
            " are not a multiple of the filter's " + std::to_string(filterIn));
  std::vector<std::string> ins = {tr.nchwName(x), tr.nchwName(w)};
  if (tr.hasInput(op, 2))
    ins.push_back(tr.origName(op.inputs[2]));
  emitConv(tr, op, ins, o, cin / filterIn);
}

void convertDepthwiseConv2D(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, DepthwiseConv2DOptions);
  int32_t x = tr.input(op, 0), w = tr.input(op, 1);
  if (tr.rank(x) != 4 || tr.rank(w) != 4 || tr.shape(w)[0] != 1)
    tr.fail("input must be 4-D and the filter [1, H, W, C * multiplier]");
  int64_t cin = tr.shape(x)[3];
  if (cin <= 0 || tr.shape(w)[3] % cin != 0)
    tr.fail("filter channels " + std::to_string(tr.shape(w)[3]) +
            " are not a multiple of the input's " + std::to_string(cin));
  // [1, H, W, C*M] -> [C*M, 1, H, W].
  std::string wt = tr.fresh(tr.origName(w) + "_oihw");
  tr.transpose(tr.origName(w), wt, {3, 0, 1, 2});
  tr.noteQuant(wt, w);
  std::vector<std::string> ins = {tr.nchwName(x), wt};
  if (tr.hasInput(op, 2))
    ins.push_back(tr.origName(op.inputs[2]));
  emitConv(tr, op, ins, o, cin);
}

void convertTransposeConv(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, TransposeConvOptions);
  std::vector<int64_t> outShape = tr.constInts(op, 0, "output shape");
  int32_t w = tr.input(op, 1), x = tr.input(op, 2);
  if (outShape.size() != 4 || tr.rank(w) != 4 || tr.rank(x) != 4)
    tr.fail("output shape, filter and input must be 4-D");
  // [O, H, W, I] -> [I, O, H, W].
  std::string wt = tr.fresh(tr.origName(w) + "_iohw");
  tr.transpose(tr.origName(w), wt, {3, 0, 1, 2});
  tr.noteQuant(wt, w);
  std::vector<std::string> ins = {tr.nchwName(x), wt};
  if (tr.hasInput(op, 3))
    ins.push_back(tr.origName(op.inputs[3]));
  const std::vector<int64_t> &in = tr.shape(x), &ws = tr.shape(w);
  std::vector<int64_t> strides = {o->stride_h(), o->stride_w()};
  std::vector<int64_t> pads(4, 0), outPad(2, 0);
  for (int d = 0; d < 2; ++d) {
    // TFLite: out = stride * (in - 1) + k - total padding (before: half,
    // rounded down); a negative total becomes output padding.
    int64_t total = strides[d] * (in[1 + d] - 1) + ws[1 + d] - outShape[1 + d];
    if (total >= 0) {
      pads[d] = total / 2;
      pads[d + 2] = total - total / 2;
    } else {
      outPad[d] = -total;
      if (outPad[d] >= strides[d])
        tr.fail("output shape is larger than the stride allows");
    }
  }
  onnx::NodeProto *n = tr.emit("ConvTranspose", ins, tr.output(op, 0), true,
                               o->fused_activation_function());
  Translator::attr(n, "strides", strides);
  Translator::attr(n, "pads", pads);
  Translator::attr(n, "output_padding", outPad);
}

void convertFullyConnected(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, FullyConnectedOptions);
  if (o->weights_format() != fb::FullyConnectedOptionsWeightsFormat_DEFAULT)
    tr.fail("the shuffled weight format is not supported");
  int32_t x = tr.input(op, 0), w = tr.input(op, 1), y = tr.output(op, 0);
  if (tr.rank(w) != 2)
    tr.fail("weights must be 2-D [units, inputs]");
  int64_t k = tr.shape(w)[1];
  std::string in = tr.origName(x);
  if (tr.rank(x) != 2) {
    std::string flat = tr.fresh(in + "_2d");
    tr.node("Reshape", {in, tr.intConst("shape", {-1, k})}, {flat});
    in = flat;
  }
  std::vector<std::string> ins = {in, tr.origName(w)};
  if (tr.hasInput(op, 2))
    ins.push_back(tr.origName(op.inputs[2]));
  bool reshapeBack = o->keep_num_dims() && tr.rank(x) != 2;
  onnx::NodeProto *n;
  if (!reshapeBack) {
    n = tr.emit("Gemm", ins, y, false, o->fused_activation_function());
  } else {
    std::string flatOut = tr.fresh(in + "_fc");
    n = tr.node("Gemm", ins, {flatOut});
    std::vector<int64_t> outShape = tr.shape(x);
    outShape.back() = tr.shape(w)[0];
    outShape[0] = -1;
    tr.emit("Reshape", {flatOut, tr.intConst("shape", outShape)}, y, false,
            o->fused_activation_function());
  }
  Translator::attr(n, "transB", 1);
}

void convertBatchMatMul(Translator &tr, const tfl::Operator &op) {
  const auto *o = op.op->builtin_options_as_BatchMatMulOptions();
  std::string a = tr.origName(tr.input(op, 0)),
              b = tr.origName(tr.input(op, 1));
  auto swapLast = [&](std::string v, int32_t t) {
    size_t r = tr.rank(t);
    if (r < 2)
      tr.fail("adj_x / adj_y need operands of rank >= 2");
    std::vector<int64_t> perm;
    for (size_t k = 0; k < r; ++k)
      perm.push_back(static_cast<int64_t>(k));
    std::swap(perm[r - 1], perm[r - 2]);
    std::string out = tr.fresh(v + "_t");
    tr.transpose(v, out, perm);
    return out;
  };
  if (o && o->adj_x())
    a = swapLast(a, op.inputs[0]);
  if (o && o->adj_y())
    b = swapLast(b, op.inputs[1]);
  tr.emit("MatMul", {a, b}, tr.output(op, 0), false);
}

void convertPool(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, Pool2DOptions);
  bool isMax = op.code == fb::BuiltinOperator_MAX_POOL_2D;
  onnx::NodeProto *n =
      tr.emit(isMax ? "MaxPool" : "AveragePool",
              {tr.nchwName(tr.input(op, 0))}, tr.output(op, 0), true,
              o->fused_activation_function());
  Translator::attr(n, "kernel_shape", {o->filter_height(), o->filter_width()});
  Translator::attr(n, "strides", {o->stride_h(), o->stride_w()});
  Translator::attrS(n, "auto_pad", autoPad(o->padding()));
}

void convertSoftmax(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, SoftmaxOptions);
  std::string x = tr.origName(tr.input(op, 0));
  if (o->beta() != 1.0f) {
    std::string scaled = tr.fresh(x + "_beta");
    tr.node("Mul", {x, tr.floatScalar(o->beta())}, {scaled});
    x = scaled;
  }
  Translator::attr(tr.emit("Softmax", {x}, tr.output(op, 0), false), "axis",
                   -1);
}

void convertResize(Translator &tr, const tfl::Operator &op) {
  bool bilinear = op.code == fb::BuiltinOperator_RESIZE_BILINEAR;
  bool alignCorners = false, halfPixel = false;
  if (bilinear) {
    const auto *o = OPTIONS(op, ResizeBilinearOptions);
    alignCorners = o->align_corners();
    halfPixel = o->half_pixel_centers();
  } else {
    const auto *o = OPTIONS(op, ResizeNearestNeighborOptions);
    alignCorners = o->align_corners();
    halfPixel = o->half_pixel_centers();
  }
  int32_t x = tr.input(op, 0);
  std::vector<int64_t> size = tr.constInts(op, 1, "size");
  if (size.size() != 2 || tr.rank(x) != 4)
    tr.fail("input must be 4-D and size [new_height, new_width]");
  std::vector<int64_t> sizes = {tr.shape(x)[0], tr.shape(x)[3], size[0],
                                size[1]};
  std::string coord = alignCorners ? "align_corners"
                      : halfPixel  ? (bilinear ? "half_pixel"
                                               : "tf_half_pixel_for_nn")
                                   : "asymmetric";
  onnx::NodeProto *n = tr.emit(
      "Resize", {tr.nchwName(x), "", "", tr.intConst("sizes", sizes)},
      tr.output(op, 0), true);
  Translator::attrS(n, "mode", bilinear ? "linear" : "nearest");
  Translator::attrS(n, "coordinate_transformation_mode", coord);
  if (!bilinear)
    Translator::attrS(n, "nearest_mode",
                      alignCorners ? "round_prefer_ceil" : "floor");
}

//===----------------------------------------------------------------------===//
// Elementwise family
//===----------------------------------------------------------------------===//

template <typename Options>
fb::ActivationFunctionType activationOf(const Options *o) {
  return o ? o->fused_activation_function() : fb::ActivationFunctionType_NONE;
}

/// The fused activation of ADD / SUB / MUL / DIV (NONE for the others).
fb::ActivationFunctionType binaryActivation(const tfl::Operator &op) {
  const fb::Operator *o = op.op;
  switch (op.code) {
  case fb::BuiltinOperator_ADD:
    return activationOf(o->builtin_options_as_AddOptions());
  case fb::BuiltinOperator_SUB:
    return activationOf(o->builtin_options_as_SubOptions());
  case fb::BuiltinOperator_MUL:
    return activationOf(o->builtin_options_as_MulOptions());
  case fb::BuiltinOperator_DIV:
    return activationOf(o->builtin_options_as_DivOptions());
  default:
    return fb::ActivationFunctionType_NONE;
  }
}

/// The ONNX operator of a TFLite elementwise operator that maps one to
/// one (nullptr for the others).
const char *onnxElementwise(int32_t code) {
  static const std::map<int32_t, const char *> ops = {
      {fb::BuiltinOperator_ADD, "Add"},
      {fb::BuiltinOperator_SUB, "Sub"},
      {fb::BuiltinOperator_MUL, "Mul"},
      {fb::BuiltinOperator_DIV, "Div"},
      {fb::BuiltinOperator_MAXIMUM, "Max"},
      {fb::BuiltinOperator_MINIMUM, "Min"},
      {fb::BuiltinOperator_POW, "Pow"},
      {fb::BuiltinOperator_PRELU, "PRelu"},
      {fb::BuiltinOperator_GREATER, "Greater"},
      {fb::BuiltinOperator_GREATER_EQUAL, "GreaterOrEqual"},
      {fb::BuiltinOperator_LESS, "Less"},
      {fb::BuiltinOperator_LESS_EQUAL, "LessOrEqual"},
      {fb::BuiltinOperator_EQUAL, "Equal"},
      {fb::BuiltinOperator_LOGISTIC, "Sigmoid"},
      {fb::BuiltinOperator_TANH, "Tanh"},
      {fb::BuiltinOperator_RELU, "Relu"},
      {fb::BuiltinOperator_HARD_SWISH, "HardSwish"},
      {fb::BuiltinOperator_EXP, "Exp"},
      {fb::BuiltinOperator_LOG, "Log"},
      {fb::BuiltinOperator_SQRT, "Sqrt"},
      {fb::BuiltinOperator_ABS, "Abs"},
      {fb::BuiltinOperator_NEG, "Neg"},
  };
  auto it = ops.find(code);
  return it == ops.end() ? nullptr : it->second;
}

/// Binary elementwise operators and comparisons (layout: follows).
void convertBinary(Translator &tr, const tfl::Operator &op) {
  bool nchw = tr.elementwiseInNchw(op);
  std::string a = tr.elementwiseInput(op, 0, nchw),
              b = tr.elementwiseInput(op, 1, nchw);
  int32_t y = tr.output(op, 0);
  if (op.code == fb::BuiltinOperator_SQUARED_DIFFERENCE) {
    std::string d = tr.fresh(a + "_diff");
    tr.node("Sub", {a, b}, {d});
    tr.emit("Mul", {d, d}, y, nchw);
    return;
  }
  tr.emit(onnxElementwise(op.code), {a, b}, y, nchw, binaryActivation(op));
}

/// Unary elementwise operators (layout: follows).
void convertUnary(Translator &tr, const tfl::Operator &op) {
  bool nchw = tr.elementwiseInNchw(op);
  std::string x = tr.elementwiseInput(op, 0, nchw);
  int32_t y = tr.output(op, 0);
  switch (op.code) {
  case fb::BuiltinOperator_RELU6:
    tr.emit("Clip", {x, tr.floatScalar(0), tr.floatScalar(6)}, y, nchw);
    return;
  case fb::BuiltinOperator_RELU_N1_TO_1:
    tr.emit("Clip", {x, tr.floatScalar(-1), tr.floatScalar(1)}, y, nchw);
    return;
  case fb::BuiltinOperator_LEAKY_RELU: {
    const auto *o = OPTIONS(op, LeakyReluOptions);
    Translator::attrF(tr.emit("LeakyRelu", {x}, y, nchw), "alpha", o->alpha());
    return;
  }
  case fb::BuiltinOperator_RSQRT: {
    std::string s = tr.fresh(x + "_sqrt");
    tr.node("Sqrt", {x}, {s});
    tr.emit("Reciprocal", {s}, y, nchw);
    return;
  }
  case fb::BuiltinOperator_SQUARE:
    tr.emit("Mul", {x, x}, y, nchw);
    return;
  default:
    tr.emit(onnxElementwise(op.code), {x}, y, nchw);
  }
}

void convertDequantize(Translator &tr, const tfl::Operator &op) {
  int32_t x = tr.input(op, 0), y = tr.output(op, 0);
  const tfl::Tensor &t = tr.tensor(x);
  if (!t.isConstant()) {
    if (t.type == fb::TensorType_FLOAT16) {
      Translator::attr(tr.emit("Cast", {tr.origName(x)}, y, false), "to",
                       onnx::TensorProto::FLOAT);
      return;
    }
    if (!isQuantized(t))
      tr.fail("run-time dequantisation of " + tfl::typeName(t.type) +
              " is not supported");
    // The float graph already carries the real value.
    tr.emit("Identity", {tr.origName(x)}, y, false);
    return;
  }
  std::optional<std::vector<float>> v = constantAsFloat(t);
  if (!v)
    tr.fail(tfl::describeTensor(tr.m, x) + " of type " +
            tfl::typeName(t.type) + " has no quantisation scale");
  std::string name = tr.defineOutput(y, false);
  onnx::TensorProto *init = tr.g.add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : t.shape)
    init->add_dims(d);
  init->set_raw_data(v->data(), v->size() * sizeof(float));
}

void convertQuantize(Translator &tr, const tfl::Operator &op) {
  int32_t x = tr.input(op, 0), y = tr.output(op, 0);
  const tfl::Tensor &out = tr.tensor(y);
  if (out.type != fb::TensorType_FLOAT32 && out.type != fb::TensorType_FLOAT16 &&
      !isQuantized(out))
    tr.fail("quantisation to " + tfl::typeName(out.type) +
            " is not supported");
  // Real values in, real values out: the rounding to the output's grid is
  // the INT8 deployment's (its calibration entry is this tensor's scale).
  // The import folds the identity away, so a float input takes the
  // output's quantisation too (a model input read by QUANTIZE alone would
  // otherwise have no entry).
  if (!isQuantized(tr.tensor(x)))
    tr.noteQuant(tr.origName(x), y);
  tr.emit("Identity", {tr.origName(x)}, y, false);
}

//===----------------------------------------------------------------------===//
// Shape family
//===----------------------------------------------------------------------===//

void convertReshape(Translator &tr, const tfl::Operator &op) {
  std::vector<int64_t> shape;
  if (tr.hasInput(op, 1) && tr.tensor(op.inputs[1]).isConstant()) {
    shape = tr.constInts(op, 1, "shape");
  } else if (const auto *o = op.op->builtin_options_as_ReshapeOptions();
             o && o->new_shape()) {
    shape.assign(o->new_shape()->begin(), o->new_shape()->end());
  } else {
    tr.fail("the new shape must be a constant (input 1 or new_shape)");
  }
  for (int64_t d : shape)
    if (d == 0 || d < -1)
      tr.fail("new shape dimension " + std::to_string(d) +
              " is not supported");
  tr.emit("Reshape", {tr.origName(tr.input(op, 0)), tr.intConst("shape", shape)},
          tr.output(op, 0), false);
}

void convertSqueeze(Translator &tr, const tfl::Operator &op) {
  std::vector<std::string> ins = {tr.origName(tr.input(op, 0))};
  if (const auto *o = op.op->builtin_options_as_SqueezeOptions();
      o && o->squeeze_dims() && o->squeeze_dims()->size())
    ins.push_back(tr.intConst(
        "axes", std::vector<int64_t>(o->squeeze_dims()->begin(),
                                     o->squeeze_dims()->end())));
  tr.emit("Squeeze", ins, tr.output(op, 0), false);
}

void convertExpandDims(Translator &tr, const tfl::Operator &op) {
  std::vector<int64_t> axis = tr.constInts(op, 1, "axis");
  if (axis.size() != 1)
    tr.fail("axis must hold one value");
  tr.emit("Unsqueeze",
          {tr.origName(tr.input(op, 0)), tr.intConst("axes", axis)},
          tr.output(op, 0), false);
}

void convertTranspose(Translator &tr, const tfl::Operator &op) {
  std::vector<int64_t> perm = tr.constInts(op, 1, "permutation");
  Translator::attr(
      tr.emit("Transpose", {tr.origName(tr.input(op, 0))}, tr.output(op, 0),
              false),
      "perm", perm);
}

void convertConcat(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, ConcatenationOptions);
  int32_t y = tr.output(op, 0);
  int64_t r = static_cast<int64_t>(tr.rank(y));
  int64_t axis = o->axis() < 0 ? o->axis() + r : o->axis();
  if (axis < 0 || axis >= r)
    tr.fail("axis " + std::to_string(o->axis()) + " is out of range");
  // NCHW when every input is 4-D and some already has that form.
  bool nchw = r == 4;
  bool any = false;
  for (int32_t t : op.inputs) {
    if (t < 0 || tr.rank(t) != 4)
      nchw = false;
    else if (tr.hasNchwForm(t))
      any = true;
  }
  nchw = nchw && any;
  std::vector<std::string> ins;
  for (int32_t t : op.inputs)
    ins.push_back(nchw ? tr.nchwName(t) : tr.origName(t));
  if (nchw)
    axis = std::find(kToNchw.begin(), kToNchw.end(), axis) - kToNchw.begin();
  Translator::attr(tr.emit("Concat", ins, y, nchw, o->fused_activation_function()),
                   "axis", axis);
}

void convertPad(Translator &tr, const tfl::Operator &op) {
  int32_t x = tr.input(op, 0);
  std::vector<int64_t> p = tr.constInts(op, 1, "paddings");
  size_t r = tr.rank(x);
  if (p.size() != 2 * r)
    tr.fail("paddings must be [" + std::to_string(r) + ", 2]");
  std::vector<int64_t> pads(2 * r);
  for (size_t d = 0; d < r; ++d) {
    pads[d] = p[2 * d];
    pads[r + d] = p[2 * d + 1];
  }
  std::vector<std::string> ins = {tr.origName(x), tr.intConst("pads", pads)};
  if (op.code == fb::BuiltinOperator_PADV2 && tr.hasInput(op, 2))
    ins.push_back(tr.origName(op.inputs[2]));
  tr.emit("Pad", ins, tr.output(op, 0), false);
}

void convertStridedSlice(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, StridedSliceOptions);
  if (o->ellipsis_mask() || o->new_axis_mask())
    tr.fail("ellipsis_mask and new_axis_mask are not supported");
  if (o->offset())
    tr.fail("offset = true is not supported");
  int32_t x = tr.input(op, 0);
  std::vector<int64_t> begin = tr.constInts(op, 1, "begin"),
                       end = tr.constInts(op, 2, "end"),
                       strides = tr.constInts(op, 3, "strides");
  size_t n = begin.size();
  if (end.size() != n || strides.size() != n || n > tr.rank(x))
    tr.fail("begin, end and strides must have one value per sliced axis");
  const int64_t big = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> axes, shrink;
  for (size_t d = 0; d < n; ++d) {
    if (strides[d] == 0)
      tr.fail("stride 0 on axis " + std::to_string(d));
    bool fwd = strides[d] > 0;
    if (o->begin_mask() & (1 << d))
      begin[d] = fwd ? 0 : big;
    if (o->end_mask() & (1 << d))
      end[d] = fwd ? big : std::numeric_limits<int64_t>::min();
    if (o->shrink_axis_mask() & (1 << d)) {
      end[d] = begin[d] == -1 ? big : begin[d] + 1;
      strides[d] = 1;
      shrink.push_back(static_cast<int64_t>(d));
    }
    axes.push_back(static_cast<int64_t>(d));
  }
  std::string in = tr.origName(x);
  std::vector<std::string> ins = {in, tr.intConst("starts", begin),
                                  tr.intConst("ends", end),
                                  tr.intConst("axes", axes),
                                  tr.intConst("steps", strides)};
  int32_t y = tr.output(op, 0);
  if (shrink.empty()) {
    tr.emit("Slice", ins, y, false);
    return;
  }
  std::string sliced = tr.fresh(in + "_slice");
  tr.node("Slice", ins, {sliced});
  tr.emit("Squeeze", {sliced, tr.intConst("axes", shrink)}, y, false);
}

void convertSlice(Translator &tr, const tfl::Operator &op) {
  int32_t x = tr.input(op, 0);
  std::vector<int64_t> begin = tr.constInts(op, 1, "begin"),
                       size = tr.constInts(op, 2, "size");
  if (begin.size() != size.size() || begin.size() != tr.rank(x))
    tr.fail("begin and size must have one value per axis");
  std::vector<int64_t> end(begin.size());
  for (size_t d = 0; d < begin.size(); ++d)
    end[d] = size[d] == -1 ? std::numeric_limits<int64_t>::max()
                           : begin[d] + size[d];
  tr.emit("Slice",
          {tr.origName(x), tr.intConst("starts", begin),
           tr.intConst("ends", end)},
          tr.output(op, 0), false);
}

void convertGather(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, GatherOptions);
  if (o->batch_dims() != 0)
    tr.fail("batch_dims != 0 is not supported");
  Translator::attr(tr.emit("Gather",
                           {tr.origName(tr.input(op, 0)),
                            tr.origName(tr.input(op, 1))},
                           tr.output(op, 0), false),
                   "axis", o->axis());
}

void convertReduce(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, ReducerOptions);
  std::vector<int64_t> axes = tr.constInts(op, 1, "axes");
  std::string x = tr.origName(tr.input(op, 0));
  int32_t y = tr.output(op, 0);
  onnx::NodeProto *n;
  if (op.code == fb::BuiltinOperator_SUM) {
    n = tr.emit("ReduceSum", {x, tr.intConst("axes", axes)}, y, false);
  } else {
    const char *type = op.code == fb::BuiltinOperator_MEAN ? "ReduceMean"
                       : op.code == fb::BuiltinOperator_REDUCE_MAX
                           ? "ReduceMax"
                           : "ReduceMin";
    n = tr.emit(type, {x}, y, false);
    Translator::attr(n, "axes", axes);
  }
  Translator::attr(n, "keepdims", o->keep_dims() ? 1 : 0);
}

void convertIf(Translator &tr, const tfl::Operator &op) {
  const auto *o = OPTIONS(op, IfOptions);
  std::string cond = tr.origName(tr.input(op, 0));
  std::vector<std::string> args;
  for (size_t i = 1; i < op.inputs.size(); ++i)
    args.push_back(tr.origName(tr.input(op, i)));
  auto branch = [&](int32_t k) {
    const tfl::Subgraph &sub = tr.model.subgraphs[static_cast<size_t>(k)];
    if (sub.inputs.size() != args.size() ||
        sub.outputs.size() != op.outputs.size())
      tr.fail("subgraph " + std::to_string(k) + " has " +
              std::to_string(sub.inputs.size()) + " inputs and " +
              std::to_string(sub.outputs.size()) + " outputs; the operator "
              "passes " + std::to_string(args.size()) + " and expects " +
              std::to_string(op.outputs.size()));
    Translator child(tr.model, sub, tr.g, tr.shared);
    for (size_t i = 0; i < args.size(); ++i)
      child.bindInput(sub.inputs[i], args[i]);
    child.run();
    std::vector<std::string> outs;
    for (int32_t t : sub.outputs)
      outs.push_back(child.origName(t));
    return outs;
  };
  std::vector<std::string> thenOuts = branch(o->then_subgraph_index());
  std::vector<std::string> elseOuts = branch(o->else_subgraph_index());
  for (size_t j = 0; j < op.outputs.size(); ++j)
    tr.emit("Where", {cond, thenOuts[j], elseOuts[j]}, op.outputs[j], false);
}

#undef OPTIONS

//===----------------------------------------------------------------------===//
// Dispatch table
//===----------------------------------------------------------------------===//

const std::vector<OpRow> &opRows() {
  static const std::vector<OpRow> rows = {
#define TFLITE_OP(Name, Handler, Note)                                         \
  OpRow{TfliteOpInfo{#Name, fb::BuiltinOperator_##Name, Note}, &Handler},
#include "tpuc/Frontend/TfliteOps.def"
  };
  return rows;
}

const OpRow *lookup(int32_t code) {
  static const std::map<int32_t, const OpRow *> index = [] {
    std::map<int32_t, const OpRow *> m;
    for (const OpRow &r : opRows())
      m[r.info.code] = &r;
    return m;
  }();
  auto it = index.find(code);
  return it == index.end() ? nullptr : it->second;
}

/// One error listing every unsupported operator with its first use.
void checkSupported(const tfl::Model &m) {
  llvm::MapVector<std::string, std::string, std::map<std::string, unsigned>>
      unsupported;
  for (const tfl::Subgraph &sg : m.subgraphs)
    for (const tfl::Operator &op : sg.ops) {
      std::string where = (sg.index ? "subgraph " + std::to_string(sg.index) + " " : "") +
                          "operator " + std::to_string(op.index);
      if (op.code == fb::BuiltinOperator_CUSTOM)
        unsupported.insert({"CUSTOM '" + op.customCode + "'", where});
      else if (!lookup(op.code))
        unsupported.insert({tfl::builtinName(op.code), where});
    }
  if (unsupported.empty())
    return;
  std::string msg = m.path + ": unsupported TFLite operators: ";
  bool first = true;
  for (const auto &[name, where] : unsupported) {
    msg += (first ? "" : ", ") + name + " (" + where + ")";
    first = false;
  }
  throw tpu::Error(msg + " (supported operators: tpuc transform "
                         "--list-tflite-ops)");
}

/// Run-time tensors the float graph can carry.
void checkRuntimeTypes(const tfl::Model &model, const tfl::Subgraph &m) {
  auto check = [&](int32_t t, const std::string &where) {
    const tfl::Tensor &tt = m.tensors[static_cast<size_t>(t)];
    if (tt.isConstant())
      return;
    switch (tt.type) {
    case fb::TensorType_FLOAT32:
    case fb::TensorType_FLOAT16:
    case fb::TensorType_INT32:
    case fb::TensorType_INT64:
    case fb::TensorType_BOOL:
      return;
    default:
      if (isQuantized(tt))
        return;
      throw tpu::Error(
          model.path + ": " + where + ": " + tfl::describeTensor(m, t) + " is " +
          tfl::typeName(tt.type) +
          " at run time without quantisation parameters; run-time integer "
          "tensors must be int8 / uint8 with a scale (int16 activations are "
          "not supported)");
    }
  };
  for (int32_t t : m.inputs)
    check(t, "subgraph input");
  for (const tfl::Operator &op : m.ops) {
    // Quantize / dequantize of constants are evaluated at import.
    if (op.code == fb::BuiltinOperator_DEQUANTIZE)
      continue;
    for (int32_t t : op.outputs)
      check(t, tfl::describe(m, op));
  }
}

void addValueInfo(onnx::ValueInfoProto *vi, const std::string &name,
                  const tfl::Tensor &t) {
  vi->set_name(name);
  auto *tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(isQuantized(t) ? onnx::TensorProto::FLOAT
                                    : onnxType(t.type));
  auto *shape = tt->mutable_shape();
  for (size_t d = 0; d < t.signature.size(); ++d) {
    auto *dim = shape->add_dim();
    if (t.signature[d] < 0)
      dim->set_dim_param("d" + std::to_string(d));
    else
      dim->set_dim_value(t.signature[d]);
  }
}

/// The calibration entries equivalent to the model's own quantisation: the
/// real range of the int8 / uint8 codes, [(qmin - zp) * s, (qmax - zp) * s];
/// threshold 127 * s for a zero point of 0 (tpuc's symmetric int8 scale
/// threshold / 127 is then the model's), 255 * s for a range starting at
/// 0 (uint8 codes, scale threshold / 255), else the larger magnitude (only
/// --asymmetric, which uses min and max, keeps such a scale exactly).
CaliTable quantizationTable(
    const std::map<std::string, const tfl::Tensor *> &quantized) {
  CaliTable table;
  table.header.push_back("the quantisation of the TFLite model "
                         "(scale, zero point) as calibration entries");
  for (const auto &[name, t] : quantized) {
    double s = t->quant.scale[0];
    int64_t zp = t->quant.zeroPoint.empty() ? 0 : t->quant.zeroPoint[0];
    int64_t qmin = t->type == fb::TensorType_UINT8 ? 0 : -128;
    int64_t qmax = t->type == fb::TensorType_UINT8 ? 255 : 127;
    CaliEntry e;
    e.min = static_cast<double>(qmin - zp) * s;
    e.max = static_cast<double>(qmax - zp) * s;
    if (t->type == fb::TensorType_INT8 && zp == 0)
      e.threshold = 127.0 * s;
    else if (zp == qmin)
      e.threshold = e.max;
    else
      e.threshold = std::max(-e.min, e.max);
    table.order.push_back(name);
    table.entries[name] = e;
  }
  return table;
}

/// The exact quantisation of every quantised activation and constant.
llvm::StringMap<ModelQuant>
modelQuantization(const Shared &shared) {
  llvm::StringMap<ModelQuant> out;
  for (const auto *map : {&shared.quantized, &shared.quantConsts})
    for (const auto &[name, t] : *map) {
      ModelQuant q;
      q.storage = t->type == fb::TensorType_UINT8  ? ModelQuant::Storage::UInt8
                  : t->type == fb::TensorType_INT8 ? ModelQuant::Storage::Int8
                                                   : ModelQuant::Storage::Int32;
      q.zeroPoint = t->quant.zeroPoint.empty() ? 0 : t->quant.zeroPoint[0];
      for (float s : t->quant.scale)
        q.scales.push_back(double(s));
      out[name] = std::move(q);
    }
  return out;
}

} // namespace

bool isTfliteFile(const std::string &path) {
  // The extension decides first, so that a .tflite without its identifier
  // is reported as such rather than as a broken ONNX model.
  if (llvm::StringRef(path).ends_with_insensitive(".tflite"))
    return true;
  std::ifstream in(path, std::ios::binary);
  uint8_t head[8] = {};
  return in && in.read(reinterpret_cast<char *>(head), 8) &&
         tfl::hasTfliteIdentifier(head, 8);
}

namespace {

onnx::ModelProto translate(const std::string &path, CaliTable *quantTable,
                           llvm::StringMap<ModelQuant> *modelQuant = nullptr) {
  tfl::Model m = tfl::readModelFile(path);
  checkSupported(m);
  for (const tfl::Subgraph &sg : m.subgraphs)
    checkRuntimeTypes(m, sg);
  const tfl::Subgraph &main = m.subgraphs[0];

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("tpuc tflite frontend");
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto &g = *model.mutable_graph();
  g.set_name(main.name);

  Shared shared;
  Translator tr(m, main, g, shared);
  for (int32_t t : main.inputs) {
    std::string name = tr.defineOutput(t, false);
    addValueInfo(g.add_input(), name, main.tensors[static_cast<size_t>(t)]);
  }
  tr.run();
  for (int32_t t : main.outputs) {
    std::string name = tr.origName(t);
    addValueInfo(g.add_output(), name, main.tensors[static_cast<size_t>(t)]);
  }
  if (quantTable)
    *quantTable = quantizationTable(shared.quantized);
  if (modelQuant)
    *modelQuant = modelQuantization(shared);
  return model;
}

} // namespace

onnx::ModelProto translateTfliteFile(const std::string &path) {
  return translate(path, nullptr);
}

OnnxImportResult importTfliteFile(mlir::MLIRContext &context,
                                  const std::string &path,
                                  const OnnxImportOptions &options) {
  CaliTable table;
  onnx::ModelProto model = translate(path, &table, &table.modelQuant);
  OnnxImportResult result = importOnnxModel(context, model, path, options);
  if (!table.order.empty())
    setModelQuantTable(*result.module, table);
  return result;
}

void setModelQuantTable(mlir::ModuleOp module, const CaliTable &table) {
  module->setAttr(kQuantTableAttr,
                  mlir::StringAttr::get(module.getContext(),
                                        formatCaliTable(table)));
  if (table.hasModelQuant())
    module->setAttr(kQuantParamsAttr,
                    mlir::StringAttr::get(module.getContext(),
                                          formatModelQuant(table.modelQuant)));
}

std::optional<CaliTable> getModelQuantTable(mlir::ModuleOp module) {
  auto text = module->getAttrOfType<mlir::StringAttr>(kQuantTableAttr);
  if (!text)
    return std::nullopt;
  llvm::Expected<CaliTable> parsed =
      parseCaliTable(text.getValue(), kQuantTableAttr);
  if (!parsed)
    throw tpu::Error(llvm::toString(parsed.takeError()));
  // Keep the tensors the module still has (passes since the import may
  // have merged or dropped some, a layout conversion say).
  llvm::StringSet<> names;
  module.walk([&](mlir::Operation *op) {
    if (auto loc = mlir::dyn_cast<mlir::NameLoc>(op->getLoc()))
      names.insert(loc.getName().getValue());
    if (auto name = op->getAttrOfType<mlir::StringAttr>("name"))
      names.insert(name.getValue());
  });
  CaliTable kept = *parsed;
  kept.order.clear();
  kept.entries.clear();
  for (const std::string &n : parsed->order)
    if (names.contains(n)) {
      kept.order.push_back(n);
      kept.entries[n] = *parsed->find(n);
    }
  if (auto params = module->getAttrOfType<mlir::StringAttr>(kQuantParamsAttr)) {
    llvm::Expected<llvm::StringMap<ModelQuant>> quant =
        parseModelQuant(params.getValue(), kQuantParamsAttr);
    if (!quant)
      throw tpu::Error(llvm::toString(quant.takeError()));
    for (auto &e : *quant)
      if (names.contains(e.getKey()))
        kept.modelQuant[e.getKey()] = e.getValue();
  }
  return kept;
}

llvm::ArrayRef<TfliteOpInfo> getSupportedTfliteOps() {
  static const std::vector<TfliteOpInfo> infos = [] {
    std::vector<TfliteOpInfo> v;
    for (const OpRow &r : opRows())
      v.push_back(r.info);
    return v;
  }();
  return infos;
}

std::string tfliteSupportMatrixMarkdown() {
  std::ostringstream os;
  os << "# TFLite operator support\n\n"
     << "Generated by `tpuc transform --list-tflite-ops` from\n"
     << "`compiler/include/tpuc/Frontend/TfliteOps.def`; do not edit by "
        "hand.\n\n"
     << "A `.tflite` model is translated into an ONNX graph in NCHW form and\n"
     << "imported like an ONNX model (`onnx-support.md`). Activations stay "
        "float32:\n"
     << "float models are supported, with weights stored as float32, float16 "
        "or\n"
     << "int8 / uint8 / int16 behind DEQUANTIZE. Quantised models (int8 / "
        "uint8\n"
     << "activations) import as the float graph of their real values; each "
        "tensor's\n"
     << "scale and zero point is kept in top.quant_table, which `tpuc deploy "
        "--quantize\n"
     << "INT8` uses when no calibration table is given. Constant operands "
        "must be\n"
     << "stored in the model.\n\n"
     << "| Operator | Code | Notes |\n|---|---|---|\n";
  std::vector<TfliteOpInfo> ops(getSupportedTfliteOps().begin(),
                                getSupportedTfliteOps().end());
  std::sort(ops.begin(), ops.end(),
            [](const TfliteOpInfo &a, const TfliteOpInfo &b) {
              return a.name < b.name;
            });
  for (const TfliteOpInfo &op : ops)
    os << "| " << op.name.str() << " | " << op.code << " | " << op.note.str()
       << " |\n";
  os << "\n" << ops.size() << " operators.\n";
  return os.str();
}

} // namespace tpuc::frontend
