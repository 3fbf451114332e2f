//===- Decode.cpp - Shared helpers of the functional kernels --------------===//
//
// Names and errors of canonical commands (isa/Decode.h decodes them), round
// modes, precisions, operand views from canonical TIU fields and lane masks.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"

#include "tpu/isa/Numerics.h"

#include <sstream>

namespace tpu::sim {

using isa::LayoutId;
using isa::Prec;
using isa::TiuTask;

namespace {

constexpr uint64_t kAllLanes = ~uint64_t(0);

} // namespace

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace detail {

namespace {

const char *tiuPrefix(const TiuOp &op) {
  switch (op.task) {
  case TiuTask::Conv:
    return "CONV";
  case TiuTask::PorD:
    return "PorD";
  case TiuTask::MM:
    return op.eu >= 4 ? "MM2" : "MM";
  case TiuTask::AR:
    return "AR";
  case TiuTask::RQDQ:
    return "RQ&DQ";
  case TiuTask::TransBC:
    return "TRANS&BC";
  case TiuTask::SG:
    return op.eu >= 17 ? "SGL" : "SG";
  case TiuTask::SFU:
    return "SFU";
  case TiuTask::LIN:
    return "LIN";
  case TiuTask::CMP:
    return "CMP";
  case TiuTask::VC:
    return "VC";
  case TiuTask::Sys:
    return "SYS";
  default:
    return "TIU";
  }
}

} // namespace

std::string opName(const TiuOp &op) {
  // Re-encode only the head so that the name matches the disassembler.
  isa::RawCommand head(op.layout);
  try {
    if (op.layout == LayoutId::TiuLong || op.layout == LayoutId::SysId) {
      head.set("tsk_typ", op.f.tsk_typ);
      head.set("tsk_eu_typ", op.f.tsk_eu_typ);
    } else {
      head.set("cmd_short", 1);
      head.set("tsk_typ", op.f.tsk_typ);
      head.set("tsk_eu_typ", op.f.tsk_eu_typ);
    }
    return isa::mnemonic(head) + " (cmd_id " + std::to_string(op.f.cmd_id) +
           ")";
  } catch (const Error &) {
    return std::string(op.shortForm ? "s" : "") + tiuPrefix(op) + ".eu" +
           std::to_string(op.eu);
  }
}

std::string opName(const GdmaOp &op) {
  std::ostringstream os;
  os << (op.f.cmd_short ? "sDMA" : "DMA") << " type " << op.f.cmd_type << " sp "
     << op.special << " (cmd_id " << op.f.cmd_id << ")";
  return os.str();
}

void failOp(const TiuOp &op, const std::string &what) {
  throw Error(opName(op) + ": " + what);
}

void failOp(const GdmaOp &op, const std::string &what) {
  throw Error(opName(op) + ": " + what);
}

isa::RoundMode roundModeOf(const TiuOp &op) {
  auto mode = isa::roundModeFromCode(unsigned(op.f.opd2_n_str));
  if (!mode)
    failOp(op, "round mode " + std::to_string(op.f.opd2_n_str) +
                   " (opd2_n_str) is not a ROUND_MODE code 0..6");
  return *mode;
}

Prec precOf(const TiuOp &op, uint64_t code, const char *field) {
  auto p = isa::precFromCode(unsigned(code));
  if (!p)
    failOp(op, std::string(field) + " = " + std::to_string(code) +
                   " is not a BM1684X precision");
  return *p;
}

LocalTensor tiuTensor(const TiuOp &op, const LaneGeometry &geo, Opd which,
                      uint64_t addr, ElemType type, Shape4 shape,
                      unsigned strCode) {
  LocalTensor t;
  t.addr = uint32_t(addr);
  t.type = type;
  t.shape = shape;
  const isa::cmd::TiuLong &f = op.f;
  switch (strCode) {
  case 0:
  case 1:
  case 2: {
    unsigned start =
        t.addr < (uint64_t(geo.lanes) << geo.laneShift) ? t.startLane(geo) : 0;
    uint64_t slots = (uint64_t(start) + shape.c + geo.lanes - 1) / geo.lanes;
    int64_t hw = int64_t(shape.h) * shape.w;
    if (strCode == 2) {
      t.stride = {0, 1, 0, 0};
    } else {
      int64_t cs = strCode == 0
                       ? int64_t(alignUp(uint64_t(hw), geo.euNum(type.prec)))
                       : hw;
      t.stride = {int64_t(slots) * cs, cs, int64_t(shape.w), 1};
    }
    break;
  }
  case 3:
    switch (which) {
    case Opd::Opd0:
      t.stride = {int64_t(f.opd0_n_str), int64_t(f.opd0_c_str),
                  int64_t(f.opd0_h_str), int64_t(f.opd0_w_str)};
      break;
    case Opd::Opd1:
      t.stride = {int64_t(f.opd1_n_str), int64_t(f.opd1_c_str),
                  int64_t(f.opd1_h_str), int64_t(f.opd1_w_str)};
      break;
    case Opd::Opd2:
      t.stride = {int64_t(f.opd2_n_str), int64_t(f.opd2_c_str),
                  int64_t(f.opd2_h_str), int64_t(f.opd2_w_str)};
      break;
    case Opd::Res0:
      t.stride = {int64_t(f.res0_n_str), int64_t(f.res0_c_str),
                  int64_t(f.res0_h_str), int64_t(f.res0_w_str)};
      break;
    }
    break;
  default:
    failOp(op, "layout code " + std::to_string(strCode) +
                   " is not defined for this operand");
  }
  return t;
}

uint64_t tiuLaneMask(const TiuOp &op, const LaneGeometry &geo) {
  uint64_t m = op.f.tsk_lane_num;
  // As for GDMA, an all-zero mask is read as "no mask".
  if (m == 0)
    m = kAllLanes;
  if (geo.lanes < 64)
    m &= (uint64_t(1) << geo.lanes) - 1;
  return m;
}

} // namespace detail
} // namespace tpu::sim
