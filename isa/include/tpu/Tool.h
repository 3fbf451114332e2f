//===- Tool.h - What every tool's main() shares ------------*- C++ -*-===//
//
// The tools parse their command lines with llvm::cl: --help (and -h),
// --version, option categories and @response files. initTool() sets the
// version printer (one version for the whole toolchain, toolchainVersion) and
// the -h alias; parse() hides the options LLVM's libraries register and
// parses argv.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_TOOL_H
#define TPU_TOOL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace tpu {
/// The toolchain's version: the project version and, for a build from a git
/// checkout, `git describe --always --dirty` at build time, as in
/// "0.1.0 (b8444ed)" (generated: isa/lib/Version.cpp.in, library TpuVersion).
const char *toolchainVersion();
} // namespace tpu

namespace tpu::tool {

/// "<tool> (tpu-toolchain) <version>" on \p os.
inline void printVersion(llvm::StringRef tool, llvm::raw_ostream &os) {
  os << tool << " (tpu-toolchain) " << toolchainVersion() << "\n";
}

/// Registers -h as an alias of --help (in every subcommand) and the
/// toolchain's version printer for --version.
inline void initTool(llvm::StringRef tool) {
  // --help lives in every subcommand; so does its alias.
  static llvm::cl::alias helpShort(
      "h", llvm::cl::desc("Alias for --help"), llvm::cl::Hidden,
      llvm::cl::aliasopt(*llvm::cl::getRegisteredOptions(
          llvm::cl::SubCommand::getTopLevel())["help"]));
  static std::string name;
  name = tool.str();
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { printVersion(name, os); });
}

/// Expands the @FILE response files in \p args (the strings in \p saver).
/// An @FILE left over is a file that could not be read (llvm::cl leaves it
/// as an argument, where it would be taken for a model or an output):
/// returns the message naming it, else "".
inline std::string
expandResponseFiles(llvm::StringSaver &saver,
                    llvm::SmallVectorImpl<const char *> &args) {
  auto cannotRead = [](llvm::StringRef file, const char *why) {
    return "cannot read the response file '" + file.str() + "' (@" +
           file.str() + "): " + why;
  };
  // The @FILE arguments given, to name the one that fails.
  std::vector<std::string> given;
  for (size_t i = 1; i < args.size(); ++i)
    if (llvm::StringRef a = args[i]; a.size() > 1 && a.front() == '@')
      given.push_back(a.drop_front().str());
  if (!llvm::cl::ExpandResponseFiles(saver, llvm::cl::TokenizeGNUCommandLine,
                                     args)) {
    // One exists but cannot be read (a directory, no permission).
    for (const std::string &file : given)
      if (llvm::sys::fs::is_directory(file))
        return cannotRead(file, "a directory");
      else if (llvm::sys::fs::exists(file))
        return cannotRead(file, "not readable");
    return "cannot read a response file (@FILE)";
  }
  // llvm::cl leaves an @FILE it did not find as an argument.
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef a = args[i];
    if (a == "--")
      break;
    if (a.size() > 1 && a.front() == '@')
      return cannotRead(a.drop_front(), "no such file");
  }
  return "";
}

/// Hides every option not in \p categories (LLVM's own options), then
/// parses argv (response files first); exits 1 with a message naming the
/// option or response file on bad input.
inline void parse(int argc, char **argv,
                  llvm::ArrayRef<const llvm::cl::OptionCategory *> categories,
                  llvm::StringRef overview) {
  llvm::cl::HideUnrelatedOptions(categories);
  for (llvm::cl::SubCommand *sub : llvm::cl::getRegisteredSubcommands())
    llvm::cl::HideUnrelatedOptions(categories, *sub);
  // The expanded strings outlive the parse (options may keep StringRefs).
  static llvm::BumpPtrAllocator allocator;
  static llvm::StringSaver saver(allocator);
  llvm::SmallVector<const char *> args(argv, argv + argc);
  if (std::string e = expandResponseFiles(saver, args); !e.empty()) {
    llvm::errs() << llvm::sys::path::filename(argv[0]) << ": error: " << e
                 << "\n";
    std::exit(1);
  }
  llvm::cl::ParseCommandLineOptions(int(args.size()), args.data(), overview);
}

/// A machine parameter as the tools spell it (-p / --chip-param KEY=VALUE):
/// a key with a prefix (chip.npu_num, tiu.cube_startup) is a machine key as
/// given; a bare key (npu_num, gmem_bytes) is a chip parameter, chip.<key>.
inline std::string machineKey(const std::string &keyValue) {
  std::string key = keyValue.substr(0, keyValue.find('='));
  if (key.find('.') != std::string::npos)
    return keyValue;
  return "chip." + keyValue;
}

/// The help text of -p / --chip-param, the same in every tool.
constexpr const char *kChipParamHelp =
    "set a machine parameter: chip.npu_num=32, tiu.cube_startup=40, ... "
    "(a bare key is a chip.* key: npu_num=32); `tpusim config` lists the "
    "keys";

} // namespace tpu::tool

#endif // TPU_TOOL_H
