//===- fuzz_decode.cpp - command buffers from arbitrary bytes -------------===//
//
// splitBuffer either throws tpu::Error or returns commands; every decoded
// command must survive disassembly and the JSON round trips (Disasm.h's
// toJson/fromJson and the assembler's commandFromJson) unchanged, and the
// commands must pack back into exactly the input bytes.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/BmodelJson.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Disasm.h"
#include "tpu/isa/Error.h"

#include <cstdio>
#include <cstdlib>

using namespace tpu::isa;

namespace {

[[noreturn]] void failure(const char *what, const RawCommand &c) {
  std::fprintf(stderr, "fuzz_decode: %s: %s\n", what,
               disassemble(c, DisasmOptions{true}).c_str());
  std::abort();
}

void check(Engine engine, const uint8_t *data, size_t size) {
  std::vector<DecodedCommand> cmds;
  try {
    cmds = splitBuffer(engine, data, size);
  } catch (const tpu::Error &) {
    return;
  }
  std::vector<RawCommand> raw;
  for (const DecodedCommand &d : cmds) {
    const RawCommand &c = d.cmd;
    raw.push_back(c);
    std::string text = disassemble(c);
    std::string full = disassemble(c, DisasmOptions{true});
    RawCommand viaJson = fromJson(toJson(c));
    if (!(viaJson == c))
      failure("fromJson(toJson(c)) != c", c);
    if (disassemble(viaJson) != text ||
        disassemble(viaJson, DisasmOptions{true}) != full)
      failure("the disassembly changes through JSON", c);
    nlohmann::json j = toJson(c);
    j["offset"] = d.offset;
    if (!(bmodel::commandFromJson(j, engine, 0) == c))
      failure("commandFromJson(toJson(c)) != c", c);
  }
  std::vector<uint8_t> packed = packBuffer(raw);
  if (packed.size() != size || !std::equal(packed.begin(), packed.end(), data))
    failure("packBuffer(splitBuffer(b)) != b", raw.back());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(Engine::Tiu, data, size);
  check(Engine::Gdma, data, size);
  return 0;
}
