//===- Decode.cpp - Canonical forms of TIU and GDMA commands --------------===//
//
// Short TIU layouts are widened to the long layout's field names (fields a
// short layout lacks get the value its documented defaults imply); every GDMA
// layout is widened to DMA_tensor's field names. See semantics.md "Short
// forms" for each default.
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"

#include "tpu/isa/Numerics.h"

#include <array>
#include <mutex>
#include <sstream>

namespace tpu::sim {

using isa::LayoutId;
using isa::Prec;
using isa::RawCommand;
using isa::TiuTask;

namespace {

/// Copy plan from one layout to another: pairs of (source field, target
/// field) with the same name, computed once per layout.
struct FieldMap {
  struct Pair {
    uint16_t srcLsb, dstLsb;
    uint8_t width;
  };
  std::vector<Pair> pairs;
};

const FieldMap &fieldMap(LayoutId from, LayoutId to) {
  static std::array<FieldMap, isa::kNumLayouts> maps[2];
  static std::once_flag once;
  std::call_once(once, [] {
    for (unsigned i = 0; i < isa::kNumLayouts; ++i) {
      const isa::LayoutInfo &src = isa::allLayouts()[i];
      LayoutId target = src.engine == isa::Engine::Tiu ? LayoutId::TiuLong
                                                       : LayoutId::DmaTensor;
      const isa::LayoutInfo &dst = isa::layoutInfo(target);
      FieldMap &fm = maps[src.engine == isa::Engine::Tiu ? 0 : 1][i];
      for (unsigned k = 0; k < src.numFields; ++k) {
        const isa::FieldInfo &sf = src.fields[k];
        if (sf.reserved)
          continue;
        int j = dst.findField(sf.name);
        if (j < 0 || dst.fields[j].reserved)
          continue;
        const isa::FieldInfo &df = dst.fields[j];
        // Widths may differ (a short field narrower than the long one);
        // the narrower width is the value's width.
        fm.pairs.push_back(
            {sf.lsb, df.lsb, uint8_t(std::min(sf.width, df.width))});
      }
    }
  });
  return maps[to == LayoutId::TiuLong ? 0 : 1][static_cast<unsigned>(from)];
}

/// Copies same-named fields of `c` into a fresh command of layout `to`
/// (TiuLong or DmaTensor).
RawCommand widen(const RawCommand &c, LayoutId to) {
  RawCommand out(to);
  for (const FieldMap::Pair &p : fieldMap(c.layout(), to).pairs)
    isa::insertBits(out.words(), p.dstLsb, p.width,
                    isa::extractBits(c.words(), p.srcLsb, p.width));
  return out;
}

constexpr uint64_t kAllLanes = ~uint64_t(0);
constexpr unsigned kPrecInt8 = unsigned(Prec::Int8);
constexpr unsigned kPrecInt16 = unsigned(Prec::Int16);
constexpr unsigned kPrecInt32 = unsigned(Prec::Int32);
constexpr unsigned kPrecFp32 = unsigned(Prec::Fp32);
/// Layout code 2: one value per channel (bm1684x.md 3.2).
constexpr unsigned kStrPerChannel = 2;

bool isFloatCode(uint64_t code) {
  auto p = isa::precFromCode(unsigned(code));
  return p && isa::isFloat(*p);
}

/// Fills the fields a short layout lacks (semantics.md "Short forms").
void fillShortDefaults(TiuOp &op) {
  isa::cmd::TiuLong &f = op.f;
  f.tsk_lane_num = kAllLanes;
  switch (op.layout) {
  case LayoutId::SConv:
    f.opd1_prec = f.opd0_prec;
    f.opd0_n = f.res0_n;
    f.opd1_c = f.res0_c;
    if (isFloatCode(f.opd0_prec))
      f.opd2_prec = kPrecFp32; // bias, fp32 per oc
    else
      f.opd2_prec = op.eu == 0 ? kPrecInt8 : kPrecInt16;
    break;
  case LayoutId::SPorD:
    f.opd1_prec = f.opd0_prec;
    f.opd0_n = f.res0_n;
    f.opd0_c = f.res0_c;
    f.opd2_prec = isFloatCode(f.opd0_prec) ? f.opd0_prec : kPrecInt32;
    break;
  case LayoutId::SMM:
    f.opd1_prec = f.opd0_prec;
    if (isFloatCode(f.opd0_prec))
      f.opd2_prec = kPrecFp32;
    else
      f.opd2_prec = op.eu == 1 ? kPrecInt8 : kPrecInt16;
    break;
  case LayoutId::SMM2:
    f.opd1_prec = f.opd0_prec;
    f.opd2_prec = f.opd0_prec;
    f.opd2_sign = f.opd1_sign;
    break;
  case LayoutId::SAR:
    f.opd0_n = f.opd1_n = f.res0_n;
    f.opd0_c = f.opd1_c = f.res0_c;
    f.opd0_h = f.opd1_h = f.res0_h;
    f.opd0_w = f.opd1_w = f.res0_w;
    f.opd2_str = kStrPerChannel;
    break;
  case LayoutId::SCMP:
    f.opd1_prec = f.opd0_prec;
    f.opd1_sign = f.opd0_sign;
    f.res0_prec = f.opd0_prec;
    f.opd2_sign = f.opd0_sign;
    break;
  case LayoutId::SSFU:
    f.opd0_sign = 1;
    f.opd1_prec = f.opd0_prec;
    break;
  case LayoutId::SLIN:
    f.opd0_prec = f.opd1_prec = f.opd2_prec = f.res0_prec;
    f.opd0_sign = f.opd1_sign = f.opd2_sign = 1;
    f.opd1_str = f.opd2_str = kStrPerChannel;
    break;
  case LayoutId::STransBC:
    f.opd0_prec = f.res0_prec;
    f.opd0_n = f.res0_n;
    f.opd0_h = f.res0_h;
    break;
  case LayoutId::SSEG:
    f.res0_n = 1;
    f.res0_h = 1;
    break;
  case LayoutId::SSGL:
    f.opd0_prec = f.res0_prec;
    break;
  default:
    break;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// TIU
//===----------------------------------------------------------------------===//

TiuOp decodeTiu(const RawCommand &c) {
  if (c.engine() != isa::Engine::Tiu)
    throw Error(std::string("decodeTiu: ") + c.info().name +
                " is not a TIU command");
  TiuOp op;
  op.layout = c.layout();
  switch (op.layout) {
  case LayoutId::Lar:
    throw Error("LAR (tsk 7) commands are not supported: their operand "
                "semantics are not public (bm1684x.md 4.5)");
  case LayoutId::SysId:
    op.shortForm = false;
    op.f.cmd_id = c.get("cmd_id");
    op.f.cmd_id_dep = c.get("cmd_id_dep");
    op.f.tsk_typ = c.get("tsk_typ");
    op.f.tsk_eu_typ = c.get("tsk_eu_typ");
    op.f.intr_en = c.get("intr_en");
    op.task = TiuTask::Sys;
    op.eu = unsigned(op.f.tsk_eu_typ);
    return op;
  case LayoutId::TiuLong:
    op.shortForm = false;
    op.f = isa::decodeAs<isa::cmd::TiuLong>(c);
    break;
  default:
    op.shortForm = true;
    op.f = isa::decodeAs<isa::cmd::TiuLong>(widen(c, LayoutId::TiuLong));
    break;
  }
  op.eu = unsigned(op.f.tsk_eu_typ);
  unsigned task = unsigned(op.f.tsk_typ);
  switch (static_cast<TiuTask>(task)) {
  case TiuTask::Conv:
  case TiuTask::PorD:
  case TiuTask::MM:
  case TiuTask::AR:
  case TiuTask::RQDQ:
  case TiuTask::TransBC:
  case TiuTask::SG:
  case TiuTask::SFU:
  case TiuTask::LIN:
  case TiuTask::CMP:
  case TiuTask::VC:
  case TiuTask::Sys:
    op.task = static_cast<TiuTask>(task);
    break;
  default:
    throw Error(isa::mnemonic(c) + ": TIU task type " + std::to_string(task) +
                " has no public semantics and cannot be executed");
  }
  if (op.shortForm)
    fillShortDefaults(op);
  return op;
}

//===----------------------------------------------------------------------===//
// GDMA
//===----------------------------------------------------------------------===//

uint64_t GdmaOp::srcAddr() const {
  return (f.src_start_addr_h8 << 32) | f.src_start_addr_l32;
}
uint64_t GdmaOp::dstAddr() const {
  return (f.dst_start_addr_h8 << 32) | f.dst_start_addr_l32;
}
uint64_t GdmaOp::laneMask() const {
  uint64_t m = (f.localmem_mask_h32 << 32) | f.localmem_mask_l32;
  // An all-zero mask would disable every lane; it is read as "no mask"
  // (semantics.md "Lane masks").
  return m == 0 ? kAllLanes : m;
}
isa::GdmaFormat GdmaOp::format() const {
  auto fmt = isa::gdmaFormatFromCode(unsigned(f.src_data_format));
  if (!fmt)
    throw Error("GDMA src_data_format " + std::to_string(f.src_data_format) +
                " is not a BM1684X format");
  return *fmt;
}

namespace {

constexpr unsigned kAddrLowBits = 32;
constexpr uint64_t kAddrHighMask = 0xFF;

uint64_t joinAddr(uint64_t l32, uint64_t h8) {
  return ((h8 & kAddrHighMask) << kAddrLowBits) | l32;
}

isa::GdmaFormat formatOf(uint64_t code, const char *field) {
  auto fmt = isa::gdmaFormatFromCode(unsigned(code));
  if (!fmt)
    throw Error(std::string("GDMA ") + field + " " + std::to_string(code) +
                " is not a BM1684X format");
  return *fmt;
}

} // namespace

GdmaOp decodeGdma(const RawCommand &c, const isa::ChipParams &chip) {
  if (c.engine() != isa::Engine::Gdma)
    throw Error(std::string("decodeGdma: ") + c.info().name +
                " is not a GDMA command");
  GdmaOp op;
  op.layout = c.layout();
  op.f = isa::decodeAs<isa::cmd::DmaTensor>(widen(c, LayoutId::DmaTensor));
  switch (op.layout) {
  case LayoutId::DmaTensor:
    break;
  case LayoutId::DmaGather: {
    auto g = isa::decodeAs<isa::cmd::DmaGather>(c);
    // widen() copied the same-named fields (strides, sizes, addresses,
    // masks); the index tensor is kept apart.
    op.index_cstride = g.index_cstride;
    op.index_hstride = g.index_hstride;
    op.index_csize = g.index_csize;
    op.index_hsize = g.index_hsize;
    op.index_start_addr =
        joinAddr(g.index_start_addr_l32, g.index_start_addr_h8);
    // The h sizes are 32 bits wide here but 16 in DMA_tensor: keep them
    // whole (the canonical members are 64-bit).
    op.f.src_hsize = g.src_hsize;
    op.f.dst_hsize = g.dst_hsize;
    break;
  }
  case LayoutId::DmaMaskedSelect: {
    auto ms = isa::decodeAs<isa::cmd::DmaMaskedSelect>(c);
    if (ms.cmd_type == uint64_t(isa::GdmaType::Nonzero)) {
      // DMA_nonzero: bits 43..45 are index_data_format, dst_nstride holds
      // base_i, no mask address (bm1684x.md 5.8).
      op.index_data_format = formatOf(ms.mask_data_format, "index_data_format");
      op.base_i = ms.dst_nstride;
      op.f.dst_nstride = 0;
    } else {
      op.mask_data_format = formatOf(ms.mask_data_format, "mask_data_format");
      op.mask_start_addr =
          joinAddr(ms.mask_start_addr_l32, ms.mask_start_addr_h8);
    }
    break;
  }
  case LayoutId::SDmaGeneral:
    break;
  case LayoutId::SDmaMatrix: {
    // The short matrix fields carry "S2L name / L2S name" (bm1684x.md 5.9):
    // the first name applies when the source is global, the second when the
    // source is local. widen() filled the S2L names; move them for L2S.
    auto s = isa::decodeAs<isa::cmd::SDmaMatrix>(c);
    uint64_t src = joinAddr(s.src_start_addr_l32, s.src_start_addr_h8);
    if (isa::classifyAddr(chip, src) == isa::MemRegion::Local &&
        !s.fill_constant_en) {
      isa::cmd::DmaTensor &f = op.f;
      f.src_hstride = f.dst_nstride = f.dst_cstride = 0;
      f.src_hsize = f.src_wsize = f.dst_nsize = f.dst_csize = f.dst_wsize = 0;
      f.dst_hstride = s.src_hstride;
      f.src_nstride = s.dst_nstride;
      f.src_cstride = s.dst_cstride;
      f.dst_hsize = s.src_hsize;
      f.dst_wsize = s.src_wsize;
      f.src_nsize = s.dst_nsize;
      f.src_csize = s.dst_csize;
      f.src_wsize = s.dst_wsize;
    }
    break;
  }
  case LayoutId::SDmaMaskedSelect: {
    auto s = isa::decodeAs<isa::cmd::SDmaMaskedSelect>(c);
    op.mask_data_format = formatOf(s.mask_data_format, "mask_data_format");
    op.mask_start_addr = joinAddr(s.mask_start_addr_l32, s.mask_start_addr_h8);
    op.f.stride_enable = 0;
    break;
  }
  case LayoutId::SDmaNonzero: {
    auto s = isa::decodeAs<isa::cmd::SDmaNonzero>(c);
    op.index_data_format = formatOf(s.index_data_format, "index_data_format");
    op.base_i = s.dst_nstride;
    op.f.dst_nstride = 0;
    op.f.stride_enable = 0;
    break;
  }
  case LayoutId::SDmaSys:
    break;
  default:
    throw Error(std::string("decodeGdma: unexpected layout ") + c.info().name);
  }
  op.type = static_cast<isa::GdmaType>(op.f.cmd_type);
  op.special = unsigned(op.f.cmd_special_function);
  switch (op.type) {
  case isa::GdmaType::Tensor:
  case isa::GdmaType::Matrix:
  case isa::GdmaType::MaskedSelect:
  case isa::GdmaType::General:
  case isa::GdmaType::CwTranspose:
  case isa::GdmaType::Nonzero:
  case isa::GdmaType::Sys:
  case isa::GdmaType::Gather:
  case isa::GdmaType::Scatter:
    break;
  default:
    throw Error(isa::mnemonic(c) + ": GDMA cmd_type " +
                std::to_string(op.f.cmd_type) + " is not a BM1684X type");
  }
  return op;
}

GdmaOp decodeGdma(const RawCommand &c) {
  return decodeGdma(c, isa::ChipParams::bm1684x());
}

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
