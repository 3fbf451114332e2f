//===- Runner.cpp - Running a whole bmodel on the simulator ---------------===//
#include "tpusim/Runner.h"

#include "tpu/isa/Command.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Machine.h"
#include "tpu/isa/Numerics.h"
#include "tpusim/Simd.h"

#include <array>
#include <cstring>

namespace tpu::sim {

namespace {

using isa::DataType;
using isa::bmodel::Tensor;

constexpr unsigned kBitsPerByte = 8;
/// The recorded machine's name in messages.
constexpr const char *kRecordedName = "the bmodel's machine";
constexpr unsigned kNibbleBits = 4;
constexpr uint8_t kNibbleMask = 0xF;

std::vector<int64_t> tensorShape(const Tensor &t) {
  if (t.shapes.empty())
    throw Error("tensor '" + t.name + "' has no shape in the bmodel");
  return std::vector<int64_t>(t.shapes[0].begin(), t.shapes[0].end());
}

/// The npz dtype an input array of tensor \p t must have: its own, int8 /
/// uint8 for INT4 / UINT4 (values checked), float32 for the other types
/// numpy has not (BF16, ...).
npz::DType npzDTypeOf(const Tensor &t) {
  switch (t.dataType) {
  case DataType::F16:
    return npz::DType::F16;
  case DataType::Int8:
  case DataType::Int4:
    return npz::DType::I8;
  case DataType::UInt8:
  case DataType::UInt4:
    return npz::DType::U8;
  case DataType::Int16:
    return npz::DType::I16;
  case DataType::UInt16:
    return npz::DType::U16;
  case DataType::Int32:
    return npz::DType::I32;
  case DataType::UInt32:
    return npz::DType::U32;
  default:
    return npz::DType::F32;
  }
}

bool isFloatType(DataType t) {
  return t == DataType::F32 || t == DataType::F16 || t == DataType::BF16;
}

/// Precision and signedness of an integer tensor type.
struct IntType {
  isa::Prec prec;
  bool isSigned;
};

std::optional<IntType> intType(DataType t) {
  switch (t) {
  case DataType::Int8:
    return IntType{isa::Prec::Int8, true};
  case DataType::UInt8:
    return IntType{isa::Prec::Int8, false};
  case DataType::Int16:
    return IntType{isa::Prec::Int16, true};
  case DataType::UInt16:
    return IntType{isa::Prec::Int16, false};
  case DataType::Int32:
    return IntType{isa::Prec::Int32, true};
  case DataType::UInt32:
    return IntType{isa::Prec::Int32, false};
  case DataType::Int4:
    return IntType{isa::Prec::Int4, true};
  case DataType::UInt4:
    return IntType{isa::Prec::Int4, false};
  default:
    return std::nullopt;
  }
}

[[noreturn]] void unsupportedType(const Tensor &t) {
  throw Error("tensor '" + t.name + "' has data type " +
              isa::dataTypeName(t.dataType) +
              ", which tpusim cannot convert to or from numpy");
}

/// Bytes `numel` elements of `t` occupy in global memory.
uint64_t tensorBytes(const Tensor &t, uint64_t numel) {
  return (numel * isa::dataTypeBits(t.dataType) + kBitsPerByte - 1) /
         kBitsPerByte;
}

bool isFloatArray(npz::DType d) {
  return d == npz::DType::F32 || d == npz::DType::F16 || d == npz::DType::F64;
}

/// Stores `v` (already in range) as element `i` of an integer tensor.
void storeInt(std::vector<uint8_t> &buf, uint64_t i, IntType it, int64_t v) {
  unsigned bits = isa::precBits(it.prec);
  if (bits == kNibbleBits) {
    uint8_t nib = uint8_t(v) & kNibbleMask;
    uint8_t &b = buf[i / 2];
    b = (i % 2 == 0) ? uint8_t((b & ~kNibbleMask) | nib)
                     : uint8_t((b & kNibbleMask) | (nib << kNibbleBits));
    return;
  }
  unsigned bytes = bits / kBitsPerByte;
  uint64_t u = uint64_t(v);
  for (unsigned k = 0; k < bytes; ++k)
    buf[i * bytes + k] = uint8_t(u >> (kBitsPerByte * k));
}

int64_t loadInt(const std::vector<uint8_t> &buf, uint64_t i, IntType it) {
  unsigned bits = isa::precBits(it.prec);
  uint64_t u = 0;
  if (bits == kNibbleBits) {
    u = (buf[i / 2] >> ((i % 2) * kNibbleBits)) & kNibbleMask;
  } else {
    unsigned bytes = bits / kBitsPerByte;
    for (unsigned k = 0; k < bytes; ++k)
      u |= uint64_t(buf[i * bytes + k]) << (kBitsPerByte * k);
  }
  if (it.isSigned && bits < 64 && (u >> (bits - 1)) & 1)
    u |= ~uint64_t(0) << bits;
  return int64_t(u);
}

} // namespace

void writeTensor(GlobalMemory &gmem, const Tensor &t, const npz::Array &array,
                 const std::string &source) {
  std::vector<int64_t> shape = tensorShape(t);
  if (array.shape != shape)
    throw Error("input '" + t.name + "' in " + source + " has shape " +
                npz::shapeString(array.shape) + ", the bmodel expects " +
                npz::shapeString(shape));
  uint64_t numel = array.numel();
  uint64_t bytes = tensorBytes(t, numel);
  if (bytes > t.size)
    throw Error("input '" + t.name + "' needs " + std::to_string(bytes) +
                " bytes but the bmodel reserves " + std::to_string(t.size));
  std::vector<uint8_t> buf(bytes, 0);

  if (isFloatType(t.dataType)) {
    std::vector<float> v = array.toFloat();
    for (uint64_t i = 0; i < numel; ++i) {
      if (t.dataType == DataType::F32) {
        uint32_t b = isa::floatToBits(v[i]);
        std::memcpy(&buf[4 * i], &b, sizeof(b));
      } else {
        uint16_t h = t.dataType == DataType::F16 ? isa::fp32ToFp16(v[i])
                                                 : isa::fp32ToBf16(v[i]);
        buf[2 * i] = uint8_t(h);
        buf[2 * i + 1] = uint8_t(h >> kBitsPerByte);
      }
    }
  } else if (std::optional<IntType> it = intType(t.dataType)) {
    int64_t lo = isa::precMin(it->prec, it->isSigned);
    int64_t hi = isa::precMax(it->prec, it->isSigned);
    if (isFloatArray(array.dtype)) {
      std::vector<double> v = array.toDouble();
      for (uint64_t i = 0; i < numel; ++i) {
        storeInt(buf, i, *it,
                 isa::quantizeInputValue(v[i], t.scale, t.zeroPoint,
                                         it->prec, it->isSigned));
      }
    } else {
      std::vector<int64_t> v = array.toInt64();
      for (uint64_t i = 0; i < numel; ++i) {
        if (v[i] < lo || v[i] > hi)
          throw Error("input '" + t.name + "' in " + source + ": element " +
                      std::to_string(i) + " = " + std::to_string(v[i]) +
                      " does not fit " + isa::dataTypeName(t.dataType));
        storeInt(buf, i, *it, v[i]);
      }
    }
  } else {
    unsupportedType(t);
  }
  if (!gmem.contains(t.deviceAddr, bytes))
    throw Error("input '" + t.name + "' lies outside global memory");
  gmem.write(t.deviceAddr, buf.data(), bytes);
}

npz::Array readTensor(const GlobalMemory &gmem, const Tensor &t) {
  std::vector<int64_t> shape = tensorShape(t);
  uint64_t numel = npz::shapeNumel(shape);
  uint64_t bytes = tensorBytes(t, numel);
  if (!gmem.contains(t.deviceAddr, bytes))
    throw Error("output '" + t.name + "' lies outside global memory");
  std::vector<uint8_t> buf(bytes);
  gmem.read(t.deviceAddr, buf.data(), bytes);

  if (isFloatType(t.dataType)) {
    npz::Array a(npz::DType::F32, shape);
    float *out = a.as<float>();
    for (uint64_t i = 0; i < numel; ++i) {
      if (t.dataType == DataType::F32) {
        uint32_t b;
        std::memcpy(&b, &buf[4 * i], sizeof(b));
        out[i] = isa::bitsToFloat(b);
      } else {
        uint16_t h = uint16_t(buf[2 * i] | (buf[2 * i + 1] << kBitsPerByte));
        out[i] = t.dataType == DataType::F16 ? isa::fp16ToFp32(h)
                                             : isa::bf16ToFp32(h);
      }
    }
    return a;
  }
  std::optional<IntType> it = intType(t.dataType);
  if (!it)
    unsupportedType(t);
  npz::DType dt;
  switch (isa::precBits(it->prec)) {
  case 4:
  case 8:
    dt = it->isSigned ? npz::DType::I8 : npz::DType::U8;
    break;
  case 16:
    dt = it->isSigned ? npz::DType::I16 : npz::DType::U16;
    break;
  default:
    dt = it->isSigned ? npz::DType::I32 : npz::DType::U32;
    break;
  }
  npz::Array a(dt, shape);
  size_t elem = npz::dtypeSize(dt);
  for (uint64_t i = 0; i < numel; ++i) {
    uint64_t u = uint64_t(loadInt(buf, i, *it));
    for (size_t k = 0; k < elem; ++k)
      a.data[i * elem + k] = uint8_t(u >> (kBitsPerByte * k));
  }
  return a;
}

SimConfig recordedConfig(const isa::bmodel::Model &model,
                         const SimConfig &base) {
  SimConfig cfg = base;
  if (!model.machine.empty())
    cfg.loadText(model.machine, kRecordedName);
  return cfg;
}

ModelRunner::ModelRunner(const isa::bmodel::Model &model, const SimConfig &cfg,
                         SimMode mode, const std::string &netName) {
  bool aliasOk = cfg.chip.name == isa::bmodel::kChipName &&
                 model.chip == isa::bmodel::kChipAlias;
  if (model.chip != cfg.chip.name && !aliasOk)
    throw Error("the bmodel is for chip '" + model.chip +
                "', but tpusim simulates '" + cfg.chip.name + "'");
  if (!model.machine.empty()) {
    isa::Machine recorded;
    recorded.loadText(model.machine, kRecordedName);
    std::string shortfall = isa::chipShortfall(recorded.chip, cfg.chip);
    if (!shortfall.empty())
      throw Error(
          "the bmodel cannot run on the simulated machine: " + shortfall +
          " (tpusim simulates the machine a bmodel records unless "
          "--config or -p change it)");
  }
  // The kernels' settings from the environment (TPUSIM_SIMD,
  // TPUSIM_THREADS) are read here, before any command: a bad value is
  // reported as what it is, not as a fault of the first command that runs
  // a kernel.
  if (mode != SimMode::Timing) {
    simdPath();
    kernelThreads();
  }
  if (model.nets.empty())
    throw Error("the bmodel has no net");
  for (const isa::bmodel::Net &n : model.nets)
    if (netName.empty() || n.name == netName) {
      net_ = &n;
      break;
    }
  if (!net_)
    throw Error("the bmodel has no net called '" + netName + "'");
  if (net_->stages.empty())
    throw Error("net '" + net_->name + "' has no stage");
  stage_ = &net_->stages[0];
  if (stage_->isDynamic)
    throw Error("net '" + net_->name +
                "' is dynamic; tpusim runs static nets only");
  for (const isa::bmodel::SubNet &s : stage_->subnets)
    if (s.mode != isa::bmodel::kSubnetTpu || s.isDynamic)
      throw Error("net '" + net_->name + "' has a subnet (id " +
                  std::to_string(s.id) +
                  ") that is not static TPU work; tpusim runs only those");
  checkSubnetCopies();
  checkIoPlacement();
  checkReservedBits();

  sim_ = std::make_unique<Simulator>(cfg, mode);
  GlobalMemory &gmem = sim_->state().gmem;
  // A timing-only run may come from a bmodel read without its coefficients
  // (isa::bmodel::ParseOptions::loadCoefficients); values need them.
  if (stage_->coeffNotLoaded != 0 && mode != SimMode::Timing)
    throw Error("the bmodel was read without its " +
                std::to_string(stage_->coeffNotLoaded) +
                " coefficient bytes; only a timing simulation can run it");
  // The activation memory the stage declares lies in global memory (a
  // corrupt ctx_size past it went unnoticed: no command need reach its
  // end).
  if (stage_->ctxSize != 0 && !gmem.contains(stage_->ctxAddr, stage_->ctxSize))
    throw Error("the activation memory (ctx_addr " +
                isa::formatHex(stage_->ctxAddr) + ", ctx_size " +
                std::to_string(stage_->ctxSize) +
                " bytes) does not fit global memory");
  if (stage_->coeffBytes() != 0) {
    if (!gmem.contains(stage_->coeffAddr, stage_->coeffBytes()))
      throw Error("the coefficients (" + std::to_string(stage_->coeffBytes()) +
                  " bytes at the bmodel's coeff address) do not fit global "
                  "memory");
    // Read in place (the model outlives the runner); a write to them
    // copies the page first.
    if (stage_->coeffLoaded() != 0)
      gmem.writeShared(stage_->coeffAddr, stage_->coeffData(),
                       stage_->coeffLoaded());
  }
}

void ModelRunner::checkIoPlacement() const {
  // The IO tensors live in the activation memory the stage declares (the IO
  // region of an io_alone net), where its commands read and write them; a
  // tensor elsewhere (a corrupt device_addr) would be read or written where
  // no command looks. Hand-written models that declare no region are not
  // checked.
  bool ioAlone = net_->addrMode == 1 && stage_->ioSize != 0;
  uint64_t lo = ioAlone ? stage_->ioAddr : stage_->ctxAddr;
  uint64_t size = ioAlone ? stage_->ioSize : stage_->ctxSize;
  if (size == 0)
    return;
  const char *region = ioAlone ? "IO region (io_addr, io_size)"
                               : "activation memory (ctx_addr, ctx_size)";
  auto check = [&](const Tensor &t, const char *kind) {
    if (!(t.memType & isa::bmodel::kMemTypeTpu))
      return;
    uint64_t off = t.deviceAddr - lo;
    if (t.deviceAddr < lo || off > size || t.size > size - off)
      throw Error(std::string(kind) + " '" + t.name + "': device_addr " +
                  isa::formatHex(t.deviceAddr) + " + size " +
                  std::to_string(t.size) + " lies outside the stage's " +
                  region + " [" + isa::formatHex(lo) + ", " +
                  isa::formatHex(lo + size) + ")");
  };
  for (const Tensor &t : stage_->inputs)
    check(t, "input");
  for (const Tensor &t : stage_->outputs)
    check(t, "output");
  // The coefficients come first and the activations after them (the layout
  // of tpuc deploy and of tpu-mlir); a coeff_mem.address elsewhere would put
  // the weights where no command reads them.
  uint64_t coeffEnd = stage_->coeffAddr + stage_->coeffBytes();
  if (!ioAlone && stage_->coeffBytes() != 0 &&
      (coeffEnd < stage_->coeffAddr || coeffEnd > stage_->ctxAddr))
    throw Error("the coefficients (coeff_mem.address " +
                isa::formatHex(stage_->coeffAddr) + ", " +
                std::to_string(stage_->coeffBytes()) +
                " bytes) do not end at or below the activation memory "
                "(ctx_addr " +
                isa::formatHex(stage_->ctxAddr) + ")");
}

void ModelRunner::checkSubnetCopies() const {
  // A static stage with one TPU subnet holds its IO tensors and command
  // groups twice, in the stage and in the subnet (the bmodel writer and
  // tpu-mlir write both). The copies must agree: tpusim runs the stage's,
  // and a difference is a corrupt file.
  if (stage_->subnets.size() != 1)
    return;
  const isa::bmodel::SubNet &s = stage_->subnets[0];
  auto compare = [&](const std::vector<Tensor> &a, const std::vector<Tensor> &b,
                     const char *kind) {
    if (a.size() != b.size())
      throw Error("the stage has " + std::to_string(a.size()) + " " + kind +
                  " tensor(s) but its subnet " + std::to_string(b.size()));
    for (size_t i = 0; i < a.size(); ++i) {
      const Tensor &x = a[i], &y = b[i];
      const char *field = x.name != y.name               ? "name"
                          : x.dataType != y.dataType     ? "data_type"
                          : x.deviceAddr != y.deviceAddr ? "device_addr"
                          : x.size != y.size             ? "size"
                          : x.shapes != y.shapes         ? "shape"
                          : x.scale != y.scale           ? "scale"
                          : x.zeroPoint != y.zeroPoint   ? "zero_point"
                                                         : nullptr;
      if (field)
        throw Error(std::string(kind) + " " + std::to_string(i) + " '" +
                    x.name + "': the stage and its subnet disagree on " +
                    field + ": the file is corrupt");
    }
  };
  compare(stage_->inputs, s.inputs, "input");
  compare(stage_->outputs, s.outputs, "output");
  if (!s.groups.empty() && s.groups != stage_->groups)
    throw Error("the command groups of the stage (" +
                std::to_string(stage_->groups.size()) +
                ") and of its subnet (" + std::to_string(s.groups.size()) +
                ") differ: the file is corrupt");
  if (s.groups.empty() && stage_->groups.empty())
    throw Error("the stage has no command groups");
}

void ModelRunner::checkReservedBits() const {
  // Reserved bits are zero in every command our tools write (tpu-asm
  // refuses to set them); a one there is a corrupt command word.
  for (size_t g = 0; g < stage_->groups.size(); ++g) {
    const isa::bmodel::CmdGroup &group = stage_->groups[g];
    for (isa::Engine e : {isa::Engine::Tiu, isa::Engine::Gdma}) {
      const std::vector<uint8_t> &bytes =
          e == isa::Engine::Tiu ? group.tiu : group.gdma;
      for (const isa::CommandSpan &span :
           isa::indexBuffer(e, bytes.data(), bytes.size())) {
        isa::RawCommand c =
            isa::RawCommand::fromBytes(span.layout, bytes.data() + span.offset);
        const isa::LayoutInfo &li = c.info();
        for (unsigned f = 0; f < li.numFields; ++f)
          if (li.fields[f].reserved && c.get(f) != 0)
            throw Error(std::string(isa::engineName(e)) +
                        " command at offset " + isa::formatHex(span.offset) +
                        " of group " + std::to_string(g) + " (" +
                        isa::mnemonic(c) + "): reserved field " +
                        li.fields[f].name + " is " + std::to_string(c.get(f)) +
                        ", must be 0: the command is corrupt");
      }
    }
  }
}

void ModelRunner::setInputs(const npz::Npz &inputs) {
  std::string source = inputs.source().empty() ? "the inputs" : inputs.source();
  // The rule of every tool (tpu::npz::checkInputs): one array per input,
  // with its shape and the dtype of its data type, no other array.
  std::vector<npz::InputSpec> specs;
  for (const Tensor &t : stage_->inputs)
    specs.push_back({t.name, tensorShape(t), npzDTypeOf(t),
                     /*alsoFloat32=*/t.dataType != DataType::F32});
  npz::checkInputs(inputs, specs, source);
  for (const Tensor &t : stage_->inputs)
    writeTensor(sim_->state().gmem, t, *inputs.find(t.name), source);
}

//===----------------------------------------------------------------------===//
// Dumping every op's output
//===----------------------------------------------------------------------===//

struct ModelRunner::Dump {
  const isa::OpMap *map = nullptr;
  /// lastOf[group][engine][index]: the op whose last command on that
  /// engine this is, or -1.
  std::vector<std::array<std::vector<int32_t>, 2>> lastOf;
  /// Per op: engines whose last command of the op has not executed yet.
  std::vector<unsigned> pending;
  /// Per op: whether it has commands at all.
  std::vector<bool> hasCommands;
  /// Per op: its tensors once it completed.
  std::vector<std::vector<npz::Array>> captured;
  std::vector<bool> done;
  /// Ops [0, settled) are captured or have nothing to capture. An op with
  /// no commands (a concat whose inputs were written in place) is captured
  /// once every op before it has completed: its inputs are earlier ops'
  /// outputs, and its buffer is not reused before its readers, which come
  /// after it.
  size_t settled = 0;
  int32_t corruptOp = -1;
  /// The first capture that failed (thrown by run(); an exception must not
  /// leave an engine's SystemC thread).
  std::string error;
};

namespace {

/// A dumped tensor read from global memory in its storage type (float16
/// stays float16; see Runner.h).
npz::Array readDumpTensor(const GlobalMemory &gmem,
                          const isa::OpMapTensor &mt) {
  Tensor t;
  t.name = mt.name;
  t.dataType = mt.dtype;
  t.deviceAddr = mt.addr;
  t.shapes = {std::vector<uint64_t>(mt.shape.begin(), mt.shape.end())};
  if (mt.dtype != DataType::F16)
    return readTensor(gmem, t);
  std::vector<int64_t> shape = mt.shape;
  npz::Array a(npz::DType::F16, shape);
  uint64_t bytes = npz::shapeNumel(shape) * 2;
  if (!gmem.contains(mt.addr, bytes))
    throw Error("tensor '" + mt.name + "' lies outside global memory");
  gmem.read(mt.addr, a.data.data(), bytes);
  return a;
}

} // namespace

void ModelRunner::enableDump(const isa::OpMap &map) {
  if (sim_->mode() == SimMode::Timing)
    throw Error("dumping the ops' outputs needs values: --mode full or "
                "functional, not timing");
  auto d = std::make_shared<Dump>();
  d->map = &map;
  size_t numOps = map.ops.size();
  size_t numTensors = 0;
  for (const isa::OpMapEntry &e : map.ops)
    numTensors += e.tensors.size();
  if (numTensors == 0)
    throw Error("the op map lists no tensors (written by an older tpuc "
                "deploy?); deploy the model again");
  d->pending.assign(numOps, 0);
  d->hasCommands.assign(numOps, false);
  d->captured.resize(numOps);
  d->done.assign(numOps, false);
  // The last command of every op on each engine, over all groups.
  struct Last {
    int64_t group = -1, index = -1;
  };
  std::vector<std::array<Last, 2>> last(numOps);
  d->lastOf.resize(map.groups.size());
  for (size_t g = 0; g < map.groups.size(); ++g) {
    const std::vector<int32_t> *tags[2] = {&map.groups[g].tiu,
                                           &map.groups[g].gdma};
    for (unsigned e = 0; e < 2; ++e) {
      d->lastOf[g][e].assign(tags[e]->size(), -1);
      for (size_t i = 0; i < tags[e]->size(); ++i)
        if (int32_t op = (*tags[e])[i]; op >= 0)
          last[op][e] = {int64_t(g), int64_t(i)};
    }
  }
  for (size_t op = 0; op < numOps; ++op)
    for (unsigned e = 0; e < 2; ++e)
      if (last[op][e].group >= 0) {
        d->lastOf[last[op][e].group][e][last[op][e].index] = int32_t(op);
        ++d->pending[op];
        d->hasCommands[op] = true;
      }
  Dump *dp = d.get();
  GlobalMemory *gmem = &sim_->state().gmem;
  sim_->setCommandObserver(
      [dp, gmem](isa::Engine engine, unsigned group, size_t index) {
        unsigned e = engine == isa::Engine::Tiu ? 0 : 1;
        if (group >= dp->lastOf.size() || index >= dp->lastOf[group][e].size())
          return;
        int32_t op = dp->lastOf[group][e][index];
        if (op < 0 || --dp->pending[op] != 0)
          return;
        auto capture = [&](size_t k) {
          const isa::OpMapEntry &entry = dp->map->ops[k];
          try {
            if (int32_t(k) == dp->corruptOp) {
              uint8_t b;
              gmem->read(entry.tensors[0].addr, &b, 1);
              b ^= 1;
              gmem->write(entry.tensors[0].addr, &b, 1);
            }
            for (const isa::OpMapTensor &t : entry.tensors)
              dp->captured[k].push_back(readDumpTensor(*gmem, t));
            dp->done[k] = true;
          } catch (const std::exception &ex) {
            if (dp->error.empty())
              dp->error = "dumping op '" + entry.name + "': " + ex.what();
          }
        };
        capture(size_t(op));
        for (; dp->settled < dp->done.size(); ++dp->settled) {
          size_t k = dp->settled;
          if (dp->hasCommands[k] && !dp->done[k])
            break;
          if (!dp->hasCommands[k] && !dp->map->ops[k].tensors.empty())
            capture(k);
        }
      });
  dump_ = std::move(d);
}

void ModelRunner::corruptAfter(const std::string &name) {
  if (!dump_)
    throw Error("--debug-corrupt-op needs --dump-all");
  const std::vector<isa::OpMapEntry> &ops = dump_->map->ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) {
      if (ops[i].tensors.empty() || !dump_->hasCommands[i])
        throw Error("op '" + name + "' leaves no tensor in global memory");
      dump_->corruptOp = int32_t(i);
      return;
    }
  throw Error("the op map has no op '" + name + "'");
}

npz::Npz ModelRunner::dump() const {
  npz::Npz out;
  if (!dump_)
    return out;
  for (size_t op = 0; op < dump_->captured.size(); ++op)
    for (size_t k = 0; k < dump_->captured[op].size(); ++k)
      out.set(dump_->map->ops[op].tensors[k].name, dump_->captured[op][k]);
  return out;
}

std::vector<std::string> ModelRunner::undumpedOps() const {
  std::vector<std::string> names;
  if (dump_)
    for (size_t op = 0; op < dump_->done.size(); ++op)
      if (!dump_->done[op] && !dump_->map->ops[op].tensors.empty())
        names.push_back(dump_->map->ops[op].name);
  return names;
}

void ModelRunner::run(const RunOptions &options) {
  // The simulator's budget counts every command it ran, this run's start.
  sim_->setCommandBudget(options.maxCommands == 0
                             ? 0
                             : sim_->commandsRun() + options.maxCommands);
  for (const isa::bmodel::CmdGroup &g : stage_->groups)
    sim_->runGroup(g.tiu, g.gdma);
  if (dump_ && !dump_->error.empty())
    throw Error(dump_->error);
}

npz::Npz ModelRunner::outputs() const {
  npz::Npz out;
  for (const Tensor &t : stage_->outputs)
    out.set(t.name, readTensor(sim_->state().gmem, t));
  return out;
}

} // namespace tpu::sim
