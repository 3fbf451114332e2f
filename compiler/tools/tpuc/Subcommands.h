//===- Subcommands.h - The tpuc subcommands ----------------------*- C++
//-*-===//
//
// Every subcommand lives in its own file, which defines its
// llvm::cl::SubCommand, its options (cl::sub of it, so that two
// subcommands may both have a --threads or an -o) and a Subcommand record
// the driver (tpuc.cpp) dispatches to once llvm::cl has parsed the command
// line. A tpu::Error or other exception escaping a subcommand's run is
// printed as `tpuc <subcommand>: error: <message>` with exit status 1.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_SUBCOMMANDS_H
#define TPUC_TOOLS_TPUC_SUBCOMMANDS_H

#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace tpuc::cli {

struct Subcommand {
  llvm::cl::SubCommand &command;
  /// The OVERVIEW of `tpuc SUB --help`: what the subcommand does, the file
  /// formats it reads and writes, the exit statuses.
  const char *overview;
  /// Runs with the parsed options; returns the exit status (0 on success,
  /// 1 on an error after printing `tpuc SUB: error: ...`).
  int (*run)();
};

/// The subcommands, each defined in its file (Transform.cpp, ...).
extern const Subcommand transform, calibrate, qtable, deploy, explore, regress,
    run, compare;

/// The option categories of the tpuc subcommands: `--help` shows these and
/// hides the options LLVM's and MLIR's libraries register.
std::vector<const llvm::cl::OptionCategory *> &categories();

/// An option category that is one of categories().
struct Category : llvm::cl::OptionCategory {
  explicit Category(llvm::StringRef name) : llvm::cl::OptionCategory(name) {
    categories().push_back(this);
  }
};

/// tpuc qtable's two modes, the 16-bit overflow table (Qtable.cpp) and the
/// INT8 mixed-precision search (QtableMixed.cpp, with --calibration-table),
/// share the subcommand, its model, -o and --threads.
namespace qtableShared {
/// The subcommand (constructed on first use: both files' options need it).
llvm::cl::SubCommand &command();
extern llvm::cl::opt<std::string> model, output, threads, calibrationTable;
/// The options of the mixed-precision search only.
extern Category mixedCategory;
/// The mixed-precision search, once the command line is parsed.
int runMixed();
} // namespace qtableShared

/// Runs `tpuc ARGS...` in this process, as the driver would (tpuc regress's
/// workers transform, interpret and calibrate so). Parsing resets every
/// option first: the options of the calling subcommand too, which must
/// have read them already. Returns the exit status; an exception the
/// subcommand throws reaches the caller.
int runInProcess(const std::vector<std::string> &args);

} // namespace tpuc::cli

#endif // TPUC_TOOLS_TPUC_SUBCOMMANDS_H
