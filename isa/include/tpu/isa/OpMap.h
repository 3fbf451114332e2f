//===- OpMap.h - Which op every command of a bmodel was emitted for -*- C++ -*-===//
//
// The compiler knows for which op (or layer group) it emitted each command;
// the bmodel format has no place for that, so `tpuc deploy` writes it beside
// the bmodel as <stem>_ops.json and `tpusim` reads it to attribute time,
// traffic and MACs to ops (per-op statistics, the op track of the trace).
//
//   {"version": 1,
//    "ops": [{"name": "conv1", "type": "tpu.Conv2D", "group": "",
//             "lmem_bytes": 0,
//             "tensors": [{"name": "conv1", "addr": 4297064448,
//                          "shape": [1, 16, 32, 32], "dtype": "INT8",
//                          "scale": 0.0123, "zero_point": 0}]}, ...],
//    "groups": [{"tiu": [0, 0, 1, ...], "gdma": [0, 1, ...]}, ...]}
//
// `groups` has one entry per command group of the net's first stage, in
// order; `tiu` and `gdma` one op index per command of that engine's stream
// (end commands included), or -1 for a command of no op (the end commands).
// A layer group is one op of type tpu.Group whose `group` field lists the
// ops inside it and whose `lmem_bytes` is its local memory per lane at the
// peak (0 for the other ops).
//
// `tensors` lists what the op leaves in DDR once its commands have
// completed, by framework name: its results, for a tpu.Group only the
// values it stores (tpu.Yield; the values inside a group stay in local
// memory), and the tpu.Reshape results that alias one of these (same bytes, another
// shape). `dtype` is the bmodel data type name (isa::dataTypeName: F32,
// F16, BF16, INT8, UINT8, ...); `scale` and `zero_point` are those of a
// !quant.uniform type (real = (q - zero_point) * scale), 1 and 0 otherwise.
// `tpusim run --dump-all` reads them to capture every op's output; `tpuc
// compare --dequant` to dequantise integer tensors. Op maps written before
// tensors were listed have none (the field is optional).
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_OPMAP_H
#define TPU_ISA_OPMAP_H

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::isa {

/// One tensor an op leaves in DDR (see the file comment).
struct OpMapTensor {
  std::string name;
  uint64_t addr = 0;
  std::vector<int64_t> shape;
  DataType dtype = DataType::F32;
  double scale = 1.0;
  int64_t zeroPoint = 0;
  /// True for a !quant.uniform type (scale and zero point are meaningful).
  bool quantized = false;
};

struct OpMapEntry {
  std::string name;
  std::string type;
  /// tpu.Group: the ops inside, comma-separated; else empty.
  std::string members;
  /// tpu.Group: local memory per lane at the peak; else 0.
  uint64_t lmemBytes = 0;
  /// What the op leaves in DDR.
  std::vector<OpMapTensor> tensors;
};

struct OpMapGroup {
  std::vector<int32_t> tiu, gdma;
};

struct OpMap {
  std::vector<OpMapEntry> ops;
  std::vector<OpMapGroup> groups;
};

/// Writes `map` as JSON to `path` (atomically). Throws Error.
void writeOpMap(const OpMap &map, const std::string &path);
/// Reads an op map; throws Error naming the file and what is wrong (not
/// JSON, another version, an op index out of range).
OpMap readOpMap(const std::string &path);

/// Throws Error naming `path` unless `map` lists, per command group of
/// `stage`, as many op tags per engine as the group has commands.
void checkOpMap(const OpMap &map, const bmodel::Stage &stage,
                const std::string &path);

} // namespace tpu::isa

#endif // TPU_ISA_OPMAP_H
