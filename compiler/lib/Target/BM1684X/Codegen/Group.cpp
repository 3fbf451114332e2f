//===- Group.cpp - BM1684X codegen of tpu.Group and the local ops ---------===//
//
// Which tpu ops run as local operations and with which backend parameters
// (localOpParams), the backend GroupSpec of a run of ops (buildGroupSpec),
// and tpu.Group's codegen, which emits its body through the backend's group
// scheduler with the slicing the layer-group pass recorded.
//
//===----------------------------------------------------------------------===//
#include "../CodegenContext.h"

#include "mlir/Dialect/Quant/QuantTypes.h"
#include "../GroupSpec.h"
#include "tpuc/Target/BM1684X/LayerGroup.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Support/Module.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
namespace backend = ::tpu::backend;

namespace tpuc::bm1684x {

namespace {

/// The 4-D shape buildGroupSpec holds a value of shape \p s in (before a
/// group's layout, flattenElementwise or matrixRowsLayout, changes it): a
/// matrix [B, M, K] or [M, K] a row per channel, a scalar as one element;
/// other ranks as one row (nullopt).
std::optional<std::array<int64_t, 4>>
groupShape(const std::vector<int64_t> &s) {
  if (s.size() == 4)
    return std::array<int64_t, 4>{s[0], s[1], s[2], s[3]};
  if (s.size() == 3)
    return std::array<int64_t, 4>{s[0], s[1], 1, s[2]};
  if (s.size() == 2)
    return std::array<int64_t, 4>{1, s[0], 1, s[1]};
  if (s.empty())
    return std::array<int64_t, 4>{1, 1, 1, 1};
  return std::nullopt;
}

/// Whether activation \p v can be an operand of an element-wise op of
/// result \p out in a group: of the result's shape, broadcast along H
/// and / or W of a 4-D result (one value per (n, c): a squeeze-excite
/// gate), or a scalar against a result of one (n, c) as the group holds
/// it (the last two read through zero strides).
bool groupOperand(Value v, Value out) {
  if (isa_and_nonnull<tpu::WeightOp>(v.getDefiningOp()))
    return false;
  std::vector<int64_t> vs = module::getShape(v), os = module::getShape(out);
  if (vs == os)
    return true;
  if (vs.size() == 4 && os.size() == 4 && vs[0] == os[0] && vs[1] == os[1] &&
      (vs[2] == 1 || vs[2] == os[2]) && (vs[3] == 1 || vs[3] == os[3]))
    return true;
  auto held = groupShape(os);
  return vs.empty() && held && (*held)[0] == 1 && (*held)[1] == 1;
}

/// A binary op as a local op: its kernel's parameters (binaryKernelParams)
/// when the group can hold its operands. \p acts gets the activations it
/// reads, a null Value for a per-channel weight operand.
template <typename OpT>
std::optional<backend::LocalOpParams>
binaryParams(CodegenContext &ctx, OpT op, backend::BinaryKind k,
             std::vector<Value> &acts, std::string &why) {
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = op.getOutput();
  std::vector<int64_t> os = module::getShape(out);
  BinaryKernelParams kernel = binaryKernelParams(ctx, op, k);
  // x ^ c by a one-element weight: the unary power, as its kernel.
  if (auto *u = std::get_if<backend::UnaryParams>(&kernel)) {
    acts = {lhs};
    return *u;
  }
  if (k == backend::BinaryKind::Pow) {
    why = "pow of a tensor exponent";
    return std::nullopt;
  }
  if (auto *c = std::get_if<backend::BinaryConstParams>(&kernel)) {
    Value tensor = c->constOnLeft ? rhs : lhs;
    if (module::getShape(tensor) != os) {
      why = "broadcast";
      return std::nullopt;
    }
    acts = {tensor};
    return *c;
  }
  // A one-element weight against a tensor of another element count (the
  // kernel broadcasts the tensor) has no local form.
  if (bool(ctx.scalarWeight(lhs)) != bool(ctx.scalarWeight(rhs))) {
    why = "broadcast";
    return std::nullopt;
  }
  // Operands of the output's shape are activations; others must be
  // per-channel weights (resident in local memory).
  for (Value v : {lhs, rhs}) {
    bool weight = isa_and_nonnull<tpu::WeightOp>(v.getDefiningOp());
    std::vector<int64_t> vs = module::getShape(v);
    if (groupOperand(v, out))
      acts.push_back(v);
    else if (weight && vs != os)
      acts.push_back(Value());
    else {
      why = "broadcast activation operand";
      return std::nullopt;
    }
  }
  return std::get<backend::BinaryParams>(kernel);
}

} // namespace

std::optional<backend::LocalOpParams>
localOpParams(CodegenContext &ctx, Operation *op, std::vector<Value> &acts,
              std::string &why) {
  acts.clear();
  // Element-wise ops take values of any rank: a group of them holds its
  // values in a lane-filling 4-D shape (backend::flattenElementwise, which
  // buildGroupSpec applies and without which such a group is refused).
  // Matrices ([M, K], [B, M, K]) are held a row per channel
  // (backend::matrixRowsLayout), which matmuls by a weight, softmax and
  // layer norm along the last axis and element-wise ops work on.
  bool anyRank = isa<tpu::ReduceOp, tpu::CompareOp, tpu::WhereOp, tpu::ActiveOp,
                     tpu::CastOp, tpu::LutOp, tpu::AddOp, tpu::SubOp,
                     tpu::MulOp, tpu::DivOp, tpu::MaxOp, tpu::MinOp, tpu::PowOp,
                     tpu::MatMulOp, tpu::SoftmaxOp, tpu::LayerNormOp>(op);
  // A rank-3 convolution or pooling is 1-D, (n, c, 1, w) as its kernel's
  // nchw(); buildGroupSpec holds its rank-3 values so.
  bool oneD = isa<tpu::Conv2DOp, tpu::Deconv2DOp, tpu::Pool2DOp>(op);
  auto rank4 = [&](Value v) {
    size_t r = module::getShape(v).size();
    return anyRank || r == 4 || (oneD && r == 3);
  };
  for (Value r : op->getResults())
    if (!isa<RankedTensorType>(r.getType()) || !rank4(r)) {
      why = "not a 4-D result";
      return std::nullopt;
    }
  if (op->getNumResults() != 1) {
    why = "several results";
    return std::nullopt;
  }
  std::optional<backend::LocalOpParams> p;
  try {
    // INT8 add / sub / mul: the per-op kernel's parameters (same-shape
    // operands, or a per-(n, c) one such as a squeeze-excite gate; the
    // backend's localOpSupport decides).
    if (isa<tpu::AddOp, tpu::SubOp, tpu::MulOp>(op) &&
        op->hasAttr(tpu::kQuantMultiplierAttr)) {
      Value lhs = op->getOperand(0), rhs = op->getOperand(1);
      Value out = op->getResult(0);
      if (!groupOperand(lhs, out) || !groupOperand(rhs, out)) {
        why = "an INT8 add / sub / mul with broadcasting";
        return std::nullopt;
      }
      acts = {lhs, rhs};
      return binaryInt8Params(ctx, op);
    }
    if (auto c = dyn_cast<tpu::Conv2DOp>(op)) {
      acts = {c.getInput()};
      p = convParams<backend::ConvParams>(ctx, c);
    } else if (auto d = dyn_cast<tpu::Deconv2DOp>(op)) {
      acts = {d.getInput()};
      p = backend::transposedAsConv(deconvParams(ctx, d));
    } else if (auto c = dyn_cast<tpu::CastOp>(op)) {
      acts = {c.getInput()};
      p = castParams(ctx, c);
    } else if (auto r = dyn_cast<tpu::InterpOp>(op)) {
      acts = {r.getInput()};
      p = resizeParams(ctx, r);
    } else if (auto pool = dyn_cast<tpu::Pool2DOp>(op)) {
      acts = {pool.getInput()};
      p = poolParams(ctx, pool);
    } else if (auto a = dyn_cast<tpu::ActiveOp>(op)) {
      acts = {a.getInput()};
      p = activeParams(ctx, a);
    } else if (auto sc = dyn_cast<tpu::ScaleOp>(op)) {
      acts = {sc.getInput()};
      p = scaleParams(ctx, sc);
    } else if (auto l = dyn_cast<tpu::LutOp>(op)) {
      acts = {l.getInput()};
      p = lutParams(ctx, l);
    } else if (auto m = dyn_cast<tpu::MatMulOp>(op)) {
      // By a weight (a linear layer), or of two activations of the same
      // batch dims (attention's products, the right one maybe transposed:
      // mm2.nt), each held a row per channel.
      Value right = m.getRight();
      if (isa_and_nonnull<tpu::WeightOp>(right.getDefiningOp())) {
        acts = {m.getInput()};
      } else {
        std::vector<int64_t> ls = module::getShape(m.getInput()),
                             rs = module::getShape(right);
        if (ls.size() != rs.size() || ls.size() < 3 || ls.size() > 4 ||
            !std::equal(ls.begin(), ls.end() - 2, rs.begin())) {
          why = "a matmul of two activations with broadcast batch dims";
          return std::nullopt;
        }
        acts = {m.getInput(), right};
      }
      p = matmulParams(ctx, m);
    } else if (auto sm = dyn_cast<tpu::SoftmaxOp>(op)) {
      acts = {sm.getInput()};
      p = softmaxParams(ctx, sm);
    } else if (auto ln = dyn_cast<tpu::LayerNormOp>(op)) {
      acts = {ln.getInput()};
      p = layerNormParams(ctx, ln);
    } else if (auto b = dyn_cast<tpu::AddOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Add, acts, why);
    } else if (auto b = dyn_cast<tpu::SubOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Sub, acts, why);
    } else if (auto b = dyn_cast<tpu::MulOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Mul, acts, why);
    } else if (auto b = dyn_cast<tpu::DivOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Div, acts, why);
    } else if (auto b = dyn_cast<tpu::MaxOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Max, acts, why);
    } else if (auto b = dyn_cast<tpu::MinOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Min, acts, why);
    } else if (auto c = dyn_cast<tpu::CompareOp>(op)) {
      CompareKernelParams k = compareParams(ctx, c);
      if (auto *cc = std::get_if<backend::CompareConstParams>(&k)) {
        acts = {cc->constOnLeft ? c.getRhs() : c.getLhs()};
        p = *cc;
      } else if (groupOperand(c.getLhs(), c.getOutput()) &&
                 groupOperand(c.getRhs(), c.getOutput())) {
        acts = {c.getLhs(), c.getRhs()};
        p = std::get<backend::CompareParams>(k);
      } else {
        why = "a comparison with a weight or broadcasting";
        return std::nullopt;
      }
    } else if (auto pm = dyn_cast<tpu::PermuteOp>(op)) {
      // A transpose of H and W (localOpSupport checks the order).
      acts = {pm.getInput()};
      p = permuteParams(ctx, pm);
    } else if (auto sl = dyn_cast<tpu::SliceOp>(op)) {
      // Of C (step 1), H and W (localOpSupport checks the steps).
      acts = {sl.getInput()};
      p = sliceParams(ctx, sl);
    } else if (auto cc = dyn_cast<tpu::ConcatOp>(op)) {
      // Along C (localOpSupport checks the axis); the verifier gives every
      // input the result's element type.
      acts.assign(cc.getInputs().begin(), cc.getInputs().end());
      p = concatParams(ctx, cc);
    } else if (auto pr = dyn_cast<tpu::PReluOp>(op)) {
      // The slope a per-channel weight, (C, 1, 1) or (1, C, 1, 1),
      // resident in local memory.
      if (!isa_and_nonnull<tpu::WeightOp>(pr.getSlope().getDefiningOp())) {
        why = "a parametric relu of a computed slope";
        return std::nullopt;
      }
      backend::PReluParams pp = preluParams(ctx, pr);
      if (pp.output.shape.size() < 2 ||
          !backend::isPerChannel(pp.slope, pp.output.shape[1])) {
        why = "a parametric relu whose slope is not one per channel";
        return std::nullopt;
      }
      acts = {pr.getInput()};
      p = pp;
    } else if (auto w = dyn_cast<tpu::WhereOp>(op)) {
      Value out = w.getOutput();
      if (!groupOperand(w.getCond(), out) || !groupOperand(w.getX(), out) ||
          !groupOperand(w.getY(), out)) {
        why = "a selection with a weight or broadcasting";
        return std::nullopt;
      }
      acts = {w.getCond(), w.getX(), w.getY()};
      p = whereParams(ctx, w);
    } else if (auto r = dyn_cast<tpu::ReduceOp>(op)) {
      // Over H and / or W: the input and result as the group holds them
      // (the backend's localOpSupport checks the rest).
      auto in = groupShape(module::getShape(r.getInput()));
      auto res = groupShape(module::getShape(r.getOutput()));
      if (!in || !res) {
        why = "a reduction of other than a scalar, matrix or 4-D value";
        return std::nullopt;
      }
      acts = {r.getInput()};
      backend::ReduceParams rp = reduceParams(ctx, r);
      rp.input.shape.assign(in->begin(), in->end());
      rp.output.shape.assign(res->begin(), res->end());
      p = rp;
    } else if (auto b = dyn_cast<tpu::PowOp>(op)) {
      p = binaryParams(ctx, b, backend::BinaryKind::Pow, acts, why);
    } else {
      why = "no local form";
      return std::nullopt;
    }
  } catch (const CodegenError &e) {
    why = e.message;
    return std::nullopt;
  }
  if (!p)
    return std::nullopt;
  for (Value v : acts)
    if (v && (!isa<RankedTensorType>(v.getType()) || !rank4(v))) {
      why = "not a 4-D operand";
      return std::nullopt;
    }
  return p;
}

std::optional<backend::GroupSpec>
buildGroupSpec(CodegenContext &ctx, llvm::ArrayRef<Operation *> ops,
               const std::function<bool(Value)> &isStored,
               const std::function<uint64_t(Value)> &addrOf,
               std::string &why) {
  backend::GroupSpec spec;
  bool otherRank = false;
  llvm::DenseMap<Value, int> ids;
  llvm::DenseSet<Operation *> members(ops.begin(), ops.end());
  auto valueId = [&](Value v, bool loaded) {
    auto it = ids.find(v);
    if (it != ids.end())
      return it->second;
    backend::GroupValue gv;
    gv.name = top::getTensorName(v);
    backend::GTensor t = ctx.tensor(v.getDefiningOp() ? v.getDefiningOp()
                                                      : ops.front(),
                                    v);
    gv.prec = t.prec;
    gv.isSigned = t.isSigned;
    if (auto s = groupShape(module::getShape(v))) {
      gv.shape = *s; // matrices a row per channel (matrixRowsLayout)
    } else {
      // Held as one row until flattenElementwise gives it its shape.
      gv.shape = {1, 1, 1, module::getNumElements(v)};
      otherRank = true;
    }
    gv.loaded = loaded;
    gv.stored = !loaded && isStored(v);
    if (gv.loaded || gv.stored)
      gv.addr = addrOf(v);
    int id = int(spec.values.size());
    spec.values.push_back(gv);
    ids[v] = id;
    return id;
  };
  CodegenContext::LenientScope lenient(ctx);
  try {
    for (Operation *op : ops) {
      std::vector<Value> acts;
      std::optional<backend::LocalOpParams> p =
          localOpParams(ctx, op, acts, why);
      if (!p) {
        why = top::getTensorName(op->getResult(0)) + ": " + why;
        return std::nullopt;
      }
      backend::GroupOp gop;
      gop.params = *p;
      for (Value v : acts) {
        if (!v) {
          gop.inputs.push_back(-1);
          continue;
        }
        Operation *def = v.getDefiningOp();
        bool inside = def && members.contains(def);
        gop.inputs.push_back(valueId(v, !inside));
      }
      gop.output = valueId(op->getResult(0), false);
      spec.ops.push_back(std::move(gop));
    }
  } catch (const CodegenError &e) {
    why = e.message;
    return std::nullopt;
  }
  // An element-wise group fills the lanes whatever its values' shapes;
  // other groups hold matrices a row per channel, the 4-D ones too in a
  // group with a matmul of 4-D matrices.
  if (!backend::flattenElementwise(spec, ctx.chip())) {
    if (otherRank) {
      why = "values of rank other than 2 to 4 outside an element-wise group "
            "of one shape";
      return std::nullopt;
    }
    bool rows4 = llvm::any_of(ops, [](Operation *op) {
      auto m = dyn_cast<tpu::MatMulOp>(op);
      return m && module::getShape(m.getInput()).size() == 4;
    });
    if (!backend::matrixRowsLayout(spec, rows4)) {
      why = "a matmul of 4-D matrices beside ops that need (n, c, h, w)";
      return std::nullopt;
    }
    if (rows4)
      for (auto [v, id] : ids)
        if (module::getShape(v).size() == 4) {
          auto &s = spec.values[size_t(id)].shape;
          s = {s[0] * s[1], s[2], 1, s[3]};
        }
  }
  return spec;
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

using namespace bm1684x;

namespace {

/// The backend's description of `group`, from its body.
backend::GroupSpec groupSpec(CodegenContext &ctx, GroupOp group) {
  Block &body = group.getBody().front();
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Value, Value> outer; // body value -> the group's value
  for (auto [arg, in] : llvm::zip(body.getArguments(), group.getInputs()))
    outer[arg] = in;
  for (auto [v, res] : llvm::zip(body.getTerminator()->getOperands(),
                                 group.getOutputs()))
    outer[v] = res;
  std::string why;
  std::optional<backend::GroupSpec> spec = buildGroupSpec(
      ctx, ops, [&](Value v) { return outer.count(v) != 0; },
      [&](Value v) {
        Value o = outer.lookup(v);
        return ctx.tensor(group, o).addr;
      },
      why);
  if (!spec)
    throw CodegenError{group, "group '" + group.getName().str() + "': " + why};
  spec->name = group.getName().str();
  return *spec;
}

/// An optional i64 attribute of the group (the weight prefetch, the
/// channel slices), -1 when absent.
int64_t optionalI64(GroupOp group, llvm::StringRef name) {
  if (auto a = group->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return -1;
}

} // namespace

void GroupOp::codegenBM1684X(CodegenContext &ctx) {
  backend::GroupSpec spec = groupSpec(ctx, *this);
  backend::GroupPlan plan;
  plan.nSlices = getNSlices();
  plan.hSlices = getHSlices();
  plan.cSlices = std::max<int64_t>(optionalI64(*this, kGroupCSlices), 1);
  plan.wSlices = std::max<int64_t>(optionalI64(*this, kGroupWSlices), 1);
  plan.kSlices = std::max<int64_t>(optionalI64(*this, kGroupKSlices), 1);
  plan.matrixColumns =
      std::max<int64_t>(optionalI64(*this, kGroupMatrixColumns), 0);
  plan.weightResident = getWeightResident();
  plan.firstWeightsAt = optionalI64(*this, kGroupFirstWeightsAt);
  plan.nextWeightsAt = optionalI64(*this, kGroupNextWeightsAt);
  if (auto order = (*this)->getAttrOfType<StringAttr>(kGroupWeightOrder))
    if (!backend::parseWeightOrder(order.str(), plan.weightOrder))
      throw CodegenError{*this, "group '" + getName().str() +
                                    "': " + kGroupWeightOrder.str() + " = \"" +
                                    order.str() +
                                    "\" is no weight order (in_order, "
                                    "first_apart, parity)"};
  std::optional<backend::GroupSpec> next;
  if (plan.nextWeightsAt >= 0) {
    // The group that runs next (weights and none values are no commands)
    // reads its first weights where this one loads them.
    Operation *op = getOperation()->getNextNode();
    while (op && mlir::isa<WeightOp, top::NoneOp>(op))
      op = op->getNextNode();
    auto nextGroup = llvm::dyn_cast_or_null<GroupOp>(op);
    if (!nextGroup ||
        optionalI64(nextGroup, kGroupFirstWeightsAt) != plan.nextWeightsAt)
      throw CodegenError{*this, "group '" + getName().str() + "': " +
                                    kGroupNextWeightsAt.str() + " = " +
                                    std::to_string(plan.nextWeightsAt) +
                                    " but the next op is no group with " +
                                    kGroupFirstWeightsAt.str() +
                                    " at that offset"};
    next = groupSpec(ctx, nextGroup);
  }
  backend::emitGroup(ctx.emitter(), spec, plan, next ? &*next : nullptr);
}

} // namespace tpuc::tpu
