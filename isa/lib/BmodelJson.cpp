//===- BmodelJson.cpp - JSON view of bmodels and command streams ----------===//

#include "tpu/isa/BmodelJson.h"

#include "tpu/isa/Disasm.h"
#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Sha256.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <strings.h>

namespace tpu::isa::bmodel {

using nlohmann::json;

namespace {

/// Bits per byte, for tensor sizes of sub-byte types.
constexpr uint64_t kBitsPerByte = 8;

/// "<path>: <what>", or just <what> at the top level.
[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw Error(path.empty() ? what : path + ": " + what);
}

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

std::string at(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// Rejects keys outside `allowed` (catches misspelt keys early).
void checkKeys(const json &j, const std::set<std::string> &allowed,
               const std::string &path) {
  for (const auto &item : j.items())
    if (!allowed.count(item.key()))
      fail(path, "unknown key \"" + item.key() + "\"");
}

std::set<std::string> unite(std::initializer_list<std::set<std::string>> sets) {
  std::set<std::string> out;
  for (const auto &s : sets)
    out.insert(s.begin(), s.end());
  return out;
}

const std::set<std::string> kModelKeys = {
    "type",       "version",     "time",        "chip",
    "device_num", "neuron_size", "bmodel_type", "kernel_module",
    "nets",       "header",      "file",        "machine"};
const std::set<std::string> kNetKeys = {"name", "addr_mode", "stages"};
const std::set<std::string> kStageKeys = {
    "inputs",      "outputs",      "ctx_addr", "ctx_size",   "ctx_sizes",
    "coeff",       "io_addr",      "io_size",  "is_dynamic", "n_dynamic",
    "h_w_dynamic", "cpu_mem_size", "core_num", "groups",     "subnets",
    "tiu",         "gdma"};
const std::set<std::string> kTensorKeys = {
    "name",   "dtype", "shape",      "shapes",      "device_addr",
    "size",   "scale", "zero_point", "gmem_stmode", "mem_type",
    "hidden", "index", "cpu_addr",   "pad_h"};
const std::set<std::string> kCoeffKeys = {"address", "size", "check_code",
                                          "data", "file"};
const std::set<std::string> kKernelKeys = {"file_name", "size", "data", "file"};
const std::set<std::string> kGroupKeys = {
    "tiu", "gdma", "bdc_num", "gdma_num", "bdc_cmd_byte", "gdma_cmd_byte"};
const std::set<std::string> kSubnetKeys = {
    "id",     "subnet_mode", "is_dynamic", "next_subnet_ids",
    "groups", "inputs",      "outputs",    "tiu",
    "gdma"};
/// Keys of a command object that are not fields.
const std::set<std::string> kCommandMetaKeys = {"layout", "mnemonic", "op",
                                                "bytes",  "fields",   "offset"};

/// Parses an unsigned integer from a JSON number or a "0x"/"0b"/decimal
/// string. Negative numbers are returned as two's complement of `width`
/// bits when `width` is non-zero, and rejected otherwise.
uint64_t parseUnsigned(const json &v, unsigned width, const std::string &path) {
  auto negative = [&](int64_t n) -> uint64_t {
    if (width == 0 || width > 64)
      fail(path, "expected a non-negative integer, got " + v.dump());
    if (width < 64 && n < -(int64_t(1) << (width - 1)))
      fail(path, std::to_string(n) + " does not fit " + std::to_string(width) +
                     " signed bits");
    uint64_t mask = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
    return uint64_t(n) & mask;
  };
  if (v.is_boolean())
    return v.get<bool>() ? 1 : 0;
  if (v.is_number_unsigned())
    return v.get<uint64_t>();
  if (v.is_number_integer()) {
    int64_t n = v.get<int64_t>();
    return n >= 0 ? uint64_t(n) : negative(n);
  }
  if (!v.is_string())
    fail(path, "expected an integer or a \"0x...\" string, got " + v.dump());
  std::string s = v.get<std::string>();
  if (s.rfind("f32:", 0) == 0) {
    const char *begin = s.c_str() + 4;
    char *end = nullptr;
    errno = 0;
    float f = std::strtof(begin, &end);
    if (end == begin || *end != '\0' || errno == ERANGE)
      fail(path, "bad f32 value \"" + s + "\"");
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits;
  }
  bool neg = !s.empty() && s[0] == '-';
  std::string digits = neg ? s.substr(1) : s;
  int base = 10;
  if (digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0) {
    base = 16;
    digits = digits.substr(2);
  } else if (digits.rfind("0b", 0) == 0 || digits.rfind("0B", 0) == 0) {
    base = 2;
    digits = digits.substr(2);
  }
  if (digits.empty() || !std::isalnum(static_cast<unsigned char>(digits[0])))
    fail(path, "bad integer \"" + s + "\"");
  char *end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE)
    fail(path, "bad integer \"" + s + "\"");
  if (!neg)
    return n;
  if (n > uint64_t(std::numeric_limits<int64_t>::max()))
    fail(path, "bad integer \"" + s + "\"");
  return negative(-int64_t(n));
}

template <typename T>
T getInt(const json &j, const char *key, T dflt, const std::string &path) {
  auto it = j.find(key);
  if (it == j.end())
    return dflt;
  std::string p = join(path, key);
  if constexpr (std::is_signed_v<T>) {
    if (it->is_number_integer()) {
      int64_t n = it->get<int64_t>();
      if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX))
        fail(p, "out of range");
      if (n < std::numeric_limits<T>::min() ||
          n > std::numeric_limits<T>::max())
        fail(p, std::to_string(n) + " is out of range");
      return T(n);
    }
    fail(p, "expected an integer, got " + it->dump());
  } else {
    uint64_t n = parseUnsigned(*it, 0, p);
    if (n > std::numeric_limits<T>::max())
      fail(p, std::to_string(n) + " is out of range");
    return T(n);
  }
}

std::string getString(const json &j, const char *key, const std::string &dflt,
                      const std::string &path) {
  auto it = j.find(key);
  if (it == j.end())
    return dflt;
  if (!it->is_string())
    fail(join(path, key), "expected a string, got " + it->dump());
  return it->get<std::string>();
}

const json &getArray(const json &j, const char *key, const std::string &path) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  if (it == j.end())
    return kEmpty;
  if (!it->is_array())
    fail(join(path, key), "expected an array");
  return *it;
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// Every mnemonic of an engine with a command whose head prints as it.
const std::map<std::string, RawCommand> &mnemonicTable(Engine engine) {
  static const auto build = [](Engine e) {
    std::map<std::string, RawCommand> table;
    auto setIf = [](RawCommand &c, const char *field, uint64_t v) {
      int idx = c.info().findField(field);
      if (idx < 0 || c.info().fields[idx].reserved)
        return v == 0;
      if (v > c.info().fields[idx].mask())
        return false;
      c.set(unsigned(idx), v);
      return true;
    };
    // Short heads first, so that a layout reachable both ways (sDMA_sys)
    // gets the encoding the end-command helpers use.
    for (unsigned isShort : {1u, 0u}) {
      constexpr unsigned kTaskCodes = 16, kEuCodes = 32;
      constexpr unsigned kGdmaTypes = 16, kSpecialCodes = 8;
      if (e == Engine::Tiu) {
        for (unsigned task = 0; task < kTaskCodes; ++task)
          for (unsigned eu = 0; eu < kEuCodes; ++eu) {
            LayoutId layout;
            try {
              layout = tiuLayoutFor(isShort, task, eu);
            } catch (const Error &) {
              continue;
            }
            RawCommand c(layout);
            setIf(c, "cmd_short", isShort);
            if (!setIf(c, "tsk_typ", task) || !setIf(c, "tsk_eu_typ", eu))
              continue;
            table.emplace(mnemonic(c), c);
          }
      } else {
        for (unsigned type = 0; type < kGdmaTypes; ++type)
          for (unsigned sp = 0; sp < kSpecialCodes; ++sp)
            for (unsigned fill : {0u, 1u}) {
              LayoutId layout;
              try {
                layout = gdmaLayoutFor(isShort, type, sp);
              } catch (const Error &) {
                continue;
              }
              RawCommand c(layout);
              setIf(c, "cmd_short", isShort);
              if (!setIf(c, "cmd_type", type) ||
                  !setIf(c, "cmd_special_function", sp) ||
                  !setIf(c, "fill_constant_en", fill))
                continue;
              table.emplace(mnemonic(c), c);
            }
      }
    }
    return table;
  };
  static const std::map<std::string, RawCommand> tiu = build(Engine::Tiu);
  static const std::map<std::string, RawCommand> gdma = build(Engine::Gdma);
  return engine == Engine::Tiu ? tiu : gdma;
}

/// "known sAR ops: sAR.abs, ..." for the prefix of `op`, or the known
/// prefixes when nothing shares it.
std::string suggestOps(const std::map<std::string, RawCommand> &table,
                       const std::string &op) {
  std::string prefix = op.substr(0, op.find('.'));
  std::string same;
  std::set<std::string> prefixes;
  for (const auto &entry : table) {
    std::string p = entry.first.substr(0, entry.first.find('.'));
    prefixes.insert(p);
    // Codes without a published name (".eu7", ".sp3_fill") work but are
    // noise in a suggestion.
    std::string sub = entry.first.substr(entry.first.rfind('.') + 1);
    bool unnamed =
        sub.size() > 2 &&
        (sub.compare(0, 2, "eu") == 0 || sub.compare(0, 2, "sp") == 0) &&
        std::isdigit(static_cast<unsigned char>(sub[2]));
    if (p == prefix && !unnamed)
      same += (same.empty() ? "" : ", ") + entry.first;
  }
  if (!same.empty())
    return "known " + prefix + " ops: " + same;
  std::string all;
  for (const std::string &p : prefixes)
    all += (all.empty() ? "" : ", ") + p;
  return "known op prefixes: " + all;
}

const LayoutInfo *layoutByName(const std::string &name) {
  for (unsigned i = 0; i < kNumLayouts; ++i)
    if (name == allLayouts()[i].name)
      return &allLayouts()[i];
  return nullptr;
}

/// The last command of a stream that is not an end command, or none.
uint32_t lastWorkId(const std::vector<RawCommand> &cmds) {
  for (auto it = cmds.rbegin(); it != cmds.rend(); ++it)
    if (!isEndCommand(*it))
      return cmdId(*it);
  return 0;
}

std::vector<RawCommand> commandsFromJson(const json &arr, Engine engine,
                                         const std::string &path) {
  std::vector<RawCommand> out;
  uint32_t prevId = 0;
  for (size_t i = 0; i < arr.size(); ++i) {
    out.push_back(commandFromJson(arr[i], engine, prevId + 1, at(path, i)));
    if (out.back().layout() != LayoutId::Lar)
      prevId = cmdId(out.back());
  }
  return out;
}

/// The layout a decoder picks for this command's head, read through the
/// long layout of its engine (whose head fields sit where every command's
/// do), with the head fields for the message.
LayoutId headLayout(const RawCommand &c, std::string &head) {
  std::array<uint8_t, kMaxCommandBits / 8> bytes{};
  c.toBytes(bytes.data());
  bool tiu = c.engine() == Engine::Tiu;
  RawCommand h = RawCommand::fromBytes(
      tiu ? LayoutId::TiuLong : LayoutId::DmaTensor, bytes.data());
  const char *names[3] = {"cmd_short", tiu ? "tsk_typ" : "cmd_type",
                          tiu ? "tsk_eu_typ" : "cmd_special_function"};
  uint64_t v[3];
  for (unsigned i = 0; i < 3; ++i) {
    v[i] = h.get(names[i]);
    head += std::string(i ? ", " : "") + names[i] + "=" + std::to_string(v[i]);
  }
  return tiu ? tiuLayoutFor(v[0] != 0, unsigned(v[1]), unsigned(v[2]))
             : gdmaLayoutFor(v[0] != 0, unsigned(v[1]), unsigned(v[2]));
}

/// Packs a stream and checks that it decodes back into the same commands.
std::vector<uint8_t> packChecked(const std::vector<RawCommand> &cmds,
                                 Engine engine, const std::string &path) {
  if (cmds.empty())
    return {};
  for (size_t i = 0; i < cmds.size(); ++i) {
    std::string head;
    LayoutId layout;
    try {
      layout = headLayout(cmds[i], head);
    } catch (const Error &e) {
      fail(at(path, i), std::string("its head does not decode: ") + e.what());
    }
    if (layout != cmds[i].layout())
      fail(at(path, i), std::string("is a ") + cmds[i].info().name +
                            " command but its head (" + head + ") selects " +
                            layoutInfo(layout).name + "; check those fields");
    if (isEndCommand(cmds[i]) && i + 1 != cmds.size())
      fail(at(path, i), "an end command must be the last of its stream");
  }
  if (!isEndCommand(cmds.back()))
    fail(path, std::string("the stream does not end with an end command (") +
                   (engine == Engine::Tiu ? "SYSID.end" : "sDMA_sys.end") +
                   "); add one or let tpu-asm append it");
  std::vector<uint8_t> bytes = packBuffer(cmds);
  std::vector<DecodedCommand> decoded;
  try {
    decoded = splitBuffer(engine, bytes.data(), bytes.size());
  } catch (const Error &e) {
    fail(path,
         std::string("the assembled stream does not decode: ") + e.what());
  }
  if (decoded.size() != cmds.size())
    fail(path, "internal error: the stream decodes into " +
                   std::to_string(decoded.size()) + " commands, not " +
                   std::to_string(cmds.size()));
  for (size_t i = 0; i < cmds.size(); ++i)
    if (!(decoded[i].cmd == cmds[i]))
      fail(at(path, i), "internal error: decodes differently");
  return bytes;
}

//===----------------------------------------------------------------------===//
// Tensors, blobs, stages
//===----------------------------------------------------------------------===//

std::vector<uint8_t> blobFromJson(const json &j, const AssembleOptions &opts,
                                  const std::string &path) {
  std::vector<uint8_t> bytes;
  bool hasData = j.contains("data"), hasFile = j.contains("file");
  if (hasData && hasFile)
    fail(path, "give either \"data\" or \"file\", not both");
  if (hasData) {
    bytes = fromHex(getString(j, "data", "", path), join(path, "data"));
  } else if (hasFile) {
    std::string file = getString(j, "file", "", path);
    if (!file.empty() && file[0] != '/')
      file = opts.baseDir + "/" + file;
    bytes = readFile(file);
  }
  if (j.contains("size")) {
    uint64_t size = getInt<uint64_t>(j, "size", 0, path);
    if (size != bytes.size())
      fail(join(path, "size"),
           "is " + std::to_string(size) + " but the data has " +
               std::to_string(bytes.size()) + " bytes" +
               (hasData || hasFile ? "" : " (give \"data\" or \"file\")"));
  }
  return bytes;
}

Tensor tensorFromJson(const json &j, int32_t hidden, int32_t index,
                      const std::string &path) {
  if (!j.is_object())
    fail(path, "expected a tensor object");
  checkKeys(j, kTensorKeys, path);
  Tensor t;
  if (!j.contains("name"))
    fail(path, "missing \"name\"");
  t.name = getString(j, "name", "", path);
  if (!j.contains("dtype"))
    fail(path, "missing \"dtype\"");
  t.dataType = dataTypeFromJson(j["dtype"], join(path, "dtype"));
  if (j.contains("shape") && j.contains("shapes"))
    fail(path, "give either \"shape\" or \"shapes\", not both");
  auto dims = [&](const json &a, const std::string &p) {
    if (!a.is_array())
      fail(p, "expected an array of dimensions");
    std::vector<uint64_t> d;
    for (size_t i = 0; i < a.size(); ++i)
      d.push_back(parseUnsigned(a[i], 0, at(p, i)));
    return d;
  };
  if (j.contains("shape"))
    t.shapes.push_back(dims(j["shape"], join(path, "shape")));
  const json &shapes = getArray(j, "shapes", path);
  for (size_t i = 0; i < shapes.size(); ++i)
    t.shapes.push_back(dims(shapes[i], at(join(path, "shapes"), i)));
  t.deviceAddr = getInt<uint64_t>(j, "device_addr", 0, path);
  if (j.contains("size")) {
    t.size = getInt<uint64_t>(j, "size", 0, path);
  } else {
    // Default: the first shape's element count times the element width.
    unsigned __int128 bits = dataTypeBits(t.dataType);
    for (uint64_t d :
         t.shapes.empty() ? std::vector<uint64_t>{} : t.shapes.front()) {
      bits *= d;
      if (bits > std::numeric_limits<uint64_t>::max())
        fail(path, "the shape is too large");
    }
    t.size = uint64_t((bits + kBitsPerByte - 1) / kBitsPerByte);
  }
  if (j.contains("scale")) {
    if (!j["scale"].is_number())
      fail(join(path, "scale"), "expected a number");
    t.scale = j["scale"].get<float>();
  }
  t.zeroPoint = getInt<int32_t>(j, "zero_point", 0, path);
  t.gmemStmode = getInt<int32_t>(j, "gmem_stmode", 0, path);
  t.memType = getInt<uint32_t>(j, "mem_type", kMemTypeTpu, path);
  t.hidden = getInt<int32_t>(j, "hidden", hidden, path);
  t.index = getInt<int32_t>(j, "index", index, path);
  t.cpuAddr = getInt<uint32_t>(j, "cpu_addr", 0, path);
  t.padH = getInt<uint32_t>(j, "pad_h", 0, path);
  return t;
}

std::vector<Tensor> tensorsFromJson(const json &j, const char *key,
                                    int32_t hidden, const std::string &path) {
  const json &arr = getArray(j, key, path);
  std::vector<Tensor> out;
  for (size_t i = 0; i < arr.size(); ++i)
    out.push_back(
        tensorFromJson(arr[i], hidden, int32_t(i), at(join(path, key), i)));
  return out;
}

/// "groups": [...] or an inline single group ("tiu"/"gdma").
std::vector<CmdGroup> groupsFromJson(const json &j, const AssembleOptions &opts,
                                     const std::string &path) {
  std::vector<CmdGroup> out;
  bool inline_ = j.contains("tiu") || j.contains("gdma");
  if (j.contains("groups")) {
    if (inline_)
      fail(path, "give either \"groups\" or \"tiu\"/\"gdma\", not both");
    const json &arr = getArray(j, "groups", path);
    for (size_t i = 0; i < arr.size(); ++i)
      out.push_back(groupFromJson(arr[i], opts, at(join(path, "groups"), i)));
  } else if (inline_) {
    json group = json::object();
    for (const char *key : {"tiu", "gdma"})
      if (j.contains(key))
        group[key] = j[key];
    out.push_back(groupFromJson(group, opts, path));
  }
  return out;
}

Stage stageFromJson(const json &j, const AssembleOptions &opts,
                    const std::string &path) {
  Stage s;
  s.inputs = tensorsFromJson(j, "inputs", kHiddenInput, path);
  s.outputs = tensorsFromJson(j, "outputs", kHiddenOutput, path);
  s.ctxAddr = getInt<uint64_t>(j, "ctx_addr", 0, path);
  s.ctxSize = getInt<uint64_t>(j, "ctx_size", 0, path);
  const json &ctxSizes = getArray(j, "ctx_sizes", path);
  for (size_t i = 0; i < ctxSizes.size(); ++i)
    s.ctxSizes.push_back(
        parseUnsigned(ctxSizes[i], 0, at(join(path, "ctx_sizes"), i)));
  if (j.contains("coeff")) {
    const json &c = j["coeff"];
    std::string p = join(path, "coeff");
    if (!c.is_object())
      fail(p, "expected an object");
    checkKeys(c, kCoeffKeys, p);
    s.coeffAddr = getInt<uint64_t>(c, "address", 0, p);
    s.coeff = blobFromJson(c, opts, p);
  }
  s.ioAddr = getInt<uint64_t>(j, "io_addr", 0, path);
  s.ioSize = getInt<uint64_t>(j, "io_size", 0, path);
  s.isDynamic = getInt<int32_t>(j, "is_dynamic", 0, path);
  s.nDynamic = getInt<int32_t>(j, "n_dynamic", 0, path);
  s.hWDynamic = getInt<int32_t>(j, "h_w_dynamic", 0, path);
  s.cpuMemSize = getInt<uint32_t>(j, "cpu_mem_size", 0, path);
  s.coreNum = getInt<uint32_t>(j, "core_num", 0, path);
  s.groups = groupsFromJson(j, opts, path);
  const json &subnets = getArray(j, "subnets", path);
  for (size_t i = 0; i < subnets.size(); ++i) {
    const json &sj = subnets[i];
    std::string p = at(join(path, "subnets"), i);
    if (!sj.is_object())
      fail(p, "expected an object");
    checkKeys(sj, kSubnetKeys, p);
    SubNet sub;
    sub.id = getInt<int32_t>(sj, "id", int32_t(i), p);
    sub.mode = getInt<int32_t>(sj, "subnet_mode", kSubnetTpu, p);
    sub.isDynamic = getInt<int32_t>(sj, "is_dynamic", 0, p);
    const json &next = getArray(sj, "next_subnet_ids", p);
    for (size_t k = 0; k < next.size(); ++k) {
      if (!next[k].is_number_integer())
        fail(at(join(p, "next_subnet_ids"), k), "expected an integer");
      sub.nextSubnetIds.push_back(next[k].get<int32_t>());
    }
    sub.groups = groupsFromJson(sj, opts, p);
    sub.inputs = tensorsFromJson(sj, "inputs", kHiddenInput, p);
    sub.outputs = tensorsFromJson(sj, "outputs", kHiddenOutput, p);
    s.subnets.push_back(std::move(sub));
  }
  return s;
}

Net netFromJson(const json &j, const AssembleOptions &opts,
                const std::string &path, bool topLevel) {
  Net net;
  const char *nameKey = topLevel && j.contains("net") ? "net" : "name";
  if (topLevel && j.contains("net") && j.contains("name"))
    fail(path, "give either \"net\" or \"name\", not both");
  if (!j.contains(nameKey))
    fail(path, std::string("missing the net's \"") + nameKey + "\"");
  net.name = getString(j, nameKey, "", path);
  net.addrMode = getInt<int32_t>(j, "addr_mode", 0, path);
  if (j.contains("stages")) {
    const json &stages = getArray(j, "stages", path);
    if (stages.empty())
      fail(join(path, "stages"), "a net needs at least one stage");
    for (size_t i = 0; i < stages.size(); ++i) {
      std::string p = at(join(path, "stages"), i);
      if (!stages[i].is_object())
        fail(p, "expected an object");
      checkKeys(stages[i], kStageKeys, p);
      net.stages.push_back(stageFromJson(stages[i], opts, p));
    }
  } else {
    net.stages.push_back(stageFromJson(j, opts, path));
  }
  return net;
}

json tensorToJson(const Tensor &t) {
  json j = json::object();
  j["name"] = t.name;
  j["dtype"] = dataTypeName(t.dataType);
  if (t.shapes.size() == 1)
    j["shape"] = t.shapes.front();
  else
    j["shapes"] = t.shapes;
  j["device_addr"] = formatHex(t.deviceAddr);
  j["size"] = t.size;
  j["scale"] = t.scale;
  j["zero_point"] = t.zeroPoint;
  j["gmem_stmode"] = t.gmemStmode;
  j["mem_type"] = t.memType;
  j["hidden"] = t.hidden;
  j["index"] = t.index;
  j["cpu_addr"] = t.cpuAddr;
  j["pad_h"] = t.padH;
  return j;
}

json tensorsToJson(const std::vector<Tensor> &ts) {
  json arr = json::array();
  for (const Tensor &t : ts)
    arr.push_back(tensorToJson(t));
  return arr;
}

json groupsToJson(const std::vector<CmdGroup> &groups) {
  json arr = json::array();
  for (const CmdGroup &g : groups) {
    json j = json::object();
    j["bdc_num"] = g.bdcNum;
    j["gdma_num"] = g.gdmaNum;
    j["bdc_cmd_byte"] = g.tiu.size();
    j["gdma_cmd_byte"] = g.gdma.size();
    j["tiu"] = streamToJson(Engine::Tiu, g.tiu.data(), g.tiu.size());
    j["gdma"] = streamToJson(Engine::Gdma, g.gdma.data(), g.gdma.size());
    arr.push_back(std::move(j));
  }
  return arr;
}

json stageToJson(const Stage &s, const ToJsonOptions &opts) {
  json j = json::object();
  j["inputs"] = tensorsToJson(s.inputs);
  j["outputs"] = tensorsToJson(s.outputs);
  j["ctx_addr"] = formatHex(s.ctxAddr);
  j["ctx_size"] = s.ctxSize;
  j["ctx_sizes"] = s.ctxSizes;
  json coeff = json::object();
  coeff["address"] = formatHex(s.coeffAddr);
  coeff["size"] = s.coeff.size();
  coeff["check_code"] = toHex(s.checkCode);
  if (opts.includeData)
    coeff["data"] = toHex(s.coeff);
  j["coeff"] = std::move(coeff);
  j["io_addr"] = formatHex(s.ioAddr);
  j["io_size"] = s.ioSize;
  j["is_dynamic"] = s.isDynamic;
  j["n_dynamic"] = s.nDynamic;
  j["h_w_dynamic"] = s.hWDynamic;
  j["cpu_mem_size"] = s.cpuMemSize;
  j["core_num"] = s.coreNum;
  j["groups"] = groupsToJson(s.groups);
  // The usual single subnet is implied (the writer recreates it); anything
  // else is spelt out.
  bool implied = s.subnets.empty() ||
                 (s.subnets.size() == 1 && s.subnets[0] == defaultSubnet(s));
  if (!implied) {
    json subs = json::array();
    for (const SubNet &sub : s.subnets) {
      json sj = json::object();
      sj["id"] = sub.id;
      sj["subnet_mode"] = sub.mode;
      sj["is_dynamic"] = sub.isDynamic;
      sj["next_subnet_ids"] = sub.nextSubnetIds;
      sj["inputs"] = tensorsToJson(sub.inputs);
      sj["outputs"] = tensorsToJson(sub.outputs);
      sj["groups"] = groupsToJson(sub.groups);
      subs.push_back(std::move(sj));
    }
    j["subnets"] = std::move(subs);
  }
  return j;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

std::string toHex(const std::vector<uint8_t> &bytes) {
  return hexString(bytes.data(), bytes.size());
}

std::vector<uint8_t> fromHex(const std::string &hex, const std::string &what) {
  auto nibble = [&](char ch) -> unsigned {
    if (ch >= '0' && ch <= '9')
      return unsigned(ch - '0');
    if (ch >= 'a' && ch <= 'f')
      return unsigned(ch - 'a' + 10);
    if (ch >= 'A' && ch <= 'F')
      return unsigned(ch - 'A' + 10);
    fail(what, std::string("bad hex digit '") + ch + "'");
  };
  std::vector<uint8_t> out;
  int high = -1;
  for (char ch : hex) {
    if (std::isspace(static_cast<unsigned char>(ch)))
      continue;
    unsigned n = nibble(ch);
    if (high < 0) {
      high = int(n);
    } else {
      out.push_back(uint8_t(unsigned(high) << 4 | n));
      high = -1;
    }
  }
  if (high >= 0)
    fail(what, "odd number of hex digits");
  return out;
}

DataType dataTypeFromJson(const json &j, const std::string &what) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() || j.get<int64_t>() >= 0)
      if (auto t = dataTypeFromCode(uint32_t(j.get<uint64_t>())))
        return *t;
    fail(what, "unknown data type code " + j.dump());
  }
  if (!j.is_string())
    fail(what, "expected a data type name such as \"F32\" or \"INT8\"");
  std::string name = j.get<std::string>();
  std::string valid;
  for (uint32_t code = 0;; ++code) {
    auto t = dataTypeFromCode(code);
    if (!t)
      break;
    const char *known = dataTypeName(*t);
    if (strcasecmp(known, name.c_str()) == 0)
      return *t;
    valid += (valid.empty() ? "" : ", ") + std::string(known);
  }
  fail(what, "unknown data type \"" + name + "\" (known: " + valid + ")");
}

RawCommand commandFromJson(const json &j, Engine engine, uint32_t defaultCmdId,
                           const std::string &what) {
  if (!j.is_object())
    fail(what, "expected a command object");
  const char *engineStr = engine == Engine::Tiu ? "TIU" : "GDMA";

  std::string op;
  for (const char *key : {"op", "mnemonic"}) {
    if (!j.contains(key))
      continue;
    std::string v = getString(j, key, "", what);
    if (!op.empty() && v != op)
      fail(what, "\"op\" and \"mnemonic\" disagree");
    op = v;
  }
  RawCommand c;
  bool headFromOp = false;
  if (j.contains("layout")) {
    std::string name = getString(j, "layout", "", what);
    const LayoutInfo *li = layoutByName(name);
    if (!li)
      fail(join(what, "layout"), "unknown layout \"" + name + "\"");
    if (li->engine != engine)
      fail(join(what, "layout"), name + " is not a " + engineStr + " layout");
    c = RawCommand(li->id);
  } else if (!op.empty()) {
    const auto &table = mnemonicTable(engine);
    auto it = table.find(op);
    if (it == table.end())
      fail(what, std::string("unknown ") + engineStr + " op \"" + op + "\"; " +
                     suggestOps(table, op));
    c = it->second;
    headFromOp = true;
  } else {
    fail(what, "needs \"op\" (e.g. \"sAR.add\") or \"layout\"");
  }

  // Fields: the "fields" object plus any other non-meta key.
  std::vector<std::pair<std::string, const json *>> fields;
  if (j.contains("fields")) {
    if (!j["fields"].is_object())
      fail(join(what, "fields"), "expected an object");
    for (const auto &item : j["fields"].items())
      fields.emplace_back(item.key(), &item.value());
  }
  for (const auto &item : j.items())
    if (!kCommandMetaKeys.count(item.key()))
      fields.emplace_back(item.key(), &item.value());

  const LayoutInfo &li = c.info();
  std::set<std::string> given;
  for (const auto &[name, value] : fields) {
    if (!given.insert(name).second)
      fail(what, "field " + name + " is given twice");
    int idx = li.findField(name);
    if (idx < 0)
      fail(what, std::string(li.name) + " has no field \"" + name + "\"");
    const FieldInfo &f = li.fields[idx];
    uint64_t v = parseUnsigned(*value, f.width, join(what, name));
    if (v > f.mask())
      fail(join(what, name),
           formatHex(v) + " does not fit " + std::to_string(f.width) + " bits");
    c.set(unsigned(idx), v);
  }

  auto fillIfAbsent = [&](const char *field, uint64_t v) {
    int idx = li.findField(field);
    if (idx >= 0 && !li.fields[idx].reserved && !given.count(field) &&
        v <= li.fields[idx].mask())
      c.set(unsigned(idx), v);
  };
  fillIfAbsent("cmd_id", defaultCmdId);
  if (!headFromOp)
    fillIfAbsent("cmd_short", isShortForm(li.id) ? 1 : 0);

  if (!op.empty() && mnemonic(c) != op)
    fail(what, "the fields make this command " + mnemonic(c) + ", not " + op);
  return c;
}

CmdGroup groupFromJson(const json &group, const AssembleOptions &opts,
                       const std::string &what) {
  if (!group.is_object())
    fail(what, "expected a group object {\"tiu\": [...], \"gdma\": [...]}");
  checkKeys(group, kGroupKeys, what);
  std::vector<RawCommand> tiu = commandsFromJson(
      getArray(group, "tiu", what), Engine::Tiu, join(what, "tiu"));
  std::vector<RawCommand> gdma = commandsFromJson(
      getArray(group, "gdma", what), Engine::Gdma, join(what, "gdma"));
  if (opts.autoEnd) {
    uint32_t tiuLast = tiu.empty() ? 0 : cmdId(tiu.back());
    uint32_t gdmaLast = gdma.empty() ? 0 : cmdId(gdma.back());
    uint32_t tiuWork = lastWorkId(tiu), gdmaWork = lastWorkId(gdma);
    // An empty stream whose count is stated as 0 (as tpu-dis prints a
    // group without that stream) stays empty.
    auto statedEmpty = [&](const char *key, const std::vector<RawCommand> &v) {
      return v.empty() && group.contains(key) &&
             getInt<uint64_t>(group, key, 0, what) == 0;
    };
    if (!statedEmpty("bdc_num", tiu) &&
        (tiu.empty() || !isEndCommand(tiu.back())))
      tiu.push_back(makeTiuEnd(tiuLast + 1, gdmaWork));
    if (!statedEmpty("gdma_num", gdma) &&
        (gdma.empty() || !isEndCommand(gdma.back())))
      gdma.push_back(makeGdmaEnd(gdmaLast + 1, tiuWork));
  }
  CmdGroup g;
  g.tiu = packChecked(tiu, Engine::Tiu, join(what, "tiu"));
  g.gdma = packChecked(gdma, Engine::Gdma, join(what, "gdma"));
  g.bdcNum = uint32_t(tiu.size());
  g.gdmaNum = uint32_t(gdma.size());
  auto check = [&](const char *key, uint64_t actual) {
    if (group.contains(key) && getInt<uint64_t>(group, key, 0, what) != actual)
      fail(join(what, key),
           "is " + group[key].dump() + " but the assembled stream gives " +
               std::to_string(actual) + " (leave it out: it is computed)");
  };
  check("bdc_num", g.bdcNum);
  check("gdma_num", g.gdmaNum);
  check("bdc_cmd_byte", g.tiu.size());
  check("gdma_cmd_byte", g.gdma.size());
  return g;
}

Model modelFromJson(const json &doc, const AssembleOptions &opts) {
  if (!doc.is_object())
    fail("", "expected a JSON object at the top level");
  Model m;
  m.type = getString(doc, "type", kModelType, "");
  m.version = getString(doc, "version", kDefaultVersion, "");
  m.time = getString(doc, "time", "", "");
  m.chip = getString(doc, "chip", kChipName, "");
  if (m.chip != kChipName && m.chip != kChipAlias)
    fail("chip",
         "\"" + m.chip + "\" is not supported (use \"" + kChipName + "\")");
  m.deviceNum = getInt<uint32_t>(doc, "device_num", 1, "");
  m.neuronSize = getInt<uint64_t>(doc, "neuron_size", 0, "");
  m.bmodelType = getInt<uint32_t>(doc, "bmodel_type", 0, "");
  m.machine = getString(doc, "machine", "", "");
  if (doc.contains("kernel_module")) {
    const json &k = doc["kernel_module"];
    if (!k.is_object())
      fail("kernel_module", "expected an object");
    checkKeys(k, kKernelKeys, "kernel_module");
    KernelModule km;
    km.fileName = getString(k, "file_name", kKernelModuleName, "kernel_module");
    km.binary = blobFromJson(k, opts, "kernel_module");
    m.kernelModule = std::move(km);
  }
  if (doc.contains("nets")) {
    checkKeys(doc, kModelKeys, "");
    const json &nets = getArray(doc, "nets", "");
    if (nets.empty())
      fail("nets", "a model needs at least one net");
    for (size_t i = 0; i < nets.size(); ++i) {
      std::string p = at("nets", i);
      if (!nets[i].is_object())
        fail(p, "expected an object");
      checkKeys(nets[i],
                nets[i].contains("stages") ? kNetKeys
                                           : unite({kNetKeys, kStageKeys}),
                p);
      m.nets.push_back(netFromJson(nets[i], opts, p, false));
    }
  } else {
    std::set<std::string> allowed = unite({kModelKeys, kNetKeys, {"net"}});
    if (!doc.contains("stages"))
      allowed = unite({allowed, kStageKeys});
    checkKeys(doc, allowed, "");
    m.nets.push_back(netFromJson(doc, opts, "", true));
  }
  return m;
}

json streamToJson(Engine engine, const uint8_t *data, size_t size) {
  json arr = json::array();
  if (size == 0)
    return arr;
  for (const DecodedCommand &d : splitBuffer(engine, data, size)) {
    json j = toJson(d.cmd);
    j["offset"] = d.offset;
    arr.push_back(std::move(j));
  }
  return arr;
}

json modelToJson(const Model &model, const ToJsonOptions &opts) {
  json j = json::object();
  j["type"] = model.type;
  j["version"] = model.version;
  j["time"] = model.time;
  j["chip"] = model.chip;
  j["device_num"] = model.deviceNum;
  j["neuron_size"] = model.neuronSize;
  j["bmodel_type"] = model.bmodelType;
  if (!model.machine.empty())
    j["machine"] = model.machine;
  if (model.kernelModule) {
    json k = json::object();
    k["file_name"] = model.kernelModule->fileName;
    k["size"] = model.kernelModule->binary.size();
    if (opts.includeData)
      k["data"] = toHex(model.kernelModule->binary);
    j["kernel_module"] = std::move(k);
  }
  json nets = json::array();
  for (const Net &net : model.nets) {
    json n = json::object();
    n["name"] = net.name;
    n["addr_mode"] = net.addrMode;
    json stages = json::array();
    for (const Stage &s : net.stages)
      stages.push_back(stageToJson(s, opts));
    n["stages"] = std::move(stages);
    nets.push_back(std::move(n));
  }
  j["nets"] = std::move(nets);
  return j;
}

} // namespace tpu::isa::bmodel
