//===- Bmodel.h - Reading and writing .bmodel files ---------------*- C++
//-*-===//
//
// A .bmodel is a 64-byte header, a FlatBuffer (schema isa/schema/bmodel.fbs)
// and a binary section holding the coefficients, command streams and the
// optional firmware blob (isa/docs/bm1684x.md 7.1/7.2). This header exposes the file as
// plain C++ structs with every field Sophgo's runtime needs for static
// networks (isa/docs/bm1684x.md 7.3); the FlatBuffers types stay inside Bmodel.cpp.
//
// The reader validates everything it reads and throws tpu::Error naming the
// file, the byte offset and the problem. The writer fills the fields that are
// derived from others (check_code, cmd_byte sizes, a default subnet, ...),
// de-duplicates identical blobs and checks every command stream before
// writing, so it never produces a file the reader rejects.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_BMODEL_H
#define TPU_ISA_BMODEL_H

#include "tpu/isa/Sha256.h"
#include "tpu/isa/Types.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tpu::isa::bmodel {

/// Header constants (isa/docs/bm1684x.md 7.1).
constexpr uint32_t kMagic = 0xFF55AAEE;
/// The magic of the older bmtap2 toolchain's files, recognised only to say so.
constexpr uint32_t kLegacyMagic = 0xFF55AAFF;
constexpr uint32_t kHeaderSize = 64;
/// Byte offsets of the header words.
constexpr size_t kMagicOffset = 0;
constexpr size_t kHeaderSizeOffset = 4;
constexpr size_t kFlatbuffersSizeOffset = 8;
constexpr size_t kBinarySizeOffset = 12;
constexpr size_t kReservedOffset = 16;

/// What our writer puts into Model.type / Model.chip by default.
constexpr const char *kModelType = "B";
constexpr const char *kChipName = "BM1684X";
/// Another name Sophgo's runtime accepts for the same chip (isa/docs/bm1684x.md 7.4).
constexpr const char *kChipAlias = "BM1686";
/// Model.version: Sophgo's tools write "2.2+" followed by the compiler
/// version; we keep the prefix and name our toolchain after it.
constexpr const char *kDefaultVersion = "2.2+tpu-open";
/// File name tpu-mlir gives the firmware blob (isa/docs/bm1684x.md 7.3).
constexpr const char *kKernelModuleName = "libbm1684x_kernel_module.so";

/// Tensor.mem_type bits.
constexpr uint32_t kMemTypeTpu = 1u << 0;
constexpr uint32_t kMemTypeCpu = 1u << 1;

/// Tensor.hidden values tpu-mlir writes.
constexpr int32_t kHiddenInner = 0;
constexpr int32_t kHiddenInput = 1;
constexpr int32_t kHiddenOutput = 2;

/// SubNet.subnet_mode values.
constexpr int32_t kSubnetTpu = 0;
constexpr int32_t kSubnetCpu = 1;
constexpr int32_t kSubnetMerge = 2;
constexpr int32_t kSubnetSwitch = 3;

/// Size of CoeffMem.check_code (a SHA-256 digest).
constexpr size_t kCheckCodeSize = 32;

/// A tensor of a net or subnet (schema table Tensor).
struct Tensor {
  std::string name;
  DataType dataType = DataType::F32;
  /// STORE_MODE_T; BM1684X uses 0 (1N).
  int32_t gmemStmode = 0;
  /// Compile-time DDR address.
  uint64_t deviceAddr = 0;
  /// Bytes in DDR.
  uint64_t size = 0;
  /// One shape per stage; static nets have exactly one.
  std::vector<std::vector<uint64_t>> shapes;
  uint32_t memType = kMemTypeTpu;
  float scale = 1.0f;
  int32_t zeroPoint = 0;
  /// kHiddenInput / kHiddenOutput for net inputs and outputs.
  int32_t hidden = kHiddenInner;
  /// Position in the input or output list.
  int32_t index = 0;
  uint32_t cpuAddr = 0;
  uint32_t padH = 0;

  bool operator==(const Tensor &o) const;
  bool operator!=(const Tensor &o) const { return !(*this == o); }
};

/// One command group: a TIU ("bdc") and a GDMA stream, each ending with its
/// end command and zero-padded to a multiple of 128 bytes.
struct CmdGroup {
  /// Number of commands in each stream, end command included.
  uint32_t bdcNum = 0;
  uint32_t gdmaNum = 0;
  /// The streams. bdc_cmd_byte / gdma_cmd_byte are their sizes.
  std::vector<uint8_t> tiu;
  std::vector<uint8_t> gdma;

  bool operator==(const CmdGroup &o) const;
  bool operator!=(const CmdGroup &o) const { return !(*this == o); }
};

/// A subnet of a stage. A static single-device network has one TPU subnet
/// with id 0 whose groups and IO are those of the stage.
struct SubNet {
  int32_t id = 0;
  int32_t mode = kSubnetTpu;
  int32_t isDynamic = 0;
  std::vector<CmdGroup> groups;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  /// Empty for the last subnet.
  std::vector<int32_t> nextSubnetIds;

  bool operator==(const SubNet &o) const;
  bool operator!=(const SubNet &o) const { return !(*this == o); }
};

/// One stage of a net (schema table NetParameter).
struct Stage {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  /// Compile-time base address and size of the activation memory.
  uint64_t ctxAddr = 0;
  uint64_t ctxSize = 0;
  /// Per-segment activation sizes. Written as {ctxSize} when empty.
  std::vector<uint64_t> ctxSizes;
  /// Compile-time base address of the weights and the weights themselves.
  uint64_t coeffAddr = 0;
  std::vector<uint8_t> coeff;
  /// Bytes of coefficients the file holds but the reader did not load
  /// (ParseOptions::loadCoefficients false); `coeff` is empty then.
  uint64_t coeffNotLoaded = 0;
  /// The coefficients where the file mapping holds them
  /// (ParseOptions::coefficientsInPlace; `coeff` is empty then), and what
  /// keeps that mapping alive.
  const uint8_t *coeffInPlace = nullptr;
  uint64_t coeffInPlaceBytes = 0;
  std::shared_ptr<const void> coeffKeep;
  /// Size of the coefficients in the file, loaded or not.
  uint64_t coeffBytes() const {
    return coeff.size() + coeffInPlaceBytes + coeffNotLoaded;
  }
  /// The loaded coefficients, copied or in place.
  const uint8_t *coeffData() const {
    return coeffInPlace ? coeffInPlace : coeff.data();
  }
  uint64_t coeffLoaded() const { return coeff.size() + coeffInPlaceBytes; }
  /// SHA-256 of `coeff` as stored in the file (filled by the reader; the
  /// writer always computes it from `coeff` and ignores this member).
  std::vector<uint8_t> checkCode;
  /// All command groups of all static TPU subnets, in subnet order.
  std::vector<CmdGroup> groups;
  /// Written as one TPU subnet with id 0, the stage's groups and IO when
  /// empty (see defaultSubnet).
  std::vector<SubNet> subnets;
  /// io_alone mode (Net.addrMode 1): address and size of the IO region.
  uint64_t ioAddr = 0;
  uint64_t ioSize = 0;
  int32_t isDynamic = 0;
  int32_t nDynamic = 0;
  int32_t hWDynamic = 0;
  uint32_t cpuMemSize = 0;
  uint32_t coreNum = 0;

  bool operator==(const Stage &o) const;
  bool operator!=(const Stage &o) const { return !(*this == o); }
};

struct Net {
  std::string name;
  std::vector<Stage> stages;
  /// 0 basic, 1 io_alone, 2 io_tag, 3 io_tag_fuse.
  int32_t addrMode = 0;

  bool operator==(const Net &o) const;
  bool operator!=(const Net &o) const { return !(*this == o); }
};

/// Device firmware shipped inside the model (isa/docs/bm1684x.md 7.5).
struct KernelModule {
  std::string fileName = kKernelModuleName;
  std::vector<uint8_t> binary;

  bool operator==(const KernelModule &o) const {
    return fileName == o.fileName && binary == o.binary;
  }
};

class PendingCheckCode;

struct Model {
  std::string type = kModelType;
  std::string version = kDefaultVersion;
  /// C ctime() text in Sophgo's files; any string is accepted.
  std::string time;
  std::string chip = kChipName;
  std::vector<Net> nets;
  /// Largest ctx_size over all nets. Written as that maximum when 0.
  uint64_t neuronSize = 0;
  uint32_t deviceNum = 1;
  std::optional<KernelModule> kernelModule;
  /// 0 coefficients not combined, 1 combined.
  uint32_t bmodelType = 0;
  /// The machine the model was compiled for, as `key = value` lines
  /// (isa::Machine::toText); empty when the file does not record it.
  std::string machine;
  /// The check codes readModel left to verify
  /// (ParseOptions::deferCheckCode); see hashCheckCodes and
  /// awaitCheckCodes. Not compared.
  std::vector<std::shared_ptr<PendingCheckCode>> pendingCheckCodes;

  bool operator==(const Model &o) const;
  bool operator!=(const Model &o) const { return !(*this == o); }
};

/// A stage's check code whose verification readModel deferred
/// (ParseOptions::deferCheckCode): the SHA-256 of the coefficients in the
/// mapped file, computed a slice at a time by whichever thread has nothing
/// else to do (hashSome), the rest by await. Thread-safe.
class PendingCheckCode {
public:
  using Check = std::function<void(const Sha256Digest &)>;
  /// `bytes` (`size` of them) stay valid while `keepAlive` lives; `check`
  /// throws the mismatch's Error.
  PendingCheckCode(std::shared_ptr<const void> keepAlive, const uint8_t *bytes,
                   uint64_t size, Check check);
  /// Hashes up to `maxBytes` more bytes. False once every byte is hashed,
  /// and at once while another thread hashes (await, which hashes the
  /// rest, or another slice): a caller with time to spare stops then
  /// instead of spinning on the lock.
  bool hashSome(uint64_t maxBytes);
  /// Hashes the bytes left, then compares: throws the mismatch's Error, on
  /// every call.
  void await();

private:
  std::mutex mu_;
  std::shared_ptr<const void> keepAlive_;
  const uint8_t *bytes_;
  uint64_t size_, done_ = 0;
  Sha256 sha_;
  std::optional<Sha256Digest> digest_;
  Check check_;
};

/// The subnet the writer adds to a stage that has none: TPU, id 0, the
/// stage's groups and IO tensors, no successor.
SubNet defaultSubnet(const Stage &stage);

/// The header fields of a bmodel file.
struct Header {
  uint32_t magic = kMagic;
  uint32_t headerSize = kHeaderSize;
  uint32_t flatbuffersSize = 0;
  uint32_t binarySize = 0;
};

/// Reads and checks the 64-byte header of `data` (see parseModel for the
/// checks). Throws Error.
Header parseHeader(const uint8_t *data, size_t size,
                   const std::string &sourceName);

/// What parseModel checks beyond the format's structure.
struct ParseOptions {
  /// Refuse a stage whose coeff_mem.check_code is not the SHA-256 of its
  /// coefficients (off only for tools that show a corrupt file, tpu-dis).
  bool verifyCheckCode = true;
  /// Copy the coefficients into Stage::coeff. Off for a timing-only
  /// simulation, whose result no weight value changes: their range is still
  /// checked against the binary section, Stage::coeffNotLoaded records
  /// their size, and the check code is not verified (nothing read it).
  bool loadCoefficients = true;
  /// With verifyCheckCode and loadCoefficients: readModel does not hash
  /// coefficients of 1 MiB and more before it returns; it leaves them in
  /// Model::pendingCheckCodes, for the caller to hash beside its own work
  /// (tens of milliseconds for tens of megabytes), in slices on threads
  /// that have time (hashCheckCodes), the rest in awaitCheckCodes. The
  /// caller must call awaitCheckCodes(model) before it trusts or reports
  /// anything computed from the coefficients. An error readModel finds
  /// after the first such stage gives way to a mismatch of its check code,
  /// as it would without deferral (the check code is checked first).
  /// parseModel ignores it (its bytes need not outlive the call).
  bool deferCheckCode = false;
  /// With loadCoefficients, for readers that only read them (tpusim):
  /// when readModel maps the file, leave Stage::coeff empty and point
  /// Stage::coeffInPlace into the mapping, which Stage::coeffKeep keeps
  /// (no copy of tens of megabytes). parseModel ignores it.
  bool coefficientsInPlace = false;
};

/// Parses and validates a whole bmodel held in memory. `sourceName` (a path)
/// starts every error message. Throws Error for a short file, a bad magic, an
/// encrypted file, sizes past the end of the data, a FlatBuffer that fails
/// verification or lacks a required field, a Binary range outside the binary
/// section, a cmd_byte that disagrees with its blob, a command stream that
/// does not decode or whose command count disagrees with bdc_num/gdma_num,
/// an unknown data type, a chip other than BM1684X, a subnet whose id is
/// not its position, bytes after the binary section, a coefficient check
/// code that is not their SHA-256, a tensor or net name that is not UTF-8,
/// two tensors of one list with the same name, or a tensor whose shape needs
/// more bytes than its size. A FlatBuffer that fails verification is
/// reported with the field path and byte offset of the failing check.
/// Reading never goes outside [data, data + size).
Model parseModel(const uint8_t *data, size_t size,
                 const std::string &sourceName,
                 const ParseOptions &options = {});

/// Reads a file and parses it with parseModel. The file is mapped, not
/// copied, so the pages of coefficients that are not loaded are never read.
Model readModel(const std::string &path, const ParseOptions &options = {});

/// Hashes up to `maxBytes` more of the deferred check codes
/// (ParseOptions::deferCheckCode); false once none is left to this caller
/// (all hashed, or the rest in another thread's hands: PendingCheckCode::
/// hashSome). For threads with time to spare, e.g. sim::runOnHelper.
bool hashCheckCodes(
    const std::vector<std::shared_ptr<PendingCheckCode>> &pending,
    uint64_t maxBytes);

/// Verifies the check codes readModel deferred (ParseOptions::
/// deferCheckCode), hashing what hashCheckCodes left, and throws the Error
/// readModel would have thrown for the first one that does not match;
/// returns at once when there are none. Calling it again throws the same
/// error again.
void awaitCheckCodes(const Model &model);

/// Builds the bytes of a bmodel file. Throws Error for a model that cannot
/// be written (no nets, a command stream that does not decode or whose count
/// disagrees with bdcNum/gdmaNum, a section larger than 4 GiB, ...).
std::vector<uint8_t> serializeModel(const Model &model);

/// Serializes `model` and writes it to `path` through a temporary file in the
/// same directory, renamed over `path` only when complete.
void writeModel(const Model &model, const std::string &path);

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so `path` never holds a partial file. Throws Error.
void writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes);
/// A range of bytes someone else owns.
struct ByteSpan {
  const uint8_t *data = nullptr;
  size_t size = 0;
};
/// writeFileAtomically of the concatenation of `parts`, which are not
/// copied (large arrays go to the file from where they are).
void writeFileAtomically(const std::string &path,
                         const std::vector<ByteSpan> &parts);

/// Files a tool writes as one set (a bmodel and the files beside it, a
/// simulation's outputs): each is written under a hidden temporary name in
/// its own directory (".NAME.tmp.PID.staged", which the next write to the
/// path removes if this process died) and commit() renames them into place.
/// Until then every path keeps what it held; destroyed before commit() (an
/// error, a refusal), the temporaries are removed. Errors name the path,
/// not the temporary.
class StagedFiles {
public:
  StagedFiles() = default;
  ~StagedFiles();
  StagedFiles(const StagedFiles &) = delete;
  StagedFiles &operator=(const StagedFiles &) = delete;

  /// Runs `write(tmp)`, which must create the file `tmp` (the temporary
  /// name of `path`). Throws Error.
  void write(const std::string &path,
             const std::function<void(const std::string &tmp)> &write);
  /// Renames every file into place, in writing order, and returns their
  /// paths. A rename that fails throws Error (the files renamed before it
  /// stay in place, the others are removed).
  std::vector<std::string> commit();

private:
  std::vector<std::pair<std::string, std::string>> staged_; ///< tmp, path
};

/// A file a tool reads or writes and what its messages call it: an option
/// ("-o", "--stats") or a role ("output", "the model").
struct NamedPath {
  std::string what;
  std::string path;
};

/// What stops a tool from writing `outputs` (checked before any work, so
/// that a refusal leaves nothing behind): an output that is an existing
/// directory, lies in a directory that does not exist (or is not one), or
/// is the same file as another output or one of `inputs` (a typo that
/// would overwrite the model). Empty paths are skipped. The error names
/// the output and the cause; empty when every output can be written.
std::string checkOutputPaths(const std::vector<NamedPath> &outputs,
                             const std::vector<NamedPath> &inputs = {});

/// Why `path` cannot be read as a file: "is a directory" or "is a device,
/// not a file" (a character or block device such as /dev/zero, which
/// reads without end); empty for anything else (a regular file, a FIFO,
/// a path that does not exist, left to the open that follows).
std::string notAFile(const std::string &path);

/// Reads a whole file. Throws Error naming the path when it cannot.
std::vector<uint8_t> readFile(const std::string &path);

/// A whole file's bytes, read-only: a non-empty regular file is mapped (the
/// page cache's pages, no copy: weight files reach half a gigabyte),
/// anything else is read (readFile). Errors name the path and, in "cannot
/// open <noun>", `noun` when given.
class FileBytes {
public:
  explicit FileBytes(const std::string &path, const std::string &noun = "");
  ~FileBytes();
  FileBytes(const FileBytes &) = delete;
  FileBytes &operator=(const FileBytes &) = delete;
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

private:
  void *map_ = nullptr;
  std::vector<uint8_t> read_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace tpu::isa::bmodel

#endif // TPU_ISA_BMODEL_H
