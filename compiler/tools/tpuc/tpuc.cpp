//===- tpuc.cpp - The tpuc driver: dispatch to subcommands ----------------===//
//
//   tpuc <subcommand> [args...]
//
// Each subcommand lives in its own file and parses its own arguments (see
// Subcommands.h). A tpu::Error or other exception escaping a subcommand is
// printed as `tpuc <subcommand>: error: <message>` with exit status 1.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"

#include "tpu/Tool.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <exception>

namespace {

struct Subcommand {
  const char *name;
  int (*entry)(int, char **);
  const char *summary;
};

/// Every subcommand, in the order of the compilation flow.
const Subcommand kSubcommands[] = {
    {"transform", runTransform,
     "import an ONNX model into the top dialect (.mlir + weight .npz)"},
    {"calibrate", runCalibrate,
     "INT8 calibration table (thresholds per tensor) from a dataset"},
    {"qtable", runQtable,
     "quantize table keeping in F32 the ops a 16-bit mode overflows"},
    {"deploy", runDeploy,
     "compile a top module for the BM1684X (tpu dialect, bmodel)"},
    {"explore", runExplore,
     "sweep models, layer-group knobs and machine keys (compile + timing "
     "simulation per point)"},
    {"regress", runRegress,
     "regression suite: compile (cached) + simulate cases, check accuracy "
     "and cycles against a baseline; JSON, JUnit XML"},
    {"run", runRun, "interpret a top module on the inputs of an .npz file"},
    {"compare", runCompare,
     "per-tensor similarity of two .npz files (cosine, euclid, SQNR)"},
};

void printHelp(llvm::raw_ostream &os) {
  os << "usage: tpuc <subcommand> [args...]\n"
        "       tpuc <subcommand> --help\n\n"
        "BM1684X compiler: ONNX -> top dialect -> ..., with a reference "
        "interpreter.\n\nsubcommands:\n";
  for (const Subcommand &s : kSubcommands)
    os << "  " << llvm::left_justify(s.name, 11) << s.summary << "\n";
  os << "\nTPU-MLIR's underscore spellings (--input_shapes, --test_input, "
        "--quantize_table, ...) are accepted for the dashed ones.\n";
  os << "\nflow: tpuc transform -> model_top.mlir; tpuc run -> out.npz; "
        "tpuc compare out.npz ref.npz\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  if (argc < 2) {
    printHelp(llvm::errs());
    return 1;
  }
  llvm::StringRef command = argv[1];
  if (command == "--version") {
    tpu::tool::printVersion("tpuc", llvm::outs());
    return 0;
  }
  // `tpuc help SUBCOMMAND` is `tpuc SUBCOMMAND --help`.
  static char helpFlag[] = "--help";
  char *helpArgv[] = {argv[0], argv[argc > 2 ? 2 : 1], helpFlag, nullptr};
  if (command == "help" && argc > 2) {
    command = argv[2];
    argc = 3;
    argv = helpArgv; // tpuc SUBCOMMAND --help
  } else if (command == "-h" || command == "--help" || command == "help") {
    printHelp(llvm::outs());
    return 0;
  }
  // TPU-MLIR's underscore spellings (--input_shapes, --test_input,
  // --quantize_table, ...) are the dashed options.
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    if (!a.starts_with("--"))
      continue;
    size_t end = std::min(a.find('='), a.size());
    for (size_t k = 2; k < end; ++k)
      if (argv[i][k] == '_')
        argv[i][k] = '-';
  }
  for (const Subcommand &s : kSubcommands) {
    if (command != s.name)
      continue;
    try {
      return s.entry(argc - 1, argv + 1);
    } catch (const std::exception &e) { // tpu::Error included
      llvm::errs() << "tpuc " << s.name << ": error: " << e.what() << "\n";
    }
    return 1;
  }
  llvm::errs() << "tpuc: error: unknown subcommand '" << command
               << "' (try tpuc --help)\n";
  return 1;
}
