//===- tpu-asm.cpp - Assemble a JSON program into a bmodel ----------------===//
//
// tpu-asm prog.json -o prog.bmodel       a bmodel (see BmodelJson.h for the
//                                        program format)
// tpu-asm --raw tiu prog.json -o t.bin   one raw command buffer
// tpu-dis --json a.bmodel | tpu-asm - -o b.bmodel   rebuild a model
//
//===----------------------------------------------------------------------===//

#include "tpu/Tool.h"
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/BmodelJson.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace tpu;
using namespace tpu::isa;

namespace {

constexpr const char *kTool = "tpu-asm";

constexpr const char *kOverview =
    R"(assembles a JSON program into a BM1684X bmodel

Assembles a JSON program into a BM1684X bmodel (or, with --raw, into one raw
command buffer). PROGRAM may be "-" for standard input; `tpu-dis --json`
output is a valid program.

A program (one net, one stage, one command group):
  {"chip": "BM1684X", "net": "add",
   "inputs":  [{"name": "x", "dtype": "F32", "shape": [1, 64, 4, 4],
                "device_addr": "0x100100000"}],
   "outputs": [{"name": "y", "dtype": "F32", "shape": [1, 64, 4, 4],
                "device_addr": "0x100101000"}],
   "coeff": {"address": "0x100000000", "data": "0000803f"},
   "ctx_addr": "0x100100000", "ctx_size": 8192,
   "tiu":  [{"op": "sAR.add", "cmd_id_dep": 1, "opd1_const": 1,
             "opd1_addr": "f32:1.0", ...}],
   "gdma": [{"op": "DMA_tensor.none", ...}]}
Several groups: "groups": [{"tiu": [...], "gdma": [...]}, ...]; several
nets or stages: "nets": [{"name": ..., "stages": [{...}]}]. Coefficient bytes
come from "data" (hex) or "file" (a path relative to the program).

A command is {"op": MNEMONIC, field: value, ...} or tpu-dis's form
{"layout": ..., "fields": {...}}. Values are integers, "0x.." / "0b.."
strings, negative numbers (two's complement of the field width) or
"f32:<float>". A missing cmd_id continues from the previous command.
bdc_num, gdma_num, cmd_byte sizes, tensor sizes, hidden and index are
computed.

)";

llvm::cl::OptionCategory category("tpu-asm options");
llvm::cl::opt<std::string>
    inputArg(llvm::cl::Positional,
             llvm::cl::desc("PROGRAM.json (- for standard input)"),
             llvm::cl::cat(category));
llvm::cl::opt<std::string> outputArg("o",
                                     llvm::cl::desc("output file (required)"),
                                     llvm::cl::value_desc("FILE"),
                                     llvm::cl::cat(category));
llvm::cl::opt<std::string> rawArg(
    "raw",
    llvm::cl::desc("write the \"tiu\" or \"gdma\" stream of the program's "
                   "only command group as a raw buffer instead of a bmodel"),
    llvm::cl::value_desc("ENGINE"), llvm::cl::cat(category));
llvm::cl::opt<bool> noAutoEndArg(
    "no-auto-end",
    llvm::cl::desc("do not append end commands to streams that lack one"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string> timeArg(
    "time",
    llvm::cl::desc("the model's time string when the program has none "
                   "(default: $SOURCE_DATE_EPOCH, else now, in ctime format)"),
    llvm::cl::value_desc("TEXT"), llvm::cl::cat(category));

struct Options {
  std::string input;
  std::string output;
  std::optional<Engine> raw;
  bool autoEnd = true;
  std::optional<std::string> time;
};

[[noreturn]] void usageError(const std::string &msg) {
  std::fprintf(stderr, "%s: error: %s\n(see %s --help)\n", kTool, msg.c_str(),
               kTool);
  std::exit(1);
}

Options parseArgs(int argc, char **argv) {
  tpu::tool::initTool(kTool);
  tpu::tool::parse(argc, argv, {&category}, kOverview);
  Options o;
  o.input = inputArg;
  o.output = outputArg;
  o.autoEnd = !noAutoEndArg;
  if (timeArg.getNumOccurrences())
    o.time = timeArg;
  if (rawArg.getNumOccurrences()) {
    if (rawArg == "tiu")
      o.raw = Engine::Tiu;
    else if (rawArg == "gdma")
      o.raw = Engine::Gdma;
    else
      usageError("--raw takes \"tiu\" or \"gdma\", not \"" + rawArg + "\"");
  }
  if (o.input.empty())
    usageError("no input program");
  if (o.output.empty())
    usageError("no output file (-o)");
  return o;
}

/// ctime() text of SOURCE_DATE_EPOCH (reproducible builds) or of now.
std::string defaultTime() { return isa::formatTimestamp("%a %b %e %H:%M:%S %Y"); }

std::string readInput(const std::string &path) {
  if (path == "-") {
    std::string text;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0)
      text.append(buf, n);
    if (std::ferror(stdin))
      throw Error("<stdin>: read error");
    return text;
  }
  std::vector<uint8_t> bytes = bmodel::readFile(path);
  return std::string(bytes.begin(), bytes.end());
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (path == "-" || slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// True when the document is just one group ({"tiu": [...], ...}).
bool isBareGroup(const nlohmann::json &doc) {
  static const char *const kGroupKeys[] = {
      "tiu", "gdma", "bdc_num", "gdma_num", "bdc_cmd_byte", "gdma_cmd_byte"};
  for (const auto &item : doc.items())
    if (std::find(std::begin(kGroupKeys), std::end(kGroupKeys), item.key()) ==
        std::end(kGroupKeys))
      return false;
  return true;
}

std::vector<uint8_t> assemble(const Options &opts) {
  std::string name = opts.input == "-" ? "<stdin>" : opts.input;
  std::string text = readInput(opts.input);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    // e.byte is the 1-based position where parsing stopped. The message
    // quotes what the parser last read, which can be the rest of a long
    // line (kilobytes of hex): its last 40 bytes (where it stopped, on a
    // whole UTF-8 character) are enough to find it.
    std::string what = e.what();
    const std::string lastRead = "; last read: '";
    if (size_t at = what.find(lastRead); at != std::string::npos) {
      size_t start = at + lastRead.size();
      size_t close = what.find("'; expected", start);
      if (close == std::string::npos)
        close = what.size() - (what.back() == '\'' ? 1 : 0);
      if (close > start + 48) {
        size_t keep = close - 40;
        while (keep < close && (uint8_t(what[keep]) & 0xC0) == 0x80)
          ++keep;
        what = what.substr(0, start) + "..." + what.substr(keep);
      }
    }
    throw Error(name + ": invalid JSON at byte " + std::to_string(e.byte) +
                ": " + what);
  }
  bmodel::AssembleOptions aopts;
  aopts.autoEnd = opts.autoEnd;
  aopts.baseDir = dirOf(opts.input);
  try {
    if (opts.raw) {
      bmodel::CmdGroup group;
      if (doc.is_object() && isBareGroup(doc)) {
        group = bmodel::groupFromJson(doc, aopts, "");
      } else {
        bmodel::Model m = bmodel::modelFromJson(doc, aopts);
        size_t count = 0;
        for (const bmodel::Net &net : m.nets)
          for (const bmodel::Stage &s : net.stages)
            for (const bmodel::CmdGroup &g : s.groups) {
              group = g;
              ++count;
            }
        if (count != 1)
          throw Error("--raw needs a program with exactly one command group, "
                      "this one has " +
                      std::to_string(count));
      }
      return *opts.raw == Engine::Tiu ? group.tiu : group.gdma;
    }
    bmodel::Model model = bmodel::modelFromJson(doc, aopts);
    if (!doc.contains("time"))
      model.time = opts.time ? *opts.time : defaultTime();
    return bmodel::serializeModel(model);
  } catch (const Error &e) {
    throw Error(name + ": " + e.what());
  }
}

} // namespace

int main(int argc, char **argv) {
  Options opts = parseArgs(argc, argv);
  try {
    if (std::string e = isa::sourceDateEpochError(); !e.empty())
      throw Error(e);
    bmodel::writeFileAtomically(opts.output, assemble(opts));
  } catch (const Error &e) {
    std::fprintf(stderr, "%s: error: %s\n", kTool, e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s: %s\n", kTool, opts.input.c_str(),
                 e.what());
    return 1;
  }
  return 0;
}
