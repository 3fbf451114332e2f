//===- Memory.h - Storage of the simulated BM1684X ----------------*- C++
//-*-===//
//
// Plain C++ storage of the machine: local memory (lanes x bytes per lane),
// static memory and global memory (DDR). No timing here: the SystemC modules
// in lib/model decide when an access happens, these classes only hold bytes
// and check bounds. Functional kernels (lib/func) read and write through
// them.
//
//===----------------------------------------------------------------------===//
#ifndef TPUSIM_MEMORY_H
#define TPUSIM_MEMORY_H

#include "tpu/isa/ChipParams.h"
#include "tpu/isa/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tpu::sim {

/// An access outside a memory, or a misaligned operand. Carries no engine
/// context; the engine that catches it adds the command index and text.
class MemoryError : public tpu::Error {
public:
  using tpu::Error::Error;
};

/// Zeroed host memory for the simulator's large buffers (local memory, the
/// kernels' scratch). Blocks of kHugeBytes and more are mapped
/// kHugeBytes-aligned and advised for transparent huge pages: a run
/// touches them in a few page faults instead of one per 4 KiB page, and
/// the kernels' accesses across lanes (each lane 256 KiB apart) miss the
/// TLB less. Untouched pages still cost nothing. Smaller blocks come from
/// calloc. Release with releaseZeroed and the same size.
constexpr size_t kHugeBytes = size_t(2) << 20;
void *allocZeroed(size_t bytes);
void releaseZeroed(void *p, size_t bytes);

/// Local memory: `npuNum` lanes of `lmemBytes` each, addressed per lane.
/// A zero-filled byte block from allocZeroed: a large block comes from the
/// kernel as untouched zero pages (huge ones where the host has them), so
/// memory a run never touches costs neither time nor resident memory (a
/// timing-only run touches none).
class ZeroedBytes {
public:
  explicit ZeroedBytes(size_t size);
  uint8_t *data() { return data_.get(); }
  const uint8_t *data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear();

private:
  struct Free {
    size_t size;
    void operator()(uint8_t *p) const;
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t size_;
};

class LocalMemory {
public:
  explicit LocalMemory(const isa::ChipParams &chip);

  unsigned lanes() const { return lanes_; }
  uint64_t laneBytes() const { return laneBytes_; }

  /// Pointer to `size` bytes at `offset` of `lane`; throws MemoryError when
  /// the range leaves the lane.
  uint8_t *at(unsigned lane, uint64_t offset, uint64_t size);
  const uint8_t *at(unsigned lane, uint64_t offset, uint64_t size) const;

  void clear();

private:
  unsigned lanes_;
  uint64_t laneBytes_;
  /// Distance between lane starts in data_: laneBytes_ plus a skew, so that
  /// the same offset of different lanes does not map to the same host cache
  /// set (lanes are a power of two apart otherwise).
  uint64_t laneStride_;
  ZeroedBytes data_;
};

/// A flat byte range at a base address (static memory, L2).
class FlatMemory {
public:
  FlatMemory(std::string name, uint64_t base, uint64_t size);

  uint64_t base() const { return base_; }
  uint64_t size() const { return data_.size(); }
  bool contains(uint64_t addr, uint64_t size) const;
  uint8_t *at(uint64_t addr, uint64_t size);
  const uint8_t *at(uint64_t addr, uint64_t size) const;

private:
  std::string name_;
  uint64_t base_;
  ZeroedBytes data_;
};

/// Global memory (DDR), allocated lazily in pages so that a 4 GiB address
/// space costs only what a model touches. Reads of never-written bytes give 0
/// (or the bytes of writeShared's range).
class GlobalMemory {
public:
  GlobalMemory(uint64_t base, uint64_t size);

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  bool contains(uint64_t addr, uint64_t size) const;

  void read(uint64_t addr, void *dst, uint64_t size) const;
  void write(uint64_t addr, const void *src, uint64_t size);
  void fill(uint64_t addr, uint8_t value, uint64_t size);

  /// As write(addr, src, size), without copying: reads of the range see
  /// `src` until a write to one of its pages, which first copies that
  /// page's share of `src` (so `src` must stay alive and unchanged while
  /// the memory is used: the coefficients of the bmodel being run). Only
  /// one range is held; a second one, or a range over pages already
  /// allocated, is copied as write() does.
  void writeShared(uint64_t addr, const uint8_t *src, uint64_t size);

  /// Bytes of pages actually allocated (for statistics).
  uint64_t residentBytes() const;

private:
  /// Copies the shared range's bytes in page `index` to `page`.
  void copyShared(uint64_t index, uint8_t *page) const;
  /// Whether page `index` overlaps the shared range.
  bool sharedIn(uint64_t index) const;

  static constexpr uint64_t kPageBytes = uint64_t(1) << 20;
  uint8_t *page(uint64_t index);
  const uint8_t *pageOrNull(uint64_t index) const;
  void check(uint64_t addr, uint64_t size) const;

  uint64_t base_;
  uint64_t size_;
  struct Unmap {
    void operator()(uint8_t *p) const;
  };
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t, Unmap>> pages_;
  /// The range writeShared holds: offset from base_, bytes, size.
  uint64_t sharedOff_ = 0, sharedSize_ = 0;
  const uint8_t *shared_ = nullptr;
};

/// Everything a functional kernel may touch.
struct MachineState {
  explicit MachineState(const isa::ChipParams &chip);

  isa::ChipParams chip;
  LocalMemory lmem;
  FlatMemory smem;
  FlatMemory l2;
  GlobalMemory gmem;
};

} // namespace tpu::sim

#endif // TPUSIM_MEMORY_H
