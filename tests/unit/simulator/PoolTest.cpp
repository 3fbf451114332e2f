//===- PoolTest.cpp - The kernels' worker threads -------------------------===//
//
// parallelTasks runs each task of a job exactly once and returns only after
// all of them ran, whatever the thread count and however the jobs are
// spaced: back to back (helpers still polling for the next job), with gaps
// longer than the helpers poll (helpers asleep, woken by the next job), and
// with tasks longer than the caller polls (the caller asleep, woken by the
// helper that finishes the last task). A lost wake-up hangs the test (ctest
// times it out); a task run twice or not at all, or a return before the
// helpers finished, fails the counts. Background work (runOnHelper) runs
// on a helper while the other threads run the jobs.
//
//===----------------------------------------------------------------------===//

#include "SimdImpl.h"

#include "tpusim/Simd.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace tpu::sim;

namespace {

class Pool : public ::testing::TestWithParam<unsigned> {
protected:
  void SetUp() override {
    saved_ = kernelThreads();
    setKernelThreads(GetParam());
  }
  void TearDown() override { setKernelThreads(saved_); }

  /// Runs `jobs` jobs of 1..7 tasks; each task may sleep `taskSleep`, and
  /// the caller sleeps `gap` between jobs. Every task of every job must
  /// have run once by the time its job returns.
  void runJobs(int jobs, std::chrono::microseconds taskSleep,
               std::chrono::microseconds gap) {
    for (int j = 0; j < jobs; ++j) {
      int64_t n = 1 + j % 7;
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      detail::parallelTasks(n, [&](int64_t t) {
        if (taskSleep.count())
          std::this_thread::sleep_for(taskSleep);
        runs[size_t(t)].fetch_add(1);
      });
      for (int64_t t = 0; t < n; ++t)
        ASSERT_EQ(runs[size_t(t)].load(), 1)
            << "job " << j << " task " << t << " of " << n;
      if (gap.count())
        std::this_thread::sleep_for(gap);
    }
  }

private:
  unsigned saved_ = 1;
};

TEST_P(Pool, BackToBackJobs) {
  runJobs(20000, std::chrono::microseconds(0), std::chrono::microseconds(0));
}

TEST_P(Pool, HelpersSleepBetweenJobs) {
  runJobs(200, std::chrono::microseconds(0), std::chrono::microseconds(300));
}

TEST_P(Pool, CallerSleepsUntilTasksEnd) {
  runJobs(200, std::chrono::microseconds(200), std::chrono::microseconds(0));
}

TEST_P(Pool, MixedSpacing) {
  for (int round = 0; round < 20; ++round) {
    runJobs(50, std::chrono::microseconds(round % 3 == 0 ? 100 : 0),
            std::chrono::microseconds(round % 2 ? 100 : 0));
  }
}

// Background work (runOnHelper) runs on a helper until it says it is done,
// and never again after; jobs posted meanwhile still run every task once
// (on the other threads). A helper that never takes it hangs the test; one
// that calls it after it returned false fails the count.
TEST_P(Pool, BackgroundWorkRunsBesideJobs) {
  constexpr int kSteps = 3000;
  auto steps = std::make_shared<std::atomic<int>>(0);
  bool taken = runOnHelper([steps] {
    std::this_thread::sleep_for(std::chrono::microseconds(5));
    return steps->fetch_add(1) + 1 < kSteps;
  });
  if (GetParam() == 1) {
    // No helper: nothing is kept, nothing runs.
    EXPECT_FALSE(taken);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(steps->load(), 0);
    return;
  }
  ASSERT_TRUE(taken);
  runJobs(300, std::chrono::microseconds(0), std::chrono::microseconds(20));
  runJobs(100, std::chrono::microseconds(0), std::chrono::microseconds(300));
  while (steps->load() < kSteps)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(steps->load(), kSteps);
  runJobs(100, std::chrono::microseconds(0), std::chrono::microseconds(0));
}

// New background work replaces the one before, which is not called again
// (but for the call in progress); jobs run meanwhile.
TEST_P(Pool, NewBackgroundWorkReplacesOld) {
  if (GetParam() == 1) { // no helper to run it (BackgroundWorkRunsBesideJobs)
    EXPECT_FALSE(runOnHelper([] { return true; }));
    return;
  }
  auto first = std::make_shared<std::atomic<int>>(0);
  auto second = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(runOnHelper([first] {
    first->fetch_add(1);
    return true; // never done
  }));
  while (first->load() < 100)
    std::this_thread::yield();
  // The helper never leaves `first`: the jobs run on the other threads.
  runJobs(200, std::chrono::microseconds(0), std::chrono::microseconds(0));
  ASSERT_TRUE(runOnHelper([second] { return second->fetch_add(1) + 1 < 100; }));
  while (second->load() < 100)
    std::this_thread::yield();
  int firstAfter = first->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(first->load(), firstAfter);
  EXPECT_EQ(second->load(), 100);
}

// A step never runs on two threads at once, also while the pool is made
// anew for another thread count again and again; and a step that throws
// ends its work without ending the helper (later work still runs).
TEST_P(Pool, BackgroundStepOnOneThreadAtATime) {
  if (GetParam() == 1) { // no helper (BackgroundWorkRunsBesideJobs)
    EXPECT_FALSE(runOnHelper([] { return true; }));
    return;
  }
  auto inside = std::make_shared<std::atomic<int>>(0);
  auto overlaps = std::make_shared<std::atomic<int>>(0);
  auto calls = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(runOnHelper([=] {
    if (inside->fetch_add(1) != 0)
      overlaps->fetch_add(1);
    calls->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    inside->fetch_sub(1);
    return true;
  }));
  for (int i = 0; i < 100; ++i) {
    setKernelThreads(GetParam() + unsigned(i & 1));
    runJobs(3, std::chrono::microseconds(0), std::chrono::microseconds(100));
  }
  setKernelThreads(GetParam());
  EXPECT_EQ(overlaps->load(), 0) << calls->load() << " calls";

  auto after = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(runOnHelper([]() -> bool { throw std::runtime_error("step"); }));
  runJobs(50, std::chrono::microseconds(0), std::chrono::microseconds(50));
  ASSERT_TRUE(runOnHelper([after] { return after->fetch_add(1) + 1 < 10; }));
  while (after->load() < 10)
    std::this_thread::yield();
  runJobs(50, std::chrono::microseconds(0), std::chrono::microseconds(0));
}

INSTANTIATE_TEST_SUITE_P(Threads, Pool, ::testing::Values(1u, 2u, 4u),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Threads";
                         });

} // namespace
