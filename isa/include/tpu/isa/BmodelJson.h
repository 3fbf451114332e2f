//===- BmodelJson.h - JSON view of bmodels and command streams ----*- C++
//-*-===//
//
// The JSON form `tpu-dis --json` prints and `tpu-asm` assembles, so that a
// model can be dumped, edited and rebuilt, and so that tests can hand-write
// command streams. A model document looks like
//
//   {"chip": "BM1684X", "time": "...",
//    "nets": [{"name": "net", "stages": [{
//        "inputs":  [{"name": "x", "dtype": "F32", "shape": [1, 64, 4, 4],
//                     "device_addr": "0x100100000"}],
//        "outputs": [...],
//        "coeff": {"address": "0x100000000", "data": "00ff..."},
//        "ctx_addr": "0x100100000", "ctx_size": 8192,
//        "groups": [{"tiu": [cmd, ...], "gdma": [cmd, ...]}]}]}]}
//
// and, as a shorthand for one net with one stage, the net's and the stage's
// keys may sit at the top level ("net": name) and a single group's "tiu" and
// "gdma" arrays directly in the stage.
//
// A command is the object Disasm.h's toJson prints ({"layout", "mnemonic",
// "fields": {...}}) with these conveniences for hand-written programs:
//   * "op": "sAR.add" (or "mnemonic" alone) picks the layout and sets the
//     head fields (cmd_short, tsk_typ, tsk_eu_typ / cmd_type,
//     cmd_special_function, fill_constant_en) that print as that mnemonic;
//   * fields may also be given directly in the command object;
//   * values may be integers, negative integers (two's complement in the
//     field's width), or strings "0x..", "0b..", decimal, or "f32:<float>"
//     (the IEEE single-precision bits, for immediates);
//   * a missing cmd_id is the previous command's cmd_id + 1 (first: 1);
//   * "offset" (printed by tpu-dis) is ignored.
//
//===----------------------------------------------------------------------===//
#ifndef TPU_ISA_BMODELJSON_H
#define TPU_ISA_BMODELJSON_H

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Command.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpu::isa::bmodel {

struct ToJsonOptions {
  /// Include the coefficient and kernel-module bytes as hex strings (needed
  /// to assemble the document back into the same model).
  bool includeData = true;
};

/// The whole model as one JSON document (commands via tpu::isa::toJson, each
/// with its byte "offset" in its stream).
nlohmann::json modelToJson(const Model &model, const ToJsonOptions &opts = {});

/// The commands of one stream as a JSON array (splitBuffer + toJson, each
/// with its byte "offset"). Throws Error when the stream does not decode.
nlohmann::json streamToJson(Engine engine, const uint8_t *data, size_t size);

struct AssembleOptions {
  /// Append each stream's end command when the stream does not end with one
  /// (TIU: SYSID sys.end; GDMA: sDMA_sys end). Its cmd_id is the previous
  /// command's + 1, its cmd_id_dep the other stream's last (non-end)
  /// command's id, so each engine ends after the other's work. An empty
  /// stream whose count is stated as 0 ("bdc_num": 0, as tpu-dis prints a
  /// group without that stream) stays empty.
  bool autoEnd = true;
  /// Directory against which relative "file" paths are resolved.
  std::string baseDir = ".";
};

/// Builds a model from a document (see the file comment). Derived fields
/// (bdc_num, gdma_num, cmd_byte, tensor sizes, hidden, index) are computed;
/// when a document states them they must agree. Throws Error naming the
/// JSON path of the problem, e.g. "nets[0].stages[0].groups[1].tiu[2]: ...".
Model modelFromJson(const nlohmann::json &doc,
                    const AssembleOptions &opts = {});

/// Builds one command group from {"tiu": [...], "gdma": [...]}; either array
/// may be missing. `what` prefixes error messages.
CmdGroup groupFromJson(const nlohmann::json &group,
                       const AssembleOptions &opts = {},
                       const std::string &what = "group");

/// Builds one command of `engine`. `defaultCmdId` is used when the object
/// does not give cmd_id. `what` prefixes error messages.
RawCommand commandFromJson(const nlohmann::json &cmd, Engine engine,
                           uint32_t defaultCmdId,
                           const std::string &what = "command");

/// Name <-> code of the bmodel data types ("F32", "INT8", ... as
/// dataTypeName prints them; parsing ignores case and also takes the code).
DataType dataTypeFromJson(const nlohmann::json &j, const std::string &what);

/// Lower-case hex of bytes, and its inverse (whitespace is ignored).
std::string toHex(const std::vector<uint8_t> &bytes);
std::vector<uint8_t> fromHex(const std::string &hex, const std::string &what);

} // namespace tpu::isa::bmodel

#endif // TPU_ISA_BMODELJSON_H
