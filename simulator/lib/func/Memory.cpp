//===- Memory.cpp - Storage of the simulated BM1684X ----------------------===//

#include "tpusim/Memory.h"

#include "tpu/isa/Format.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

namespace tpu::sim {

namespace {

/// True when [addr, addr + size) lies inside [base, base + limit) without
/// overflowing.
bool inRange(uint64_t addr, uint64_t size, uint64_t base, uint64_t limit) {
  if (addr < base)
    return false;
  uint64_t off = addr - base;
  return off <= limit && size <= limit - off;
}

} // namespace

//===----------------------------------------------------------------------===//
// ZeroedBytes
//===----------------------------------------------------------------------===//

void *allocZeroed(size_t bytes) {
  if (bytes < kHugeBytes) {
    void *p = std::calloc(bytes ? bytes : 1, 1);
    if (!p)
      throw std::bad_alloc();
    return p;
  }
  size_t len = (bytes + kHugeBytes - 1) / kHugeBytes * kHugeBytes;
  // One huge page more, to cut an aligned block out of the mapping.
  void *m = ::mmap(nullptr, len + kHugeBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    throw std::bad_alloc();
  auto *base = static_cast<uint8_t *>(m);
  uintptr_t at = (reinterpret_cast<uintptr_t>(base) + kHugeBytes - 1) /
                 kHugeBytes * kHugeBytes;
  auto *p = reinterpret_cast<uint8_t *>(at);
  if (p > base)
    ::munmap(base, size_t(p - base));
  if (size_t tail = size_t(base + len + kHugeBytes - (p + len)))
    ::munmap(p + len, tail);
  // Advice only: without transparent huge pages the block is ordinary.
  (void)::madvise(p, len, MADV_HUGEPAGE);
  return p;
}

void releaseZeroed(void *p, size_t bytes) {
  if (!p)
    return;
  if (bytes < kHugeBytes) {
    std::free(p);
    return;
  }
  ::munmap(p, (bytes + kHugeBytes - 1) / kHugeBytes * kHugeBytes);
}

ZeroedBytes::ZeroedBytes(size_t size)
    : data_(static_cast<uint8_t *>(allocZeroed(size)), Free{size}),
      size_(size) {}

void ZeroedBytes::Free::operator()(uint8_t *p) const { releaseZeroed(p, size); }

void ZeroedBytes::clear() { std::memset(data_.get(), 0, size_); }

//===----------------------------------------------------------------------===//
// LocalMemory
//===----------------------------------------------------------------------===//

namespace {
/// Host-side padding between lanes: one 4 KiB page plus one 64-byte cache
/// line, so consecutive lanes start in different cache sets.
constexpr uint64_t kLaneSkew = 4096 + 64;
} // namespace

LocalMemory::LocalMemory(const isa::ChipParams &chip)
    : lanes_(chip.npuNum), laneBytes_(chip.lmemBytes),
      laneStride_(chip.lmemBytes + kLaneSkew),
      data_(size_t(chip.npuNum) * laneStride_) {}

uint8_t *LocalMemory::at(unsigned lane, uint64_t offset, uint64_t size) {
  return const_cast<uint8_t *>(
      static_cast<const LocalMemory *>(this)->at(lane, offset, size));
}

const uint8_t *LocalMemory::at(unsigned lane, uint64_t offset,
                               uint64_t size) const {
  if (lane >= lanes_)
    throw MemoryError("local memory: lane " + std::to_string(lane) +
                      " does not exist (" + std::to_string(lanes_) + " lanes)");
  if (!inRange(offset, size, 0, laneBytes_))
    throw MemoryError("local memory: " + std::to_string(size) +
                      " bytes at offset " + isa::formatHex(offset) +
                      " of lane " + std::to_string(lane) + " leave the lane (" +
                      isa::formatHex(laneBytes_) + " bytes)");
  return data_.data() + size_t(lane) * laneStride_ + offset;
}

void LocalMemory::clear() { data_.clear(); }

//===----------------------------------------------------------------------===//
// FlatMemory
//===----------------------------------------------------------------------===//

FlatMemory::FlatMemory(std::string name, uint64_t base, uint64_t size)
    : name_(std::move(name)), base_(base), data_(size) {}

bool FlatMemory::contains(uint64_t addr, uint64_t size) const {
  return inRange(addr, size, base_, data_.size());
}

uint8_t *FlatMemory::at(uint64_t addr, uint64_t size) {
  return const_cast<uint8_t *>(
      static_cast<const FlatMemory *>(this)->at(addr, size));
}

const uint8_t *FlatMemory::at(uint64_t addr, uint64_t size) const {
  if (!contains(addr, size))
    throw MemoryError(name_ + ": " + std::to_string(size) + " bytes at " +
                      isa::formatHex(addr) + " leave [" +
                      isa::formatHex(base_) + ", " +
                      isa::formatHex(base_ + data_.size()) + ")");
  return data_.data() + (addr - base_);
}

//===----------------------------------------------------------------------===//
// GlobalMemory
//===----------------------------------------------------------------------===//

GlobalMemory::GlobalMemory(uint64_t base, uint64_t size)
    : base_(base), size_(size) {}

bool GlobalMemory::contains(uint64_t addr, uint64_t size) const {
  return inRange(addr, size, base_, size_);
}

void GlobalMemory::check(uint64_t addr, uint64_t size) const {
  if (!contains(addr, size))
    throw MemoryError("global memory: " + std::to_string(size) + " bytes at " +
                      isa::formatHex(addr) + " leave [" +
                      isa::formatHex(base_) + ", " +
                      isa::formatHex(base_ + size_) + ")");
}

uint8_t *GlobalMemory::page(uint64_t index) {
  auto &p = pages_[index];
  if (!p) {
    // Straight from the kernel, zeroed, so a page that is written at once
    // (coefficients, DMA results) is neither cleared here nor touched
    // twice; populated in one call, not one fault per 4 KiB (a page is made
    // for a write, and most of it is written soon).
    void *m = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED)
      throw std::bad_alloc();
    p.reset(static_cast<uint8_t *>(m));
    copyShared(index, p.get());
  }
  return p.get();
}

bool GlobalMemory::sharedIn(uint64_t index) const {
  uint64_t lo = index * kPageBytes;
  return shared_ && lo < sharedOff_ + sharedSize_ &&
         sharedOff_ < lo + kPageBytes;
}

void GlobalMemory::copyShared(uint64_t index, uint8_t *page) const {
  if (!sharedIn(index))
    return;
  uint64_t lo = index * kPageBytes;
  uint64_t from = std::max(lo, sharedOff_);
  uint64_t to = std::min(lo + kPageBytes, sharedOff_ + sharedSize_);
  std::memcpy(page + (from - lo), shared_ + (from - sharedOff_), to - from);
}

void GlobalMemory::writeShared(uint64_t addr, const uint8_t *src,
                               uint64_t size) {
  check(addr, size);
  if (size == 0)
    return;
  uint64_t off = addr - base_;
  bool taken = shared_ != nullptr;
  for (uint64_t i = off / kPageBytes;
       !taken && i <= (off + size - 1) / kPageBytes; ++i)
    taken = pageOrNull(i) != nullptr;
  if (taken) {
    write(addr, src, size);
    return;
  }
  shared_ = src;
  sharedOff_ = off;
  sharedSize_ = size;
}

void GlobalMemory::Unmap::operator()(uint8_t *p) const {
  ::munmap(p, kPageBytes);
}

const uint8_t *GlobalMemory::pageOrNull(uint64_t index) const {
  auto it = pages_.find(index);
  return it == pages_.end() ? nullptr : it->second.get();
}

void GlobalMemory::read(uint64_t addr, void *dst, uint64_t size) const {
  check(addr, size);
  auto *out = static_cast<uint8_t *>(dst);
  uint64_t off = addr - base_;
  while (size) {
    uint64_t idx = off / kPageBytes, in = off % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - in);
    if (const uint8_t *p = pageOrNull(idx)) {
      std::memcpy(out, p + in, n);
    } else {
      // The shared range's bytes where it lies, zeros around them (each
      // byte written once: these are the coefficient loads).
      uint64_t from = off, to = off;
      if (shared_) {
        from = std::max(off, sharedOff_);
        to = std::min(off + n, sharedOff_ + sharedSize_);
      }
      if (from < to) {
        std::memset(out, 0, from - off);
        std::memcpy(out + (from - off), shared_ + (from - sharedOff_),
                    to - from);
        std::memset(out + (to - off), 0, off + n - to);
      } else {
        std::memset(out, 0, n);
      }
    }
    out += n;
    off += n;
    size -= n;
  }
}

void GlobalMemory::write(uint64_t addr, const void *src, uint64_t size) {
  check(addr, size);
  auto *in = static_cast<const uint8_t *>(src);
  uint64_t off = addr - base_;
  while (size) {
    uint64_t idx = off / kPageBytes, po = off % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - po);
    std::memcpy(page(idx) + po, in, n);
    in += n;
    off += n;
    size -= n;
  }
}

void GlobalMemory::fill(uint64_t addr, uint8_t value, uint64_t size) {
  check(addr, size);
  uint64_t off = addr - base_;
  while (size) {
    uint64_t idx = off / kPageBytes, po = off % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - po);
    if (value != 0 || pageOrNull(idx) || sharedIn(idx))
      std::memset(page(idx) + po, value, n);
    off += n;
    size -= n;
  }
}

uint64_t GlobalMemory::residentBytes() const {
  return uint64_t(pages_.size()) * kPageBytes;
}

//===----------------------------------------------------------------------===//
// MachineState
//===----------------------------------------------------------------------===//

MachineState::MachineState(const isa::ChipParams &chip)
    : chip(chip), lmem(chip),
      smem("static memory", chip.smemBase, chip.smemBytes),
      l2("L2 SRAM", chip.l2Base, chip.l2Bytes),
      gmem(chip.gmemBase, chip.gmemBytes) {}

} // namespace tpu::sim
