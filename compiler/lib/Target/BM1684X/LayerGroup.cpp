//===- LayerGroup.cpp - Choosing and forming the layer groups ------------===//
//
// See LayerGroup.h. The candidates are runs of consecutive ops of the main
// function (weights, inputs and none values between them aside) that all
// have a local form; a run is a valid group when the backend finds a
// slicing that fits local memory (backend::planGroup).
//
// The cost of a group is the cost model's: the cycles isa::estimateGroup
// finds for the group's commands alone (backend::GroupPlan::estimatedCycles,
// the same per-command costs, engine schedule and GDMA stalls on banks a
// TIU command holds as tpusim's timing, less DDR shared between concurrent
// requesters, so a slicing that places a transfer in the banks of a
// running command pays for it). A run is cut where the sum over its groups
// is least; an op alone is a group of one. With LayerGroupOptions::kernels
// (the per-op backend kept for comparison) an op alone costs the less of
// its own kernel, estimated the same way, and its plan as a group of one,
// and each piece of the cut is then estimated once more between its
// neighbours, in one command stream with them, as a group and as kernels
// (refine): the sum of the pieces' own costs leaves out how they overlap.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Target/BM1684X/LayerGroup.h"
#include "CodegenContext.h"
#include "GroupSpec.h"

#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Tpu/IR/TpuOps.h"
#include "tpuc/Dialect/Tpu/Transforms/Passes.h"
#include "tpuc/Support/Machine.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpuc/Target/BM1684X/CodegenInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace mlir;
namespace backend = ::tpu::backend;
namespace tisa = ::tpu::isa;

namespace tpuc::bm1684x {

std::optional<GroupStrategy> parseGroupStrategy(llvm::StringRef name) {
  if (name == "none")
    return GroupStrategy::None;
  if (name == "greedy")
    return GroupStrategy::Greedy;
  if (name == "dp")
    return GroupStrategy::Dp;
  return std::nullopt;
}

namespace {

/// Whether an op outside `members` reads `v`.
bool usedOutside(Value v, const llvm::DenseSet<Operation *> &members) {
  return llvm::any_of(v.getUsers(),
                      [&](Operation *u) { return !members.contains(u); });
}

/// The search over one function body.
class Search {
public:
  Search(ModuleOp module, const tisa::ChipParams &chip,
         const LayerGroupOptions &options)
      : module(module), chip(chip), options(options), em(chip),
        ctx(module, em) {}

  LogicalResult run(std::vector<GroupReport> *reports);

private:
  struct Candidate {
    bool ok = false;
    backend::GroupPlan plan;
    std::string why;
    std::optional<backend::GroupSpec> spec;
  };

  ModuleOp module;
  const tisa::ChipParams &chip;
  const LayerGroupOptions &options;
  backend::CmdEmitter em;
  CodegenContext ctx;
  std::vector<Operation *> seq;
  std::map<std::pair<size_t, size_t>, Candidate> memo;

  const Candidate &plan(size_t i, size_t j);
  /// The cost of ops [i, j): a group's, or for one op what it costs where
  /// it then runs: a group of one (with LayerGroupOptions::kernels, when
  /// that is cheaper than its own kernel).
  double cost(size_t i, size_t j);
  /// The cost of op i's own kernel (infinity when it cannot be emitted).
  double kernelCost(size_t i);
  /// Whether op i alone runs as a group of one: it has a local form that
  /// fits (with `kernels`, or for a permute or a slice, whose plan the cost
  /// model finds no slower than its kernel; never for a concat).
  bool aloneAsGroup(size_t i);
  /// Whether ops [i, j) become a tpu.Group: a group of two or more, or one
  /// op that runs as a group of one, unless the check with its neighbours
  /// decided otherwise (refine, with `kernels` only).
  bool formed(size_t i, size_t j) {
    auto it = decided.find({i, j});
    if (it != decided.end())
      return it->second;
    return j - i >= 2 || aloneAsGroup(i);
  }
  std::map<std::pair<size_t, size_t>, bool> decided;
  /// The cost model's cycles of the pieces [first, last] of `groups` run
  /// one after another in one command stream, each as a group or as its
  /// ops' kernels (`asGroup`): what the sum of the pieces' own costs leaves
  /// out, how each overlaps its neighbours, included. Infinity when a
  /// kernel cannot be emitted.
  double jointCost(const std::vector<std::pair<size_t, size_t>> &groups,
                   const std::vector<bool> &asGroup, size_t first,
                   size_t last);
  /// Rechecks each piece of a run's cut with its neighbours (jointCost of
  /// the piece before, the piece and the piece after, as a group and as
  /// kernels) and keeps the faster form (decided).
  void refine(const std::vector<std::pair<size_t, size_t>> &groups,
              size_t begin, size_t end);
  std::map<size_t, double> kernelCosts;
  void wrap(size_t i, size_t j, const backend::GroupPlan &plan, size_t index,
            std::vector<GroupReport> *reports);
  /// Chooses, for each group followed directly by another, whether it
  /// loads the next group's first weights during its last timestep, and
  /// where; updates both groups' plans.
  void prefetchWeights(const std::vector<std::pair<size_t, size_t>> &groups,
                       std::vector<backend::GroupPlan> &plans);
  /// The greedy cut of the run of local ops [a, b): each group grows by the
  /// next op while the group fits and running the op inside it costs no
  /// more than running it apart.
  std::vector<std::pair<size_t, size_t>> greedyCut(size_t a, size_t b,
                                                   size_t maxLen);
  /// The plans of the cut `groups` (consecutive pieces of one run) with the
  /// weight prefetch between its neighbours (prefetchWeights), into
  /// `plans`; returns the cost model's cycles of the whole cut so.
  double prefetched(const std::vector<std::pair<size_t, size_t>> &groups,
                    std::vector<backend::GroupPlan> &plans);
};

std::vector<std::pair<size_t, size_t>> Search::greedyCut(size_t a, size_t b,
                                                         size_t maxLen) {
  std::vector<std::pair<size_t, size_t>> cut;
  for (size_t i = a; i < b;) {
    size_t j = i + 1;
    while (j < b && j - i < maxLen) {
      const Candidate &longer = plan(i, j + 1);
      if (!longer.ok ||
          double(longer.plan.estimatedCycles) > cost(i, j) + cost(j, j + 1))
        break;
      ++j;
    }
    cut.push_back({i, j});
    i = j;
  }
  return cut;
}

double Search::prefetched(const std::vector<std::pair<size_t, size_t>> &groups,
                          std::vector<backend::GroupPlan> &plans) {
  plans.clear();
  for (auto [i, j] : groups)
    plans.push_back(plan(i, j).plan);
  prefetchWeights(groups, plans);
  double total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto [i, j] = groups[g];
    total += formed(i, j) ? double(plans[g].estimatedCycles) : cost(i, j);
  }
  return total;
}

void Search::prefetchWeights(
    const std::vector<std::pair<size_t, size_t>> &groups,
    std::vector<backend::GroupPlan> &plans) {
  if (!options.prefetchWeights || !options.slicing.weightResident)
    return;
  uint64_t lmem = chip.lmemBytes, bank = chip.bankBytes(),
           align = chip.localAlign;
  for (size_t g = 0; g + 1 < groups.size(); ++g) {
    auto [i, j] = groups[g];
    auto [j2, k] = groups[g + 1];
    // Both formed and one right after the other.
    if (!formed(i, j) || !formed(j2, k) || j2 != j)
      continue;
    const backend::GroupSpec &a = *plan(i, j).spec, &b = *plan(j, k).spec;
    uint64_t bytes = backend::firstWeightBytes(b, chip);
    if (bytes == 0 || bytes > lmem)
      continue;
    backend::GroupPlan &pa = plans[g], &pb = plans[g + 1];
    // B's first weights at the bottom of local memory (B's allocation then
    // starts above them) or at the top (B's below them; on a bank boundary
    // where that fits, since a GDMA beat into a bank A's TIU commands use
    // waits). A loads them in its last slice once its commands are done
    // with that memory (backend::GroupOptions::nextWeightsAt); the cost
    // model sees the wait.
    std::vector<uint64_t> places{0};
    for (uint64_t unit : {bank, align})
      places.push_back((lmem - bytes) / unit * unit);
    backend::GroupPlan bestA = pa, bestB = pb;
    for (uint64_t at : places) {
      backend::GroupOptions oa = options.slicing, ob = options.slicing;
      oa.firstWeightsAt = pa.firstWeightsAt;
      oa.next = &b;
      oa.nextWeightsAt = int64_t(at);
      ob.firstWeightsAt = int64_t(at);
      backend::GroupPlan na, nb;
      std::string why;
      if (!backend::planGroup(a, chip, oa, na, why) ||
          !backend::planGroup(b, chip, ob, nb, why))
        continue;
      // Kept when the cost model finds the pair faster (the next group's
      // first op no longer waits for its weights; this group's GDMA moves
      // them while its last slice computes).
      if (na.estimatedCycles + nb.estimatedCycles <
          bestA.estimatedCycles + bestB.estimatedCycles) {
        bestA = na;
        bestB = nb;
      }
    }
    pa = bestA;
    pb = bestB;
  }
}

const Search::Candidate &Search::plan(size_t i, size_t j) {
  auto key = std::make_pair(i, j);
  auto it = memo.find(key);
  if (it != memo.end())
    return it->second;
  Candidate c;
  llvm::ArrayRef<Operation *> ops(seq.data() + i, j - i);
  llvm::DenseSet<Operation *> members(ops.begin(), ops.end());
  std::optional<backend::GroupSpec> spec = buildGroupSpec(
      ctx, ops, [&](Value v) { return usedOutside(v, members); },
      [&](Value v) { return ctx.tensor(ops.front(), v).addr; }, c.why);
  if (spec) {
    spec->name = "candidate";
    c.ok = backend::planGroup(*spec, chip, options.slicing, c.plan, c.why);
    c.spec = std::move(spec);
  }
  return memo.emplace(key, std::move(c)).first->second;
}

double Search::cost(size_t i, size_t j) {
  if (j != i + 1 || aloneAsGroup(i))
    return double(plan(i, j).plan.estimatedCycles);
  return kernelCost(i);
}

bool Search::aloneAsGroup(size_t i) {
  // A concat alone is data movement between DDR tensors, and where
  // tpu-address-assign places its inputs inside its output (batch 1) it
  // emits nothing at all: never a group of one, which would load, copy
  // and store.
  if (isa<tpu::ConcatOp>(seq[i]))
    return false;
  const Candidate &c = plan(i, i + 1);
  // A transpose or a slice alone may run as the data movement it is: its
  // kernel moves the data by GDMA only (a transposing matrix load and a
  // store; a strided DDR copy), where a group of one loads, copies and
  // stores (openWakeWord's mel frames: 212 to 292 simulated cycles against
  // 388 to 520). With `kernels`, every op chooses so.
  if (!options.kernels && !isa<tpu::PermuteOp, tpu::SliceOp>(seq[i]))
    return c.ok;
  // On a tie the group of one: the scheduler's path, not the kernel's.
  return c.ok && double(c.plan.estimatedCycles) <= kernelCost(i);
}

double Search::kernelCost(size_t i) {
  auto it = kernelCosts.find(i);
  if (it != kernelCosts.end())
    return it->second;
  // A concat whose dims before its axis are all 1 has its inputs placed
  // inside its output by tpu-address-assign (unless an input is a model
  // input or output, or misaligned): it emits nothing, where its kernel
  // emitted with the search's synthetic addresses would copy.
  if (auto cc = dyn_cast<tpu::ConcatOp>(seq[i])) {
    std::vector<int64_t> s = module::getShape(cc.getOutput());
    if (llvm::all_of(llvm::ArrayRef<int64_t>(s).take_front(cc.getAxis()),
                     [](int64_t d) { return d == 1; }))
      return kernelCosts[i] = 0;
  }
  // The op's kernel, emitted alone with synthetic addresses and estimated
  // like a group; an op whose kernel cannot be emitted so costs infinity.
  double k = jointCost({{i, i + 1}}, {false}, 0, 0);
  kernelCosts[i] = k;
  return k;
}

double Search::jointCost(const std::vector<std::pair<size_t, size_t>> &groups,
                         const std::vector<bool> &asGroup, size_t first,
                         size_t last) {
  backend::CmdEmitter kem(chip);
  kem.setAloneOptions(
      std::make_shared<const backend::GroupOptions>(options.slicing));
  CodegenContext kctx(module, kem);
  kctx.setLenient(true);
  try {
    for (size_t g = first; g <= last; ++g) {
      auto [i, j] = groups[g];
      if (asGroup[g]) {
        const Candidate &c = plan(i, j);
        backend::emitGroup(kem, *c.spec, c.plan);
        continue;
      }
      for (size_t k = i; k < j; ++k) {
        auto gen = dyn_cast<BM1684XCodegenInterface>(seq[k]);
        if (!gen)
          return std::numeric_limits<double>::infinity();
        gen.codegenBM1684X(kctx);
      }
    }
  } catch (const CodegenError &) {
    return std::numeric_limits<double>::infinity();
  } catch (const ::tpu::Error &) {
    return std::numeric_limits<double>::infinity();
  }
  tisa::Machine m;
  m.chip = chip;
  if (options.slicing.timing)
    m.timing = *options.slicing.timing;
  return double(backend::estimateCycles(kem, m));
}

void Search::refine(const std::vector<std::pair<size_t, size_t>> &groups,
                    size_t begin, size_t end) {
  if (!options.kernels)
    return; // nothing to choose: no kernel may run
  std::vector<bool> asGroup(groups.size());
  for (size_t g = begin; g < end; ++g)
    asGroup[g] = formed(groups[g].first, groups[g].second);
  for (size_t g = begin; g < end; ++g) {
    auto [i, j] = groups[g];
    if (!plan(i, j).ok)
      continue; // no group to choose
    size_t first = g > begin ? g - 1 : g, last = g + 1 < end ? g + 1 : g;
    double now = jointCost(groups, asGroup, first, last);
    asGroup[g] = !asGroup[g];
    double flipped = jointCost(groups, asGroup, first, last);
    // The other form only when strictly faster with the neighbours.
    if (!(flipped < now))
      asGroup[g] = !asGroup[g];
    decided[{i, j}] = asGroup[g];
  }
}

void Search::wrap(size_t i, size_t j, const backend::GroupPlan &plan,
                  size_t index, std::vector<GroupReport> *reports) {
  llvm::ArrayRef<Operation *> ops(seq.data() + i, j - i);
  llvm::DenseSet<Operation *> members(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  for (Operation *op : ops) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && (members.contains(def) || mlir::isa<tpu::WeightOp, top::NoneOp>(def)))
        continue;
      inputs.insert(v);
    }
    for (Value r : op->getResults())
      if (usedOutside(r, members))
        outputs.push_back(r);
  }
  Operation *last = ops.back();
  OpBuilder b(last);
  SmallVector<Type> types;
  for (Value v : outputs)
    types.push_back(v.getType());
  // A group of one takes its op's name, so the per-op profile, the stats
  // and the regression baselines name the op whichever way it runs; a
  // longer group is "group<index>".
  std::string name = ops.size() == 1
                         ? top::getTensorName(ops.front()->getResult(0))
                         : "group" + std::to_string(index);
  auto group = b.create<tpu::GroupOp>(
      last->getLoc(), types, inputs.getArrayRef(), b.getStringAttr(name),
      b.getI64IntegerAttr(plan.nSlices), b.getI64IntegerAttr(plan.hSlices),
      b.getI64IntegerAttr(plan.timesteps),
      b.getI64IntegerAttr(int64_t(plan.lmemBytes)),
      b.getI64IntegerAttr(int64_t(plan.ddrReadBytes + plan.ddrWriteBytes)),
      b.getBoolAttr(plan.weightResident));
  // The weight prefetch between neighbouring groups (kGroupFirstWeightsAt).
  if (plan.firstWeightsAt >= 0)
    group->setAttr(kGroupFirstWeightsAt,
                   b.getI64IntegerAttr(plan.firstWeightsAt));
  if (plan.nextWeightsAt >= 0)
    group->setAttr(kGroupNextWeightsAt,
                   b.getI64IntegerAttr(plan.nextWeightsAt));
  if (plan.cSlices > 1)
    group->setAttr(kGroupCSlices, b.getI64IntegerAttr(plan.cSlices));
  if (plan.wSlices > 1)
    group->setAttr(kGroupWSlices, b.getI64IntegerAttr(plan.wSlices));
  if (plan.kSlices > 1)
    group->setAttr(kGroupKSlices, b.getI64IntegerAttr(plan.kSlices));
  if (plan.matrixColumns > 0)
    group->setAttr(kGroupMatrixColumns,
                   b.getI64IntegerAttr(plan.matrixColumns));
  if (plan.weightOrder != backend::WeightOrder::InOrder)
    group->setAttr(kGroupWeightOrder,
                   b.getStringAttr(backend::weightOrderName(plan.weightOrder)));
  Block *body = new Block();
  group.getBody().push_back(body);
  for (Value v : inputs)
    body->addArgument(v.getType(), v.getLoc());
  // Outer uses of the outputs go to the group's results (before the ops
  // move, while "outside" is still easy to tell).
  for (auto [k, v] : llvm::enumerate(outputs))
    v.replaceUsesWithIf(group.getResult(k), [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *op : ops)
    op->moveBefore(body, body->end());
  for (auto [k, in] : llvm::enumerate(inputs)) {
    Value v = in;
    v.replaceUsesWithIf(body->getArgument(k), [&](OpOperand &use) {
      return members.contains(use.getOwner());
    });
  }
  OpBuilder::atBlockEnd(body).create<tpu::YieldOp>(last->getLoc(), outputs);
  if (reports) {
    GroupReport r;
    r.name = name;
    for (Operation *op : ops)
      r.ops.push_back(top::getTensorName(op->getResult(0)));
    r.plan = plan;
    reports->push_back(std::move(r));
  }
}

LogicalResult Search::run(std::vector<GroupReport> *reports) {
  func::FuncOp func = module::getMainFunc(module);
  if (!func || func.isExternal())
    return module.emitError("layer groups: no main function");
  if (failed(loadWeights(module)))
    return failure();
  Block &body = func.getBody().front();
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        mlir::isa<top::InputOp, top::NoneOp, tpu::WeightOp>(op))
      continue;
    if (mlir::isa<tpu::GroupOp>(op))
      return op.emitError("layer groups: the module is grouped already");
    seq.push_back(&op);
  }
  // `none`: every op alone, a group of one where it has a local form (with
  // `kernels`, as its per-op kernel).
  if (options.strategy == GroupStrategy::None && options.kernels)
    return success();
  // An op is local when it forms a group of its own (planGroup checks its
  // local form).
  std::vector<bool> local(seq.size());
  for (size_t i = 0; i < seq.size(); ++i)
    local[i] = plan(i, i + 1).ok;

  // Chosen groups as [begin, end) ranges of seq, and their plans with the
  // weight prefetch between neighbours (which never crosses from one run
  // to the next: an op without a local form lies between them).
  std::vector<std::pair<size_t, size_t>> groups;
  std::vector<backend::GroupPlan> plans;
  size_t maxLen = size_t(std::max<int64_t>(options.maxLength, 1));
  for (size_t a = 0; a < seq.size();) {
    if (!local[a]) {
      ++a;
      continue;
    }
    size_t b = a;
    while (b < seq.size() && local[b])
      ++b;
    // [a, b) is a maximal run of local ops.
    std::vector<std::pair<size_t, size_t>> cut;
    // Its plans when the choice of the cut made them already.
    std::vector<backend::GroupPlan> cutPlans;
    if (options.strategy == GroupStrategy::None) {
      for (size_t i = a; i < b; ++i)
        cut.push_back({i, i + 1});
    } else if (options.strategy == GroupStrategy::Greedy) {
      cut = greedyCut(a, b, maxLen);
    } else {
      // best[k]: the least cost of ops [a, a + k) cut into groups.
      size_t n = b - a;
      std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
      std::vector<size_t> from(n + 1, 0);
      best[0] = 0;
      for (size_t i = 0; i < n; ++i) {
        if (best[i] == std::numeric_limits<double>::infinity())
          continue;
        for (size_t j = i + 1; j <= n && j - i <= maxLen; ++j) {
          const Candidate &c = plan(a + i, a + j);
          if (!c.ok)
            break; // a longer run fits no better
          double cc = cost(a + i, a + j);
          if (best[i] + cc < best[j]) {
            best[j] = best[i] + cc;
            from[j] = i;
          }
        }
      }
      for (size_t j = n; j > 0; j = from[j])
        cut.push_back({a + from[j], a + j});
      std::reverse(cut.begin(), cut.end());
      // The search sums each group's own cost, without the weight prefetch
      // between neighbours (decided after it, prefetchWeights), which can
      // favour another cut: a group that ends just before one with weights
      // loads them during its last slice. ResNet-18 INT8: the cut found,
      // 400,488 estimated cycles without prefetch and 398,567 with it; the
      // greedy cut, 401,782 and 394,083. Of the two cuts, the one the cost
      // model finds faster with the prefetch runs (not with `kernels`,
      // whose pieces refine then rechecks with their neighbours; without
      // it refine changes nothing, so the plans made here stand).
      if (!options.kernels && options.prefetchWeights &&
          options.slicing.weightResident) {
        std::vector<std::pair<size_t, size_t>> other = greedyCut(a, b, maxLen);
        std::vector<backend::GroupPlan> otherPlans;
        if (other != cut &&
            prefetched(other, otherPlans) < prefetched(cut, cutPlans)) {
          cut = std::move(other);
          cutPlans = std::move(otherPlans);
        }
      }
    }
    size_t firstOfRun = groups.size();
    groups.insert(groups.end(), cut.begin(), cut.end());
    refine(groups, firstOfRun, groups.size());
    // The prefetch once the forms are decided.
    if (cutPlans.empty())
      prefetched(cut, cutPlans);
    plans.insert(plans.end(), cutPlans.begin(), cutPlans.end());
    a = b;
  }
  size_t index = 0;
  for (auto [g, range] : llvm::enumerate(groups)) {
    auto [i, j] = range;
    if (!formed(i, j))
      continue; // one op alone runs its own kernel
    wrap(i, j, plans[g], index++, reports);
  }
  return success();
}

} // namespace

void setSlicingAttr(ModuleOp module, const backend::GroupOptions &options) {
  Builder b(module.getContext());
  module->setAttr(kSlicingAttr,
                  b.getDictionaryAttr(
                      {b.getNamedAttr("channel_slices",
                                      b.getBoolAttr(options.channelSlices)),
                       b.getNamedAttr("h_first", b.getBoolAttr(options.hFirst)),
                       b.getNamedAttr("max_h_slices",
                                      b.getI64IntegerAttr(options.maxHSlices)),
                       b.getNamedAttr("weight_resident",
                                      b.getBoolAttr(options.weightResident)),
                       b.getNamedAttr("width_slices",
                                      b.getBoolAttr(options.widthSlices))}));
}

backend::GroupOptions getSlicingAttr(ModuleOp module) {
  backend::GroupOptions o;
  auto dict = module->getAttrOfType<DictionaryAttr>(kSlicingAttr);
  if (!dict)
    return o;
  auto flag = [&](StringRef key, bool &v) {
    if (auto a = dict.getAs<BoolAttr>(key))
      v = a.getValue();
  };
  flag("channel_slices", o.channelSlices);
  flag("h_first", o.hFirst);
  flag("weight_resident", o.weightResident);
  flag("width_slices", o.widthSlices);
  if (auto a = dict.getAs<IntegerAttr>("max_h_slices"))
    o.maxHSlices = a.getInt();
  return o;
}

LogicalResult formLayerGroups(ModuleOp module, const tisa::ChipParams &chip,
                              const LayerGroupOptions &options,
                              std::vector<GroupReport> *reports) {
  // The ops left alone run as groups of one under the same options.
  setSlicingAttr(module, options.slicing);
  Search search(module, chip, options);
  return search.run(reports);
}

} // namespace tpuc::bm1684x

namespace tpuc::tpu {

#define GEN_PASS_DEF_LAYERGROUP
#include "tpuc/Dialect/Tpu/Transforms/Passes.h.inc"

namespace {

struct LayerGroupPass : impl::LayerGroupBase<LayerGroupPass> {
  void runOnOperation() override {
    std::optional<bm1684x::GroupStrategy> s =
        bm1684x::parseGroupStrategy(strategy);
    if (!s) {
      getOperation().emitError("--tpu-layer-group: strategy '")
          << strategy << "' is not none, greedy or dp";
      return signalPassFailure();
    }
    bm1684x::LayerGroupOptions options;
    options.strategy = *s;
    options.maxLength = maxLength;
    options.slicing.maxHSlices = maxHSlices;
    options.slicing.hFirst = hFirst;
    options.slicing.weightResident = !noWeightResident;
    options.slicing.channelSlices = !noChannelSlices;
    options.slicing.widthSlices = !noWidthSlices;
    options.kernels = kernels;
    // The machine the module records (tpuc deploy --chip-param), else the
    // BM1684X.
    FailureOr<::tpu::isa::Machine> machine =
        module::getMachineOrDefault(getOperation(), "--tpu-layer-group");
    if (failed(machine))
      return signalPassFailure();
    options.slicing.timing = &machine->timing;
    if (failed(
            bm1684x::formLayerGroups(getOperation(), machine->chip, options)))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createLayerGroupPass() {
  return std::make_unique<LayerGroupPass>();
}

} // namespace tpuc::tpu
