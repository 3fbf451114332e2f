//===- tpu-dis.cpp - Print a bmodel or a raw command buffer ---------------===//
//
// tpu-dis model.bmodel          header, model, nets, stages, tensors, coeff,
//                               groups and every command, one per line
// tpu-dis --json model.bmodel   the same as one JSON document (tpu-asm
//                               assembles it back into the same model)
// tpu-dis --raw-tiu FILE        the commands of a raw TIU (or --raw-gdma
//                               GDMA) buffer
//
// A stage whose coefficients do not match their check code is shown (marked
// MISMATCH) and then reported as an error: exit status 1. So is a recorded
// machine that does not read (shown as "not readable").
//
//===----------------------------------------------------------------------===//

#include "tpu/Tool.h"
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/BmodelJson.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Disasm.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace tpu;
using namespace tpu::isa;

namespace {

constexpr const char *kTool = "tpu-dis";

constexpr const char *kOverview =
    R"(prints a BM1684X bmodel or a raw command buffer

Prints header, model fields, nets, stages, input/output tensors,
coefficients, command groups, and every TIU and GDMA command disassembled,
one per line as "<engine> <index> @<byte offset>: <command>".
  tpu-dis [options] MODEL.bmodel
  tpu-dis [options] --raw-tiu FILE | --raw-gdma FILE
)";

llvm::cl::OptionCategory category("tpu-dis options");
llvm::cl::opt<std::string> inputArg(llvm::cl::Positional,
                                    llvm::cl::desc("MODEL.bmodel"),
                                    llvm::cl::cat(category));
llvm::cl::opt<bool> jsonArg(
    "json", llvm::cl::desc("print one JSON document instead (tpu-asm reads "
                           "it back)"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string>
    rawTiuArg("raw-tiu", llvm::cl::desc("disassemble a raw TIU command buffer"),
              llvm::cl::value_desc("FILE"), llvm::cl::cat(category));
llvm::cl::opt<std::string> rawGdmaArg(
    "raw-gdma", llvm::cl::desc("disassemble a raw GDMA command buffer"),
    llvm::cl::value_desc("FILE"), llvm::cl::cat(category));
llvm::cl::opt<bool>
    showZeroArg("show-zero",
                llvm::cl::desc("also print fields whose value is zero"),
                llvm::cl::cat(category));
llvm::cl::opt<bool> noDataArg(
    "no-data",
    llvm::cl::desc("with --json: leave out the coefficient and kernel-module "
                   "bytes (the output can then not be assembled back)"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string>
    outputArg("o", llvm::cl::desc("write to FILE instead of standard output"),
              llvm::cl::value_desc("FILE"), llvm::cl::cat(category));

struct Options {
  std::string input;
  bool json = false;
  bool showZero = false;
  bool includeData = true;
  std::optional<Engine> raw;
  std::string output;
};

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

std::string listOf(const std::vector<uint64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string listOf(const std::vector<int32_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string floatText(float f) {
  std::ostringstream os;
  // 9 significant digits identify every float uniquely.
  os << std::setprecision(9) << f;
  return os.str();
}

const char *subnetModeName(int32_t mode) {
  switch (mode) {
  case bmodel::kSubnetTpu:
    return "TPU";
  case bmodel::kSubnetCpu:
    return "CPU";
  case bmodel::kSubnetMerge:
    return "MERGE";
  case bmodel::kSubnetSwitch:
    return "SWITCH";
  default:
    return "UNKNOWN";
  }
}

/// Builds the text output; `showZero` decides whether secondary fields
/// whose value is zero are printed.
class Printer {
public:
  explicit Printer(const Options &opts) : opts_(opts) {}

  std::string str() const { return os_.str(); }

  /// " key=value" unless the value is zero and zeros are hidden.
  void opt(const char *key, uint64_t v, bool asHex = false) {
    if (v != 0 || opts_.showZero)
      os_ << ' ' << key << '=' << (asHex ? hex(v) : std::to_string(v));
  }
  void opt(const char *key, int64_t v) {
    if (v != 0 || opts_.showZero)
      os_ << ' ' << key << '=' << v;
  }

  void stream(const char *indent, Engine engine,
              const std::vector<uint8_t> &bytes) {
    if (bytes.empty())
      return;
    const char *name = engine == Engine::Tiu ? "tiu" : "gdma";
    DisasmOptions dopts;
    dopts.showZero = opts_.showZero;
    std::vector<DecodedCommand> cmds =
        splitBuffer(engine, bytes.data(), bytes.size());
    for (size_t i = 0; i < cmds.size(); ++i)
      os_ << indent << name << ' ' << i << " @" << hex(cmds[i].offset) << ": "
          << disassemble(cmds[i].cmd, dopts) << '\n';
  }

  void tensor(const char *indent, const char *kind, size_t i,
              const bmodel::Tensor &t) {
    os_ << indent << kind << ' ' << i << ": name=" << t.name
        << " dtype=" << dataTypeName(t.dataType) << " shape=";
    for (size_t s = 0; s < t.shapes.size(); ++s)
      os_ << (s ? "," : "") << listOf(t.shapes[s]);
    if (t.shapes.empty())
      os_ << "[]";
    os_ << " device_addr=" << hex(t.deviceAddr) << " size=" << t.size
        << " scale=" << floatText(t.scale) << " zero_point=" << t.zeroPoint;
    opt("gmem_stmode", int64_t(t.gmemStmode));
    opt("mem_type", uint64_t(t.memType));
    opt("hidden", int64_t(t.hidden));
    opt("index", int64_t(t.index));
    opt("cpu_addr", uint64_t(t.cpuAddr), true);
    opt("pad_h", uint64_t(t.padH));
    os_ << '\n';
  }

  void groups(const char *indent, const char *cmdIndent,
              const std::vector<bmodel::CmdGroup> &groups) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const bmodel::CmdGroup &grp = groups[g];
      os_ << indent << "group " << g << ": bdc_num=" << grp.bdcNum
          << " gdma_num=" << grp.gdmaNum << " bdc_cmd_byte=" << grp.tiu.size()
          << " gdma_cmd_byte=" << grp.gdma.size() << '\n';
      stream(cmdIndent, Engine::Tiu, grp.tiu);
      stream(cmdIndent, Engine::Gdma, grp.gdma);
    }
  }

  void stage(size_t index, const bmodel::Stage &s) {
    os_ << "  stage " << index << ": ctx_addr=" << hex(s.ctxAddr)
        << " ctx_size=" << s.ctxSize << " ctx_sizes=" << listOf(s.ctxSizes);
    opt("io_addr", s.ioAddr, true);
    opt("io_size", s.ioSize);
    opt("is_dynamic", int64_t(s.isDynamic));
    opt("n_dynamic", int64_t(s.nDynamic));
    opt("h_w_dynamic", int64_t(s.hWDynamic));
    opt("cpu_mem_size", uint64_t(s.cpuMemSize));
    opt("core_num", uint64_t(s.coreNum));
    os_ << '\n';
    for (size_t i = 0; i < s.inputs.size(); ++i)
      tensor("    ", "input", i, s.inputs[i]);
    for (size_t i = 0; i < s.outputs.size(); ++i)
      tensor("    ", "output", i, s.outputs[i]);

    Sha256Digest digest = sha256(s.coeff.data(), s.coeff.size());
    bool ok = s.checkCode.size() == digest.size() &&
              std::equal(digest.begin(), digest.end(), s.checkCode.begin());
    os_ << "    coeff: address=" << hex(s.coeffAddr)
        << " size=" << s.coeff.size()
        << " check_code=" << bmodel::toHex(s.checkCode);
    if (ok)
      os_ << " (sha256 ok)";
    else
      os_ << " (MISMATCH: sha256 of the coefficients is " << hexString(digest)
          << ")";
    os_ << '\n';

    for (size_t i = 0; i < s.subnets.size(); ++i) {
      const bmodel::SubNet &sub = s.subnets[i];
      bool sameGroups = sub.groups == s.groups;
      os_ << "    subnet " << i << ": id=" << sub.id
          << " mode=" << subnetModeName(sub.mode)
          << " groups=" << sub.groups.size()
          << (sameGroups ? " (the stage's)" : "")
          << " inputs=" << sub.inputs.size()
          << " outputs=" << sub.outputs.size()
          << " next_subnet_ids=" << listOf(sub.nextSubnetIds);
      opt("is_dynamic", int64_t(sub.isDynamic));
      os_ << '\n';
      if (!sameGroups)
        groups("      ", "        ", sub.groups);
    }
    groups("    ", "      ", s.groups);
  }

  void model(const bmodel::Header &h, const bmodel::Model &m) {
    os_ << "header: magic=" << hex(h.magic) << " header_size=" << h.headerSize
        << " flatbuffers_size=" << h.flatbuffersSize
        << " binary_size=" << h.binarySize << '\n';
    os_ << "model: type=" << m.type << " version=" << m.version << " time=\""
        << m.time << "\" chip=" << m.chip << " device_num=" << m.deviceNum
        << " neuron_size=" << m.neuronSize;
    opt("bmodel_type", uint64_t(m.bmodelType));
    os_ << " nets=" << m.nets.size() << '\n';
    if (m.kernelModule)
      os_ << "kernel_module: file_name=" << m.kernelModule->fileName
          << " size=" << m.kernelModule->binary.size() << '\n';
    if (!m.machine.empty())
      machine(m.machine);
    for (size_t n = 0; n < m.nets.size(); ++n) {
      const bmodel::Net &net = m.nets[n];
      os_ << "net " << n << ": name=" << net.name;
      opt("addr_mode", int64_t(net.addrMode));
      os_ << " stages=" << net.stages.size() << '\n';
      for (size_t s = 0; s < net.stages.size(); ++s)
        stage(s, net.stages[s]);
    }
  }

  /// The recorded machine: the keys that differ from the BM1684X defaults.
  void machine(const std::string &text) {
    os_ << "machine:";
    Machine recorded, defaults;
    try {
      recorded.loadText(text, "machine");
    } catch (const Error &e) {
      os_ << " (not readable: " << e.what() << ")\n";
      return;
    }
    auto values = recorded.list(), base = defaults.list();
    bool any = false;
    for (size_t i = 0; i < values.size() && i < base.size(); ++i)
      if (values[i] != base[i]) {
        os_ << ' ' << values[i].first << '=' << values[i].second;
        any = true;
      }
    os_ << (any ? "" : " BM1684X defaults") << '\n';
  }

private:
  const Options &opts_;
  std::ostringstream os_;
};

/// Indented JSON; bytes of names that are not UTF-8 print as U+FFFD.
std::string dump(const nlohmann::json &j) {
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

[[noreturn]] void usageError(const std::string &msg) {
  std::fprintf(stderr, "%s: error: %s\n(see %s --help)\n", kTool, msg.c_str(),
               kTool);
  std::exit(1);
}

Options parseArgs(int argc, char **argv) {
  tpu::tool::initTool(kTool);
  tpu::tool::parse(argc, argv, {&category}, kOverview);
  Options o;
  o.json = jsonArg;
  o.showZero = showZeroArg;
  o.includeData = !noDataArg;
  o.output = outputArg;
  int inputs = !inputArg.empty() + !rawTiuArg.empty() + !rawGdmaArg.empty();
  if (inputs > 1)
    usageError("give one input");
  if (!rawTiuArg.empty()) {
    o.raw = Engine::Tiu;
    o.input = rawTiuArg;
  } else if (!rawGdmaArg.empty()) {
    o.raw = Engine::Gdma;
    o.input = rawGdmaArg;
  } else {
    o.input = inputArg;
  }
  if (o.input.empty())
    usageError("no input file");
  if (noDataArg && !o.json)
    usageError("--no-data leaves the data out of the JSON; it needs --json "
               "(the text listing never prints the data)");
  return o;
}

/// "net N stage S" of every stage whose coefficients' SHA-256 is not the
/// stored check code.
std::vector<std::string> checkCodeMismatches(const bmodel::Model &model) {
  std::vector<std::string> out;
  for (size_t n = 0; n < model.nets.size(); ++n)
    for (size_t s = 0; s < model.nets[n].stages.size(); ++s) {
      const bmodel::Stage &st = model.nets[n].stages[s];
      Sha256Digest digest = sha256(st.coeff.data(), st.coeff.size());
      if (st.checkCode.size() != digest.size() ||
          !std::equal(digest.begin(), digest.end(), st.checkCode.begin()))
        out.push_back("net " + std::to_string(n) + " '" + model.nets[n].name +
                      "' stage " + std::to_string(s));
    }
  return out;
}

std::string run(const Options &opts, std::vector<std::string> &mismatches,
                std::string &machineError) {
  std::vector<uint8_t> bytes = bmodel::readFile(opts.input);
  if (opts.raw) {
    const char *key = *opts.raw == Engine::Tiu ? "tiu" : "gdma";
    try {
      if (opts.json) {
        nlohmann::json j = nlohmann::json::object();
        j[key] = bmodel::streamToJson(*opts.raw, bytes.data(), bytes.size());
        return dump(j);
      }
      Printer p(opts);
      p.stream("", *opts.raw, bytes);
      return p.str();
    } catch (const Error &e) {
      throw Error(opts.input + ": " + e.what());
    }
  }
  bmodel::Header header =
      bmodel::parseHeader(bytes.data(), bytes.size(), opts.input);
  // Shown even when the check code does not match (reported afterwards).
  bmodel::ParseOptions popts;
  popts.verifyCheckCode = false;
  bmodel::Model model =
      bmodel::parseModel(bytes.data(), bytes.size(), opts.input, popts);
  mismatches = checkCodeMismatches(model);
  if (!model.machine.empty()) {
    try {
      Machine recorded;
      recorded.loadText(model.machine, "machine");
    } catch (const Error &e) {
      machineError = e.what();
    }
  }
  if (opts.json) {
    nlohmann::json j = nlohmann::json::object();
    j["file"] = opts.input;
    j["header"] = {{"magic", hex(header.magic)},
                   {"header_size", header.headerSize},
                   {"flatbuffers_size", header.flatbuffersSize},
                   {"binary_size", header.binarySize}};
    bmodel::ToJsonOptions jopts;
    jopts.includeData = opts.includeData;
    j.update(bmodel::modelToJson(model, jopts));
    return dump(j);
  }
  Printer p(opts);
  p.model(header, model);
  return p.str();
}

} // namespace

int main(int argc, char **argv) {
  Options opts = parseArgs(argc, argv);
  try {
    std::vector<std::string> mismatches;
    std::string machineError;
    std::string out = run(opts, mismatches, machineError);
    if (opts.output.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      if (std::fflush(stdout) != 0)
        throw Error(std::string("cannot write standard output: ") +
                    std::strerror(errno));
    } else {
      bmodel::writeFileAtomically(opts.output,
                                  std::vector<uint8_t>(out.begin(), out.end()));
    }
    if (!mismatches.empty()) {
      std::string where;
      for (const std::string &m : mismatches)
        where += (where.empty() ? "" : ", ") + m;
      throw Error(opts.input + ": the coefficients of " + where +
                  " do not match their check code (MISMATCH above): the "
                  "file is corrupt");
    }
    if (!machineError.empty())
      throw Error(opts.input + ": the recorded machine does not read (" +
                  machineError + "): the file is corrupt");
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
