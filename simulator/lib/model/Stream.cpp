//===- Stream.cpp - Command streams and error context ---------------------===//
#include "tpu/isa/Disasm.h"
#include "tpusim/Tpu.h"

#include <algorithm>
#include <cstdio>

namespace tpu::sim {

namespace {

/// The head fields every command of an engine has at the same bits; read
/// through the layout table of a representative layout so the bit positions
/// are written down only in Layouts.def.
struct HeadFields {
  const isa::FieldInfo *isShort, *opcode, *subOp, *id;
};

const HeadFields &headFields(isa::Engine engine) {
  auto field = [](isa::LayoutId layout, const char *name) {
    const isa::LayoutInfo &info = isa::layoutInfo(layout);
    return &info.fields[info.fieldIndex(name)];
  };
  static const HeadFields tiu = {field(isa::LayoutId::TiuLong, "cmd_short"),
                                 field(isa::LayoutId::TiuLong, "tsk_typ"),
                                 field(isa::LayoutId::TiuLong, "tsk_eu_typ"),
                                 field(isa::LayoutId::TiuLong, "cmd_id")};
  static const HeadFields gdma = {
      field(isa::LayoutId::DmaTensor, "cmd_short"),
      field(isa::LayoutId::DmaTensor, "cmd_type"),
      field(isa::LayoutId::DmaTensor, "cmd_special_function"),
      field(isa::LayoutId::DmaTensor, "cmd_id")};
  return engine == isa::Engine::Tiu ? tiu : gdma;
}

/// Bytes of a head that hold every field of HeadFields (the TIU head is 50
/// bits, the GDMA head 39).
constexpr size_t kHeadBytes = 8;

uint64_t get(const isa::FieldInfo *f, const uint64_t *words) {
  return isa::extractBits(words, f->lsb, f->width);
}

/// Walks `bytes` command by command until a head no layout covers; returns
/// true and fills the stream's `unknown` fields when it finds one.
bool findUnknownHead(isa::Engine engine, const std::vector<uint8_t> &bytes,
                     CommandStream &out) {
  const HeadFields &h = headFields(engine);
  size_t offset = 0;
  while (offset + kHeadBytes <= bytes.size()) {
    uint64_t words[isa::kMaxCommandWords] = {};
    for (size_t i = 0; i < kHeadBytes; ++i)
      words[0] |= uint64_t(bytes[offset + i]) << (8 * i);
    isa::LayoutId layout;
    try {
      layout =
          engine == isa::Engine::Tiu
              ? isa::tiuLayoutFor(get(h.isShort, words), get(h.opcode, words),
                                  get(h.subOp, words))
              : isa::gdmaLayoutFor(get(h.isShort, words), get(h.opcode, words),
                                   get(h.subOp, words));
    } catch (const Error &e) {
      out.unknown = true;
      out.unknownReason = std::string("unknown opcode: ") + e.what();
      out.unknownOffset = offset;
      out.unknownId = static_cast<uint32_t>(get(h.id, words));
      out.unknownBytes.assign(bytes.begin() + offset,
                              bytes.begin() + offset + kHeadBytes);
      return true;
    }
    const isa::LayoutInfo &info = isa::layoutInfo(layout);
    if (offset + info.bytes() > bytes.size())
      return false;
    isa::RawCommand c = isa::RawCommand::fromBytes(layout, &bytes[offset]);
    out.commands.push_back({layout, offset});
    offset += info.bytes();
    if (isa::isEndCommand(c))
      return false;
  }
  return false;
}

} // namespace

void waitPs(uint64_t ps) {
  if (ps != 0)
    sc_core::wait(sc_core::sc_time::from_value(ps));
}

CommandStream splitStream(isa::Engine engine,
                          const std::vector<uint8_t> &bytes) {
  CommandStream s;
  s.engine = engine;
  s.external = bytes.data();
  try {
    s.commands = isa::indexBuffer(engine, bytes.data(), bytes.size());
  } catch (const Error &) {
    CommandStream partial;
    partial.engine = engine;
    partial.external = bytes.data();
    if (!findUnknownHead(engine, bytes, partial))
      throw;
    s = std::move(partial);
  }
  return s;
}

CommandStream makeStream(isa::Engine engine,
                         const std::vector<isa::RawCommand> &commands) {
  CommandStream s;
  s.engine = engine;
  s.commands.reserve(commands.size());
  size_t offset = 0;
  for (const isa::RawCommand &c : commands) {
    if (c.engine() != engine)
      throw Error(std::string("a ") + isa::engineName(c.engine()) +
                  " command (" + isa::mnemonic(c) + ") in the " +
                  isa::engineName(engine) + " stream");
    s.commands.push_back({c.layout(), offset});
    offset += c.bytes();
  }
  s.owned.resize(offset);
  for (size_t i = 0; i < commands.size(); ++i)
    commands[i].toBytes(s.owned.data() + s.commands[i].offset);
  return s;
}

std::string describeCommand(isa::Engine engine, unsigned group, size_t index,
                            const CommandStream &stream) {
  std::string out = std::string(isa::engineName(engine)) + " command " +
                    std::to_string(index);
  if (index < stream.commands.size()) {
    isa::RawCommand c = stream.command(index);
    out += " (cmd_id " + std::to_string(isa::cmdId(c)) + ", cmd_id_dep " +
           std::to_string(isa::cmdIdDep(c)) + ") of group " +
           std::to_string(group) + "\n  " + isa::disassemble(c);
  } else {
    out += " (cmd_id " + std::to_string(stream.unknownId) + ") of group " +
           std::to_string(group) + " at byte " +
           std::to_string(stream.unknownOffset) + "\n  raw head:";
    for (uint8_t b : stream.unknownBytes) {
      char hex[4];
      std::snprintf(hex, sizeof(hex), " %02x", b);
      out += hex;
    }
  }
  return out;
}

void RunContext::fail(SimError::Kind kind, isa::Engine engine, size_t index,
                      const CommandStream &stream, const std::string &reason) {
  aborted = true;
  if (error)
    return;
  std::string where = describeCommand(engine, group, index, stream);
  size_t nl = where.find('\n');
  // "<engine> command i (...) of group g: <reason>\n  <disassembly>"
  error.emplace(kind, where.substr(0, nl) + ": " + reason + where.substr(nl));
}

} // namespace tpu::sim
