//===- Command.cpp - BM1684X command layouts and codecs -------------------===//
//
// Everything here is derived from the bit tables of Layouts.def and the name
// tables of Opcodes.def. Fields are packed with shifts and masks over 64-bit
// little-endian words (isa/docs/bm1684x.md 4.1).
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Command.h"

#include "tpu/isa/Format.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string_view>

namespace tpu::isa {

namespace {

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

#define TPU_LAYOUT(Id, Name, Eng, Bits) constexpr FieldInfo k##Id##Fields[] = {
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning)                    \
  {#Field, Lsb, Width, Reserved != 0, Meaning},
#define TPU_LAYOUT_END(Id)                                                     \
  }                                                                            \
  ;
#include "tpu/isa/Layouts.def"

const LayoutInfo kLayouts[] = {
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  {LayoutId::Id,  Name,                                                        \
   Engine::Eng,   Bits,                                                        \
   k##Id##Fields, static_cast<unsigned>(std::size(k##Id##Fields))},
#include "tpu/isa/Layouts.def"
};
static_assert(std::size(kLayouts) == kNumLayouts);

/// A fixed bit slice of a command head.
struct Slice {
  unsigned lsb, width;
  uint64_t get(const uint64_t *words) const {
    return extractBits(words, lsb, width);
  }
};

/// The slice of the field called `name` (width 0 if there is none).
template <size_t N>
constexpr Slice sliceOf(const FieldInfo (&fields)[N], std::string_view name) {
  for (const FieldInfo &f : fields)
    if (name == f.name)
      return {f.lsb, f.width};
  return {0, 0};
}

// Head fields, taken from the generic layout of each engine. They sit at the
// same bits in every layout of their engine (TIU: all but LAR, whose bit 0 is
// a stride bit and which has no ids; in SYSID bit 0 is reserved); the unit
// tests check this for every table.
constexpr Slice kTiuShort = sliceOf(kTiuLongFields, "cmd_short"),
                kTiuId = sliceOf(kTiuLongFields, "cmd_id"),
                kTiuIdDep = sliceOf(kTiuLongFields, "cmd_id_dep"),
                kTiuTask = sliceOf(kTiuLongFields, "tsk_typ"),
                kTiuEu = sliceOf(kTiuLongFields, "tsk_eu_typ");
constexpr Slice kGdmaShort = sliceOf(kDmaTensorFields, "cmd_short"),
                kGdmaId = sliceOf(kDmaTensorFields, "cmd_id"),
                kGdmaType = sliceOf(kDmaTensorFields, "cmd_type"),
                kGdmaSpecial =
                    sliceOf(kDmaTensorFields, "cmd_special_function"),
                kGdmaFill = sliceOf(kDmaTensorFields, "fill_constant_en"),
                kGdmaIdDep = sliceOf(kDmaTensorFields, "cmd_id_dep");
constexpr bool allPresent(std::initializer_list<Slice> slices) {
  for (Slice slice : slices)
    if (slice.width == 0)
      return false;
  return true;
}
static_assert(allPresent({kTiuShort, kTiuId, kTiuIdDep, kTiuTask, kTiuEu,
                          kGdmaShort, kGdmaId, kGdmaType, kGdmaSpecial,
                          kGdmaFill, kGdmaIdDep}),
              "head field missing from Layouts.def");

/// Bytes of the first 64-bit word, which holds every head field used for
/// layout selection in both engines.
constexpr size_t kHeadBytes = 8;
/// Command streams are zero-padded to a multiple of this (isa/docs/bm1684x.md 4.1).
constexpr size_t kStreamAlign = 128;

/// Number of tsk_typ / tsk_eu_typ / cmd_type / cmd_special_function codes.
constexpr unsigned kNumTiuTasks = 1u << kTiuTask.width,
                   kNumTiuEus = 1u << kTiuEu.width;
constexpr unsigned kNumGdmaTypes = 1u << kGdmaType.width,
                   kNumGdmaSpecials = 1u << kGdmaSpecial.width;

// TIU sub-op ranges that pick a short layout (isa/docs/bm1684x.md 4.1, 4.2).
constexpr unsigned kMmLastEu = 3;    ///< sMM for eu <= 3, sMM2 above.
constexpr unsigned kSegFirstEu = 24; ///< sSEG for AR eu 24 and 25.
constexpr unsigned kSegLastEu = 25;
constexpr unsigned kSgLastEu = 16;  ///< sSG for eu 0..16,
constexpr unsigned kSglLastEu = 19; ///< sSGL for eu 17..19.

/// Opcode names from Opcodes.def, indexed by code.
struct NameTables {
  const char *tiuSub[kNumTiuTasks][kNumTiuEus] = {};
  const char *tiuLong[kNumLayouts] = {};
  const char *gdmaType[kNumGdmaTypes] = {};
  const char *gdmaSub[kNumGdmaTypes][kNumGdmaSpecials] = {};
  bool gdmaHasSub[kNumGdmaTypes] = {};

  NameTables() {
#define TPU_TIU_SUBOP(Task, Eu, Name)                                          \
  tiuSub[static_cast<unsigned>(TiuTask::Task)][Eu] = Name;
#define TPU_TIU_LONG_NAME(ShortLayout, Name)                                   \
  tiuLong[static_cast<unsigned>(LayoutId::ShortLayout)] = Name;
#define TPU_GDMA_TYPE(Type, Name)                                              \
  gdmaType[static_cast<unsigned>(GdmaType::Type)] = Name;
#define TPU_GDMA_SUBOP(Type, Sp, Name)                                         \
  gdmaSub[static_cast<unsigned>(GdmaType::Type)][Sp] = Name;                   \
  gdmaHasSub[static_cast<unsigned>(GdmaType::Type)] = true;
#include "tpu/isa/Opcodes.def"
    // LAR takes the AR sub-op codes (isa/docs/bm1684x.md 4.2).
    std::copy(std::begin(tiuSub[static_cast<unsigned>(TiuTask::AR)]),
              std::end(tiuSub[static_cast<unsigned>(TiuTask::AR)]),
              tiuSub[static_cast<unsigned>(TiuTask::LAR)]);
  }
};

const NameTables &names() {
  static const NameTables tables;
  return tables;
}

/// The layout a short TIU command with (tsk_typ, tsk_eu_typ) uses, if any.
std::optional<LayoutId> shortTiuLayout(unsigned task, unsigned eu) {
  switch (static_cast<TiuTask>(task)) {
  case TiuTask::Conv:
    return LayoutId::SConv;
  case TiuTask::PorD:
    return LayoutId::SPorD;
  case TiuTask::MM:
    return eu <= kMmLastEu ? LayoutId::SMM : LayoutId::SMM2;
  case TiuTask::AR:
    return eu >= kSegFirstEu && eu <= kSegLastEu ? LayoutId::SSEG
                                                 : LayoutId::SAR;
  case TiuTask::RQDQ:
    return LayoutId::SRQDQ;
  case TiuTask::TransBC:
    return LayoutId::STransBC;
  case TiuTask::SG:
    if (eu <= kSgLastEu)
      return LayoutId::SSG;
    if (eu <= kSglLastEu)
      return LayoutId::SSGL;
    break;
  case TiuTask::SFU:
    return LayoutId::SSFU;
  case TiuTask::LIN:
    return LayoutId::SLIN;
  case TiuTask::CMP:
    return LayoutId::SCMP;
  case TiuTask::VC:
    return LayoutId::SVC;
  case TiuTask::LAR:
    return LayoutId::Lar;
  case TiuTask::Sys:
    return LayoutId::SysId;
  default:
    break;
  }
  return std::nullopt;
}

void checkLayout(const RawCommand &raw, LayoutId want) {
  if (raw.layout() != want)
    throw Error(std::string("decodeAs<") + layoutInfo(want).name +
                ">: command has layout " + raw.info().name);
}

[[noreturn]] void throwTooWide(LayoutId layout, const char *field,
                               uint64_t value, unsigned width) {
  throw Error(std::string(layoutInfo(layout).name) + "." + field + ": value " +
              formatHex(value) + " does not fit in " + std::to_string(width) +
              " bits");
}

/// Sets a field; names it when the value does not fit.
void setField(RawCommand &r, const FieldInfo &f, uint64_t value) {
  if (f.width < 64 && (value >> f.width) != 0)
    throwTooWide(r.layout(), f.name, value, f.width);
  insertBits(r.words(), f.lsb, f.width, value);
}

// Typed-struct codecs with the field positions as constants, so that each
// member is one shift and mask. Table fields never straddle a 64-bit word.
template <unsigned Lsb, unsigned Width>
inline void packMember(uint64_t *words, uint64_t value, LayoutId layout,
                       const char *field) {
  static_assert(Lsb / 64 == (Lsb + Width - 1) / 64, "field straddles words");
  if constexpr (Width < 64)
    if ((value >> Width) != 0)
      throwTooWide(layout, field, value, Width);
  words[Lsb / 64] |= value << (Lsb % 64); // the command starts zeroed
}

template <unsigned Lsb, unsigned Width>
inline uint64_t unpackMember(const uint64_t *words) {
  uint64_t v = words[Lsb / 64] >> (Lsb % 64);
  if constexpr (Width < 64)
    v &= (uint64_t(1) << Width) - 1;
  return v;
}

std::string bufferError(Engine engine, size_t offset, const std::string &what) {
  return std::string(engineName(engine)) + " command buffer: offset " +
         formatHex(offset) + ": " + what;
}

} // namespace

//===----------------------------------------------------------------------===//
// Layout tables and bit access
//===----------------------------------------------------------------------===//

const char *engineName(Engine engine) {
  return engine == Engine::Tiu ? "TIU" : "GDMA";
}

int LayoutInfo::findField(std::string_view fieldName) const {
  for (unsigned i = 0; i < numFields; ++i)
    if (fieldName == fields[i].name)
      return static_cast<int>(i);
  return -1;
}

unsigned LayoutInfo::fieldIndex(std::string_view fieldName) const {
  int idx = findField(fieldName);
  if (idx < 0)
    throw Error(std::string(name) + " has no field '" + std::string(fieldName) +
                "'");
  return static_cast<unsigned>(idx);
}

const LayoutInfo &layoutInfo(LayoutId id) {
  return kLayouts[static_cast<unsigned>(id)];
}

const LayoutInfo *allLayouts() { return kLayouts; }

bool isShortForm(LayoutId id) {
  switch (id) {
  case LayoutId::TiuLong:
  case LayoutId::DmaTensor:
  case LayoutId::DmaGather:
  case LayoutId::DmaMaskedSelect:
    return false;
  default:
    return true;
  }
}

void detail::throwBadInsert(unsigned lsb, unsigned width, uint64_t value) {
  if (width == 0 || width > 64)
    throw Error("insertBits: invalid field width " + std::to_string(width));
  throw Error("insertBits: value " + formatHex(value) + " does not fit in " +
              std::to_string(width) + " bits at bit " + std::to_string(lsb));
}

//===----------------------------------------------------------------------===//
// RawCommand
//===----------------------------------------------------------------------===//

uint64_t RawCommand::get(unsigned fieldIdx) const {
  const LayoutInfo &li = info();
  if (fieldIdx >= li.numFields)
    throw Error(std::string(li.name) + ": field index " +
                std::to_string(fieldIdx) + " out of range");
  const FieldInfo &f = li.fields[fieldIdx];
  return extractBits(words_.data(), f.lsb, f.width);
}

void RawCommand::set(unsigned fieldIdx, uint64_t value) {
  const LayoutInfo &li = info();
  if (fieldIdx >= li.numFields)
    throw Error(std::string(li.name) + ": field index " +
                std::to_string(fieldIdx) + " out of range");
  setField(*this, li.fields[fieldIdx], value);
}

uint64_t RawCommand::get(std::string_view field) const {
  return get(info().fieldIndex(field));
}

void RawCommand::set(std::string_view field, uint64_t value) {
  set(info().fieldIndex(field), value);
}

bool RawCommand::has(std::string_view field) const {
  int idx = info().findField(field);
  return idx >= 0 && !info().fields[idx].reserved;
}

// Command sizes are multiples of 16 bytes, so whole words are copied; the
// byte-wise shifts make this independent of the host's byte order.
void RawCommand::toBytes(uint8_t *out) const {
  for (unsigned i = 0, n = bytes() / 8; i < n; ++i)
    for (unsigned b = 0; b < 8; ++b)
      out[8 * i + b] = static_cast<uint8_t>(words_[i] >> (8 * b));
}

RawCommand RawCommand::fromBytes(LayoutId layout, const uint8_t *data) {
  RawCommand c(layout);
  for (unsigned i = 0, n = c.bytes() / 8; i < n; ++i) {
    uint64_t w = 0;
    for (unsigned b = 0; b < 8; ++b)
      w |= uint64_t(data[8 * i + b]) << (8 * b);
    c.words_[i] = w;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Typed structs
//===----------------------------------------------------------------------===//

#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  RawCommand encode(const cmd::Id &c) {                                        \
    RawCommand r(LayoutId::Id);                                                \
    uint64_t *w = r.words();
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning)                    \
  packMember<Lsb, Width>(w, c.Field, LayoutId::Id, #Field);
#define TPU_LAYOUT_END(Id)                                                     \
  return r;                                                                    \
  }
#include "tpu/isa/Layouts.def"

#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  template <> cmd::Id decodeAs<cmd::Id>(const RawCommand &raw) {               \
    checkLayout(raw, LayoutId::Id);                                            \
    const uint64_t *w = raw.words();                                           \
    cmd::Id c;
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning)                    \
  c.Field = unpackMember<Lsb, Width>(w);
#define TPU_LAYOUT_END(Id)                                                     \
  return c;                                                                    \
  }
#include "tpu/isa/Layouts.def"

//===----------------------------------------------------------------------===//
// Layout selection and mnemonics
//===----------------------------------------------------------------------===//

LayoutId tiuLayoutFor(bool isShort, unsigned tskTyp, unsigned tskEuTyp) {
  std::optional<LayoutId> shortId = shortTiuLayout(tskTyp, tskEuTyp);
  if (!shortId)
    throw Error("no TIU layout for " + std::string(isShort ? "short" : "long") +
                " tsk_typ=" + std::to_string(tskTyp) +
                " tsk_eu_typ=" + std::to_string(tskEuTyp));
  // SYSID and LAR have one size whatever bit 0 says; every other long
  // command uses the generic long layout.
  if (!isShort && shortId != LayoutId::SysId && shortId != LayoutId::Lar)
    return LayoutId::TiuLong;
  return *shortId;
}

LayoutId gdmaLayoutFor(bool isShort, unsigned cmdType, unsigned specialFunc) {
  auto type = static_cast<GdmaType>(cmdType);
  if (type == GdmaType::Sys)
    return LayoutId::SDmaSys;
  if (isShort) {
    switch (type) {
    case GdmaType::General:
      return LayoutId::SDmaGeneral;
    case GdmaType::Matrix:
      return LayoutId::SDmaMatrix;
    case GdmaType::MaskedSelect:
      return LayoutId::SDmaMaskedSelect;
    case GdmaType::Nonzero:
      return LayoutId::SDmaNonzero;
    default:
      break;
    }
  } else {
    switch (type) {
    // DMA_general, DMA_matrix and DMA_cw_transpose share DMA_tensor's bits
    // (isa/docs/bm1684x.md 5.5, 5.6).
    case GdmaType::Tensor:
    case GdmaType::Matrix:
    case GdmaType::General:
    case GdmaType::CwTranspose:
      return LayoutId::DmaTensor;
    case GdmaType::Gather:
    case GdmaType::Scatter:
      return LayoutId::DmaGather;
    // DMA_nonzero reuses DMA_masked_select's bits (5.8).
    case GdmaType::MaskedSelect:
    case GdmaType::Nonzero:
      return LayoutId::DmaMaskedSelect;
    default:
      break;
    }
  }
  throw Error("no GDMA layout for " + std::string(isShort ? "short" : "long") +
              " cmd_type=" + std::to_string(cmdType) +
              " cmd_special_function=" + std::to_string(specialFunc));
}

std::string mnemonic(const RawCommand &c) {
  const NameTables &t = names();
  const uint64_t *w = c.words();
  if (c.engine() == Engine::Tiu) {
    unsigned task = kTiuTask.get(w), eu = kTiuEu.get(w);
    std::string prefix = c.info().name;
    if (c.layout() == LayoutId::TiuLong) {
      std::optional<LayoutId> shortId = shortTiuLayout(task, eu);
      const char *longName =
          shortId ? t.tiuLong[static_cast<unsigned>(*shortId)] : nullptr;
      prefix = longName ? std::string(longName)
                        : prefix + ".tsk" + std::to_string(task);
    }
    const char *sub = t.tiuSub[task][eu];
    return prefix + "." + (sub ? std::string(sub) : "eu" + std::to_string(eu));
  }

  // GDMA: "DMA_<type>" / "sDMA_<type>" from cmd_type (not the layout: four
  // types share DMA_tensor's bits), then the special function; types without
  // a sub-function table (gather, nonzero, ...) print none for 0. With
  // fill_constant_en the source is a constant: "none" becomes "fill", other
  // sub-functions get a "_fill" suffix.
  unsigned type = kGdmaType.get(w), sp = kGdmaSpecial.get(w);
  const char *typeName = t.gdmaType[type];
  std::string name = std::string(isShortForm(c.layout()) ? "sDMA_" : "DMA_") +
                     (typeName ? typeName : "type" + std::to_string(type));
  std::string sub;
  if (const char *s = t.gdmaSub[type][sp])
    sub = s;
  else if (sp != 0 || t.gdmaHasSub[type])
    sub = "sp" + std::to_string(sp);
  if (kGdmaFill.get(w) && static_cast<GdmaType>(type) != GdmaType::Sys)
    sub = sub.empty() || sub == "none" ? "fill" : sub + "_fill";
  return sub.empty() ? name : name + "." + sub;
}

//===----------------------------------------------------------------------===//
// Command buffers
//===----------------------------------------------------------------------===//

namespace {

/// The first 64-bit word of the command at `p` (little-endian).
uint64_t readHead(const uint8_t *p) {
  uint64_t head = 0;
  for (size_t i = 0; i < kHeadBytes; ++i)
    head |= uint64_t(p[i]) << (8 * i);
  return head;
}

/// The layout a command head selects; throws like tiuLayoutFor /
/// gdmaLayoutFor.
LayoutId layoutOfHead(Engine engine, uint64_t head) {
  return engine == Engine::Tiu
             ? tiuLayoutFor(kTiuShort.get(&head), kTiuTask.get(&head),
                            kTiuEu.get(&head))
             : gdmaLayoutFor(kGdmaShort.get(&head), kGdmaType.get(&head),
                             kGdmaSpecial.get(&head));
}

/// True for the end command of either engine, from its layout and first
/// word (which holds every field this looks at).
static_assert(kTiuTask.lsb + kTiuTask.width <= 64 &&
                  kTiuEu.lsb + kTiuEu.width <= 64 &&
                  kGdmaType.lsb + kGdmaType.width <= 64 &&
                  kGdmaSpecial.lsb + kGdmaSpecial.width <= 64,
              "end-command fields outside the first word");
bool isEndHead(LayoutId layout, const uint64_t *w) {
  if (layout == LayoutId::SysId)
    return kTiuTask.get(w) == static_cast<unsigned>(TiuTask::Sys) &&
           kTiuEu.get(w) == kTiuSysEnd;
  if (layout == LayoutId::SDmaSys)
    return kGdmaType.get(w) == static_cast<unsigned>(GdmaType::Sys) &&
           kGdmaSpecial.get(w) == kGdmaSysEnd;
  return false;
}

} // namespace

std::vector<CommandSpan> indexBuffer(Engine engine, const uint8_t *data,
                                     size_t size) {
  std::vector<CommandSpan> out;
  // A guess (typical commands are 64 bytes); growing a list of spans is
  // cheap.
  constexpr size_t kTypicalBytes = 64;
  out.reserve(size / kTypicalBytes + 1);
  size_t offset = 0;
  while (offset < size) {
    size_t left = size - offset;
    if (left < kHeadBytes)
      throw Error(bufferError(engine, offset,
                              "truncated command head (needs " +
                                  std::to_string(kHeadBytes) + " bytes, " +
                                  std::to_string(left) + " left)"));
    // Only the heads are read, one per 16..128 bytes: ask for the bytes a
    // few commands ahead, or every head waits for memory.
    constexpr size_t kPrefetchBytes = 512;
    if (left > kPrefetchBytes)
      __builtin_prefetch(data + offset + kPrefetchBytes);
    uint64_t head = readHead(data + offset);
    LayoutId layout;
    try {
      layout = layoutOfHead(engine, head);
    } catch (const Error &e) {
      throw Error(bufferError(
          engine, offset, std::string("unknown command head: ") + e.what()));
    }
    const LayoutInfo &li = layoutInfo(layout);
    if (left < li.bytes())
      throw Error(bufferError(engine, offset,
                              std::string("truncated ") + li.name +
                                  " command (needs " +
                                  std::to_string(li.bytes()) + " bytes, " +
                                  std::to_string(left) + " left)"));
    out.push_back({layout, offset});
    offset += li.bytes();
    if (!isEndHead(layout, &head))
      continue;
    // After the end command only zero padding up to the next multiple of
    // 128 bytes (from the stream start) may follow.
    size_t padded = (offset + kStreamAlign - 1) / kStreamAlign * kStreamAlign;
    if (size != padded)
      throw Error(
          bufferError(engine, offset,
                      "end command must be followed by zero padding to " +
                          formatHex(padded) + " bytes, but the buffer has " +
                          formatHex(size)));
    for (size_t i = offset; i < size; ++i)
      if (data[i] != 0)
        throw Error(bufferError(engine, i,
                                "non-zero byte in the padding "
                                "after the end command"));
    return out;
  }
  throw Error(bufferError(engine, offset, "no end command"));
}

std::vector<DecodedCommand> splitBuffer(Engine engine, const uint8_t *data,
                                        size_t size) {
  std::vector<CommandSpan> spans = indexBuffer(engine, data, size);
  std::vector<DecodedCommand> out(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    out[i].cmd = RawCommand::fromBytes(spans[i].layout, data + spans[i].offset);
    out[i].offset = spans[i].offset;
  }
  return out;
}

std::vector<uint8_t> packBuffer(const std::vector<RawCommand> &commands) {
  size_t size = 0;
  for (const RawCommand &c : commands)
    size += c.bytes();
  std::vector<uint8_t> out((size + kStreamAlign - 1) / kStreamAlign *
                           kStreamAlign);
  size_t offset = 0;
  for (const RawCommand &c : commands) {
    c.toBytes(out.data() + offset);
    offset += c.bytes();
  }
  return out;
}

RawCommand makeTiuEnd(uint32_t id, uint32_t idDep) {
  cmd::SysId c;
  c.cmd_id = id;
  c.cmd_id_dep = idDep;
  c.tsk_typ = static_cast<unsigned>(TiuTask::Sys);
  c.tsk_eu_typ = kTiuSysEnd;
  return encode(c);
}

RawCommand makeGdmaEnd(uint32_t id, uint32_t idDep) {
  cmd::SDmaSys c;
  c.cmd_short = 1;
  c.cmd_id = id;
  c.cmd_id_dep = idDep;
  c.cmd_type = static_cast<unsigned>(GdmaType::Sys);
  c.cmd_special_function = kGdmaSysEnd;
  return encode(c);
}

bool isEndCommand(const RawCommand &c) {
  return isEndHead(c.layout(), c.words());
}

uint32_t cmdId(const RawCommand &c) {
  if (c.layout() == LayoutId::Lar)
    return 0;
  return static_cast<uint32_t>(
      (c.engine() == Engine::Tiu ? kTiuId : kGdmaId).get(c.words()));
}

uint32_t cmdIdDep(const RawCommand &c) {
  if (c.layout() == LayoutId::Lar)
    return 0;
  return static_cast<uint32_t>(
      (c.engine() == Engine::Tiu ? kTiuIdDep : kGdmaIdDep).get(c.words()));
}

//===----------------------------------------------------------------------===//
// Canonical forms
//===----------------------------------------------------------------------===//

RawCommand convertLayout(const RawCommand &c, LayoutId to) {
  RawCommand out(to);
  const LayoutInfo &from = c.info(), &target = out.info();
  for (unsigned i = 0; i < from.numFields; ++i) {
    const FieldInfo &f = from.fields[i];
    if (f.reserved)
      continue;
    uint64_t v = extractBits(c.words(), f.lsb, f.width);
    // cmd_short describes the encoding itself; it is set below.
    if (std::strcmp(f.name, "cmd_short") == 0)
      continue;
    int j = target.findField(f.name);
    if (j < 0 || target.fields[j].reserved) {
      if (v != 0)
        throw Error(std::string("cannot convert ") + from.name + " to " +
                    target.name + ": field " + f.name + " = " + formatHex(v) +
                    " has no place in " + target.name);
      continue;
    }
    out.set(static_cast<unsigned>(j), v);
  }
  int shortIdx = target.findField("cmd_short");
  if (shortIdx >= 0 && !target.fields[shortIdx].reserved)
    out.set(static_cast<unsigned>(shortIdx), isShortForm(to) ? 1 : 0);
  return out;
}

} // namespace tpu::isa
