//===- fuzz_sim.cpp - The simulator running arbitrary bmodels -------------===//
//
// The bytes are read as `tpusim run` reads a bmodel (isa::bmodel::parseModel
// with the coefficients loaded), the machine the bmodel records is applied
// to the default configuration (sim::recordedConfig) and the net is set up
// (sim::ModelRunner's checks) and run functionally, its outputs read back.
// Any of these may refuse the input with tpu::Error (sim::SimError included:
// an access outside memory, an operand the hardware rejects, a deadlock);
// anything else (a crash, a sanitizer report, another exception, a hang) is
// a bug.
//
// Two bounds keep one run short, as a fuzzer needs: a command budget
// (sim::RunOptions::maxCommands, what `tpusim run --max-commands` sets) and
// a bound on the work of each command, from the cost model's figures
// (isa/Work.h: elements, multiply-accumulates, bytes moved), which are
// computed without touching memory. A single valid command may ask for
// gigabytes (a GDMA copy of a huge shape, a stride-0 broadcast): hardware
// does that and so does the simulator, at its pace and with a buffer of that
// size, too slow and too big for a fuzzer's input. Inputs with such a
// command are skipped.
//
// The check code (SHA-256 of the coefficients) is not verified: a mutated
// coefficient would otherwise end almost every run in the parser, and the
// simulator must be robust to any coefficient bytes anyway.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Decode.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Work.h"
#include "tpusim/Config.h"
#include "tpusim/Runner.h"

#include <cstdint>

using namespace tpu;

namespace {

/// Commands one input may run: the seeds need a few dozen.
constexpr uint64_t kMaxCommands = 512;
/// Work one command may do (elements, MACs or bytes): a few times what the
/// whole local memory holds (16 MiB), far more than any seed's commands.
constexpr uint64_t kMaxWork = uint64_t(64) << 20;

/// True when a command of `model`'s first net (the one ModelRunner runs)
/// decodes to more work than kMaxWork. Commands that do not split or
/// decode are left to the simulator, which must refuse them itself.
bool tooMuchWork(const isa::bmodel::Model &model, const isa::ChipParams &chip) {
  if (model.nets.empty() || model.nets[0].stages.empty())
    return false;
  for (const isa::bmodel::CmdGroup &g : model.nets[0].stages[0].groups)
    for (isa::Engine e : {isa::Engine::Tiu, isa::Engine::Gdma}) {
      const std::vector<uint8_t> &bytes =
          e == isa::Engine::Tiu ? g.tiu : g.gdma;
      std::vector<isa::DecodedCommand> cmds;
      try {
        cmds = isa::splitBuffer(e, bytes.data(), bytes.size());
      } catch (const tpu::Error &) {
        continue;
      }
      for (const isa::DecodedCommand &d : cmds) {
        try {
          if (e == isa::Engine::Tiu) {
            isa::TiuWork w = isa::tiuWork(isa::decodeTiu(d.cmd), chip);
            if (w.macs > kMaxWork || w.inputElements > kMaxWork ||
                w.outputElements > kMaxWork / w.iterations)
              return true;
          } else {
            isa::GdmaWork w = isa::gdmaWork(isa::decodeGdma(d.cmd, chip), chip);
            if (w.bytes > kMaxWork || w.ddrReadBytes > kMaxWork ||
                w.localReadBytes > kMaxWork)
              return true;
          }
        } catch (const std::exception &) {
          // Not decodable: the simulator's refusal is what is under test.
        }
      }
    }
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  isa::bmodel::ParseOptions parse;
  parse.verifyCheckCode = false;
  try {
    isa::bmodel::Model model = isa::bmodel::parseModel(data, size, "fuzz", parse);
    sim::SimConfig cfg = sim::recordedConfig(model, sim::SimConfig::defaults());
    cfg.validate();
    if (tooMuchWork(model, cfg.chip))
      return 0;
    sim::ModelRunner runner(model, cfg, sim::SimMode::Functional);
    sim::RunOptions options;
    options.maxCommands = kMaxCommands;
    runner.run(options);
    (void)runner.outputs();
  } catch (const tpu::Error &) {
  }
  return 0;
}
