//===- Tool.h - What every tool's main() shares -------------------*- C++
//-*-===//
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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

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

/// Hides every option not in \p categories (LLVM's own options), then
/// parses argv; exits 1 with a message naming the option on bad input.
inline void parse(int argc, char **argv,
                  llvm::ArrayRef<const llvm::cl::OptionCategory *> categories,
                  llvm::StringRef overview) {
  llvm::cl::HideUnrelatedOptions(categories);
  for (llvm::cl::SubCommand *sub : llvm::cl::getRegisteredSubcommands())
    llvm::cl::HideUnrelatedOptions(categories, *sub);
  llvm::cl::ParseCommandLineOptions(argc, argv, overview);
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
