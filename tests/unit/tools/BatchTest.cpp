//===- BatchTest.cpp - What tpuc explore and tpuc regress share -----------===//
//
// The worker pool (crash isolation, timeouts, --jobs), the TOML subset
// (values, ranges, errors naming the line), shards, hashes.
//
//===----------------------------------------------------------------------===//
#include "Batch.h"

#include "tpu/isa/Error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace tpuc::batch;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/batch-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(BatchPool, EachJobInItsOwnProcess) {
  TempDir dir;
  std::map<size_t, json> got;
  std::map<size_t, std::string> failures;
  PoolOptions o;
  o.jobs = 3;
  o.timeoutSeconds = [](size_t i) { return i == 4 ? 0.5 : 0.0; };
  runPool(
      7, o, [&](size_t i) { return (dir.path / std::to_string(i)).string(); },
      [&](size_t i, json &rec) {
        std::printf("job %zu says hello\n", i);
        switch (i) {
        case 1:
          std::abort(); // a crash
        case 2:
          throw tpu::Error("the compile failed"); // an error
        case 3:
          _exit(3); // an exit without a record
        case 4:
          sleep(30); // killed after 0.5 s
          break;
        case 5:
          std::fprintf(stderr, "x.mlir:3:1: error: bad op\n");
          throw tpu::Error("lowering failed");
        default:
          break;
        }
        rec["i"] = i;
        rec["pid"] = getpid();
        rec["status"] = "ok";
      },
      [&](size_t i, json &&rec, const std::string &failure) {
        EXPECT_FALSE(got.count(i) || failures.count(i)) << i;
        if (failure.empty())
          got[i] = rec;
        else
          failures[i] = failure;
      });
  ASSERT_EQ(got.size() + failures.size(), 7u);
  for (size_t i : {0, 6}) {
    ASSERT_TRUE(got.count(i)) << i;
    EXPECT_EQ(got[i]["i"], i);
    EXPECT_NE(got[i]["pid"].get<int>(), getpid()); // a forked worker
  }
  EXPECT_NE(failures[1].find("worker killed by signal 6"), std::string::npos)
      << failures[1];
  // Its log's last lines come with it.
  EXPECT_NE(failures[1].find("job 1 says hello"), std::string::npos);
  EXPECT_EQ(got[2]["status"], "failed");
  EXPECT_EQ(got[2]["reason"], "the compile failed [job 2 says hello]");
  EXPECT_NE(failures[3].find("worker exited with status 3 without a record"),
            std::string::npos)
      << failures[3];
  EXPECT_NE(failures[4].find("timed out after 0.5 s (killed)"),
            std::string::npos)
      << failures[4];
  // The first "error:" line of the log, not its last lines.
  EXPECT_EQ(got[5]["reason"],
            "lowering failed [x.mlir:3:1: error: bad op]");
  std::ifstream log(dir.path / "0");
  std::string line;
  std::getline(log, line);
  EXPECT_EQ(line, "job 0 says hello");
  EXPECT_FALSE(fs::exists(dir.path / "0.record"));
}

TEST(BatchPool, AtMostJobsAtOnce) {
  TempDir dir;
  // Each job holds one of two lock files for a while; with jobs = 2 a
  // third concurrent job would find both taken.
  std::string a = (dir.path / "a").string(), b = (dir.path / "b").string();
  size_t ok = 0;
  PoolOptions o;
  o.jobs = 2;
  runPool(
      6, o, [&](size_t i) { return (dir.path / ("log" + std::to_string(i))).string(); },
      [&](size_t, json &rec) {
        for (const std::string &p : {a, b}) {
          int fd = open(p.c_str(), O_RDWR | O_CREAT, 0644);
          if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            usleep(100000);
            rec["status"] = "ok";
            return;
          }
          close(fd);
        }
        rec["status"] = "failed";
        rec["reason"] = "a third job ran";
      },
      [&](size_t, json &&rec, const std::string &failure) {
        EXPECT_EQ(failure, "");
        EXPECT_EQ(rec["status"], "ok") << rec.dump();
        ok += rec["status"] == "ok";
      });
  EXPECT_EQ(ok, 6u);
}

/// The tpu::Error of reading \p text as a file (what readEntries throws).
std::string readError(const std::string &text) {
  TempDir dir;
  std::string path = (dir.path / "s.toml").string();
  std::ofstream(path) << text;
  try {
    readEntries(
        path, "test file", [](const std::string &, int) {},
        [](const Entry &e) { values(e.value, e.line); });
  } catch (const tpu::Error &e) {
    return std::string(e.what()).substr(path.size());
  }
  return "";
}

TEST(BatchToml, ValuesListsRanges) {
  EXPECT_EQ(values("\"a b\"", 1), std::vector<std::string>{"a b"});
  EXPECT_EQ(values(" [1, \"x,y\", z] ", 1),
            (std::vector<std::string>{"1", "x,y", "z"}));
  EXPECT_EQ(values("{ from = 8, to = 24, step = 8 }", 1),
            (std::vector<std::string>{"8", "16", "24"}));
  EXPECT_EQ(values("{from=16, to=128, factor=2}", 1),
            (std::vector<std::string>{"16", "32", "64", "128"}));
  EXPECT_EQ(values("{from=0.5, to=1, step=0.25}", 1),
            (std::vector<std::string>{"0.5", "0.75", "1"}));
}

TEST(BatchToml, ErrorsNameTheLine) {
  EXPECT_EQ(readError("a = 1\n\n# c\nb = [1, 2\n"),
            ":4: a list must end with ']' on the same line");
  EXPECT_EQ(readError("a = 1\na = 2\n"), ":2: 'a' given twice");
  EXPECT_EQ(readError("[s]\na = 1\n[t]\na = 2\n"), ""); // other sections
  EXPECT_EQ(readError("x\n"), ":1: expected 'key = value'");
  EXPECT_EQ(readError("a b = 1\n"), ":1: bad key 'a b'");
  EXPECT_EQ(readError("a = {from = 4, to = 2, step = 1}\n"),
            ":1: empty range (from 4 > to 2)");
  EXPECT_EQ(readError("a = {from = 1, to = 2}\n"),
            ":1: a range needs exactly one of step, factor");
  EXPECT_EQ(readError("a = \"x # not a comment\" # a comment\n"), "");
  EXPECT_EQ(readError("a = x y\n"), ":1: bad value 'x y'");
}

TEST(BatchToml, MachineKeys) {
  EXPECT_NO_THROW(checkMachineKey("chip.npu_num", "32", 1));
  EXPECT_NO_THROW(checkMachineKey("chip.lmem_bytes", "128K", 1));
  try {
    checkMachineKey("npu_num", "32", 7);
    FAIL();
  } catch (const ParseError &e) {
    EXPECT_EQ(e.line, 7);
    EXPECT_NE(e.message.find("needs its prefix"), std::string::npos);
  }
  EXPECT_THROW(checkMachineKey("chip.nope", "1", 1), ParseError);
  EXPECT_THROW(checkMachineKey("chip.npu_num", "x", 1), ParseError);
}

TEST(BatchToml, MachineRules) {
  // The machine's rules, as tpusim and tpuc deploy apply them: lanes a
  // power of two; 512 KiB of local memory per lane only with fewer lanes
  // (the region would reach static memory at 64).
  EXPECT_EQ(machineError({{"chip.npu_num", "32"}}), "");
  EXPECT_NE(machineError({{"chip.npu_num", "48"}}).find("power of two"),
            std::string::npos);
  EXPECT_NE(machineError({{"chip.lmem_bytes", "524288"}}), "");
  EXPECT_EQ(
      machineError({{"chip.lmem_bytes", "524288"}, {"chip.npu_num", "32"}}),
      "");
  // Each value alone passes checkMachineKey.
  EXPECT_NO_THROW(checkMachineKey("chip.npu_num", "48", 1));
  EXPECT_NO_THROW(checkMachineKey("chip.lmem_bytes", "524288", 1));
}

TEST(BatchCommandLine, ShardsAndJobs) {
  Shard s = parseShard("1/3");
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_TRUE(s.mine(4));
  EXPECT_FALSE(s.mine(3));
  for (const char *bad : {"3/3", "1/0", "1", "a/2", "1/2x", "-1/2"})
    EXPECT_THROW(parseShard(bad), tpu::Error) << bad;
  EXPECT_EQ(parsePositive("4", "--jobs"), 4u);
  EXPECT_THROW(parsePositive("0", "--jobs"), tpu::Error);
  EXPECT_EQ(listSome({"a", "b", "c"}, 2), "a, b, ...");
  EXPECT_EQ(listSome({"a", "b"}, 2), "a, b");
}

TEST(BatchHash, ExecutableDigestIgnoresVersionAndBuildId) {
  // Two "executables" that differ in the version text and the build ID
  // note only; a third that differs elsewhere.
  auto elf = [](const std::string &version, char id, char code) {
    std::string note("\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU\0", 16);
    std::string v = version;
    v.resize(32, '\0');
    return std::string("\x7f"
                       "ELF") +
           std::string(60, 'h') + note + std::string(20, id) +
           std::string(100, code) + v + std::string(50, 't');
  };
  TempDir dir;
  std::ofstream(dir.path / "a", std::ios::binary)
      << elf("0.1.0 (abc1234)", 'x', 'c');
  std::ofstream(dir.path / "b", std::ios::binary)
      << elf("0.1.0 (def5678-dirty)", 'y', 'c');
  std::ofstream(dir.path / "c", std::ios::binary)
      << elf("0.1.0 (def5678-dirty)", 'y', 'd');
  std::string a =
      executableDigest((dir.path / "a").string(), "0.1.0 (abc1234)");
  std::string b =
      executableDigest((dir.path / "b").string(), "0.1.0 (def5678-dirty)");
  std::string c =
      executableDigest((dir.path / "c").string(), "0.1.0 (def5678-dirty)");
  EXPECT_EQ(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, fileDigest((dir.path / "a").string()));
}

TEST(BatchHash, Sha256) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(hexDigest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  TempDir dir;
  std::ofstream(dir.path / "f") << "abc";
  EXPECT_EQ(fileDigest((dir.path / "f").string()), hexDigest("abc"));
}

} // namespace
