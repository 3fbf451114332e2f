//===- BmodelTest.cpp - bmodel container: write, read, reject -------------===//
//
// References: the file layout of isa/docs/bm1684x.md 7.1 (header words checked byte
// by byte), the schema slot numbers of 7.2 (slot offset = 4 + 2 * id; files
// are built here field by field with the generic FlatBuffers builder, not
// with our writer, and our files are read back slot by slot), and SHA-256
// digests computed with Python's hashlib.
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Command.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Sha256.h"

#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <unistd.h>

using namespace tpu;
using namespace tpu::isa;
using namespace tpu::isa::bmodel;

namespace {

/// hashlib.sha256(bytes(range(256))).hexdigest()
constexpr const char *kSha256Of0To255 =
    "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880";

std::string hexOf(const std::vector<uint8_t> &v) {
  std::string s;
  char buf[3];
  for (uint8_t b : v) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    s += buf;
  }
  return s;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

uint32_t le32(const std::vector<uint8_t> &b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 |
         uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

void setLe32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (unsigned i = 0; i < 4; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}

/// A TIU stream: sAR.add (id 1, waits for GDMA 1) and the end command.
std::vector<uint8_t> tiuStream(uint32_t opd1Bits) {
  cmd::SAR add;
  add.cmd_short = 1;
  add.cmd_id = 1;
  add.cmd_id_dep = 1;
  add.tsk_typ = 3;    // AR
  add.tsk_eu_typ = 2; // add
  add.opd1_const = 1;
  add.opd1_addr = opd1Bits;
  return packBuffer({encode(add), makeTiuEnd(2, 1)});
}

/// A GDMA stream: one DMA_tensor and the end command.
std::vector<uint8_t> gdmaStream() {
  cmd::DmaTensor load;
  load.cmd_id = 1;
  load.src_start_addr_l32 = 0x00100000;
  load.src_start_addr_h8 = 1;
  return packBuffer({encode(load), makeGdmaEnd(2, 1)});
}

Tensor tensor(const std::string &name, uint64_t addr, int32_t hidden) {
  Tensor t;
  t.name = name;
  t.dataType = DataType::F32;
  t.deviceAddr = addr;
  t.size = 4096;
  t.shapes = {{1, 64, 4, 4}};
  t.hidden = hidden;
  t.scale = 0.5f;
  t.zeroPoint = -3;
  return t;
}

/// A one-net model with two different command groups, 256 coefficient
/// bytes 0..255 and one input and one output.
Model sampleModel() {
  Model m;
  m.time = "Thu Jan  1 00:00:00 1970";
  Net net;
  net.name = "sample";
  Stage s;
  s.inputs = {tensor("x", 0x100100000, kHiddenInput)};
  s.outputs = {tensor("y", 0x100101000, kHiddenOutput)};
  s.ctxAddr = 0x100100000;
  s.ctxSize = 8192;
  s.coeffAddr = 0x100000000;
  for (unsigned i = 0; i < 256; ++i)
    s.coeff.push_back(uint8_t(i));
  CmdGroup g0{2, 2, tiuStream(0x3f800000), gdmaStream()};
  CmdGroup g1{2, 2, tiuStream(0x40000000), gdmaStream()};
  s.groups = {g0, g1};
  net.stages.push_back(s);
  m.nets.push_back(net);
  return m;
}

//===----------------------------------------------------------------------===//
// A raw reader of our files, slot by slot (isa/docs/bm1684x.md 7.2).
//===----------------------------------------------------------------------===//

class RawTable {
public:
  RawTable(const uint8_t *buf, size_t pos) : buf_(buf), pos_(pos) {}
  static RawTable root(const uint8_t *buf) { return RawTable(buf, rd32(buf)); }

  /// Position of field `id` or 0 when absent.
  size_t field(unsigned id) const {
    size_t vtable = pos_ - int32_t(rd32(buf_ + pos_));
    uint16_t vsize = rd16(buf_ + vtable);
    size_t slot = 4 + 2 * size_t(id);
    if (slot >= vsize)
      return 0;
    uint16_t off = rd16(buf_ + vtable + slot);
    return off ? pos_ + off : 0;
  }
  std::string str(unsigned id) const {
    size_t p = deref(field(id));
    return std::string(reinterpret_cast<const char *>(buf_ + p + 4),
                       rd32(buf_ + p));
  }
  uint32_t u32(unsigned id) const { return rd32(buf_ + field(id)); }
  uint64_t u64(unsigned id) const {
    return uint64_t(rd32(buf_ + field(id))) |
           uint64_t(rd32(buf_ + field(id) + 4)) << 32;
  }
  RawTable table(unsigned id) const { return RawTable(buf_, deref(field(id))); }
  uint32_t vecLen(unsigned id) const { return rd32(buf_ + deref(field(id))); }
  RawTable vecTable(unsigned id, unsigned i) const {
    size_t v = deref(field(id)) + 4 + 4 * size_t(i);
    return RawTable(buf_, deref(v));
  }

private:
  static uint32_t rd32(const uint8_t *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
           uint32_t(p[3]) << 24;
  }
  static uint16_t rd16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
  size_t deref(size_t p) const { return p + rd32(buf_ + p); }

  const uint8_t *buf_;
  size_t pos_;
};

//===----------------------------------------------------------------------===//
// Files built field by field with the generic FlatBuffers builder.
//===----------------------------------------------------------------------===//

FLATBUFFERS_MANUALLY_ALIGNED_STRUCT(8) RawBinary {
  uint64_t start;
  uint64_t size;
};
FLATBUFFERS_STRUCT_END(RawBinary, 16);

constexpr flatbuffers::voffset_t slot(unsigned id) {
  return flatbuffers::voffset_t(4 + 2 * id);
}

struct RawSpec {
  bool withChip = true;
  bool withTensorName = true;
  uint32_t dataType = 2; // INT8
  std::vector<uint8_t> coeff = {1, 2, 3, 4};
  std::vector<uint8_t> tiu = tiuStream(7);
  std::vector<uint8_t> gdma = gdmaStream();
  uint32_t bdcNum = 2;
  uint32_t gdmaNum = 2;
  std::optional<uint32_t> bdcCmdByte;
  std::optional<RawBinary> tiuRange;
  int32_t subnetId = 0;
  bool withNets = true;
  /// coeff_mem.check_code; the SHA-256 of coeff when empty.
  std::vector<uint8_t> checkCode;
};

std::vector<uint8_t> sha256Of(const std::vector<uint8_t> &bytes) {
  tpu::isa::Sha256Digest d = tpu::isa::sha256(bytes.data(), bytes.size());
  return std::vector<uint8_t>(d.begin(), d.end());
}

/// Header + FlatBuffer + binary section {coeff, tiu, gdma}.
std::vector<uint8_t> buildRawFile(const RawSpec &spec) {
  using flatbuffers::Offset;
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);
  std::vector<uint8_t> binary = spec.coeff;
  RawBinary coeffBin{0, spec.coeff.size()};
  RawBinary tiuBin{binary.size(), spec.tiu.size()};
  binary.insert(binary.end(), spec.tiu.begin(), spec.tiu.end());
  RawBinary gdmaBin{binary.size(), spec.gdma.size()};
  binary.insert(binary.end(), spec.gdma.begin(), spec.gdma.end());
  if (spec.tiuRange)
    tiuBin = *spec.tiuRange;

  auto makeTensors = [&](const char *name, int32_t hidden) {
    auto dims = fbb.CreateVector(std::vector<uint64_t>{1, 16});
    auto shapeStart = fbb.StartTable();
    fbb.AddOffset(slot(0), dims);
    Offset<void> shape(fbb.EndTable(shapeStart));
    auto shapes = fbb.CreateVector(std::vector<Offset<void>>{shape});
    auto str = fbb.CreateString(name);
    auto t = fbb.StartTable();
    if (spec.withTensorName)
      fbb.AddOffset(slot(0), str);
    fbb.AddElement<uint32_t>(slot(1), spec.dataType, 0);
    fbb.AddElement<uint64_t>(slot(3), 0x100001000, 0);
    fbb.AddElement<uint64_t>(slot(4), 16, 0);
    fbb.AddOffset(slot(5), shapes);
    fbb.AddElement<uint32_t>(slot(6), 1, 0);
    fbb.AddElement<float>(slot(7), 0.25f, 1.0f);
    fbb.AddElement<int32_t>(slot(10), 5, 0);
    fbb.AddElement<int32_t>(slot(11), hidden, 0);
    return fbb.CreateVector(
        std::vector<Offset<void>>{Offset<void>(fbb.EndTable(t))});
  };
  auto makeGroups = [&]() {
    auto g = fbb.StartTable();
    fbb.AddElement<uint32_t>(slot(0), spec.bdcNum, 0);
    fbb.AddElement<uint32_t>(slot(1), spec.gdmaNum, 0);
    fbb.AddStruct(slot(2), &tiuBin);
    fbb.AddStruct(slot(3), &gdmaBin);
    fbb.AddElement<uint32_t>(
        slot(4), spec.bdcCmdByte.value_or(uint32_t(spec.tiu.size())), 0);
    fbb.AddElement<uint32_t>(slot(5), uint32_t(spec.gdma.size()), 0);
    return fbb.CreateVector(
        std::vector<Offset<void>>{Offset<void>(fbb.EndTable(g))});
  };

  auto inputs = makeTensors("in", 1);
  auto outputs = makeTensors("out", 2);
  auto groups = makeGroups();
  auto subInputs = makeTensors("in", 1);
  auto subOutputs = makeTensors("out", 2);
  auto subGroups = makeGroups();
  auto sub = fbb.StartTable();
  fbb.AddElement<int32_t>(slot(0), 0, -1);
  fbb.AddOffset(slot(1), subGroups);
  fbb.AddOffset(slot(3), subInputs);
  fbb.AddOffset(slot(4), subOutputs);
  fbb.AddElement<int32_t>(slot(10), spec.subnetId, -1);
  auto subnets = fbb.CreateVector(
      std::vector<Offset<void>>{Offset<void>(fbb.EndTable(sub))});
  auto checkCode = fbb.CreateVector(
      spec.checkCode.empty() ? sha256Of(spec.coeff) : spec.checkCode);
  auto coeff = fbb.StartTable();
  fbb.AddElement<uint64_t>(slot(0), 0x100000000, 0);
  fbb.AddOffset(slot(1), checkCode);
  fbb.AddStruct(slot(2), &coeffBin);
  Offset<void> coeffMem(fbb.EndTable(coeff));
  auto ctxSizes = fbb.CreateVector(std::vector<uint64_t>{4096});
  auto param = fbb.StartTable();
  fbb.AddOffset(slot(0), inputs);
  fbb.AddOffset(slot(1), outputs);
  fbb.AddElement<uint64_t>(slot(2), 0x100100000, 0);
  fbb.AddElement<uint64_t>(slot(3), 4096, 0);
  fbb.AddOffset(slot(4), coeffMem);
  fbb.AddOffset(slot(8), groups);
  fbb.AddOffset(slot(12), subnets);
  fbb.AddOffset(slot(14), ctxSizes);
  auto params = fbb.CreateVector(
      std::vector<Offset<void>>{Offset<void>(fbb.EndTable(param))});
  auto netName = fbb.CreateString("raw");
  auto net = fbb.StartTable();
  fbb.AddOffset(slot(0), netName);
  fbb.AddOffset(slot(3), params);
  std::vector<Offset<void>> netList;
  if (spec.withNets)
    netList.push_back(Offset<void>(fbb.EndTable(net)));
  else
    fbb.EndTable(net);
  auto nets = fbb.CreateVector(netList);
  auto type = fbb.CreateString("B");
  auto version = fbb.CreateString("2.2+test");
  auto time = fbb.CreateString("now");
  auto chip = fbb.CreateString("BM1684X");
  auto model = fbb.StartTable();
  fbb.AddOffset(slot(0), type);
  fbb.AddOffset(slot(1), version);
  fbb.AddOffset(slot(2), time);
  if (spec.withChip)
    fbb.AddOffset(slot(3), chip);
  fbb.AddOffset(slot(4), nets);
  fbb.AddElement<uint64_t>(slot(5), 4096, 0);
  fbb.AddElement<uint32_t>(slot(7), 1, 0);
  fbb.Finish(Offset<void>(fbb.EndTable(model)));

  std::vector<uint8_t> file(64, 0);
  setLe32(file, 0, 0xFF55AAEE);
  setLe32(file, 4, 64);
  setLe32(file, 8, fbb.GetSize());
  setLe32(file, 12, uint32_t(binary.size()));
  file.insert(file.end(), fbb.GetBufferPointer(),
              fbb.GetBufferPointer() + fbb.GetSize());
  file.insert(file.end(), binary.begin(), binary.end());
  return file;
}

std::string parseError(const std::vector<uint8_t> &file) {
  return errorOf([&] { parseModel(file.data(), file.size(), "t.bmodel"); });
}

} // namespace

//===----------------------------------------------------------------------===//
// Writing and reading back
//===----------------------------------------------------------------------===//

TEST(Bmodel, RoundTripFillsDerivedFields) {
  Model m = sampleModel();
  std::vector<uint8_t> bytes = serializeModel(m);
  Model back = parseModel(bytes.data(), bytes.size(), "mem");

  // What the writer derives: check_code, ctx_sizes, neuron_size, subnet.
  Model expected = m;
  Stage &s = expected.nets[0].stages[0];
  s.ctxSizes = {8192};
  expected.neuronSize = 8192;
  s.subnets = {defaultSubnet(s)};
  s.checkCode = back.nets[0].stages[0].checkCode;
  EXPECT_EQ(hexOf(s.checkCode), kSha256Of0To255);
  EXPECT_TRUE(back == expected);
  EXPECT_EQ(back.nets[0].stages[0].inputs[0].scale, 0.5f);
  EXPECT_EQ(back.nets[0].stages[0].inputs[0].zeroPoint, -3);
  EXPECT_EQ(back.nets[0].stages[0].groups[1].tiu, tiuStream(0x40000000));

  // Reading and writing again gives the same bytes.
  EXPECT_EQ(serializeModel(back), bytes);
}

TEST(Bmodel, KernelModuleAndSeveralNetsSurvive) {
  Model m = sampleModel();
  m.kernelModule = KernelModule{"fw.so", {9, 8, 7}};
  m.nets.push_back(m.nets[0]);
  m.nets[1].name = "second";
  m.nets[1].stages[0].ctxSize = 65536;
  std::vector<uint8_t> bytes = serializeModel(m);
  Model back = parseModel(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(back.kernelModule.has_value());
  EXPECT_EQ(back.kernelModule->fileName, "fw.so");
  EXPECT_EQ(back.kernelModule->binary, (std::vector<uint8_t>{9, 8, 7}));
  ASSERT_EQ(back.nets.size(), 2u);
  EXPECT_EQ(back.nets[1].name, "second");
  EXPECT_EQ(back.neuronSize, 65536u); // the larger ctx_size
}

TEST(Bmodel, IdenticalBlobsAreStoredOnce) {
  Model m = sampleModel();
  // Group 1 becomes a copy of group 0; the subnet repeats both groups.
  m.nets[0].stages[0].groups[1] = m.nets[0].stages[0].groups[0];
  std::vector<uint8_t> bytes = serializeModel(m);
  // coeff 256 + one TIU stream 128 + one GDMA stream 128.
  EXPECT_EQ(le32(bytes, 12), 256u + 128u + 128u);

  m.nets[0].stages[0].groups[1] = CmdGroup{2, 2, tiuStream(1), gdmaStream()};
  bytes = serializeModel(m);
  // Only the second TIU stream differs (the GDMA streams are identical).
  EXPECT_EQ(le32(bytes, 12), 256u + 128u + 128u + 128u);
  Model back = parseModel(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(back.nets[0].stages[0].groups[1].tiu, tiuStream(1));
}

TEST(Bmodel, HeaderFieldsAtTheirOffsets) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  // magic 0xFF55AAEE little-endian at byte 0.
  EXPECT_EQ(bytes[0], 0xEE);
  EXPECT_EQ(bytes[1], 0xAA);
  EXPECT_EQ(bytes[2], 0x55);
  EXPECT_EQ(bytes[3], 0xFF);
  // header_size 64 at byte 4.
  EXPECT_EQ(bytes[4], 64);
  EXPECT_EQ(bytes[5] | bytes[6] | bytes[7], 0);
  uint32_t fbSize = le32(bytes, 8), binSize = le32(bytes, 12);
  EXPECT_EQ(64u + fbSize + binSize, bytes.size());
  for (size_t i = 16; i < 64; ++i)
    EXPECT_EQ(bytes[i], 0) << "reserved byte " << i;
  // The binary section starts with the coefficients.
  for (unsigned i = 0; i < 256; ++i)
    ASSERT_EQ(bytes[64 + fbSize + i], i);
}

TEST(Bmodel, FieldsSitInTheDocumentedSlots) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  const uint8_t *fbuf = bytes.data() + 64;
  uint32_t fbSize = le32(bytes, 8);
  RawTable model = RawTable::root(fbuf);
  EXPECT_EQ(model.str(0), "B");       // type
  EXPECT_EQ(model.str(3), "BM1684X"); // chip
  EXPECT_EQ(model.u64(5), 8192u);     // neuron_size
  EXPECT_EQ(model.u32(7), 1u);        // device_num
  ASSERT_EQ(model.vecLen(4), 1u);     // net
  RawTable net = model.vecTable(4, 0);
  EXPECT_EQ(net.str(0), "sample");
  RawTable param = net.vecTable(3, 0);
  EXPECT_EQ(param.u64(2), 0x100100000u); // ctx_addr
  EXPECT_EQ(param.u64(3), 8192u);        // ctx_size
  EXPECT_EQ(param.vecTable(0, 0).str(0), "x");
  EXPECT_EQ(param.vecTable(1, 0).str(0), "y");
  EXPECT_EQ(param.table(4).u64(0), 0x100000000u); // coeff_mem.address
  ASSERT_EQ(param.vecLen(8), 2u);                 // cmd_group
  RawTable g1 = param.vecTable(8, 1);
  EXPECT_EQ(g1.u32(0), 2u);   // bdc_num
  EXPECT_EQ(g1.u32(1), 2u);   // gdma_num
  EXPECT_EQ(g1.u32(4), 128u); // bdc_cmd_byte
  // binary_bdc of group 1: after coeff (256) and group 0's two streams.
  size_t bdc = g1.field(2);
  uint64_t start = 0;
  for (unsigned i = 0; i < 8; ++i)
    start |= uint64_t(fbuf[bdc + i]) << (8 * i);
  EXPECT_EQ(start, 256u + 128u + 128u);
  // opd1_addr = 0x40000000 sits at bits 224..255: its top byte is byte 31.
  EXPECT_EQ(bytes[64 + fbSize + start + 31], 0x40);
  ASSERT_EQ(param.vecLen(12), 1u); // sub_net
  EXPECT_EQ(param.vecTable(12, 0).vecLen(1), 2u);
}

TEST(Bmodel, ReadsAFileBuiltFieldByField) {
  std::vector<uint8_t> file = buildRawFile(RawSpec());
  Model m = parseModel(file.data(), file.size(), "raw.bmodel");
  EXPECT_EQ(m.chip, "BM1684X");
  EXPECT_EQ(m.version, "2.2+test");
  EXPECT_EQ(m.neuronSize, 4096u);
  ASSERT_EQ(m.nets.size(), 1u);
  EXPECT_EQ(m.nets[0].name, "raw");
  const Stage &s = m.nets[0].stages[0];
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].name, "in");
  EXPECT_EQ(s.inputs[0].dataType, DataType::Int8);
  EXPECT_EQ(s.inputs[0].shapes, (std::vector<std::vector<uint64_t>>{{1, 16}}));
  EXPECT_EQ(s.inputs[0].scale, 0.25f);
  EXPECT_EQ(s.inputs[0].zeroPoint, 5);
  EXPECT_EQ(s.inputs[0].hidden, 1);
  EXPECT_EQ(s.outputs[0].hidden, 2);
  EXPECT_EQ(s.coeff, (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(s.checkCode, sha256Of(s.coeff));
  EXPECT_EQ(s.ctxSizes, std::vector<uint64_t>{4096});
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].tiu, tiuStream(7));
  EXPECT_EQ(s.groups[0].gdma, gdmaStream());
  ASSERT_EQ(s.subnets.size(), 1u);
  EXPECT_EQ(s.subnets[0].id, 0);
  EXPECT_EQ(s.subnets[0].groups, s.groups);
}

TEST(Bmodel, WriteModelReplacesTheFileWhole) {
  std::string dir = TPU_BINARY_DIR;
  std::string path =
      dir + "/bmodel_test_" + std::to_string(::getpid()) + ".bmodel";
  Model m = sampleModel();
  writeModel(m, path);
  Model back = readModel(path);
  EXPECT_EQ(back.nets[0].stages[0].coeff, m.nets[0].stages[0].coeff);
  std::remove(path.c_str());

  std::string missing = dir + "/no-such-dir/x.bmodel";
  std::string err = errorOf([&] { writeModel(m, missing); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;
  err = errorOf([&] { readModel(missing); });
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

TEST(Bmodel, WriterRefusesInconsistentModels) {
  Model m = sampleModel();
  m.nets[0].stages[0].groups[0].bdcNum = 3;
  EXPECT_NE(errorOf([&] {
              serializeModel(m);
            }).find("bdcNum is 3 but the stream holds 2 commands"),
            std::string::npos);

  m = sampleModel();
  m.nets[0].stages[0].groups[0].tiu.resize(100);
  EXPECT_NE(errorOf([&] { serializeModel(m); }).find("multiple of 128"),
            std::string::npos);

  m = sampleModel();
  m.nets.clear();
  EXPECT_NE(errorOf([&] { serializeModel(m); }).find("no nets"),
            std::string::npos);

  m = sampleModel();
  m.nets[0].stages.clear();
  EXPECT_NE(errorOf([&] { serializeModel(m); }).find("no stages"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

TEST(BmodelErrors, EveryTruncationIsRejected) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    std::string err = parseError(cut);
    ASSERT_EQ(err.rfind("t.bmodel: at byte ", 0), 0u) << len << ": " << err;
    if (len < 64)
      EXPECT_NE(err.find("shorter than the 64-byte bmodel header"),
                std::string::npos)
          << err;
    else
      EXPECT_NE(err.find("runs past the end of the file"), std::string::npos)
          << err;
  }
}

TEST(BmodelErrors, FlippedBytesNeverCrash) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  unsigned rejected = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0xFF;
    try {
      parseModel(bad.data(), bad.size(), "flip");
    } catch (const Error &) {
      ++rejected;
    }
  }
  // Every header word except the reserved ones is checked, so at least the
  // 16 bytes of magic, header_size and the two sizes fail.
  EXPECT_GE(rejected, 16u);
}

TEST(BmodelErrors, BadMagic) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  bytes[0] = 0x00;
  EXPECT_EQ(parseError(bytes),
            "t.bmodel: at byte 0 (0x0): bad magic 0xff55aa00 (expected "
            "0xff55aaee): not a bmodel file");
  setLe32(bytes, 0, 0xFF55AAFF);
  EXPECT_NE(parseError(bytes).find("older bmtap2"), std::string::npos);
}

TEST(BmodelErrors, EncryptedHeaderSize) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  setLe32(bytes, 4, 72);
  EXPECT_EQ(parseError(bytes),
            "t.bmodel: at byte 4 (0x4): header_size is 72, expected 64: "
            "encrypted bmodels are not supported");
}

TEST(BmodelErrors, SizesPastTheEnd) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  uint32_t bin = le32(bytes, 12);
  setLe32(bytes, 12, bin + 1);
  std::string err = parseError(bytes);
  EXPECT_NE(err.find("binary_size " + std::to_string(bin + 1)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("runs past the end"), std::string::npos) << err;

  bytes = serializeModel(sampleModel());
  setLe32(bytes, 8, 0xFFFFFFF0u);
  EXPECT_NE(parseError(bytes).find("flatbuffers_size 4294967280"),
            std::string::npos);
}

TEST(BmodelErrors, ShrunkBinarySectionPutsRangesOutside) {
  // Declaring 16 bytes less of binary section (and dropping them) leaves
  // the last blob's Binary pointing past the section.
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  setLe32(bytes, 12, le32(bytes, 12) - 16);
  bytes.resize(bytes.size() - 16);
  std::string err = parseError(bytes);
  EXPECT_NE(err.find("lies outside the binary section"), std::string::npos)
      << err;
}

TEST(BmodelErrors, CorruptFlatBuffer) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  // The root offset points far outside the FlatBuffer.
  setLe32(bytes, 64, 0x7FFFFFF0);
  EXPECT_NE(parseError(bytes).find("at byte 64 (0x40): FlatBuffer "
                                   "verification failed"),
            std::string::npos);
}

TEST(BmodelErrors, MissingRequiredFieldsAreNamed) {
  RawSpec spec;
  spec.withChip = false;
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("required field Model.chip is missing"),
            std::string::npos);
  spec = RawSpec();
  spec.withTensorName = false;
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("required field "
                      "Model.net[0].parameter[0].input_tensor[0].name is "
                      "missing"),
            std::string::npos)
      << parseError(buildRawFile(spec));
}

TEST(BmodelErrors, InconsistentGroups) {
  RawSpec spec;
  spec.bdcCmdByte = 256;
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("TIU stream: bdc_cmd_byte is 256 but its Binary holds "
                      "128 bytes"),
            std::string::npos);

  spec = RawSpec();
  spec.bdcNum = 5;
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("bdc_num is 5 but the stream holds 2 commands"),
            std::string::npos);

  spec = RawSpec();
  spec.tiuRange = RawBinary{4, 1u << 20};
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("TIU stream: Binary {start 4, size 1048576} lies "
                      "outside the binary section"),
            std::string::npos);

  // A stream whose first command has tsk_typ 8 (no BM1684X layout).
  spec = RawSpec();
  spec.tiu = std::vector<uint8_t>(128, 0);
  spec.tiu[5] = 8 << 1; // tsk_typ at bits 41..44
  std::string err = parseError(buildRawFile(spec));
  EXPECT_NE(err.find("net 0 'raw' stage 0 group 0 TIU stream: "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("tsk_typ=8"), std::string::npos) << err;
}

TEST(BmodelErrors, OtherSemanticChecks) {
  RawSpec spec;
  spec.dataType = 99;
  EXPECT_NE(parseError(buildRawFile(spec)).find("unknown data_type 99"),
            std::string::npos);
  spec = RawSpec();
  spec.subnetId = 3;
  EXPECT_NE(parseError(buildRawFile(spec))
                .find("subnet 0: id is 3 but the subnet is at position 0"),
            std::string::npos);
  spec = RawSpec();
  spec.withNets = false;
  EXPECT_NE(parseError(buildRawFile(spec)).find("the model has no nets"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Integrity checks beyond the structure
//===----------------------------------------------------------------------===//

namespace {
/// Position of the first occurrence of \p text in \p bytes.
size_t find(const std::vector<uint8_t> &bytes, const std::string &text) {
  auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  EXPECT_NE(it, bytes.end()) << text;
  return size_t(it - bytes.begin());
}
} // namespace

TEST(BmodelErrors, VerifierFailuresNameTheFieldAndOffset) {
  // Two different corruptions: two different places, neither the start of
  // the FlatBuffer (byte 64, where every failure used to be reported).
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  size_t chip = find(bytes, "BM1684X");
  setLe32(bytes, chip - 4, 0x00FFFFFF);
  EXPECT_EQ(parseError(bytes).rfind(
                "t.bmodel: at byte " + std::to_string(chip - 4) + " (" +
                    formatHex(chip - 4) +
                    "): FlatBuffer verification failed at Model.chip: string "
                    "of 16777215 element(s)",
                0),
            0u)
      << parseError(bytes);

  bytes = serializeModel(sampleModel());
  size_t time = find(bytes, "Thu Jan  1 00:00:00 1970");
  bytes[time + 24] = 'x';
  EXPECT_EQ(parseError(bytes),
            "t.bmodel: at byte " + std::to_string(time + 24) + " (" +
                formatHex(time + 24) +
                "): FlatBuffer verification failed at Model.time: the 24-byte "
                "string does not end with a zero byte");
}

TEST(BmodelErrors, CoefficientsMustMatchTheirCheckCode) {
  RawSpec spec;
  spec.checkCode = std::vector<uint8_t>(32, 0xab);
  std::vector<uint8_t> file = buildRawFile(spec);
  std::string err = parseError(file);
  EXPECT_NE(err.find("net 0 'raw' stage 0 coeff_mem.check_code does not match: "
                     "the SHA-256 of the 4 coefficient bytes"),
            std::string::npos)
      << err;
  // tpu-dis reads it anyway to show the mismatch.
  ParseOptions lenient;
  lenient.verifyCheckCode = false;
  EXPECT_NO_THROW(parseModel(file.data(), file.size(), "t.bmodel", lenient));

  // One coefficient byte changed in a written file.
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  std::string run;
  for (unsigned i = 0; i < 16; ++i)
    run.push_back(char(i));
  bytes[find(bytes, run) + 5] ^= 1;
  EXPECT_NE(parseError(bytes).find("check_code does not match"),
            std::string::npos);
}

TEST(BmodelErrors, DeferredCheckCodeGivesTheSameError) {
  // 1 MiB of coefficients: the size readModel defers
  // (ParseOptions::deferCheckCode).
  std::string path = std::string(TPU_BINARY_DIR) + "/bmodel_defer_" +
                     std::to_string(::getpid()) + ".bmodel";
  auto write = [&](const RawSpec &spec) {
    std::vector<uint8_t> file = buildRawFile(spec);
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(file.data(), 1, file.size(), f), file.size());
    std::fclose(f);
  };
  ParseOptions deferred;
  deferred.deferCheckCode = true;
  RawSpec spec;
  spec.coeff.assign(size_t(1) << 20, 0x5a);
  spec.checkCode = std::vector<uint8_t>(32, 0xab);
  write(spec);
  std::string sync = errorOf([&] { readModel(path); });
  ASSERT_NE(sync.find("coeff_mem.check_code does not match: the SHA-256 of "
                      "the 1048576 coefficient bytes"),
            std::string::npos)
      << sync;
  Model m, sliced, partly;
  ASSERT_NO_THROW(m = readModel(path, deferred));
  ASSERT_NO_THROW(sliced = readModel(path, deferred));
  ASSERT_NO_THROW(partly = readModel(path, deferred));
  EXPECT_EQ(m.pendingCheckCodes.size(), 1u);
  // The hash reads the file's mapping, which it keeps: the file may go.
  std::remove(path.c_str());
  EXPECT_EQ(errorOf([&] { awaitCheckCodes(m); }), sync);
  EXPECT_EQ(errorOf([&] { awaitCheckCodes(m); }), sync);
  EXPECT_FALSE(hashCheckCodes(m.pendingCheckCodes, 1000));
  // Hashed in slices (as tpusim's kernel helper does): more is left
  // after each of the first 10 slices of 100000 bytes, none after the 11th;
  // then the same error. Or a few slices, and the rest by awaitCheckCodes.
  int slices = 0;
  while (hashCheckCodes(sliced.pendingCheckCodes, 100000))
    ++slices;
  EXPECT_EQ(slices, 10);
  EXPECT_FALSE(hashCheckCodes(sliced.pendingCheckCodes, 100000));
  EXPECT_EQ(errorOf([&] { awaitCheckCodes(sliced); }), sync);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(hashCheckCodes(partly.pendingCheckCodes, 4096 + 7));
  EXPECT_EQ(errorOf([&] { awaitCheckCodes(partly); }), sync);

  // A later error of the reader gives way to the check code's, which
  // comes first without deferral.
  spec.subnetId = 3;
  write(spec);
  std::string first = errorOf([&] { readModel(path); });
  EXPECT_NE(first.find("check_code does not match"), std::string::npos)
      << first;
  EXPECT_EQ(errorOf([&] { readModel(path, deferred); }), first);
  spec.checkCode.clear();
  write(spec);
  EXPECT_NE(errorOf([&] { readModel(path, deferred); })
                .find("id is 3 but the subnet is at position 0"),
            std::string::npos);

  // A matching check code: nothing to report, the same model.
  spec.subnetId = 0;
  write(spec);
  Model back, backSliced;
  ASSERT_NO_THROW(back = readModel(path, deferred));
  ASSERT_NO_THROW(backSliced = readModel(path, deferred));
  EXPECT_NO_THROW(awaitCheckCodes(back));
  while (hashCheckCodes(backSliced.pendingCheckCodes, 65536 + 3)) {
  }
  EXPECT_NO_THROW(awaitCheckCodes(backSliced));
  EXPECT_EQ(back, readModel(path));
  EXPECT_EQ(back.nets[0].stages[0].coeff, spec.coeff);

  // Small coefficients are checked before readModel returns.
  spec.coeff = {1, 2, 3, 4};
  spec.checkCode = std::vector<uint8_t>(32, 0xab);
  write(spec);
  EXPECT_NE(errorOf([&] { readModel(path, deferred); })
                .find("check_code does not match"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(BmodelErrors, TrailingDataIsRefused) {
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  size_t end = bytes.size();
  bytes.resize(end + 1000, 0x55);
  EXPECT_EQ(parseError(bytes).rfind("t.bmodel: at byte " + std::to_string(end) +
                                        " (" + formatHex(end) +
                                        "): 1000 bytes of trailing data",
                                    0),
            0u)
      << parseError(bytes);
}

TEST(BmodelErrors, TensorNamesAndSizes) {
  Model m = sampleModel();
  m.nets[0].stages[0].outputs[0].name = "y\xff";
  EXPECT_NE(parseError(serializeModel(m))
                .find("stage 0 output[0] name is not valid UTF-8 (byte 1 of "
                      "the name is 0xff)"),
            std::string::npos)
      << parseError(serializeModel(m));
  m = sampleModel();
  m.nets[0].stages[0].outputs.push_back(m.nets[0].stages[0].outputs[0]);
  EXPECT_NE(parseError(serializeModel(m))
                .find("output[1] and [0] are both named 'y'"),
            std::string::npos);
  m = sampleModel();
  m.nets[0].stages[0].outputs[0].size = 1000;
  EXPECT_NE(parseError(serializeModel(m))
                .find("output[0] 'y': its shape holds 1024 F32 elements, more "
                      "than its size of 1000 bytes"),
            std::string::npos)
      << parseError(serializeModel(m));
}

TEST(BmodelErrors, EveryVerifierFailureIsLocated) {
  // Single-byte changes all over the FlatBuffer: whenever the generated
  // verifier says no, the message names a field and a byte (never the
  // generic "corrupt" message at the FlatBuffer's start), and the bytes
  // named differ with the flips.
  std::vector<uint8_t> bytes = serializeModel(sampleModel());
  uint32_t fbSize = le32(bytes, 8);
  std::set<std::string> places;
  unsigned verifierFailures = 0;
  for (size_t i = 64; i < 64 + fbSize; ++i)
    for (uint8_t x : {uint8_t(0xFF), uint8_t(0x01), uint8_t(0x80)}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= x;
      std::string err = parseError(bad);
      EXPECT_EQ(err.find("is corrupt or not a bmodel.Model"), std::string::npos)
          << "byte " << i << " ^ " << int(x) << ": " << err;
      if (err.find("FlatBuffer verification failed at ") != std::string::npos) {
        ++verifierFailures;
        places.insert(err.substr(0, err.find("): ")));
      }
    }
  EXPECT_GT(verifierFailures, 100u);
  EXPECT_GT(places.size(), 50u);
}
