//===- Bmodel.cpp - Reading and writing .bmodel files ---------------------===//
//
// File layout (isa/docs/bm1684x.md 7.1): 64-byte header {magic, header_size,
// flatbuffers_size, binary_size, 48 zero bytes}, the FlatBuffer, then the
// binary section. Every Binary {start, size} is relative to the binary
// section.
//
//===----------------------------------------------------------------------===//

#include "tpu/isa/Bmodel.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Sha256.h"
#include "tpu/isa/bmodel_generated.h"

#include "FlatbufferLocate.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace tpu::isa::bmodel {

namespace fb = ::bmodel;

namespace {

/// Command streams are zero-padded to a multiple of this many bytes
/// (isa/docs/bm1684x.md 4.1, 7.2 CmdGroup).
constexpr size_t kStreamAlign = 128;
/// The header stores the section sizes as 32-bit words.
constexpr uint64_t kMaxSectionSize = std::numeric_limits<uint32_t>::max();
/// FlatBuffers cannot address more than 2 GiB - 1 (its offsets are signed
/// 32-bit), so a larger flatbuffers_size cannot be a valid FlatBuffer.
constexpr uint64_t kMaxFlatbufferSize = FLATBUFFERS_MAX_BUFFER_SIZE;
/// Upper bound on the tables the missing-field diagnosis visits, so that a
/// hostile file whose vectors all point at the same tables cannot make the
/// walk quadratic.
constexpr unsigned kDiagnosisBudget = 100000;

/// "<source>: at byte <n> (0x..): <what>".
[[noreturn]] void fail(const std::string &source, uint64_t offset,
                       const std::string &what) {
  throw Error(source + ": at byte " + std::to_string(offset) + " (" +
              formatHex(offset) + "): " + what);
}

uint32_t readLe32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

void writeLe32(uint8_t *p, uint32_t v) {
  for (unsigned i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

/// The position of the first byte of \p s that is not part of well-formed
/// UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF) or
/// is a NUL; nothing when the whole string is well-formed.
std::optional<size_t> badUtf8(const std::string &s) {
  const auto *p = reinterpret_cast<const uint8_t *>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    if (c == 0)
      return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (n - i < len)
      return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        return i;
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    static constexpr uint32_t kMinOf[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOf[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Naming a missing required field
//===----------------------------------------------------------------------===//

/// A bounds-checked walk over the raw FlatBuffer, used only after the
/// generated verifier has rejected the buffer, to tell the user which
/// required field is missing. Every accessor returns nullopt on malformed
/// data; the walk then gives up and the caller reports a generic failure.
class RawWalker {
public:
  RawWalker(const uint8_t *buf, size_t size) : buf_(buf), size_(size) {}

  struct Missing {
    size_t tableOffset; ///< Offset of the table inside the FlatBuffer.
    std::string path;   ///< e.g. "Model.net[0].name".
  };

  std::optional<Missing> findMissing() {
    auto root = deref(0);
    if (!root)
      return std::nullopt;
    return checkModel(*root);
  }

private:
  std::optional<uint32_t> u32(size_t pos) const {
    if (pos > size_ || size_ - pos < 4)
      return std::nullopt;
    return readLe32(buf_ + pos);
  }
  std::optional<uint16_t> u16(size_t pos) const {
    if (pos > size_ || size_ - pos < 2)
      return std::nullopt;
    return uint16_t(buf_[pos] | buf_[pos + 1] << 8);
  }
  /// Follows the uoffset stored at `pos`.
  std::optional<size_t> deref(size_t pos) const {
    auto off = u32(pos);
    if (!off || *off == 0 || size_t(*off) > size_ - pos)
      return std::nullopt;
    return pos + *off;
  }
  /// Position of field `id` of the table at `table`: 0 when absent.
  std::optional<size_t> field(size_t table, unsigned id) {
    if (++visited_ > kDiagnosisBudget)
      return std::nullopt;
    auto soff = u32(table);
    if (!soff)
      return std::nullopt;
    int64_t vtable = int64_t(table) - int64_t(int32_t(*soff));
    if (vtable < 0 || size_t(vtable) >= size_)
      return std::nullopt;
    auto vsize = u16(size_t(vtable));
    if (!vsize)
      return std::nullopt;
    size_t slot = 4 + 2 * size_t(id);
    if (slot + 2 > *vsize)
      return size_t(0);
    auto foff = u16(size_t(vtable) + slot);
    if (!foff)
      return std::nullopt;
    return *foff == 0 ? size_t(0) : table + *foff;
  }
  /// The table positions of a vector-of-tables field; empty when absent.
  std::optional<std::vector<size_t>> tables(size_t table, unsigned id) {
    auto pos = field(table, id);
    if (!pos)
      return std::nullopt;
    std::vector<size_t> out;
    if (*pos == 0)
      return out;
    auto vec = deref(*pos);
    if (!vec)
      return std::nullopt;
    auto len = u32(*vec);
    if (!len || *len > (size_ - *vec - 4) / 4)
      return std::nullopt;
    for (uint32_t i = 0; i < *len; ++i) {
      auto t = deref(*vec + 4 + 4 * size_t(i));
      if (!t)
        return std::nullopt;
      out.push_back(*t);
    }
    return out;
  }

  /// Checks that the listed fields exist; returns the first missing one.
  std::optional<std::optional<Missing>>
  require(size_t table, const std::string &path,
          std::initializer_list<std::pair<unsigned, const char *>> fields) {
    for (auto [id, name] : fields) {
      auto pos = field(table, id);
      if (!pos)
        return std::nullopt;
      if (*pos == 0)
        return std::optional<Missing>(Missing{table, path + "." + name});
    }
    return std::optional<Missing>();
  }

  using Result = std::optional<Missing>;

// Each check returns a missing field, or nothing; malformed data ends the
// walk with nothing as well (the verifier's generic message then stands).
#define TPU_REQUIRE(table, path, ...)                                          \
  do {                                                                         \
    auto r = require(table, path, {__VA_ARGS__});                              \
    if (!r)                                                                    \
      return std::nullopt;                                                     \
    if (*r)                                                                    \
      return *r;                                                               \
  } while (false)

  Result checkTensors(size_t table, unsigned id, const std::string &path) {
    auto ts = tables(table, id);
    if (!ts)
      return std::nullopt;
    for (size_t i = 0; i < ts->size(); ++i)
      TPU_REQUIRE((*ts)[i], path + "[" + std::to_string(i) + "]", {0, "name"});
    return std::nullopt;
  }

  Result checkModule(size_t model, unsigned id, const std::string &path) {
    auto pos = field(model, id);
    if (!pos || *pos == 0)
      return std::nullopt;
    auto t = deref(*pos);
    if (!t)
      return std::nullopt;
    TPU_REQUIRE(*t, path, {0, "file_name"}, {1, "binary"});
    return std::nullopt;
  }

  Result checkModel(size_t model) {
    TPU_REQUIRE(model, "Model", {0, "type"}, {1, "version"}, {2, "time"},
                {3, "chip"}, {4, "net"});
    if (auto r = checkModule(model, 6, "Model.kernel_module"))
      return r;
    if (auto r = checkModule(model, 8, "Model.cpuop_module"))
      return r;
    auto nets = tables(model, 4);
    if (!nets)
      return std::nullopt;
    for (size_t n = 0; n < nets->size(); ++n) {
      std::string netPath = "Model.net[" + std::to_string(n) + "]";
      TPU_REQUIRE((*nets)[n], netPath, {0, "name"});
      auto params = tables((*nets)[n], 3);
      if (!params)
        return std::nullopt;
      for (size_t s = 0; s < params->size(); ++s) {
        size_t p = (*params)[s];
        std::string path = netPath + ".parameter[" + std::to_string(s) + "]";
        TPU_REQUIRE(p, path, {0, "input_tensor"}, {1, "output_tensor"});
        if (auto r = checkTensors(p, 0, path + ".input_tensor"))
          return r;
        if (auto r = checkTensors(p, 1, path + ".output_tensor"))
          return r;
        auto subnets = tables(p, 12);
        if (!subnets)
          return std::nullopt;
        for (size_t k = 0; k < subnets->size(); ++k) {
          std::string sub = path + ".sub_net[" + std::to_string(k) + "]";
          if (auto r = checkTensors((*subnets)[k], 3, sub + ".input_tensor"))
            return r;
          if (auto r = checkTensors((*subnets)[k], 4, sub + ".output_tensor"))
            return r;
        }
        auto coeff = field(p, 4);
        if (!coeff)
          return std::nullopt;
        if (*coeff != 0) {
          auto c = deref(*coeff);
          if (!c)
            return std::nullopt;
          auto locs = tables(*c, 3);
          if (!locs)
            return std::nullopt;
          for (size_t i = 0; i < locs->size(); ++i)
            TPU_REQUIRE((*locs)[i],
                        path + ".coeff_mem.location[" + std::to_string(i) + "]",
                        {0, "name"});
        }
      }
    }
    return std::nullopt;
  }
#undef TPU_REQUIRE

  const uint8_t *buf_;
  size_t size_;
  unsigned visited_ = 0;
};

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// The elements of a [ulong] vector. The FlatBuffers 2.0 verifier checks
/// only the 4-byte alignment of a vector's length, so 8-byte elements may be
/// misaligned: copy them byte-wise instead of through the typed accessor.
std::vector<uint64_t> readU64s(const flatbuffers::Vector<uint64_t> *v) {
  std::vector<uint64_t> out;
  if (!v)
    return out;
  out.resize(v->size());
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t *p = v->Data() + i * sizeof(uint64_t);
    uint64_t x = 0;
    for (unsigned b = 0; b < sizeof(uint64_t); ++b)
      x |= uint64_t(p[b]) << (8 * b);
    out[i] = x;
  }
  return out;
}

/// Converts the verified FlatBuffer into our structs, checking what the
/// verifier cannot (ranges in the binary section, stream contents, ...).
class Reader {
public:
  Reader(const std::string &source, const uint8_t *fbBase, size_t fbFileOffset,
         const uint8_t *binary, size_t binaryFileOffset, size_t binarySize,
         const ParseOptions &options)
      : source_(source), fbBase_(fbBase), fbFileOffset_(fbFileOffset),
        binary_(binary), binaryFileOffset_(binaryFileOffset),
        binarySize_(binarySize), options_(options) {}

  Model read(const fb::Model &m) {
    Model model;
    model.type = m.type()->str();
    model.version = m.version()->str();
    model.time = m.time()->str();
    model.chip = m.chip()->str();
    if (model.chip != kChipName && model.chip != kChipAlias)
      fail(source_, offsetOf(m.chip()),
           "chip is '" + model.chip + "'; only " + kChipName +
               " models are supported");
    model.neuronSize = m.neuron_size();
    model.deviceNum = m.device_num();
    model.bmodelType = m.bmodel_type();
    if (m.machine())
      model.machine = m.machine()->str();
    if (const fb::KernelModule *km = m.kernel_module()) {
      KernelModule k;
      k.fileName = km->file_name()->str();
      k.binary = blob(km->binary(), "kernel_module.binary");
      model.kernelModule = std::move(k);
    }
    if (m.net()->size() == 0)
      fail(source_, offsetOf(m.net()), "the model has no nets");
    for (unsigned n = 0; n < m.net()->size(); ++n)
      model.nets.push_back(readNet(*m.net()->Get(n), n));
    return model;
  }

private:
  size_t offsetOf(const void *p) const {
    return fbFileOffset_ + size_t(static_cast<const uint8_t *>(p) - fbBase_);
  }

  /// Copies a Binary range out of the binary section, checking it lies
  /// inside it. `what` names the field for the message.
  /// {start, size} of a Binary, checked against the binary section.
  std::pair<uint64_t, uint64_t> blobRange(const fb::Binary *b,
                                          const std::string &what) {
    if (!b)
      return {0, 0};
    uint64_t start = b->start(), size = b->size();
    if (start > binarySize_ || size > binarySize_ - start)
      fail(source_, offsetOf(b),
           what + ": Binary {start " + std::to_string(start) + ", size " +
               std::to_string(size) + "} lies outside the binary section of " +
               std::to_string(binarySize_) + " bytes");
    return {start, size};
  }

  std::vector<uint8_t> blob(const fb::Binary *b, const std::string &what) {
    auto [start, size] = blobRange(b, what);
    return std::vector<uint8_t>(binary_ + start, binary_ + start + size);
  }

  Tensor readTensor(const fb::Tensor &t, const std::string &what) {
    Tensor out;
    out.name = t.name()->str();
    checkName(t.name(), what + " name");
    auto dt = dataTypeFromCode(t.data_type());
    if (!dt)
      fail(source_, offsetOf(&t),
           what + " '" + out.name + "': unknown data_type " +
               std::to_string(t.data_type()));
    out.dataType = *dt;
    out.gmemStmode = t.gmem_stmode();
    out.deviceAddr = t.device_addr();
    out.size = t.size();
    if (const auto *shapes = t.shape()) {
      for (const fb::Shape *s : *shapes) {
        out.shapes.push_back(readU64s(s->dim()));
      }
    }
    out.memType = t.mem_type();
    out.scale = t.scale();
    out.zeroPoint = t.zero_point();
    out.hidden = t.hidden();
    out.index = t.index();
    out.cpuAddr = t.cpu_addr();
    out.padH = t.pad_h();
    checkTensorSize(out, &t, what);
    return out;
  }

  /// A name must be well-formed UTF-8 without NUL: it becomes an npz
  /// member name and a key in every tool's output.
  void checkName(const flatbuffers::String *name, const std::string &what) {
    std::string s = name->str();
    if (auto bad = badUtf8(s))
      fail(source_, offsetOf(name->data()) + *bad,
           what + " is not valid UTF-8 (byte " + std::to_string(*bad) +
               " of the name is " + formatHex(uint8_t(s[*bad])) + ")");
  }

  /// The bytes a tensor's first shape needs must fit its size field, and its
  /// element count must not overflow.
  void checkTensorSize(const Tensor &t, const void *table,
                       const std::string &what) {
    if (t.shapes.empty())
      return;
    uint64_t numel = 1;
    for (uint64_t d : t.shapes[0])
      if (__builtin_mul_overflow(numel, d, &numel))
        fail(source_, offsetOf(table),
             what + " '" + t.name +
                 "': the element count of its shape "
                 "overflows 64 bits");
    uint64_t bits;
    if (__builtin_mul_overflow(numel, uint64_t(dataTypeBits(t.dataType)),
                               &bits) ||
        (bits + 7) / 8 > t.size)
      fail(source_, offsetOf(table),
           what + " '" + t.name + "': its shape holds " +
               std::to_string(numel) + " " + dataTypeName(t.dataType) +
               " elements, more than its size of " + std::to_string(t.size) +
               " bytes");
  }

  /// No two tensors of one list may share a name (the outputs are written
  /// by name).
  void checkUniqueNames(
      const std::vector<Tensor> &ts,
      const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>> *v,
      const std::string &what) {
    for (size_t i = 0; i < ts.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (ts[i].name == ts[j].name)
          fail(source_, offsetOf(v->Get(unsigned(i))),
               what + "[" + std::to_string(i) + "] and [" + std::to_string(j) +
                   "] are both named '" + ts[i].name + "'");
  }

  std::vector<Tensor>
  readTensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>> *v,
              const std::string &what) {
    std::vector<Tensor> out;
    if (!v)
      return out;
    for (unsigned i = 0; i < v->size(); ++i)
      out.push_back(
          readTensor(*v->Get(i), what + "[" + std::to_string(i) + "]"));
    checkUniqueNames(out, v, what);
    return out;
  }

  /// Reads one engine's stream of a group and checks it against its
  /// command count and byte count.
  std::vector<uint8_t> readStream(Engine engine, uint32_t num,
                                  const fb::Binary *bin, uint32_t cmdByte,
                                  const void *table, const std::string &what) {
    const char *numName = engine == Engine::Tiu ? "bdc_num" : "gdma_num";
    const char *byteName =
        engine == Engine::Tiu ? "bdc_cmd_byte" : "gdma_cmd_byte";
    std::string streamName =
        what + (engine == Engine::Tiu ? " TIU stream" : " GDMA stream");
    std::vector<uint8_t> bytes = blob(bin, streamName);
    if (num == 0) {
      if (!bytes.empty())
        fail(source_, offsetOf(table),
             streamName + ": " + numName + " is 0 but the stream has " +
                 std::to_string(bytes.size()) + " bytes");
      return bytes;
    }
    if (!bin)
      fail(source_, offsetOf(table),
           streamName + ": " + numName + " is " + std::to_string(num) +
               " but the group has no binary for it");
    if (cmdByte != bytes.size())
      fail(source_, offsetOf(table),
           streamName + ": " + byteName + " is " + std::to_string(cmdByte) +
               " but its Binary holds " + std::to_string(bytes.size()) +
               " bytes");
    size_t fileOffset = binaryFileOffset_ + size_t(bin->start());
    if (bytes.size() % kStreamAlign != 0)
      fail(source_, fileOffset,
           streamName + ": " + std::to_string(bytes.size()) +
               " bytes is not a multiple of " + std::to_string(kStreamAlign));
    std::vector<DecodedCommand> cmds;
    try {
      cmds = splitBuffer(engine, bytes.data(), bytes.size());
    } catch (const Error &e) {
      fail(source_, fileOffset, streamName + ": " + e.what());
    }
    if (cmds.size() != num)
      fail(source_, fileOffset,
           streamName + ": " + numName + " is " + std::to_string(num) +
               " but the stream holds " + std::to_string(cmds.size()) +
               " commands");
    return bytes;
  }

  std::vector<CmdGroup>
  readGroups(const flatbuffers::Vector<flatbuffers::Offset<fb::CmdGroup>> *v,
             const std::string &what) {
    std::vector<CmdGroup> out;
    if (!v)
      return out;
    for (unsigned i = 0; i < v->size(); ++i) {
      const fb::CmdGroup &g = *v->Get(i);
      std::string name = what + " group " + std::to_string(i);
      CmdGroup group;
      group.bdcNum = g.bdc_num();
      group.gdmaNum = g.gdma_num();
      group.tiu = readStream(Engine::Tiu, g.bdc_num(), g.binary_bdc(),
                             g.bdc_cmd_byte(), &g, name);
      group.gdma = readStream(Engine::Gdma, g.gdma_num(), g.binary_gdma(),
                              g.gdma_cmd_byte(), &g, name);
      out.push_back(std::move(group));
    }
    return out;
  }

  Stage readStage(const fb::NetParameter &p, const std::string &what) {
    Stage s;
    s.inputs = readTensors(p.input_tensor(), what + " input");
    s.outputs = readTensors(p.output_tensor(), what + " output");
    s.ctxAddr = p.ctx_addr();
    s.ctxSize = p.ctx_size();
    s.ctxSizes = readU64s(p.ctx_sizes());
    if (const fb::CoeffMem *c = p.coeff_mem()) {
      s.coeffAddr = c->address();
      if (c->check_code())
        s.checkCode.assign(c->check_code()->begin(), c->check_code()->end());
      std::future<Sha256Digest> digest;
      const uint8_t *coeffBytes = nullptr;
      bool deferred = false;
      if (options_.loadCoefficients) {
        // The check code of large coefficients is computed from the file's
        // bytes on a second thread while they are copied (the two passes
        // over tens of megabytes take about as long each); the digest is
        // compared below, before the reader returns, or, deferred
        // (ParseOptions::deferCheckCode), after it returned.
        auto [start, size] =
            blobRange(c->binary_coeff(), what + " coeff_mem.binary_coeff");
        coeffBytes = binary_ + start;
        constexpr uint64_t kThreadBytes = uint64_t(1) << 20;
        deferred = options_.deferCheckCode && options_.verifyCheckCode &&
                   c->check_code() && size >= kThreadBytes && keepAlive &&
                   pending;
        if (options_.verifyCheckCode && c->check_code() && !deferred)
          digest = std::async(size >= kThreadBytes ? std::launch::async
                                                   : std::launch::deferred,
                              [p = binary_ + start, n = size] {
                                return sha256(p, n);
                              });
        if (options_.coefficientsInPlace && keepAlive) {
          s.coeffInPlace = binary_ + start;
          s.coeffInPlaceBytes = size;
          s.coeffKeep = keepAlive;
        } else {
          s.coeff.assign(binary_ + start, binary_ + start + size);
        }
      } else {
        s.coeffNotLoaded =
            blobRange(c->binary_coeff(), what + " coeff_mem.binary_coeff")
                .second;
      }
      if (options_.verifyCheckCode && options_.loadCoefficients) {
        if (!c->check_code())
          fail(source_, offsetOf(c),
               what + " coeff_mem has no check_code: the coefficients cannot "
                      "be verified");
        if (deferred)
          deferCheckCoeff(s, *c, what, coeffBytes);
        else
          checkCoeff(s, *c, what, digest.get());
      }
    } else if (options_.verifyCheckCode && options_.loadCoefficients) {
      // Every writer (ours, tpu-mlir) stores coeff_mem with its check code,
      // also for a stage without weights.
      fail(source_, offsetOf(&p),
           what + " has no coeff_mem: the coefficients and their check code "
                  "are missing");
    }
    s.groups = readGroups(p.cmd_group(), what);
    if (const auto *subnets = p.sub_net()) {
      for (unsigned i = 0; i < subnets->size(); ++i) {
        const fb::SubNet &sn = *subnets->Get(i);
        std::string name = what + " subnet " + std::to_string(i);
        SubNet sub;
        sub.id = sn.id();
        if (sub.id >= 0 && unsigned(sub.id) != i)
          fail(source_, offsetOf(&sn),
               name + ": id is " + std::to_string(sub.id) +
                   " but the subnet is at position " + std::to_string(i));
        sub.mode = sn.subnet_mode();
        sub.isDynamic = sn.is_dynamic();
        sub.groups = readGroups(sn.cmd_group(), name);
        sub.inputs = readTensors(sn.input_tensor(), name + " input");
        sub.outputs = readTensors(sn.output_tensor(), name + " output");
        if (sn.next_subnet_ids())
          sub.nextSubnetIds.assign(sn.next_subnet_ids()->begin(),
                                   sn.next_subnet_ids()->end());
        s.subnets.push_back(std::move(sub));
      }
    }
    s.ioAddr = p.io_addr();
    s.ioSize = p.io_size();
    s.isDynamic = p.is_dynamic();
    s.nDynamic = p.n_dynamic();
    s.hWDynamic = p.h_w_dynamic();
    s.cpuMemSize = p.cpu_mem_size();
    s.coreNum = p.core_num();
    return s;
  }

  /// The stored check code must be the SHA-256 of the coefficients,
  /// \p digest.
  /// The comparison of a stage's check code with its coefficients' digest:
  /// everything of the message but the digest is fixed when it is made.
  struct CoeffCheck {
    std::string source;
    uint64_t offset;
    std::string field;
    size_t count;
    std::string where;
    std::vector<uint8_t> expected;

    void operator()(const Sha256Digest &digest) const {
      if (!std::equal(digest.begin(), digest.end(), expected.begin()))
        fail(source, offset,
             field + " does not match: the SHA-256 of the " +
                 std::to_string(count) + " coefficient bytes" + where + " is " +
                 hexString(digest) + ", the file stores " +
                 toHexString(expected) +
                 "; the coefficients or the check code are corrupt");
    }
  };

  /// Checks the check code's size and prepares the comparison.
  CoeffCheck coeffCheck(const Stage &s, const fb::CoeffMem &c,
                        const std::string &what) {
    const auto *code = c.check_code();
    std::string field = what + " coeff_mem.check_code";
    if (code->size() != kCheckCodeSize)
      fail(source_, offsetOf(code),
           field + " holds " + std::to_string(code->size()) +
               " bytes; a SHA-256 has " + std::to_string(kCheckCodeSize));
    std::string where =
        c.binary_coeff()
            ? " at byte " +
                  std::to_string(binaryFileOffset_ + c.binary_coeff()->start())
            : " (coeff_mem.binary_coeff is absent)";
    return {source_,         offsetOf(code),   std::move(field),
            s.coeffLoaded(), std::move(where), s.checkCode};
  }

  void checkCoeff(const Stage &s, const fb::CoeffMem &c,
                  const std::string &what, const Sha256Digest &digest) {
    coeffCheck(s, c, what)(digest);
  }

  /// checkCoeff after the reader returned: the file's bytes at `bytes`
  /// (the stage's coefficients) hashed as PendingCheckCode says, which
  /// keepAlive keeps mapped until it is done.
  void deferCheckCoeff(const Stage &s, const fb::CoeffMem &c,
                       const std::string &what, const uint8_t *bytes) {
    pending->push_back(std::make_shared<PendingCheckCode>(
        keepAlive, bytes, s.coeffLoaded(), coeffCheck(s, c, what)));
  }

  static std::string toHexString(const std::vector<uint8_t> &bytes) {
    static const char *kDigits = "0123456789abcdef";
    std::string out;
    for (uint8_t b : bytes) {
      out += kDigits[b >> 4];
      out += kDigits[b & 15];
    }
    return out;
  }

  Net readNet(const fb::Net &n, unsigned index) {
    Net net;
    net.name = n.name()->str();
    checkName(n.name(), "net " + std::to_string(index) + " name");
    net.addrMode = n.addr_mode();
    std::string what = "net " + std::to_string(index) + " '" + net.name + "'";
    if (!n.parameter() || n.parameter()->size() == 0)
      fail(source_, offsetOf(&n), what + " has no stages (parameter)");
    for (unsigned s = 0; s < n.parameter()->size(); ++s)
      net.stages.push_back(readStage(*n.parameter()->Get(s),
                                     what + " stage " + std::to_string(s)));
    return net;
  }

  const std::string &source_;
  const uint8_t *fbBase_;
  size_t fbFileOffset_;
  const uint8_t *binary_;
  size_t binaryFileOffset_;
  size_t binarySize_;
  const ParseOptions &options_;

public:
  /// Set by readModel for ParseOptions::deferCheckCode: what keeps the
  /// file's bytes alive for the background hashes, and where they go.
  std::shared_ptr<const void> keepAlive;
  std::vector<std::shared_ptr<PendingCheckCode>> *pending = nullptr;
};

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Appends blobs to the binary section without alignment, reusing the range
/// of an identical earlier blob.
class BlobSection {
public:
  fb::Binary add(const std::vector<uint8_t> &blob) {
    uint64_t h = hash(blob);
    auto range = index_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
      const fb::Binary &b = it->second;
      if (b.size() == blob.size() &&
          std::equal(blob.begin(), blob.end(), bytes_.begin() + b.start()))
        return b;
    }
    fb::Binary b(bytes_.size(), blob.size());
    bytes_.insert(bytes_.end(), blob.begin(), blob.end());
    index_.emplace(h, b);
    return b;
  }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

private:
  /// FNV-1a, 64-bit.
  static uint64_t hash(const std::vector<uint8_t> &blob) {
    constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ULL;
    constexpr uint64_t kPrime = 0x100000001b3ULL;
    uint64_t h = kOffsetBasis;
    for (uint8_t b : blob)
      h = (h ^ b) * kPrime;
    return h;
  }

  std::vector<uint8_t> bytes_;
  std::unordered_multimap<uint64_t, fb::Binary> index_;
};

class Writer {
public:
  std::vector<uint8_t> write(const Model &model) {
    if (model.nets.empty())
      throw Error("bmodel writer: the model has no nets");
    uint64_t neuronSize = model.neuronSize;
    if (neuronSize == 0)
      for (const Net &net : model.nets)
        for (const Stage &s : net.stages)
          neuronSize = std::max(neuronSize, s.ctxSize);

    std::vector<flatbuffers::Offset<fb::Net>> nets;
    for (const Net &net : model.nets)
      nets.push_back(writeNet(net));
    auto netVec = fbb_.CreateVector(nets);

    flatbuffers::Offset<fb::KernelModule> kernel;
    if (model.kernelModule) {
      auto name = fbb_.CreateString(model.kernelModule->fileName);
      fb::Binary bin = blobs_.add(model.kernelModule->binary);
      fb::KernelModuleBuilder kb(fbb_);
      kb.add_file_name(name);
      kb.add_binary(&bin);
      kernel = kb.Finish();
    }
    auto type = fbb_.CreateString(model.type);
    auto version = fbb_.CreateString(model.version);
    auto time = fbb_.CreateString(model.time);
    auto chip = fbb_.CreateString(model.chip);
    flatbuffers::Offset<flatbuffers::String> machine;
    if (!model.machine.empty())
      machine = fbb_.CreateString(model.machine);

    fb::ModelBuilder mb(fbb_);
    mb.add_type(type);
    mb.add_version(version);
    mb.add_time(time);
    mb.add_chip(chip);
    mb.add_net(netVec);
    mb.add_neuron_size(neuronSize);
    if (model.kernelModule)
      mb.add_kernel_module(kernel);
    mb.add_device_num(model.deviceNum);
    mb.add_bmodel_type(model.bmodelType);
    if (!model.machine.empty())
      mb.add_machine(machine);
    fbb_.Finish(mb.Finish());

    const std::vector<uint8_t> &binary = blobs_.bytes();
    if (fbb_.GetSize() > kMaxSectionSize || binary.size() > kMaxSectionSize)
      throw Error("bmodel writer: the FlatBuffer (" +
                  std::to_string(fbb_.GetSize()) +
                  " bytes) or the binary "
                  "section (" +
                  std::to_string(binary.size()) +
                  " bytes) does not fit the header's 32-bit size fields");
    std::vector<uint8_t> out(kHeaderSize, 0);
    writeLe32(&out[kMagicOffset], kMagic);
    writeLe32(&out[kHeaderSizeOffset], kHeaderSize);
    writeLe32(&out[kFlatbuffersSizeOffset], uint32_t(fbb_.GetSize()));
    writeLe32(&out[kBinarySizeOffset], uint32_t(binary.size()));
    out.insert(out.end(), fbb_.GetBufferPointer(),
               fbb_.GetBufferPointer() + fbb_.GetSize());
    out.insert(out.end(), binary.begin(), binary.end());
    return out;
  }

private:
  flatbuffers::Offset<fb::Tensor> writeTensor(const Tensor &t) {
    std::vector<flatbuffers::Offset<fb::Shape>> shapes;
    for (const auto &dims : t.shapes)
      shapes.push_back(fb::CreateShape(fbb_, fbb_.CreateVector(dims)));
    auto shapeVec = fbb_.CreateVector(shapes);
    auto name = fbb_.CreateString(t.name);
    fb::TensorBuilder tb(fbb_);
    tb.add_name(name);
    tb.add_data_type(uint32_t(t.dataType));
    tb.add_gmem_stmode(t.gmemStmode);
    tb.add_device_addr(t.deviceAddr);
    tb.add_size(t.size);
    tb.add_shape(shapeVec);
    tb.add_mem_type(t.memType);
    tb.add_scale(t.scale);
    tb.add_cpu_addr(t.cpuAddr);
    tb.add_pad_h(t.padH);
    tb.add_zero_point(t.zeroPoint);
    tb.add_hidden(t.hidden);
    tb.add_index(t.index);
    return tb.Finish();
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>>
  writeTensors(const std::vector<Tensor> &ts) {
    std::vector<flatbuffers::Offset<fb::Tensor>> out;
    for (const Tensor &t : ts)
      out.push_back(writeTensor(t));
    return fbb_.CreateVector(out);
  }

  /// Checks one stream the way the reader will, so that we never write a
  /// file we would reject.
  void checkStream(Engine engine, uint32_t num,
                   const std::vector<uint8_t> &bytes, const std::string &what) {
    std::string name =
        what + (engine == Engine::Tiu ? " TIU stream" : " GDMA stream");
    const char *numName = engine == Engine::Tiu ? "bdcNum" : "gdmaNum";
    if (bytes.empty()) {
      if (num != 0)
        throw Error("bmodel writer: " + name + ": " + numName + " is " +
                    std::to_string(num) + " but the stream is empty");
      return;
    }
    if (bytes.size() > kMaxSectionSize || bytes.size() % kStreamAlign != 0)
      throw Error("bmodel writer: " + name + ": " +
                  std::to_string(bytes.size()) +
                  " bytes is not a multiple of " +
                  std::to_string(kStreamAlign) + " below 4 GiB");
    std::vector<DecodedCommand> cmds;
    try {
      cmds = splitBuffer(engine, bytes.data(), bytes.size());
    } catch (const Error &e) {
      throw Error("bmodel writer: " + name + ": " + e.what());
    }
    if (cmds.size() != num)
      throw Error("bmodel writer: " + name + ": " + numName + " is " +
                  std::to_string(num) + " but the stream holds " +
                  std::to_string(cmds.size()) + " commands");
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::CmdGroup>>>
  writeGroups(const std::vector<CmdGroup> &groups, const std::string &what) {
    std::vector<flatbuffers::Offset<fb::CmdGroup>> out;
    for (size_t i = 0; i < groups.size(); ++i) {
      const CmdGroup &g = groups[i];
      std::string name = what + " group " + std::to_string(i);
      checkStream(Engine::Tiu, g.bdcNum, g.tiu, name);
      checkStream(Engine::Gdma, g.gdmaNum, g.gdma, name);
      fb::CmdGroupBuilder gb(fbb_);
      gb.add_bdc_num(g.bdcNum);
      gb.add_gdma_num(g.gdmaNum);
      if (!g.tiu.empty()) {
        fb::Binary b = blobs_.add(g.tiu);
        gb.add_binary_bdc(&b);
      }
      if (!g.gdma.empty()) {
        fb::Binary b = blobs_.add(g.gdma);
        gb.add_binary_gdma(&b);
      }
      gb.add_bdc_cmd_byte(uint32_t(g.tiu.size()));
      gb.add_gdma_cmd_byte(uint32_t(g.gdma.size()));
      out.push_back(gb.Finish());
    }
    return fbb_.CreateVector(out);
  }

  flatbuffers::Offset<fb::SubNet> writeSubnet(const SubNet &s,
                                              const std::string &what) {
    auto groups = writeGroups(s.groups, what);
    auto inputs = writeTensors(s.inputs);
    auto outputs = writeTensors(s.outputs);
    auto next = fbb_.CreateVector(s.nextSubnetIds);
    fb::SubNetBuilder sb(fbb_);
    sb.add_subnet_mode(s.mode);
    sb.add_cmd_group(groups);
    sb.add_input_tensor(inputs);
    sb.add_output_tensor(outputs);
    sb.add_is_dynamic(s.isDynamic);
    sb.add_id(s.id);
    sb.add_next_subnet_ids(next);
    return sb.Finish();
  }

  flatbuffers::Offset<fb::NetParameter> writeStage(const Stage &s,
                                                   const std::string &what) {
    // The coefficients go first into the binary section, as in Sophgo's
    // files; empty blobs get no range at all.
    std::optional<fb::Binary> coeffBin;
    if (!s.coeff.empty())
      coeffBin = blobs_.add(s.coeff);
    auto inputs = writeTensors(s.inputs);
    auto outputs = writeTensors(s.outputs);
    auto groups = writeGroups(s.groups, what);
    std::vector<flatbuffers::Offset<fb::SubNet>> subnets;
    if (s.subnets.empty()) {
      subnets.push_back(writeSubnet(defaultSubnet(s), what + " subnet 0"));
    } else {
      for (size_t i = 0; i < s.subnets.size(); ++i) {
        if (s.subnets[i].id >= 0 && size_t(s.subnets[i].id) != i)
          throw Error("bmodel writer: " + what + " subnet " +
                      std::to_string(i) + ": id is " +
                      std::to_string(s.subnets[i].id) +
                      " but must be its position");
        subnets.push_back(
            writeSubnet(s.subnets[i], what + " subnet " + std::to_string(i)));
      }
    }
    auto subnetVec = fbb_.CreateVector(subnets);
    std::vector<uint64_t> ctxSizes = s.ctxSizes;
    if (ctxSizes.empty())
      ctxSizes.push_back(s.ctxSize);
    auto ctxSizesVec = fbb_.CreateVector(ctxSizes);

    std::array<uint8_t, kCheckCodeSize> digest =
        sha256(s.coeff.data(), s.coeff.size());
    auto checkCode = fbb_.CreateVector(digest.data(), digest.size());
    fb::CoeffMemBuilder cb(fbb_);
    cb.add_address(s.coeffAddr);
    cb.add_check_code(checkCode);
    if (coeffBin)
      cb.add_binary_coeff(&*coeffBin);
    auto coeff = cb.Finish();

    fb::NetParameterBuilder pb(fbb_);
    pb.add_input_tensor(inputs);
    pb.add_output_tensor(outputs);
    pb.add_ctx_addr(s.ctxAddr);
    pb.add_ctx_size(s.ctxSize);
    pb.add_coeff_mem(coeff);
    pb.add_is_dynamic(s.isDynamic);
    pb.add_n_dynamic(s.nDynamic);
    pb.add_h_w_dynamic(s.hWDynamic);
    pb.add_cmd_group(groups);
    pb.add_sub_net(subnetVec);
    pb.add_cpu_mem_size(s.cpuMemSize);
    pb.add_ctx_sizes(ctxSizesVec);
    pb.add_core_num(s.coreNum);
    pb.add_io_addr(s.ioAddr);
    pb.add_io_size(s.ioSize);
    return pb.Finish();
  }

  flatbuffers::Offset<fb::Net> writeNet(const Net &net) {
    std::string what = "net '" + net.name + "'";
    if (net.stages.empty())
      throw Error("bmodel writer: " + what + " has no stages");
    std::vector<flatbuffers::Offset<fb::NetParameter>> stages;
    for (size_t i = 0; i < net.stages.size(); ++i)
      stages.push_back(
          writeStage(net.stages[i], what + " stage " + std::to_string(i)));
    auto stageVec = fbb_.CreateVector(stages);
    auto name = fbb_.CreateString(net.name);
    fb::NetBuilder nb(fbb_);
    nb.add_name(name);
    nb.add_parameter(stageVec);
    nb.add_addr_mode(net.addrMode);
    return nb.Finish();
  }

  flatbuffers::FlatBufferBuilder fbb_;
  BlobSection blobs_;
};

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool Tensor::operator==(const Tensor &o) const {
  return name == o.name && dataType == o.dataType &&
         gmemStmode == o.gmemStmode && deviceAddr == o.deviceAddr &&
         size == o.size && shapes == o.shapes && memType == o.memType &&
         scale == o.scale && zeroPoint == o.zeroPoint && hidden == o.hidden &&
         index == o.index && cpuAddr == o.cpuAddr && padH == o.padH;
}

bool CmdGroup::operator==(const CmdGroup &o) const {
  return bdcNum == o.bdcNum && gdmaNum == o.gdmaNum && tiu == o.tiu &&
         gdma == o.gdma;
}

bool SubNet::operator==(const SubNet &o) const {
  return id == o.id && mode == o.mode && isDynamic == o.isDynamic &&
         groups == o.groups && inputs == o.inputs && outputs == o.outputs &&
         nextSubnetIds == o.nextSubnetIds;
}

bool Stage::operator==(const Stage &o) const {
  return inputs == o.inputs && outputs == o.outputs && ctxAddr == o.ctxAddr &&
         ctxSize == o.ctxSize && ctxSizes == o.ctxSizes &&
         coeffAddr == o.coeffAddr && coeff == o.coeff &&
         checkCode == o.checkCode && groups == o.groups &&
         subnets == o.subnets && ioAddr == o.ioAddr && ioSize == o.ioSize &&
         isDynamic == o.isDynamic && nDynamic == o.nDynamic &&
         hWDynamic == o.hWDynamic && cpuMemSize == o.cpuMemSize &&
         coreNum == o.coreNum;
}

bool Net::operator==(const Net &o) const {
  return name == o.name && stages == o.stages && addrMode == o.addrMode;
}

bool Model::operator==(const Model &o) const {
  return type == o.type && version == o.version && time == o.time &&
         chip == o.chip && nets == o.nets && neuronSize == o.neuronSize &&
         deviceNum == o.deviceNum && kernelModule == o.kernelModule &&
         bmodelType == o.bmodelType && machine == o.machine;
}

SubNet defaultSubnet(const Stage &stage) {
  SubNet s;
  s.id = 0;
  s.mode = kSubnetTpu;
  s.groups = stage.groups;
  s.inputs = stage.inputs;
  s.outputs = stage.outputs;
  return s;
}

Header parseHeader(const uint8_t *data, size_t size,
                   const std::string &sourceName) {
  if (size < kHeaderSize)
    fail(sourceName, size,
         "file is " + std::to_string(size) + " bytes, shorter than the " +
             std::to_string(kHeaderSize) + "-byte bmodel header");
  Header h;
  h.magic = readLe32(data + kMagicOffset);
  h.headerSize = readLe32(data + kHeaderSizeOffset);
  h.flatbuffersSize = readLe32(data + kFlatbuffersSizeOffset);
  h.binarySize = readLe32(data + kBinarySizeOffset);
  if (h.magic == kLegacyMagic)
    fail(sourceName, kMagicOffset,
         "magic " + formatHex(h.magic) +
             " marks a bmodel of the older bmtap2 toolchain, which is not "
             "supported");
  if (h.magic != kMagic)
    fail(sourceName, kMagicOffset,
         "bad magic " + formatHex(h.magic) + " (expected " + formatHex(kMagic) +
             "): not a bmodel file");
  if (h.headerSize != kHeaderSize)
    fail(sourceName, kHeaderSizeOffset,
         "header_size is " + std::to_string(h.headerSize) + ", expected " +
             std::to_string(kHeaderSize) +
             ": encrypted bmodels are not supported");
  uint64_t end = uint64_t(kHeaderSize) + h.flatbuffersSize + h.binarySize;
  if (end > size)
    fail(sourceName, kFlatbuffersSizeOffset,
         "header " + std::to_string(kHeaderSize) + " + flatbuffers_size " +
             std::to_string(h.flatbuffersSize) + " + binary_size " +
             std::to_string(h.binarySize) + " = " + std::to_string(end) +
             " bytes runs past the end of the file (" + std::to_string(size) +
             " bytes): the file is truncated or corrupt");
  return h;
}

namespace {

/// parseModel; with `keepAlive` (what keeps [data, data + size) alive) the
/// check codes may be deferred (ParseOptions::deferCheckCode).
Model parseModelKeeping(const uint8_t *data, size_t size,
                        const std::string &sourceName,
                        const ParseOptions &options,
                        std::shared_ptr<const void> keepAlive) {
  Header h = parseHeader(data, size, sourceName);
  uint64_t end = uint64_t(kHeaderSize) + h.flatbuffersSize + h.binarySize;
  if (end < size)
    fail(sourceName, end,
         std::to_string(size - end) +
             " bytes of trailing data: the header's flatbuffers_size " +
             std::to_string(h.flatbuffersSize) + " and binary_size " +
             std::to_string(h.binarySize) + " end the model at byte " +
             std::to_string(end) + " of " + std::to_string(size));
  if (h.flatbuffersSize == 0 || h.flatbuffersSize >= kMaxFlatbufferSize)
    fail(sourceName, kFlatbuffersSizeOffset,
         "flatbuffers_size " + std::to_string(h.flatbuffersSize) +
             " cannot hold a FlatBuffer");

  // FlatBuffers reads scalars in place, so its buffer must be aligned as
  // the verifier assumes (relative to the buffer start, up to 8 bytes).
  const uint8_t *fbData = data + kHeaderSize;
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(fbData) % alignof(uint64_t) != 0) {
    aligned.resize((h.flatbuffersSize + sizeof(uint64_t) - 1) /
                   sizeof(uint64_t));
    std::memcpy(aligned.data(), fbData, h.flatbuffersSize);
    fbData = reinterpret_cast<const uint8_t *>(aligned.data());
  }

  flatbuffers::Verifier verifier(fbData, h.flatbuffersSize);
  if (!fb::VerifyModelBuffer(verifier)) {
    RawWalker walker(fbData, h.flatbuffersSize);
    if (auto missing = walker.findMissing())
      fail(sourceName, kHeaderSize + missing->tableOffset,
           "FlatBuffer: required field " + missing->path + " is missing");
    // The verifier says only no; repeat its checks to say where.
    if (auto where = detail::locateVerifyFailure(fbData, h.flatbuffersSize,
                                                 fb::ModelTypeTable(), "Model"))
      fail(sourceName, kHeaderSize + where->offset,
           "FlatBuffer verification failed at " + where->path + ": " +
               where->what);
    fail(sourceName, kHeaderSize,
         "FlatBuffer verification failed: the model metadata (" +
             std::to_string(h.flatbuffersSize) +
             " bytes) is corrupt or not a bmodel.Model");
  }

  size_t binaryOffset = size_t(kHeaderSize) + h.flatbuffersSize;
  Reader reader(sourceName, fbData, kHeaderSize, data + binaryOffset,
                binaryOffset, h.binarySize, options);
  if (!keepAlive)
    return reader.read(*fb::GetModel(fbData));
  // Deferred check codes: an error found after a hash started gives way to
  // that hash's mismatch (the check code is checked first otherwise).
  std::vector<std::shared_ptr<PendingCheckCode>> pending;
  reader.keepAlive = std::move(keepAlive);
  reader.pending = &pending;
  Model model;
  try {
    model = reader.read(*fb::GetModel(fbData));
  } catch (...) {
    for (const std::shared_ptr<PendingCheckCode> &p : pending)
      p->await();
    throw;
  }
  model.pendingCheckCodes = std::move(pending);
  return model;
}

} // namespace

Model parseModel(const uint8_t *data, size_t size,
                 const std::string &sourceName, const ParseOptions &options) {
  return parseModelKeeping(data, size, sourceName, options, nullptr);
}

PendingCheckCode::PendingCheckCode(std::shared_ptr<const void> keepAlive,
                                   const uint8_t *bytes, uint64_t size,
                                   Check check)
    : keepAlive_(std::move(keepAlive)), bytes_(bytes), size_(size),
      check_(std::move(check)) {}

bool PendingCheckCode::hashSome(uint64_t maxBytes) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock)
    return false;
  if (done_ == size_)
    return false;
  uint64_t n = std::min(maxBytes, size_ - done_);
  sha_.update(bytes_ + done_, size_t(n));
  done_ += n;
  return done_ < size_;
}

void PendingCheckCode::await() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!digest_) {
    sha_.update(bytes_ + done_, size_t(size_ - done_));
    done_ = size_;
    digest_ = sha_.finish();
  }
  check_(*digest_);
}

bool hashCheckCodes(
    const std::vector<std::shared_ptr<PendingCheckCode>> &pending,
    uint64_t maxBytes) {
  for (const std::shared_ptr<PendingCheckCode> &p : pending)
    if (p->hashSome(maxBytes))
      return true;
  return false;
}

void awaitCheckCodes(const Model &model) {
  for (const std::shared_ptr<PendingCheckCode> &p : model.pendingCheckCodes)
    p->await();
}

std::string notAFile(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "";
  if (S_ISDIR(st.st_mode))
    return "is a directory, not a file";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    return "is a device, not a file";
  return "";
}

std::vector<uint8_t> readFile(const std::string &path) {
  if (std::string why = notAFile(path); !why.empty())
    throw Error(path + ": " + why);
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  constexpr size_t kChunk = 1 << 16;
  for (;;) {
    size_t old = bytes.size();
    bytes.resize(old + kChunk);
    size_t n = std::fread(bytes.data() + old, 1, kChunk, f);
    bytes.resize(old + n);
    if (n < kChunk)
      break;
  }
  bool bad = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (bad)
    throw Error(path + ": read error: " + std::strerror(err));
  return bytes;
}

FileBytes::FileBytes(const std::string &path, const std::string &noun) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open" + (noun.empty() ? "" : " " + noun) +
                ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *p =
        ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      map_ = p;
      data_ = static_cast<const uint8_t *>(p);
      size_ = size_t(st.st_size);
    }
  }
  ::close(fd);
  if (!map_) {
    read_ = readFile(path);
    data_ = read_.data();
    size_ = read_.size();
  }
}

FileBytes::~FileBytes() {
  if (map_)
    ::munmap(map_, size_);
}

Model readModel(const std::string &path, const ParseOptions &options) {
  // Mapped, not read into a buffer: the reader copies what it keeps once,
  // from the page cache, and without loadCoefficients the coefficient pages
  // (most of the file) are never read. With them, the mapping is populated
  // up front (one call instead of a page fault per page). Only a regular,
  // non-empty file is mapped; anything else takes the copying path below
  // and its messages.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size > 0) {
    size_t size = size_t(st.st_size);
    int flags = MAP_PRIVATE | (options.loadCoefficients ? MAP_POPULATE : 0);
    void *p = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
    ::close(fd);
    if (p != MAP_FAILED) {
      // Shared with the deferred check codes' threads, which may outlive
      // this call (ParseOptions::deferCheckCode).
      struct Unmap {
        Unmap(void *p, size_t size) : p(p), size(size) {}
        Unmap(const Unmap &) = delete;
        Unmap &operator=(const Unmap &) = delete;
        ~Unmap() { ::munmap(p, size); }
        void *p;
        size_t size;
      };
      auto mapping = std::make_shared<const Unmap>(p, size);
      return parseModelKeeping(static_cast<const uint8_t *>(p), size, path,
                               options, mapping);
    }
  } else if (fd >= 0) {
    ::close(fd);
  }
  std::vector<uint8_t> bytes = readFile(path);
  return parseModel(bytes.data(), bytes.size(), path, options);
}

std::vector<uint8_t> serializeModel(const Model &model) {
  return Writer().write(model);
}

namespace {

/// Writes all of \p bytes to \p fd; false with errno set on failure.
bool writeAll(int fd, const uint8_t *bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

/// "<dir>/.<name>.tmp.": the prefix of the hidden temporary names of
/// \p path (followed by "<pid>.<n>").
std::string hiddenTempPrefix(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".tmp.";
}

/// Removes the hidden temporaries of \p path left by processes that no
/// longer exist (killed while writing where O_TMPFILE is not available).
void removeStaleTemporaries(const std::string &path) {
  std::string prefix = hiddenTempPrefix(path);
  size_t slash = prefix.rfind('/');
  std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash);
  std::string base =
      slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  while (const dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.compare(0, base.size(), base) != 0)
      continue;
    long pid = std::strtol(n.c_str() + base.size(), nullptr, 10);
    if (pid > 0 && pid != long(::getpid()) && ::kill(pid_t(pid), 0) != 0 &&
        errno == ESRCH)
      ::unlink((dir + "/" + n).c_str());
  }
  ::closedir(d);
}

} // namespace

std::string checkOutputPaths(const std::vector<NamedPath> &outputs,
                             const std::vector<NamedPath> &inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Files compared by their canonical paths (".", "..", symbolic links of
  // the directories resolved; a path that does not exist yet is resolved
  // as far as it exists).
  std::vector<std::pair<const NamedPath *, fs::path>> seen;
  for (const NamedPath &in : inputs)
    if (!in.path.empty())
      seen.emplace_back(&in, fs::weakly_canonical(in.path, ec));
  for (const NamedPath &out : outputs) {
    if (out.path.empty())
      continue;
    std::string named = out.what + " '" + out.path + "'";
    if (fs::is_directory(out.path, ec))
      return named + " is an existing directory; give a file name";
    fs::path dir = fs::path(out.path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec))
      return named + ": " +
             (fs::exists(dir, ec)
                  ? "'" + dir.string() + "' is not a directory"
                  : "the directory '" + dir.string() + "' does not exist");
    fs::path canonical = fs::weakly_canonical(out.path, ec);
    for (const auto &[other, file] : seen)
      if (!canonical.empty() && canonical == file)
        return named + " is the file of " + other->what +
               (other->path == out.path ? "" : " '" + other->path + "'") +
               " too; give each its own file";
    seen.emplace_back(&out, canonical);
  }
  return "";
}

StagedFiles::~StagedFiles() {
  for (const auto &[tmp, path] : staged_)
    ::unlink(tmp.c_str());
}

void StagedFiles::write(
    const std::string &path,
    const std::function<void(const std::string &tmp)> &write) {
  removeStaleTemporaries(path);
  std::string tmp =
      hiddenTempPrefix(path) + std::to_string(::getpid()) + ".staged";
  staged_.emplace_back(tmp, path);
  try {
    write(tmp);
  } catch (const Error &e) {
    // The message names the path the user gave.
    std::string what = e.what();
    for (size_t at = what.find(tmp); at != std::string::npos;
         at = what.find(tmp, at + path.size()))
      what.replace(at, tmp.size(), path);
    throw Error(what);
  }
}

std::vector<std::string> StagedFiles::commit() {
  std::vector<std::string> paths;
  while (!staged_.empty()) {
    auto [tmp, path] = staged_.front();
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot move the written file into place: " +
                  std::strerror(errno));
    staged_.erase(staged_.begin());
    paths.push_back(path);
  }
  return paths;
}

void writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes) {
  writeFileAtomically(path,
                      std::vector<ByteSpan>{{bytes.data(), bytes.size()}});
}

void writeFileAtomically(const std::string &path,
                         const std::vector<ByteSpan> &parts) {
  // The data goes to a file without a name (O_TMPFILE) in the target's
  // directory, so that a process killed while writing leaves nothing
  // behind; once complete it gets a hidden name (linkat through
  // /proc/self/fd) and is renamed over the target, so the target never
  // holds a partial file. Where O_TMPFILE is not supported the data goes to
  // the hidden name directly, and the next write of the same target removes
  // what a killed process left there.
  constexpr unsigned kAttempts = 100;
  // 0666 before the umask, like any file the user creates.
  constexpr mode_t kFileMode = 0666;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(path + ": is a directory; cannot write a file there");
  removeStaleTemporaries(path);

  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  // A missing directory is named as such (not through the temporary file
  // that could not be made in it).
  struct stat dirStat;
  if (::stat(dir.c_str(), &dirStat) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      throw Error(path + ": the directory '" + dir + "' does not exist");
  } else if (!S_ISDIR(dirStat.st_mode)) {
    throw Error(path + ": '" + dir + "' is not a directory");
  }
  std::string prefix =
      hiddenTempPrefix(path) + std::to_string(::getpid()) + ".";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, kFileMode);
  bool anonymous = fd >= 0;
  std::string tmp;
  if (!anonymous) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL &&
        errno != ENOENT)
      throw Error(path + ": cannot create a temporary file in '" + dir +
                  "': " + std::strerror(errno));
    for (unsigned i = 0; i < kAttempts && fd < 0; ++i) {
      tmp = prefix + std::to_string(i);
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  kFileMode);
      if (fd < 0 && errno != EEXIST)
        break;
    }
    if (fd < 0)
      throw Error(path + ": cannot create temporary file '" + tmp +
                  "': " + std::strerror(errno));
  }
  auto failWith = [&](const std::string &what, int err) {
    if (fd >= 0)
      ::close(fd);
    if (!tmp.empty())
      ::unlink(tmp.c_str());
    throw Error(path + ": " + what + ": " + std::strerror(err));
  };
  for (const ByteSpan &part : parts)
    if (!writeAll(fd, part.data, part.size))
      failWith("write error", errno);
  if (anonymous) {
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    for (unsigned i = 0; i < kAttempts; ++i) {
      tmp = prefix + std::to_string(i);
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(),
                   AT_SYMLINK_FOLLOW) == 0)
        break;
      int err = errno;
      tmp.clear();
      if (err != EEXIST)
        failWith("cannot give the temporary file a name", err);
    }
    if (tmp.empty())
      failWith("cannot give the temporary file a name", EEXIST);
  }
  if (::close(fd) != 0) {
    fd = -1;
    failWith("write error", errno);
  }
  fd = -1;
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    failWith("cannot rename the temporary file into place", errno);
}

void writeModel(const Model &model, const std::string &path) {
  writeFileAtomically(path, serializeModel(model));
}

} // namespace tpu::isa::bmodel
