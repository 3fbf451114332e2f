//===- InferenceInterface.cpp - Buffers of the reference interpreter ------===//
#include "tpuc/Interfaces/InferenceInterface.h"
#include "tpuc/Interpreter/Kernels.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <thread>

using namespace mlir;

namespace tpuc {

#include "tpuc/Interfaces/InferenceInterface.cpp.inc"

namespace {
/// Small buffers are reused whatever their excess (a few KiB at most).
constexpr size_t kMinSpareReuse = 1024;
} // namespace

InferenceContext::InferenceContext()
    : numThreads(std::max(1u, std::thread::hardware_concurrency())) {}

InferenceContext::~InferenceContext() = default;

bool InferenceContext::contains(Value v) const { return buffers.count(v); }

const std::vector<float> &InferenceContext::get(Value v) const {
  auto it = buffers.find(v);
  if (it == buffers.end())
    llvm::report_fatal_error("interpreter: a value is read before it is "
                             "computed");
  return *it->second;
}

std::vector<float> &InferenceContext::output(Value v) {
  size_t n = getNumElements(v.getType());
  auto &slot = buffers[v];
  if (!slot) {
    // Reuse the smallest kept buffer that fits, unless it is much larger
    // than needed (its excess memory would stay tied up).
    auto it = spare.lower_bound(n);
    if (it != spare.end() && it->first <= 2 * n + kMinSpareReuse) {
      slot = std::move(it->second);
      spare.erase(it);
    } else {
      slot = std::make_unique<std::vector<float>>();
    }
  }
  slot->resize(n);
  return *slot;
}

void InferenceContext::set(Value v, std::vector<float> data) {
  auto &slot = buffers[v];
  if (!slot)
    slot = std::make_unique<std::vector<float>>();
  *slot = std::move(data);
}

void InferenceContext::erase(Value v) {
  auto it = buffers.find(v);
  if (it == buffers.end())
    return;
  if (it->second) {
    size_t capacity = it->second->capacity();
    spare.emplace(capacity, std::move(it->second));
  }
  buffers.erase(it);
}

void InferenceContext::clear() {
  buffers.clear();
  spare.clear();
}

void InferenceContext::parallelFor(
    int64_t n, int64_t grain,
    const std::function<void(int64_t, int64_t)> &fn) const {
  kernels::parallelFor(numThreads, n, grain, fn);
}

int64_t getNumElements(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return 0;
  return ranked.getNumElements();
}

} // namespace tpuc
