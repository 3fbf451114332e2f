//===- Units.cpp - Queues, scoreboard, local memory and DDR
//----------------===//
#include "tpusim/Tpu.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpu::sim {

namespace {

/// Transfers whose remaining bytes fall below this have drained (the fluid
/// model works in doubles; a transfer is never a fraction of a byte).
constexpr double kDrainedBytes = 1e-6;
/// Slack when rounding a drain time up to whole picoseconds, so that an
/// exact result computed with rounding error does not gain a picosecond.
constexpr double kTimeSlackPs = 1e-6;

} // namespace

//===----------------------------------------------------------------------===//
// CommandQueue
//===----------------------------------------------------------------------===//

CommandQueue::CommandQueue(sc_core::sc_module_name name)
    : sc_core::sc_module(name) {}

void CommandQueue::load(const CommandStream *stream) {
  stream_ = stream;
  next_ = 0;
}

//===----------------------------------------------------------------------===//
// IdScoreboard
//===----------------------------------------------------------------------===//

IdScoreboard::IdScoreboard(sc_core::sc_module_name name)
    : sc_core::sc_module(name) {}

void IdScoreboard::reset() {
  for (Track &t : tracks_) {
    t.last = 0;
    t.waiterWants = 0;
    t.reachedPs.assign(1, 0); // keeps the capacity of earlier groups
  }
}

uint64_t IdScoreboard::waitFor(isa::Engine producer, uint32_t dep,
                               const bool &aborted) {
  if (dep == 0)
    return 0;
  Track &t = track(producer);
  while (t.last < dep && !aborted) {
    t.waiterWants = dep;
    sc_core::wait(t.advanced);
  }
  t.waiterWants = 0;
  return aborted ? 0 : t.reachedPs[dep];
}

bool IdScoreboard::waitForOr(isa::Engine producer, uint32_t dep,
                             const bool &aborted, sc_core::sc_event &wake,
                             uint64_t &donePs) {
  Track &t = track(producer);
  if (t.last < dep && !aborted) {
    t.waiterWants = dep;
    t.wake = &wake;
    sc_core::wait(wake);
    t.wake = nullptr;
    t.waiterWants = 0;
  }
  if (aborted || t.last < dep)
    return false;
  donePs = t.reachedPs[dep];
  return true;
}

void IdScoreboard::publish(isa::Engine producer, uint32_t id, uint64_t atPs) {
  Track &t = track(producer);
  if (id <= t.last)
    return;
  // reachedPs has last + 1 entries: append the ids last + 1 ... id.
  for (uint32_t k = t.last; k < id; ++k)
    t.reachedPs.push_back(atPs);
  t.last = id;
  if (t.waiterWants != 0 && t.last >= t.waiterWants) {
    t.advanced.notify();
    if (t.wake)
      t.wake->notify();
  }
}

uint32_t IdScoreboard::completed(isa::Engine producer) const {
  return track(producer).last;
}

uint32_t IdScoreboard::waitingFor(isa::Engine waiter) const {
  isa::Engine producer =
      waiter == isa::Engine::Tiu ? isa::Engine::Gdma : isa::Engine::Tiu;
  return track(producer).waiterWants;
}

void IdScoreboard::wakeAll() {
  for (Track &t : tracks_) {
    t.advanced.notify(sc_core::SC_ZERO_TIME);
    if (t.wake)
      t.wake->notify(sc_core::SC_ZERO_TIME);
  }
}

//===----------------------------------------------------------------------===//
// LocalMemoryUnit
//===----------------------------------------------------------------------===//

LocalMemoryUnit::LocalMemoryUnit(sc_core::sc_module_name name)
    : sc_core::sc_module(name) {}

void LocalMemoryUnit::bind(const isa::ChipParams &chip, SimStats &stats) {
  chip_ = &chip;
  stats_ = &stats;
}

namespace {

/// Out of line: building the message would otherwise weigh on every command.
[[noreturn]] void throwOutsideLane(const char *what, size_t i,
                                   const TiuWork::Operand &o,
                                   uint64_t laneBytes) {
  throw MemoryError(std::string(what) + " " + std::to_string(i) +
                    " covers lane bytes [" + std::to_string(o.offset) + ", " +
                    std::to_string(o.offset + o.bytesPerLane) +
                    "), outside the " + std::to_string(laneBytes) +
                    "-byte local memory of a lane");
}

/// Checks that every range of `list` stays inside a lane; returns the
/// bytes per lane they cover.
template <typename List>
uint64_t checkedLaneBytes(const List &list, const char *what,
                          uint64_t laneBytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const TiuWork::Operand &o = list[i];
    if (o.offset > laneBytes || o.bytesPerLane > laneBytes - o.offset)
      throwOutsideLane(what, i, o, laneBytes);
    sum += o.bytesPerLane;
  }
  return sum;
}

} // namespace

void LocalMemoryUnit::tiuAccess(const TiuWork &work) {
  uint64_t laneBytes = chip_->lmemBytes;
  uint64_t lanes = std::max(1u, work.lanesUsed);
  stats_->lmemReadBytes +=
      checkedLaneBytes(work.reads, "operand", laneBytes) * lanes;
  stats_->lmemWriteBytes +=
      checkedLaneBytes(work.writes, "result", laneBytes) * lanes;
}

void LocalMemoryUnit::gdmaAccess(const GdmaWork &work) {
  stats_->lmemReadBytes += work.localReadBytes;
  stats_->lmemWriteBytes += work.localWriteBytes;
}

//===----------------------------------------------------------------------===//
// DdrChannel
//===----------------------------------------------------------------------===//

DdrChannel::DdrChannel(sc_core::sc_module_name name)
    : sc_core::sc_module(name) {
  SC_METHOD(onChange);
  sensitive << change_;
  dont_initialize();
}

void DdrChannel::configure(double psPerByte, uint64_t latencyPs,
                           PsIntervals *busyLog, uint64_t originPs) {
  psPerByte_ = psPerByte;
  latencyPs_ = latencyPs;
  busyLog_ = busyLog;
  originPs_ = originPs;
}

void DdrChannel::transfer(Port &port, uint64_t busBytes,
                          uint64_t startDelayPs) {
  if (busBytes == 0) {
    waitPs(startDelayPs);
    return;
  }
  start(port, busBytes, startDelayPs);
  port.waiting_ = true;
  sc_core::wait(port.done);
  port.waiting_ = false;
}

void DdrChannel::start(Port &port, uint64_t busBytes, uint64_t startDelayPs,
                       const Port *after) {
  port.remaining = double(busBytes);
  port.drained_ = false;
  port.after = after && !after->drained_ ? after : nullptr;
  if (startDelayPs == 0 && !port.after) {
    advance();
    active_.push_back(&port);
  } else {
    port.joinPs = nowPs() + startDelayPs;
    pending_.push_back(&port);
  }
  reschedule();
}

void DdrChannel::advance() {
  uint64_t now = nowPs();
  if (!active_.empty() && now > lastPs_) {
    double drained = double(now - lastPs_) / (psPerByte_ * active_.size());
    for (Port *p : active_)
      p->remaining -= drained;
    if (busyLog_) {
      uint64_t a = lastPs_ - originPs_, b = now - originPs_;
      if (!busyLog_->empty() && busyLog_->back().second == a)
        busyLog_->back().second = b;
      else
        busyLog_->push_back({a, b});
    }
  }
  lastPs_ = now;
}

void DdrChannel::reschedule() {
  change_.cancel();
  if (active_.empty() && pending_.empty())
    return;
  double next = std::numeric_limits<double>::infinity();
  for (Port *p : active_)
    next = std::min(next, std::max(0.0, p->remaining) * psPerByte_ *
                              double(active_.size()));
  uint64_t now = nowPs();
  for (Port *p : pending_)
    if (!p->after) // the others join when their predecessor drains
      next = std::min(next, double(p->joinPs - now));
  if (std::isinf(next))
    return;
  change_.notify(sc_core::sc_time::from_value(
      static_cast<uint64_t>(std::ceil(std::max(0.0, next - kTimeSlackPs)))));
}

void DdrChannel::onChange() {
  // Drain with the set of the last interval, retire what has drained, then
  // let the transfers whose start has come join.
  advance();
  uint64_t now = nowPs();
  // Drained: no byte left, or the bytes left take less than the slack (a
  // channel of more than 1000 GB/s moves a byte in under a picosecond:
  // without this, a residue of rounding that drains in less than the time
  // resolution would be rescheduled at the same time forever). Below 1000
  // GB/s the second test implies the first.
  double psPerByteNow =
      psPerByte_ * double(std::max<size_t>(1, active_.size()));
  auto drained = [psPerByteNow](const Port *p) {
    return p->remaining <= kDrainedBytes ||
           p->remaining * psPerByteNow <= kTimeSlackPs;
  };
  for (Port *p : active_)
    if (drained(p)) {
      p->drained_ = true;
      p->drainedPs_ = now;
      if (p->wake_)
        p->wake_->notify();
      if (p->waiting_)
        p->done.notify(sc_core::sc_time::from_value(latencyPs_));
    }
  active_.erase(std::remove_if(active_.begin(), active_.end(), drained),
                active_.end());
  for (Port *p : pending_)
    if (p->after && p->after->drained_)
      p->after = nullptr;
  auto joining = [now](const Port *p) { return !p->after && p->joinPs <= now; };
  for (Port *p : pending_)
    if (joining(p))
      active_.push_back(p);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), joining),
                 pending_.end());
  reschedule();
}

} // namespace tpu::sim
