//===- Command.h - BM1684X TIU/GDMA command layouts and codecs -*- C++ -*-===//
//
// One definition of every BM1684X command encoding. The bit tables live in
// Layouts.def (generated from isa/data/bm1684x_layouts.json); everything here
// (field lookup, encode/decode, typed structs, buffer splitting, disassembly)
// is derived from that table, so a field is written down exactly once.
//
// Encoding convention (isa/docs/bm1684x.md 4.1): a command is a little-endian bit
// string, bit k is bit (k % 64) of 64-bit word (k / 64); no field straddles a
// 64-bit word.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_COMMAND_H
#define TPU_ISA_COMMAND_H

#include "tpu/isa/Error.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpu::isa {

/// The two command engines whose streams a bmodel carries.
enum class Engine : uint8_t { Tiu, Gdma };

const char *engineName(Engine engine);

/// Every bit layout of Layouts.def.
enum class LayoutId : uint8_t {
#define TPU_LAYOUT(Id, Name, Eng, Bits) Id,
#include "tpu/isa/Layouts.def"
};

/// Number of layouts in Layouts.def.
constexpr unsigned kNumLayouts = 0
#define TPU_LAYOUT(Id, Name, Eng, Bits) +1
#include "tpu/isa/Layouts.def"
    ;

/// Largest command (a long TIU command) in bits and 64-bit words.
constexpr unsigned kMaxCommandBits = 1024;
constexpr unsigned kMaxCommandWords = kMaxCommandBits / 64;

/// One field of a layout: a named bit slice.
struct FieldInfo {
  const char *name;
  uint16_t lsb;
  uint8_t width;
  bool reserved; ///< Reserved bits: must be zero, printed only when not.
  const char *meaning;

  uint64_t mask() const {
    return width == 64 ? ~uint64_t(0) : ((uint64_t(1) << width) - 1);
  }
};

/// A layout: its name, engine, size and fields in bit order.
struct LayoutInfo {
  LayoutId id;
  const char *name;
  Engine engine;
  unsigned bits;
  const FieldInfo *fields;
  unsigned numFields;

  unsigned bytes() const { return bits / 8; }
  /// Index of the field called `name`, or -1.
  int findField(std::string_view name) const;
  /// Like findField, but throws Error when the field does not exist.
  unsigned fieldIndex(std::string_view name) const;
};

const LayoutInfo &layoutInfo(LayoutId id);
/// All layouts, in Layouts.def order (kNumLayouts of them).
const LayoutInfo *allLayouts();
/// True for the short (compressed) encodings: every layout except TIU_long
/// and the long GDMA layouts (DMA_tensor, DMA_gather, DMA_masked_select).
/// SYSID and LAR count as short (they are 16 bytes whatever bit 0 says).
bool isShortForm(LayoutId id);

// extractBits and insertBits are inline: the simulator's command decode and
// the stream splitter call them for every field of every command.

/// Reads `width` (1..64) bits at `lsb` of a little-endian word array.
inline uint64_t extractBits(const uint64_t *words, unsigned lsb,
                            unsigned width) {
  unsigned word = lsb / 64, shift = lsb % 64;
  uint64_t v = words[word] >> shift;
  if (shift + width > 64)
    v |= words[word + 1] << (64 - shift);
  return width == 64 ? v : v & ((uint64_t(1) << width) - 1);
}

namespace detail {
/// Throws the Error insertBits reports for a bad width or a value too wide.
[[noreturn]] void throwBadInsert(unsigned lsb, unsigned width, uint64_t value);
} // namespace detail

/// Writes `value` into `width` bits at `lsb`; throws Error when `width` is
/// not 1..64 or `value` does not fit.
inline void insertBits(uint64_t *words, unsigned lsb, unsigned width,
                       uint64_t value) {
  if (width == 0 || width > 64 || (width < 64 && (value >> width) != 0))
    detail::throwBadInsert(lsb, width, value);
  uint64_t mask = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  unsigned word = lsb / 64, shift = lsb % 64;
  words[word] = (words[word] & ~(mask << shift)) | (value << shift);
  if (shift + width > 64) {
    unsigned spill = 64 - shift;
    words[word + 1] = (words[word + 1] & ~(mask >> spill)) | (value >> spill);
  }
}

/// A command as raw bits plus the layout that gives them meaning.
class RawCommand {
public:
  RawCommand() = default;
  explicit RawCommand(LayoutId layout) : layout_(layout) {}

  LayoutId layout() const { return layout_; }
  const LayoutInfo &info() const { return layoutInfo(layout_); }
  Engine engine() const { return info().engine; }
  unsigned bytes() const { return info().bytes(); }

  uint64_t get(unsigned fieldIdx) const;
  void set(unsigned fieldIdx, uint64_t value); ///< Throws when out of range.
  uint64_t get(std::string_view field) const;
  void set(std::string_view field, uint64_t value);
  /// True when the layout has a (non-reserved) field of that name.
  bool has(std::string_view field) const;

  const uint64_t *words() const { return words_.data(); }
  uint64_t *words() { return words_.data(); }

  /// Little-endian bytes of the command (bytes() of them).
  void toBytes(uint8_t *out) const;
  static RawCommand fromBytes(LayoutId layout, const uint8_t *data);

  bool operator==(const RawCommand &o) const {
    return layout_ == o.layout_ && words_ == o.words_;
  }

private:
  LayoutId layout_ = LayoutId::TiuLong;
  std::array<uint64_t, kMaxCommandWords> words_{};
};

//===----------------------------------------------------------------------===//
// Typed command structs: one struct per layout, one uint64_t member per
// non-reserved field, named exactly as in the bit table.
//===----------------------------------------------------------------------===//
namespace cmd {
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  struct Id {                                                                  \
    static constexpr LayoutId kLayout = LayoutId::Id;
#define TPU_FIELD(Id, Field, Lsb, Width, Reserved, Meaning)                    \
  uint64_t Field = 0;
#define TPU_LAYOUT_END(Id)                                                     \
  }                                                                            \
  ;
#include "tpu/isa/Layouts.def"
} // namespace cmd

/// Packs a typed command. Throws Error when a member does not fit its field.
#define TPU_LAYOUT(Id, Name, Eng, Bits) RawCommand encode(const cmd::Id &c);
#include "tpu/isa/Layouts.def"

/// Unpacks a raw command into the typed struct of its layout.
template <typename T> T decodeAs(const RawCommand &raw);
#define TPU_LAYOUT(Id, Name, Eng, Bits)                                        \
  template <> cmd::Id decodeAs<cmd::Id>(const RawCommand &raw);
#include "tpu/isa/Layouts.def"

//===----------------------------------------------------------------------===//
// Opcodes
//===----------------------------------------------------------------------===//

/// TIU task types (tsk_typ), isa/docs/bm1684x.md 4.2.
enum class TiuTask : uint8_t {
  Conv = 0,
  PorD = 1,
  MM = 2,
  AR = 3,
  RQDQ = 4,
  TransBC = 5,
  SG = 6,
  LAR = 7,
  SFU = 9,
  LIN = 10,
  SysTrWr = 12,
  CMP = 13,
  VC = 14,
  Sys = 15,
};

/// GDMA command types (cmd_type), isa/docs/bm1684x.md 5.1.
enum class GdmaType : uint8_t {
  Tensor = 0,
  Matrix = 1,
  MaskedSelect = 2,
  General = 3,
  CwTranspose = 4,
  Nonzero = 5,
  Sys = 6,
  Gather = 7,
  Scatter = 8,
};

/// TIU SYS sub-ops with agreed meaning.
constexpr unsigned kTiuSysEnd = 31;
constexpr unsigned kTiuSysNop = 30;
/// GDMA sys special functions.
constexpr unsigned kGdmaSysEnd = 0;
constexpr unsigned kGdmaSysNop = 1;

/// The layout a TIU command with this head uses; throws Error for heads no
/// public layout covers (e.g. tsk_typ 8, 11, 12).
LayoutId tiuLayoutFor(bool isShort, unsigned tskTyp, unsigned tskEuTyp);
/// The layout a GDMA command with this head uses; throws Error if unknown.
LayoutId gdmaLayoutFor(bool isShort, unsigned cmdType, unsigned specialFunc);

/// Mnemonic of a command, e.g. "sAR.add", "sCONV.conv.normal",
/// "DMA_tensor.none", "sDMA_sys.end". Unknown sub-ops print as ".eu<N>".
std::string mnemonic(const RawCommand &c);

//===----------------------------------------------------------------------===//
// Command buffers
//===----------------------------------------------------------------------===//

/// A command found in a buffer, with its byte offset.
struct DecodedCommand {
  RawCommand cmd;
  size_t offset = 0;
};

/// Splits one engine's command buffer into commands (isa/docs/bm1684x.md 4.1/5.1):
/// reads each head, picks the layout and its length, and stops after the end
/// SYS command when the rest is zero padding. Throws Error naming the byte
/// offset and the problem for a truncated buffer, an unknown head, or data
/// left after the end command.
std::vector<DecodedCommand> splitBuffer(Engine engine, const uint8_t *data,
                                        size_t size);

/// Where a command sits in a buffer: its layout and byte offset.
struct CommandSpan {
  LayoutId layout = LayoutId::TiuLong;
  size_t offset = 0;
};

/// splitBuffer without copying the commands out (same checks, same errors):
/// the layout and offset of each. A simulator reads a long stream's commands
/// one at a time from the buffer instead of holding a decoded copy of all.
std::vector<CommandSpan> indexBuffer(Engine engine, const uint8_t *data,
                                     size_t size);

/// Concatenates commands and zero-pads to a multiple of 128 bytes. The caller
/// supplies the end command (see makeTiuEnd / makeGdmaEnd) as the last one.
std::vector<uint8_t> packBuffer(const std::vector<RawCommand> &commands);

/// The end-of-stream commands (TIU SYSID sys.end; GDMA sDMA_sys end).
RawCommand makeTiuEnd(uint32_t cmdId, uint32_t cmdIdDep);
RawCommand makeGdmaEnd(uint32_t cmdId, uint32_t cmdIdDep);

/// True for the end-of-stream command of either engine.
bool isEndCommand(const RawCommand &c);

/// The head fields every id-carrying command has (0 for LAR, which has none).
uint32_t cmdId(const RawCommand &c);
uint32_t cmdIdDep(const RawCommand &c);

//===----------------------------------------------------------------------===//
// Canonical forms
//===----------------------------------------------------------------------===//

/// Copies every same-named non-reserved field from `c` into a command of
/// layout `to`. Fields absent from `to` must be zero in `c`, otherwise an
/// Error names the first one that would be lost; fields absent from `c` stay
/// zero. Used to expand short TIU forms to the long layout (which the
/// simulator executes) and to compress long forms to short ones (which the
/// compiler emits).
RawCommand convertLayout(const RawCommand &c, LayoutId to);

} // namespace tpu::isa

#endif // TPU_ISA_COMMAND_H
