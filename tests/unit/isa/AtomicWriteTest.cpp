//===- AtomicWriteTest.cpp - writeFileAtomically leaves nothing behind ----===//
//
// Every tool writes its outputs through tpu::isa::bmodel::writeFileAtomically.
// A process killed while writing (kill -9 during tpuc deploy) must leave no
// temporary file beside the output, and a directory is no output.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <signal.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace tpu;
using namespace tpu::isa::bmodel;

namespace {

/// A fresh directory under the build tree, removed afterwards.
class TempDir {
public:
  TempDir() {
    std::string base = std::string(TPU_BINARY_DIR) + "/atomic_write_XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    dir = ::mkdtemp(buf.data());
  }
  ~TempDir() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
};

/// The names in \p dir (hidden ones included), "." and ".." excepted.
std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> out;
  DIR *d = ::opendir(dir.c_str());
  while (const dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..")
      out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

/// A pid that is certainly not running: a child that has exited and been
/// reaped.
pid_t deadPid() {
  pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

} // namespace

TEST(AtomicWrite, KilledWriterLeavesNothingBehind) {
  TempDir tmp;
  std::string path = tmp.dir + "/out.bin";
  // Large enough that the kill lands while the data is being written.
  std::vector<uint8_t> big(size_t(256) << 20, 0x5a);
  for (unsigned attempt = 0; attempt < 3; ++attempt) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        writeFileAtomically(path, big);
      } catch (...) {
      }
      ::_exit(0);
    }
    ::usleep(20000 + 30000 * attempt);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    for (const std::string &n : listDir(tmp.dir)) {
      if (n == "out.bin") {
        struct stat st;
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_EQ(size_t(st.st_size), big.size()) << "a partial output";
        continue;
      }
      // Only a hidden temporary of the one instant between naming the
      // finished data and renaming it may remain; the next write removes it.
      EXPECT_EQ(n.rfind(".out.bin.tmp.", 0), 0u) << "left behind: " << n;
    }
  }
  writeFileAtomically(path, {1, 2, 3});
  EXPECT_EQ(listDir(tmp.dir), std::vector<std::string>{"out.bin"});
}

TEST(AtomicWrite, StaleHiddenTemporariesAreRemoved) {
  // What a writer killed on a file system without O_TMPFILE leaves: a hidden
  // temporary named after its (now dead) pid.
  TempDir tmp;
  std::string stale =
      tmp.dir + "/.out.bin.tmp." + std::to_string(deadPid()) + ".0";
  std::ofstream(stale) << "partial";
  // Another process's live temporary is kept.
  std::string live =
      tmp.dir + "/.out.bin.tmp." + std::to_string(::getppid()) + ".0";
  std::ofstream(live) << "in progress";
  writeFileAtomically(tmp.dir + "/out.bin", {1, 2, 3});
  std::vector<std::string> want = {
      ".out.bin.tmp." + std::to_string(::getppid()) + ".0", "out.bin"};
  EXPECT_EQ(listDir(tmp.dir), want);
}

TEST(AtomicWrite, ADirectoryIsNoOutput) {
  TempDir tmp;
  try {
    writeFileAtomically(tmp.dir, {1});
    FAIL() << "wrote over a directory";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              tmp.dir + ": is a directory; cannot write a file there");
  }
  EXPECT_TRUE(listDir(tmp.dir).empty());
}
