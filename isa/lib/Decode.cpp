//===- Decode.cpp - Canonical forms of TIU and GDMA commands --------------===//
//
// Short TIU layouts are widened to the long layout's field names (fields a
// short layout lacks get the value its documented defaults imply); every GDMA
// layout is widened to DMA_tensor's field names. See semantics.md "Short
// forms" for each default.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Decode.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/LocalMem.h"
#include "tpu/isa/Numerics.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace tpu::isa {

namespace {

/// The members of the typed struct of a layout, in the layout's field order
/// (the order of LayoutInfo::fields).
template <typename T> struct Members;
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  template <> struct Members<cmd::Id> {                                        \
    static constexpr uint64_t cmd::Id::*kList[] = {
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning) &cmd::Id::Field,
#define TPU_LAYOUT_END(Id)                                                     \
  }                                                                            \
  ;                                                                            \
  }                                                                            \
  ;
#include "tpu/isa/Layouts.def"

constexpr unsigned kWordBits = 64;

/// The bit table of a layout as compile-time data, so that the copy plans
/// below are constants.
struct ConstField {
  std::string_view name;
  unsigned lsb, width;
  bool reserved;
};
template <LayoutId L> struct ConstLayout;
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  template <> struct ConstLayout<LayoutId::Id> {                               \
    static constexpr Engine kEngine = Engine::Eng;                             \
    static constexpr ConstField kFields[] = {
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning)                    \
  {#Field, Lsb, Width, Reserved != 0},
#define TPU_LAYOUT_END(Id)                                                     \
  }                                                                            \
  ;                                                                            \
  }                                                                            \
  ;
#include "tpu/isa/Layouts.def"

/// One field of layout From copied into member `member` of T.
struct CopyStep {
  bool copy = false; ///< False: T has no (non-reserved) field of that name.
  bool straddles = false;
  unsigned word = 0, shift = 0;
  uint64_t mask = 0;
  unsigned member = 0; ///< Index into Members<T>::kList.
};

/// The copy plan from layout From into the typed struct T (the long form of
/// the same engine): one step per field of From, pairing same-named fields.
/// With From == T every field is copied (like decodeAs); otherwise reserved
/// fields on either side are skipped. Widths may differ (a short field
/// narrower than the long one); the narrower width is the value's width.
template <typename T, LayoutId From> struct CopyPlan {
  using Src = ConstLayout<From>;
  using Dst = ConstLayout<T::kLayout>;
  static constexpr size_t kSize = std::size(Src::kFields);

  static constexpr std::array<CopyStep, kSize> build() {
    std::array<CopyStep, kSize> plan{};
    bool same = From == T::kLayout;
    for (size_t k = 0; k < kSize; ++k) {
      const ConstField &sf = Src::kFields[k];
      if (sf.reserved && !same)
        continue;
      int j = -1;
      if (same)
        j = int(k);
      else
        for (size_t i = 0; i < std::size(Dst::kFields) && j < 0; ++i)
          if (Dst::kFields[i].name == sf.name)
            j = int(i);
      if (j < 0 || (Dst::kFields[j].reserved && !same))
        continue;
      unsigned width = std::min(sf.width, Dst::kFields[j].width);
      CopyStep &s = plan[k];
      s.copy = true;
      s.straddles = sf.lsb % kWordBits + width > kWordBits;
      s.word = sf.lsb / kWordBits;
      s.shift = sf.lsb % kWordBits;
      s.mask = width == kWordBits ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
      s.member = unsigned(j);
    }
    return plan;
  }
  static constexpr std::array<CopyStep, kSize> kSteps = build();

  static constexpr bool anyStraddles() {
    for (const CopyStep &s : kSteps)
      if (s.copy && s.straddles)
        return true;
    return false;
  }
  // Each step is a single shift and mask of one word.
  static_assert(!anyStraddles(), "a field straddles a 64-bit word");
};

template <typename T, LayoutId From, size_t I>
inline void copyStep(const uint64_t *src, T &out) {
  constexpr CopyStep s = CopyPlan<T, From>::kSteps[I];
  if constexpr (s.copy)
    out.*(Members<T>::kList[s.member]) = (src[s.word] >> s.shift) & s.mask;
}

template <typename T, LayoutId From, size_t... I>
void widenSteps(const uint64_t *src, T &out, std::index_sequence<I...>) {
  (copyStep<T, From, I>(src, out), ...);
}

/// Widening runs for every simulated command: one straight-line function per
/// layout (constant shifts and masks), chosen through a table.
template <typename T, LayoutId From>
void widenFrom(const uint64_t *src, T &out) {
  if constexpr (ConstLayout<From>::kEngine == ConstLayout<T::kLayout>::kEngine)
    widenSteps<T, From>(src, out,
                        std::make_index_sequence<CopyPlan<T, From>::kSize>());
}

template <typename T>
constexpr void (*kWiden[])(const uint64_t *, T &) = {
#define TPU_LAYOUT(Id, Name, Eng, Bits) &widenFrom<T, LayoutId::Id>,
#include "tpu/isa/Layouts.def"
};

/// Fills the members of `out` (zero-initialized) from the same-named fields
/// of `c` (a command of T's engine).
template <typename T> void widenInto(const RawCommand &c, T &out) {
  kWiden<T>[static_cast<unsigned>(c.layout())](c.words(), out);
}

constexpr uint64_t kAllLanes = ~uint64_t(0);
constexpr unsigned kPrecInt8 = unsigned(Prec::Int8);
constexpr unsigned kPrecInt16 = unsigned(Prec::Int16);
constexpr unsigned kPrecInt32 = unsigned(Prec::Int32);
constexpr unsigned kPrecFp32 = unsigned(Prec::Fp32);
/// Layout code 2: one value per channel (isa/docs/bm1684x.md 3.2).
constexpr unsigned kStrPerChannel = 2;

bool isFloatCode(uint64_t code) {
  auto p = precFromCode(unsigned(code));
  return p && isFloat(*p);
}

/// Fills the fields a short layout lacks (semantics.md "Short forms").
void fillShortDefaults(TiuOp &op) {
  cmd::TiuLong &f = op.f;
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
  if (c.engine() != Engine::Tiu)
    throw Error(std::string("decodeTiu: ") + c.info().name +
                " is not a TIU command");
  TiuOp op;
  op.layout = c.layout();
  switch (op.layout) {
  case LayoutId::Lar:
    // Decided not to execute (semantics.md "Short forms"): the layout is
    // public, the meaning of its 16-bit addresses, 1-bit strides and
    // start_tid is not, and no known compiler emits it.
    throw Error(mnemonic(c) +
                ": LAR (tsk 7) is not executed: its bit layout is public but "
                "its operand semantics are not (16-bit addresses, 1-bit "
                "strides, start_tid; isa/docs/bm1684x.md 4.5)");
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
  default:
    op.shortForm = op.layout != LayoutId::TiuLong;
    widenInto(c, op.f);
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
    // tsk 12 (SYS_TRWR on a later chip, 16 bytes per the runtime) has no
    // BM1684X layout; 7 is LAR (above); 8 and 11 exist nowhere.
    throw Error(mnemonic(c) + ": TIU task type " + std::to_string(task) +
                " has no public BM1684X layout or semantics and cannot be "
                "executed");
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
GdmaFormat GdmaOp::format() const {
  auto fmt = gdmaFormatFromCode(unsigned(f.src_data_format));
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

GdmaFormat formatOf(uint64_t code, const char *field) {
  auto fmt = gdmaFormatFromCode(unsigned(code));
  if (!fmt)
    throw Error(std::string("GDMA ") + field + " " + std::to_string(code) +
                " is not a BM1684X format");
  return *fmt;
}

} // namespace

GdmaOp decodeGdma(const RawCommand &c, const ChipParams &chip) {
  if (c.engine() != Engine::Gdma)
    throw Error(std::string("decodeGdma: ") + c.info().name +
                " is not a GDMA command");
  GdmaOp op;
  op.layout = c.layout();
  widenInto(c, op.f);
  switch (op.layout) {
  case LayoutId::DmaTensor:
    break;
  case LayoutId::DmaGather: {
    auto g = decodeAs<cmd::DmaGather>(c);
    // widenInto() copied the same-named fields (strides, sizes, addresses,
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
    auto ms = decodeAs<cmd::DmaMaskedSelect>(c);
    if (ms.cmd_type == uint64_t(GdmaType::Nonzero)) {
      // DMA_nonzero: bits 43..45 are index_data_format, dst_nstride holds
      // base_i, no mask address (isa/docs/bm1684x.md 5.8).
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
    // The short matrix fields carry "S2L name / L2S name" (isa/docs/bm1684x.md 5.9):
    // the first name applies when the source is global, the second when the
    // source is local. widenInto() filled the S2L names; move them for L2S.
    auto s = decodeAs<cmd::SDmaMatrix>(c);
    uint64_t src = joinAddr(s.src_start_addr_l32, s.src_start_addr_h8);
    if (classifyAddr(chip, src) == MemRegion::Local && !s.fill_constant_en) {
      cmd::DmaTensor &f = op.f;
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
    auto s = decodeAs<cmd::SDmaMaskedSelect>(c);
    op.mask_data_format = formatOf(s.mask_data_format, "mask_data_format");
    op.mask_start_addr = joinAddr(s.mask_start_addr_l32, s.mask_start_addr_h8);
    op.f.stride_enable = 0;
    break;
  }
  case LayoutId::SDmaNonzero: {
    auto s = decodeAs<cmd::SDmaNonzero>(c);
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
  op.type = static_cast<GdmaType>(op.f.cmd_type);
  op.special = unsigned(op.f.cmd_special_function);
  switch (op.type) {
  case GdmaType::Tensor:
  case GdmaType::Matrix:
  case GdmaType::MaskedSelect:
  case GdmaType::General:
  case GdmaType::CwTranspose:
  case GdmaType::Nonzero:
  case GdmaType::Sys:
  case GdmaType::Gather:
  case GdmaType::Scatter:
    break;
  default:
    throw Error(mnemonic(c) + ": GDMA cmd_type " +
                std::to_string(op.f.cmd_type) + " is not a BM1684X type");
  }
  return op;
}

GdmaOp decodeGdma(const RawCommand &c) {
  return decodeGdma(c, ChipParams::bm1684x());
}

} // namespace tpu::isa
