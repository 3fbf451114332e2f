//===- Batch.h - What tpuc explore and tpuc regress share ---------*- C++ -*-===//
//
// Both tools read a TOML-subset file (explore a sweep, regress a suite), run
// many independent jobs (sweep points, suite cases) in forked worker
// processes, key their records by content hashes, and split large runs
// into shards that `... merge` joins again. This is that shared part:
//  - the TOML subset: `[section]` headers, `key = value` lines, `#`
//    comments; a value is a "string", a bare word or number, a list
//    [a, b, ...] on one line, or a range {from = A, to = B, step = S} /
//    {from = A, to = B, factor = F}; errors name the file and the line;
//  - SHA-256 digests of text and files;
//  - the worker pool: each job in its own forked process (the SystemC
//    kernel runs one simulation per process at a time; a crash, an abort
//    or a hang stays the job's), `jobs` at once, each killed after an
//    optional timeout; the job's output goes to its log file;
//  - --jobs / --shard I/N parsing, a progress line, atomic text writes.
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_TOOLS_TPUC_BATCH_H
#define TPUC_TOOLS_TPUC_BATCH_H

#include "DeployPipeline.h"

#include "llvm/Support/CommandLine.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tpuc::batch {

//===----------------------------------------------------------------------===//
// The TOML subset
//===----------------------------------------------------------------------===//

/// An error in a line of the file; readEntries turns it into a tpu::Error
/// "FILE:LINE: message".
struct ParseError {
  int line;
  std::string message;
};

std::string trim(const std::string &s);
/// A scalar: "string" (quotes removed), true/false, a number or a bare word.
std::string scalar(const std::string &raw, int line);
/// A number or true/false as TOML writes them, without quotes: scalar's
/// text, or an error naming `key` for a quoted string ("0.99" is a string,
/// which TOML would not compare as a number).
std::string bareScalar(const std::string &raw, const std::string &key,
                       int line);
/// A value: a scalar, a list or a range (see the file comment), as text.
std::vector<std::string> values(const std::string &raw, int line);
/// `raw` as a number; `what` names it in the error.
double number(const std::string &raw, const std::string &what, int line);
/// Integers without a fraction, else 12 significant digits.
std::string formatNumber(double v);

/// One `key = value` line of the file.
struct Entry {
  int line = 0;
  std::string section; ///< the last [section] header ("" before any)
  std::string key;     ///< unquoted
  std::string value;   ///< the raw text after '='
};

/// Reads \p path line by line and calls \p onSection for each [section]
/// header (it throws ParseError for one it does not know) and \p onEntry
/// for each `key = value` line; a key given twice in one section is an
/// error. Throws tpu::Error naming the file (\p what describes it: "sweep
/// file") and, for an error in a line, the line.
void readEntries(const std::string &path, const std::string &what,
                 const std::function<void(const std::string &section,
                                          int line)> &onSection,
                 const std::function<void(const Entry &)> &onEntry);

/// Throws ParseError unless `key = value` is a machine key of `tpusim
/// config` (chip.npu_num, ddr.bandwidth_gbps, ...) with a good value for
/// both the compiler and the simulator.
void checkMachineKey(const std::string &key, const std::string &value,
                     int line);

/// A machine key's value as the simulator's configuration prints it
/// (64K and 65536 alike as 65536, 16.0 as 16): what makes two spellings
/// the same value. `value` must pass checkMachineKey.
std::string canonicalMachineValue(const std::string &key,
                                  const std::string &value);

/// "" when the default machine with `keys` (machine keys, checked by
/// checkMachineKey, applied in order) passes the compiler's and the
/// simulator's rules (chip.npu_num a power of two, memory regions apart,
/// ...), else the rule it breaks. Rules that involve several keys are why
/// this is separate from checkMachineKey: a sweep may set lanes and local
/// memory that are only valid together.
std::string
machineError(const std::vector<std::pair<std::string, std::string>> &keys);

//===----------------------------------------------------------------------===//
// Compiling in memory
//===----------------------------------------------------------------------===//

/// The compile knobs both tools take, with their defaults, in the order of
/// the sweep's points and of the suite's cache keys.
extern const std::vector<std::pair<std::string, std::string>> kCompileKnobs;
/// "" when \p value is good for the knob \p key (quantize is upper-cased in
/// place), else what is wrong with it.
std::string checkCompileKnob(const std::string &key, std::string &value);

/// What compileInMemory compiles: a top module with knobs (kCompileKnobs
/// keys; a missing knob has its default) and machine keys (with a '.').
struct CompileJob {
  std::string model;
  std::vector<std::pair<std::string, std::string>> params;
  std::string cali, qtable; ///< paths, "" for none
  deploy::PipelineHooks hooks;
};

/// Loads \p job.model and its weights and runs tpuc::deploy::compile on it
/// as `tpuc deploy` would with the same options (machine, sizes, quantize
/// and calibration tables checked the same way), writing nothing. Throws
/// tpu::Error with deploy's message.
void compileInMemory(const CompileJob &job, deploy::PipelineResult &result);

//===----------------------------------------------------------------------===//
// Hashes
//===----------------------------------------------------------------------===//

/// SHA-256 of \p data in hex.
std::string hexDigest(const std::string &data);
/// SHA-256 of the file's bytes in hex (of "" when it cannot be read).
std::string fileDigest(const std::string &path);

/// fileDigest of an executable with `version` (its tpu::toolchainVersion(),
/// git describe at build time, kept in a fixed-size array) and the linker's
/// build ID (NT_GNU_BUILD_ID, a hash of the whole file) blanked: two builds
/// that differ only in the version give the same (tpuc regress's cache key).
std::string executableDigest(const std::string &path,
                             const std::string &version);

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

struct Shard {
  size_t index = 0, count = 1;
  /// Whether --shard was given (I/1 too: one shard of a sharded run).
  bool given = false;
  bool mine(size_t i) const { return i % count == index; }
};

/// The options `tpuc explore` and `tpuc regress` take alike: `[merge]
/// ARGS...`, -o/--output DIR, -j/--jobs N, --shard I/N, --check. Each
/// defines one, as a global after its cl::SubCommand.
struct CommonOptions {
  /// \p items names what a run is made of ("points", "cases"), \p file the
  /// file that lists them ("sweep", "suite").
  CommonOptions(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &category,
                const char *positionalDesc, const char *outputDesc,
                const char *items, const char *file);
  std::string jobsDesc, shardDesc, checkDesc;
  llvm::cl::list<std::string> positional;
  llvm::cl::opt<std::string> outDir;
  llvm::cl::alias outDirShort;
  llvm::cl::opt<std::string> jobs;
  llvm::cl::alias jobsShort;
  llvm::cl::opt<std::string> shard;
  llvm::cl::opt<bool> check;
};

/// The parsed CommonOptions.
struct CommandLine {
  bool check = false, merge = false;
  std::vector<std::string> positional; ///< after "merge" when merge is set
  std::string outDir;
  unsigned jobs = 0; ///< the cores unless given
  Shard shard;
};
/// Throws tpu::Error naming the first of \p options given on the command
/// line: options of a run, which --check (it runs and writes nothing)
/// refuses.
void refuseWithCheck(std::initializer_list<const llvm::cl::Option *> options);
/// Reads \p options once llvm::cl parsed them; throws tpu::Error naming a
/// bad --jobs or --shard, or either given to a merge.
CommandLine readCommandLine(const CommonOptions &options);
/// "I/N" with 0 <= I < N; throws tpu::Error otherwise.
Shard parseShard(const std::string &text);
/// A positive integer; throws tpu::Error naming \p option otherwise.
unsigned parsePositive(const std::string &text, const std::string &option);
/// The online cores.
unsigned defaultJobs();

//===----------------------------------------------------------------------===//
// The worker pool
//===----------------------------------------------------------------------===//

struct PoolOptions {
  unsigned jobs = 1;
  /// Seconds job i may run before it is killed (none given or 0: no
  /// limit).
  std::function<double(size_t)> timeoutSeconds;
};

/// Runs \p work(i, record) for every i < n, each in a forked process with
/// its stdout and stderr in \p logPath(i). A job that throws has its
/// record's "status" set to "failed" and "reason" to the message (with the
/// first "error:" line of its log, or its last lines); the log of a job
/// that failed ends with a line "failed: WHY". \p done(i, record,
/// failure) is called in this process as each job ends: failure is empty
/// when the job delivered its record, else says why it did not (killed by
/// a signal, exited without a record, timed out) and record holds only
/// "wall_seconds", how long the job ran.
/// Throws tpu::Error when fork or waitpid fail.
void runPool(size_t n, const PoolOptions &options,
             const std::function<std::string(size_t)> &logPath,
             const std::function<void(size_t, nlohmann::json &)> &work,
             const std::function<void(size_t, nlohmann::json &&,
                                      const std::string &failure)> &done);

/// How a job's log lines that mark its progress begin ("== step compile"):
/// tailOf leaves them out of a failure's diagnostic.
constexpr const char *kLogMarker = "== ";

/// The first "error:" (or "Error:", node's and Python's) line of the file
/// at \p path, else its last \p lines non-empty lines (markers left out)
/// joined with " | ".
std::string tailOf(const std::string &path, size_t lines);

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// Prints "TOOL: error: MESSAGE" (after what stdout holds) and returns 1.
int fail(const char *tool, const std::string &message);

/// The first \p most of \p items joined with ", " (", ..." when there are
/// more).
std::string listSome(const std::vector<std::string> &items, size_t most = 10);

/// Creates \p dir and its parents; throws tpu::Error naming it.
void createDirectory(const std::string &dir);

/// Writes \p text to \p path through a temporary file and a rename.
void writeText(const std::string &path, const std::string &text);

/// CPU seconds of this process.
double cpuSeconds();

/// The "[####....] 3/8 points, 0 failed, ETA 1m2s" line on a terminal
/// (nothing otherwise).
struct Progress {
  std::string noun;
  size_t total, done = 0, failed = 0, skipped;
  bool tty;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  Progress(std::string noun, size_t total, size_t skipped);
  double elapsed() const;
  void update();
  /// Ends the progress line (on a terminal).
  void finish();
};

} // namespace tpuc::batch

#endif // TPUC_TOOLS_TPUC_BATCH_H
