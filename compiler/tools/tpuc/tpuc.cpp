//===- tpuc.cpp - The tpuc driver: dispatch to subcommands ----------------===//
//
//   tpuc <subcommand> [options] [args...]
//   tpuc --help | help [SUBCOMMAND] | SUBCOMMAND --help | --version
//
// The command line is parsed by llvm::cl (tpu/Tool.h): one cl::SubCommand
// per subcommand (Subcommands.h), --help, --version and @response files.
// TPU-MLIR's underscore spellings of the options (--input_shapes,
// --test_input, --quantize_table, ...) are the dashed ones.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"

#include "tpu/Tool.h"
#include "tpu/isa/Format.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <exception>

namespace cl = llvm::cl;

namespace {

/// Every subcommand, in the order of the compilation flow.
const tpuc::cli::Subcommand *const kSubcommands[] = {
    &tpuc::cli::transform, &tpuc::cli::calibrate, &tpuc::cli::qtable,
    &tpuc::cli::deploy,    &tpuc::cli::explore,   &tpuc::cli::regress,
    &tpuc::cli::run,       &tpuc::cli::compare,
};

constexpr const char *kOverview =
    R"(the BM1684X compiler: ONNX / TFLite -> top dialect -> tpu dialect ->
bmodel, with a reference interpreter

  flow: tpuc transform -> model_top.mlir; tpuc run -> out.npz;
        tpuc compare out.npz ref.npz; tpuc deploy -> model.bmodel
  tpuc help SUBCOMMAND is tpuc SUBCOMMAND --help.

TPU-MLIR's underscore spellings (--input_shapes, --test_input,
--quantize_table, ...) are accepted for the dashed ones.
)";

const tpuc::cli::Subcommand *find(llvm::StringRef name) {
  for (const tpuc::cli::Subcommand *s : kSubcommands)
    if (s->command.getName() == name)
      return s;
  return nullptr;
}

/// Runs the subcommand the command line just parsed selected. With
/// \p catchErrors an exception it throws is printed as its error; without,
/// it reaches the caller.
int dispatch(bool catchErrors) {
  for (const tpuc::cli::Subcommand *s : kSubcommands) {
    if (!s->command)
      continue;
    if (!catchErrors)
      return s->run();
    try {
      return s->run();
    } catch (const std::exception &e) { // tpu::Error included
      llvm::outs().flush();
      llvm::errs() << "tpuc " << s->command.getName() << ": error: " << e.what()
                   << "\n";
    }
    return 1;
  }
  llvm::errs() << "tpuc: error: missing subcommand (see tpuc --help)\n";
  return 1;
}

} // namespace

std::vector<const cl::OptionCategory *> &tpuc::cli::categories() {
  static std::vector<const cl::OptionCategory *> all;
  return all;
}

int tpuc::cli::runInProcess(const std::vector<std::string> &args) {
  std::vector<const char *> argv = {"tpuc"};
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  cl::ResetAllOptionOccurrences();
  if (!cl::ParseCommandLineOptions(int(argv.size()), argv.data(), "",
                                   &llvm::errs()))
    return 1;
  return dispatch(/*catchErrors=*/false);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  tpu::tool::initTool("tpuc");
  // Response files first, so that what they hold gets the rewriting below.
  llvm::BumpPtrAllocator allocator;
  llvm::StringSaver saver(allocator);
  llvm::SmallVector<const char *> args(argv, argv + argc);
  if (std::string e = tpu::tool::expandResponseFiles(saver, args); !e.empty()) {
    llvm::errs() << "tpuc: error: " << e << "\n";
    return 1;
  }
  // Reproducible stamps (calibration tables, bmodels) or none; --help and
  // --version stamp nothing.
  bool infoOnly =
      llvm::any_of(llvm::ArrayRef(args).drop_front(), [](const char *a) {
        llvm::StringRef s(a);
        return s == "--help" || s == "-h" || s == "--help-hidden" ||
               s == "--help-list" || s == "--version" || s == "help";
      });
  if (std::string e = tpu::isa::sourceDateEpochError();
      !e.empty() && !infoOnly) {
    llvm::errs() << "tpuc: error: " << e << "\n";
    return 1;
  }
  // `tpuc help [SUBCOMMAND]` is `tpuc [SUBCOMMAND] --help`.
  if (args.size() >= 2 && llvm::StringRef(args[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back("--help");
  }
  const tpuc::cli::Subcommand *sub = nullptr;
  if (args.size() >= 2 && !llvm::StringRef(args[1]).starts_with("-")) {
    sub = find(args[1]);
    if (!sub) {
      llvm::errs() << "tpuc: error: unknown subcommand '" << args[1]
                   << "' (see tpuc --help)\n";
      return 1;
    }
  }
  // TPU-MLIR's underscore spellings (--input_shapes, --test_input,
  // --quantize_table, ...) are the dashed options; the value after '='
  // is left alone.
  for (size_t i = 2; i < args.size(); ++i) {
    llvm::StringRef a = args[i];
    if (!a.starts_with("--") || a == "--")
      continue;
    size_t end = std::min(a.find('='), a.size());
    std::string dashed = a.str();
    std::replace(dashed.begin(), dashed.begin() + end, '_', '-');
    args[i] = saver.save(dashed).data();
  }
  tpu::tool::parse(int(args.size()), const_cast<char **>(args.data()),
                   tpuc::cli::categories(), sub ? sub->overview : kOverview);
  return dispatch(/*catchErrors=*/true);
}
