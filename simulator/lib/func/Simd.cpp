//===- Simd.cpp - SIMD path selection and the kernels' worker threads -----===//

#include "tpusim/Simd.h"

#include "SimdImpl.h"

#include "tpusim/Memory.h"

#include "tpu/isa/Error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#if TPUSIM_X86_PATHS
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tpu::sim {

namespace {

constexpr int kUnset = -1;
std::atomic<int> gPath{kUnset};
std::atomic<int> gThreads{kUnset};
constexpr unsigned kMaxDefaultThreads = 8;
constexpr SimdPath kAllPaths[] = {SimdPath::Portable, SimdPath::Avx2,
                                  SimdPath::Avx512, SimdPath::Avx512Vnni,
                                  SimdPath::Amx};

#if TPUSIM_X86_PATHS
/// Asks Linux for the AMX tile data state (arch_prctl
/// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA; Linux 5.16 and later): without
/// it the first tile instruction raises SIGILL. Asked once per process;
/// the permission covers every thread.
bool amxPermitted() {
  static const bool permitted = [] {
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
}
#endif

} // namespace

const char *simdPathName(SimdPath p) {
  switch (p) {
  case SimdPath::Portable:
    return "portable";
  case SimdPath::Avx2:
    return "avx2";
  case SimdPath::Avx512:
    return "avx512";
  case SimdPath::Avx512Vnni:
    return "avx512vnni";
  case SimdPath::Amx:
    return "amx";
  }
  return "?";
}

bool simdPathAvailable(SimdPath p) {
  switch (p) {
  case SimdPath::Portable:
    return true;
#if TPUSIM_X86_PATHS
  case SimdPath::Avx2:
    return __builtin_cpu_supports("avx2");
  case SimdPath::Avx512:
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
  case SimdPath::Avx512Vnni:
    return simdPathAvailable(SimdPath::Avx512) &&
           __builtin_cpu_supports("avx512vnni");
  case SimdPath::Amx:
    return simdPathAvailable(SimdPath::Avx512Vnni) &&
           __builtin_cpu_supports("amx-tile") &&
           __builtin_cpu_supports("amx-int8") && amxPermitted();
#else
  default:
    return false;
#endif
  }
  return false;
}

std::vector<SimdPath> availableSimdPaths() {
  std::vector<SimdPath> v;
  for (SimdPath p : kAllPaths)
    if (simdPathAvailable(p))
      v.push_back(p);
  return v;
}

std::optional<SimdPath> simdPathFromName(const std::string &name) {
  if (name == "auto")
    return availableSimdPaths().back();
  for (SimdPath p : kAllPaths)
    if (name == simdPathName(p))
      return p;
  return std::nullopt;
}

void setSimdPath(SimdPath p) {
  if (!simdPathAvailable(p))
    throw Error(std::string("SIMD path ") + simdPathName(p) +
                " is not available on this CPU" +
                (p == SimdPath::Amx && simdPathAvailable(SimdPath::Avx512Vnni)
                     ? " (it needs AMX-TILE and AMX-INT8, and Linux 5.16 or "
                       "later to grant the tile state)"
                     : "") +
                " (available: " +
                [] {
                  std::string s;
                  for (SimdPath q : availableSimdPaths())
                    s += (s.empty() ? "" : ", ") + std::string(simdPathName(q));
                  return s;
                }() +
                ")");
  gPath.store(int(p));
}

SimdPath simdPath() {
  int p = gPath.load(std::memory_order_relaxed);
  if (p != kUnset)
    return SimdPath(p);
  const char *env = std::getenv("TPUSIM_SIMD");
  SimdPath chosen = availableSimdPaths().back();
  if (env && *env) {
    std::optional<SimdPath> named = simdPathFromName(env);
    if (!named)
      throw Error(std::string("TPUSIM_SIMD='") + env +
                  "' is not a SIMD path (portable, avx2, avx512, avx512vnni, "
                  "amx or auto)");
    chosen = *named;
  }
  setSimdPath(chosen);
  return chosen;
}

unsigned kernelThreads() {
  int t = gThreads.load(std::memory_order_relaxed);
  if (t != kUnset)
    return unsigned(t);
  unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u,
                          kMaxDefaultThreads);
  if (const char *env = std::getenv("TPUSIM_THREADS"); env && *env) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != 0 || v < 1 || v > 256)
      throw Error(std::string("TPUSIM_THREADS='") + env +
                  "' is not a thread count (1..256)");
    n = unsigned(v);
  }
  gThreads.store(int(n));
  return n;
}

void setKernelThreads(unsigned n) { gThreads.store(int(std::max(n, 1u))); }

namespace detail {

bool cpuHasFma() {
#if TPUSIM_X86_PATHS
  static const bool has = __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

namespace {
#if TPUSIM_X86_PATHS
bool cpuHasF16c() {
  static const bool has = __builtin_cpu_supports("f16c");
  return has;
}

__attribute__((target("avx2,f16c"))) bool
fp16RowToFp32F16c(const uint16_t *in, float *out, size_t n) {
  // NaN: |h| above the infinity 0x7C00 (as int16: |h| <= 0x7FFF), tested
  // on the integers (clang turns a float unordered test here into one
  // scalar compare per lane).
  const __m128i magMask = _mm_set1_epi16(0x7FFF), inf = _mm_set1_epi16(0x7C00);
  __m128i nan = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    nan = _mm_or_si128(nan, _mm_cmpgt_epi16(_mm_and_si128(h, magMask), inf));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  if (_mm_movemask_epi8(nan))
    return false;
  fp16RowToFp32Portable(in + i, out + i, n - i);
  return true;
}

__attribute__((target("avx2,f16c"))) bool
fp32RowToFp16F16c(const float *in, uint16_t *out, size_t n) {
  // NaN: |x| above the infinity's bits (as int32), as above.
  const __m256i magMask = _mm256_set1_epi32(0x7FFFFFFF),
                inf = _mm256_set1_epi32(0x7F800000);
  __m256i nan = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(in + i);
    __m256i mag = _mm256_and_si256(_mm256_castps_si256(v), magMask);
    nan = _mm256_or_si256(nan, _mm256_cmpgt_epi32(mag, inf));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  if (_mm256_movemask_epi8(nan))
    return false;
  fp32RowToFp16Portable(in + i, out + i, n - i);
  return true;
}

/// The AVX-512 row conversions: 16 elements a step and the rest in one
/// masked step (rows of 7, 14 or 28 elements, common in local tensors, do
/// not fall to the scalar routine). NaNs as in the F16C routines: the row
/// is converted again by the portable routine. The tail's masked loads
/// touch no byte past the row.
#define TPUSIM_TARGET_AVX512_F16C                                              \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c")))

TPUSIM_TARGET_AVX512_F16C bool fp16RowToFp32Avx512(const void *inBytes,
                                                   float *out, size_t n) {
  // Byte addresses: a row may start at an odd byte (static memory).
  const auto *in = static_cast<const uint8_t *>(inBytes);
  const __m256i magMask = _mm256_set1_epi16(0x7FFF),
                inf = _mm256_set1_epi16(0x7C00);
  __mmask16 nan = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + 2 * i));
    nan |= _mm256_cmpgt_epi16_mask(_mm256_and_si256(h, magMask), inf);
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  if (i < n) {
    __mmask16 k = __mmask16((1u << (n - i)) - 1);
    __m256i h = _mm256_maskz_loadu_epi16(k, in + 2 * i);
    nan |= _mm256_cmpgt_epi16_mask(_mm256_and_si256(h, magMask), inf);
    _mm512_mask_storeu_ps(out + i, k, _mm512_cvtph_ps(h));
  }
  return nan == 0;
}

TPUSIM_TARGET_AVX512_F16C bool fp32RowToFp16Avx512(const float *in,
                                                   void *outBytes, size_t n) {
  auto *out = static_cast<uint8_t *>(outBytes);
  const __m512i magMask = _mm512_set1_epi32(0x7FFFFFFF),
                inf = _mm512_set1_epi32(0x7F800000);
  __mmask16 nan = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(in + i);
    nan |= _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(_mm512_castps_si512(v), magMask), inf);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + 2 * i),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) {
    __mmask16 k = __mmask16((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(k, in + i);
    nan |= _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(_mm512_castps_si512(v), magMask), inf);
    _mm256_mask_storeu_epi16(out + 2 * i, k,
                             _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  return nan == 0;
}
#undef TPUSIM_TARGET_AVX512_F16C
#endif

} // namespace

bool useF16c() {
#if TPUSIM_X86_PATHS
  return simdPath() != SimdPath::Portable && cpuHasF16c();
#else
  return false;
#endif
}

void fp16RowToFp32(const uint16_t *in, float *out, size_t n) {
#if TPUSIM_X86_PATHS
  if (useF16c() && fp16RowToFp32F16c(in, out, n))
    return;
#endif
  fp16RowToFp32Portable(in, out, n);
}

void fp32RowToFp16(const float *in, uint16_t *out, size_t n) {
#if TPUSIM_X86_PATHS
  if (useF16c() && fp32RowToFp16F16c(in, out, n))
    return;
#endif
  fp32RowToFp16Portable(in, out, n);
}

namespace {
/// Whether the row conversions of local memory take the AVX-512 routines.
bool avx512Rows() {
#if TPUSIM_X86_PATHS
  return vectorBuild(simdPath()) == SimdPath::Avx512 && cpuHasF16c();
#else
  return false;
#endif
}

/// Rows at any address go through a copy of their bits, this many at a
/// time.
constexpr size_t kBounceChunk = 256;
} // namespace

bool halfRowToFloat(const void *in, float *out, size_t n, bool testNan) {
#if TPUSIM_X86_PATHS
  // A row with a NaN goes the general way below (whose F16C routine hands
  // it to the portable one, which keeps payloads).
  if (avx512Rows() && fp16RowToFp32Avx512(in, out, n))
    return false;
#endif
  // The path's row conversion through a copy of the bits (any address),
  // then the NaN test on them.
  const auto *bytes = static_cast<const uint8_t *>(in);
  uint16_t bits[kBounceChunk];
  uint16_t nan = 0;
  for (size_t i = 0; i < n; i += kBounceChunk) {
    size_t k = std::min(kBounceChunk, n - i);
    std::memcpy(bits, bytes + 2 * i, 2 * k);
    fp16RowToFp32(bits, out + i, k);
    if (testNan)
      for (size_t j = 0; j < k; ++j)
        nan |= uint16_t((bits[j] & 0x7FFF) > 0x7C00);
  }
  return nan != 0;
}

void floatRowToHalf(const float *in, void *out, size_t n) {
#if TPUSIM_X86_PATHS
  if (avx512Rows() && fp32RowToFp16Avx512(in, out, n))
    return;
#endif
  auto *bytes = static_cast<uint8_t *>(out);
  uint16_t bits[kBounceChunk];
  for (size_t i = 0; i < n; i += kBounceChunk) {
    size_t k = std::min(kBounceChunk, n - i);
    fp32RowToFp16(in + i, bits, k);
    std::memcpy(bytes + 2 * i, bits, 2 * k);
  }
}

void ScratchBlock::grow(size_t bytes) {
  // 64-byte aligned as the vector loads prefer (any T's alignment is at
  // most that); aligned_alloc wants a multiple of the alignment. Large
  // blocks are huge-page mappings (allocZeroed: page-aligned; the zeros
  // are a side effect).
  size_t cap = (std::max(bytes, 2 * cap_) + 63) / 64 * 64;
  release();
  data_ = cap >= kHugeBytes ? allocZeroed(cap) : std::aligned_alloc(64, cap);
  if (!data_)
    throw std::bad_alloc();
  cap_ = cap;
}

void ScratchBlock::release() {
  if (cap_ >= kHugeBytes)
    releaseZeroed(data_, cap_);
  else
    std::free(data_);
  data_ = nullptr;
  cap_ = 0;
}

namespace {

/// How long a helper that finished its tasks, and the caller waiting for
/// the tasks it did not run, poll before they sleep on a condition
/// variable. Reason: waking a sleeping thread costs about this much (a
/// helper joined a ResNet-50 INT8 run's 402 jobs 28.5 us after they were
/// posted, on average, when it slept between them; 2.7 us when it
/// polled), and polling for as long as a sleep and a wake cost wastes at
/// most that per job (the classic bound for spinning before blocking);
/// most jobs follow the previous one within it, so a helper polling
/// between them is never woken. Measured on a 2-vCPU Xeon VM: full-mode
/// ResNet-50 INT8 median 91.6 -> 84.6 ms, F16 133.0 -> 125.6 ms (11
/// alternating runs each). It costs only host time, never a result.
constexpr std::chrono::microseconds kPollBeforeSleep{30};

/// Polls `ready` for up to kPollBeforeSleep; true once it holds.
template <typename Ready> bool pollFor(Ready ready) {
  if (ready())
    return true;
  auto until = std::chrono::steady_clock::now() + kPollBeforeSleep;
  constexpr int kChecksPerClockRead = 32;
  for (;;) {
    for (int i = 0; i < kChecksPerClockRead; ++i) {
#if TPUSIM_X86_PATHS
      _mm_pause();
#endif
      if (ready())
        return true;
    }
    if (std::chrono::steady_clock::now() >= until)
      return false;
  }
}

/// The work runOnHelper gave the pool: `has` is read while polling.
struct BackgroundSlot {
  std::mutex mu;
  std::shared_ptr<std::function<bool()>> work; // under mu
  std::atomic<bool> has{false};
};
BackgroundSlot &backgroundSlot() {
  static BackgroundSlot slot;
  return slot;
}

/// A fixed pool of helper threads running one parallelTasks call at a
/// time (the kernels are called from one simulation thread). The caller
/// works too and waits only for tasks that were claimed, never for a helper
/// to wake: on a loaded machine a helper that is not scheduled in time
/// simply finds the job done. Helpers and the waiting caller poll briefly
/// before they sleep (kPollBeforeSleep); the condition variables are
/// signalled only when someone sleeps on them. The first helper runs the
/// background work (runOnHelper) before it takes part in jobs again.
class Pool {
  struct Job {
    const std::function<void(int64_t)> *fn;
    int64_t n;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
  };

public:
  explicit Pool(unsigned helpers) {
    for (unsigned i = 0; i < helpers; ++i)
      threads_.emplace_back([this, i] { loop(/*backgroundWorker=*/i == 0); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    posted_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  unsigned helpers() const { return unsigned(threads_.size()); }

  /// Wakes the background worker for new background work.
  void backgroundWorkPosted() {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.notify_all();
  }

  void run(int64_t n, const std::function<void(int64_t)> &fn) {
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepingHelpers_ != 0;
    }
    if (wake)
      posted_.notify_all();
    work(*job);
    auto allDone = [&] { return job->done.load() == n; };
    if (!pollFor(allDone)) {
      std::unique_lock<std::mutex> lock(mu_);
      callerSleeps_ = true;
      finished_.wait(lock, allDone);
      callerSleeps_ = false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    job_.reset();
  }

private:
  void work(Job &job) {
    for (int64_t i = job.next.fetch_add(1); i < job.n;
         i = job.next.fetch_add(1)) {
      (*job.fn)(i);
      if (job.done.fetch_add(1) + 1 == job.n) {
        std::lock_guard<std::mutex> lock(mu_);
        if (callerSleeps_)
          finished_.notify_all();
      }
    }
  }
  void loop(bool backgroundWorker) {
    uint64_t seen = 0;
    auto posted = [&] { return stop_.load() || generation_.load() != seen; };
    BackgroundSlot &bg = backgroundSlot();
    auto wake = [&] {
      return posted() ||
             (backgroundWorker && bg.has.load(std::memory_order_relaxed));
    };
    for (;;) {
      if (backgroundWorker)
        runBackground();
      pollFor(wake);
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (!wake()) {
          ++sleepingHelpers_;
          posted_.wait(lock, wake);
          --sleepingHelpers_;
        }
        if (stop_.load())
          return;
        if (!posted())
          continue; // woken for background work
        seen = generation_.load();
        job = job_;
      }
      if (job)
        work(*job);
    }
  }
  /// Calls the background work until it is done (or stop): jobs posted
  /// meanwhile run on the other threads.
  void runBackground() {
    BackgroundSlot &bg = backgroundSlot();
    while (!stop_.load() && bg.has.load(std::memory_order_relaxed)) {
      std::shared_ptr<std::function<bool()>> w;
      {
        std::lock_guard<std::mutex> lock(bg.mu);
        w = bg.work;
      }
      // A step that throws ends the work: its owner finishes it some other
      // way and meets the error itself.
      bool more = false;
      try {
        more = w && (*w)();
      } catch (...) {
      }
      if (more)
        continue;
      std::lock_guard<std::mutex> lock(bg.mu);
      if (bg.work == w) {
        bg.work.reset();
        bg.has.store(false);
      }
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  /// posted_: a new job or stop (helpers sleep on it); finished_: the
  /// caller's job is done (the caller sleeps on it).
  std::condition_variable posted_, finished_;
  std::shared_ptr<Job> job_;
  /// Changed under mu_; read without it while polling.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  unsigned sleepingHelpers_ = 0; // under mu_
  bool callerSleeps_ = false;    // under mu_
};

} // namespace

namespace {
std::mutex poolMu;
/// The pool of `threads` - 1 helpers (made or remade for that count);
/// under poolMu.
Pool &poolOf(unsigned threads) {
  // The slot the helpers read exists before the pool, so that it is
  // destroyed after the pool has joined them (statics go in reverse
  // order), whichever of parallelTasks and runOnHelper came first.
  backgroundSlot();
  static std::unique_ptr<Pool> pool;
  if (!pool || pool->helpers() != threads - 1) {
    // The old helpers (one perhaps in a background step) are joined
    // before new ones start: a step never runs on two threads at once.
    pool.reset();
    pool = std::make_unique<Pool>(threads - 1);
  }
  return *pool;
}
} // namespace

void parallelTasks(int64_t n, const std::function<void(int64_t)> &fn) {
  unsigned threads = kernelThreads();
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> lock(poolMu);
  poolOf(threads).run(n, fn);
}

} // namespace detail

bool runOnHelper(std::function<bool()> step) {
  unsigned threads = kernelThreads();
  if (threads <= 1)
    return false;
  detail::BackgroundSlot &bg = detail::backgroundSlot();
  {
    std::lock_guard<std::mutex> lock(bg.mu);
    bg.work = std::make_shared<std::function<bool()>>(std::move(step));
    bg.has.store(true);
  }
  std::lock_guard<std::mutex> lock(detail::poolMu);
  detail::poolOf(threads).backgroundWorkPosted();
  return true;
}

} // namespace tpu::sim
