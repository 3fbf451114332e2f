//===- LocalMem.cpp - Local-memory addressing and tensor layouts ----------===//
#include "tpu/isa/LocalMem.h"

#include "tpu/isa/Format.h"

#include "tpu/isa/Error.h"

namespace tpu::isa {

namespace {

constexpr unsigned kBitsPerByte = 8;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool inRegion(uint64_t addr, uint64_t base, uint64_t bytes) {
  return addr >= base && addr - base < bytes;
}

} // namespace

LocalAddr splitLocalAddr(const ChipParams &p, uint64_t localAddr) {
  if (localAddr >= p.lmemTotal())
    throw Error("local address " + formatHex(localAddr) +
                " is outside local memory (" + std::to_string(p.npuNum) +
                " lanes x " + formatHex(p.lmemBytes) + " bytes)");
  uint64_t offset = localAddr & (p.lmemBytes - 1);
  return {static_cast<unsigned>(localAddr >> p.laneShift()), offset,
          static_cast<unsigned>(offset / p.bankBytes())};
}

uint64_t joinLocalAddr(const ChipParams &p, unsigned lane, uint64_t offset) {
  if (lane >= p.npuNum || offset >= p.lmemBytes)
    throw Error("local position lane " + std::to_string(lane) + " offset " +
                formatHex(offset) + " is outside local memory (" +
                std::to_string(p.npuNum) + " lanes x " +
                formatHex(p.lmemBytes) + " bytes)");
  return (uint64_t(lane) << p.laneShift()) | offset;
}

const char *memRegionName(MemRegion r) {
  switch (r) {
  case MemRegion::Local:
    return "local";
  case MemRegion::Static:
    return "static";
  case MemRegion::L2:
    return "l2";
  case MemRegion::Global:
    return "global";
  case MemRegion::None:
    break;
  }
  return "none";
}

MemRegion classifyAddr(const ChipParams &p, uint64_t unified) {
  if (inRegion(unified, p.lmemBase, p.lmemTotal()))
    return MemRegion::Local;
  if (inRegion(unified, p.smemBase, p.smemBytes))
    return MemRegion::Static;
  if (inRegion(unified, p.l2Base, p.l2Bytes))
    return MemRegion::L2;
  if (inRegion(unified, p.gmemBase, p.gmemBytes))
    return MemRegion::Global;
  return MemRegion::None;
}

uint64_t localToUnified(const ChipParams &p, uint64_t localAddr) {
  splitLocalAddr(p, localAddr); // range check
  return p.lmemBase + localAddr;
}

uint64_t unifiedToLocal(const ChipParams &p, uint64_t unified) {
  if (classifyAddr(p, unified) != MemRegion::Local)
    throw Error("address " + formatHex(unified) + " is not in local memory");
  return unified - p.lmemBase;
}

uint64_t channelSlots(const ChipParams &p, unsigned startLane, uint64_t c) {
  return (startLane + c + p.npuNum - 1) / p.npuNum;
}

unsigned channelLane(const ChipParams &p, unsigned startLane, uint64_t c) {
  return static_cast<unsigned>((startLane + c) % p.npuNum);
}

unsigned channelSlot(const ChipParams &p, unsigned startLane, uint64_t c) {
  return static_cast<unsigned>((startLane + c) / p.npuNum);
}

Stride4 localStrides(const ChipParams &p, Shape4 s, unsigned startLane,
                     Prec prec, LocalLayout layout) {
  int64_t slots = static_cast<int64_t>(channelSlots(p, startLane, s.c));
  int64_t hw = int64_t(s.h) * s.w;
  int64_t euNum = p.euNum(prec);
  switch (layout) {
  case LocalLayout::EuAligned: {
    int64_t cs = static_cast<int64_t>(alignUp(hw, euNum));
    return {slots * cs, cs, s.w, 1};
  }
  case LocalLayout::Compact:
    return {slots * hw, hw, s.w, 1};
  case LocalLayout::PerChannel:
    return {0, 1, 0, 0};
  case LocalLayout::LineAligned: {
    int64_t hs = static_cast<int64_t>(alignUp(s.w, euNum));
    return {slots * s.h * hs, s.h * hs, hs, 1};
  }
  case LocalLayout::FreeStride:
    break;
  }
  throw Error("localStrides: the free-stride layout takes its strides from "
              "the command");
}

uint64_t localBytesPerLane(const ChipParams &p, Shape4 shape, Prec prec,
                           LocalLayout layout, unsigned startLane) {
  Stride4 st = localStrides(p, shape, startLane, prec, layout);
  uint64_t slots = channelSlots(p, startLane, shape.c);
  uint64_t elems = layout == LocalLayout::PerChannel
                       ? slots
                       : uint64_t(shape.n) * slots * uint64_t(st.c);
  return (elems * precBits(prec) + kBitsPerByte - 1) / kBitsPerByte;
}

LocalElementPos localElementPos(const ChipParams &p, uint64_t start,
                                const Stride4 &stride, Prec prec, uint32_t n,
                                uint32_t c, uint32_t h, uint32_t w) {
  LocalAddr a = splitLocalAddr(p, start);
  int64_t slot = static_cast<int64_t>(channelSlot(p, a.lane, c));
  int64_t elem = n * stride.n + slot * stride.c + h * stride.h + w * stride.w;
  int64_t bit = static_cast<int64_t>(a.offset * kBitsPerByte) +
                elem * static_cast<int64_t>(precBits(prec));
  if (bit < 0 || static_cast<uint64_t>(bit) >= p.lmemBytes * kBitsPerByte)
    throw Error("element (" + std::to_string(n) + ", " + std::to_string(c) +
                ", " + std::to_string(h) + ", " + std::to_string(w) +
                ") of the tensor at " + formatHex(start) +
                " lies outside its lane");
  return {channelLane(p, a.lane, c), static_cast<uint64_t>(bit) / kBitsPerByte,
          static_cast<unsigned>(bit % kBitsPerByte)};
}

} // namespace tpu::isa
