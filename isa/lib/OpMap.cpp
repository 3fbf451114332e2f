//===- OpMap.cpp - Which op every command of a bmodel was emitted for -----===//
#include "tpu/isa/OpMap.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <sstream>

namespace tpu::isa {

namespace {

/// The DataType whose isa::dataTypeName is \p name.
std::optional<DataType> dataTypeFromName(const std::string &name) {
  for (uint32_t code = 0;; ++code) {
    std::optional<DataType> t = dataTypeFromCode(code);
    if (!t)
      return std::nullopt;
    if (name == dataTypeName(*t))
      return t;
  }
}

} // namespace

void writeOpMap(const OpMap &map, const std::string &path) {
  nlohmann::json j;
  j["version"] = 1;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpMapEntry &e : map.ops) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const OpMapTensor &t : e.tensors) {
      nlohmann::json o = {{"name", t.name},
                          {"addr", t.addr},
                          {"shape", t.shape},
                          {"dtype", dataTypeName(t.dtype)}};
      if (t.quantized) {
        o["scale"] = t.scale;
        o["zero_point"] = t.zeroPoint;
      }
      tensors.push_back(std::move(o));
    }
    ops.push_back({{"name", e.name},
                   {"type", e.type},
                   {"group", e.members},
                   {"lmem_bytes", e.lmemBytes},
                   {"tensors", std::move(tensors)}});
  }
  j["ops"] = std::move(ops);
  nlohmann::json groups = nlohmann::json::array();
  for (const OpMapGroup &g : map.groups)
    groups.push_back({{"tiu", g.tiu}, {"gdma", g.gdma}});
  j["groups"] = std::move(groups);
  std::string text = j.dump(1) + "\n";
  bmodel::writeFileAtomically(path,
                              std::vector<uint8_t>(text.begin(), text.end()));
}

OpMap readOpMap(const std::string &path) {
  if (std::string why = bmodel::notAFile(path); !why.empty())
    throw Error(path + ": the op map " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open the op map");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  auto bad = [&](const std::string &what) {
    return Error(path + ": not an op map: " + what);
  };
  if (j.is_discarded() || !j.is_object())
    throw bad("not a JSON object");
  if (!j.contains("version") || j["version"] != 1)
    throw bad("version is not 1");
  OpMap map;
  if (!j.contains("ops") || !j["ops"].is_array() || !j.contains("groups") ||
      !j["groups"].is_array())
    throw bad("'ops' and 'groups' must be arrays");
  for (const auto &o : j["ops"]) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string() ||
        !o.contains("type") || !o["type"].is_string())
      throw bad("an op without a name or type");
    OpMapEntry e;
    e.name = o["name"];
    e.type = o["type"];
    if (o.contains("group") && o["group"].is_string())
      e.members = o["group"];
    if (o.contains("lmem_bytes") && o["lmem_bytes"].is_number_unsigned())
      e.lmemBytes = o["lmem_bytes"].get<uint64_t>();
    if (o.contains("tensors")) {
      if (!o["tensors"].is_array())
        throw bad("'tensors' of op '" + e.name + "' is not an array");
      for (const auto &t : o["tensors"]) {
        auto badTensor = [&](const std::string &what) {
          return bad("a tensor of op '" + e.name + "' " + what);
        };
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
          throw badTensor("has no name");
        OpMapTensor mt;
        mt.name = t["name"];
        if (!t.contains("addr") || !t["addr"].is_number_unsigned())
          throw badTensor("('" + mt.name + "') has no address");
        mt.addr = t["addr"].get<uint64_t>();
        if (!t.contains("shape") || !t["shape"].is_array())
          throw badTensor("('" + mt.name + "') has no shape");
        for (const auto &d : t["shape"]) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0)
            throw badTensor("('" + mt.name + "') has a bad dimension");
          mt.shape.push_back(d.get<int64_t>());
        }
        std::optional<DataType> dt;
        if (t.contains("dtype") && t["dtype"].is_string())
          dt = dataTypeFromName(t["dtype"].get<std::string>());
        if (!dt)
          throw badTensor("('" + mt.name + "') has no known dtype");
        mt.dtype = *dt;
        if (t.contains("scale")) {
          if (!t["scale"].is_number() || !t.contains("zero_point") ||
              !t["zero_point"].is_number_integer())
            throw badTensor("('" + mt.name +
                            "') has a scale without an integer zero_point");
          mt.quantized = true;
          mt.scale = t["scale"].get<double>();
          mt.zeroPoint = t["zero_point"].get<int64_t>();
        }
        e.tensors.push_back(std::move(mt));
      }
    }
    map.ops.push_back(std::move(e));
  }
  int32_t n = int32_t(map.ops.size());
  for (const auto &g : j["groups"]) {
    OpMapGroup mg;
    for (const char *engine : {"tiu", "gdma"}) {
      if (!g.is_object() || !g.contains(engine) || !g[engine].is_array())
        throw bad(std::string("a group without its '") + engine + "' list");
      for (const auto &t : g[engine]) {
        if (!t.is_number_integer() || t.get<int64_t>() < -1 ||
            t.get<int64_t>() >= n)
          throw bad(std::string("an op index out of range in '") + engine +
                    "'");
        (std::string(engine) == "tiu" ? mg.tiu : mg.gdma)
            .push_back(t.get<int32_t>());
      }
    }
    map.groups.push_back(std::move(mg));
  }
  return map;
}

void checkOpMap(const OpMap &map, const bmodel::Stage &stage,
                const std::string &path) {
  auto other = [&](const std::string &what) {
    return Error(path + ": " + what +
                 "; it describes another bmodel (a stale copy? deploy again "
                 "to write the matching one beside the bmodel, or remove it "
                 "to run without per-op statistics)");
  };
  if (map.groups.size() != stage.groups.size())
    throw other("the op map has " + std::to_string(map.groups.size()) +
                " command groups, the bmodel " +
                std::to_string(stage.groups.size()));
  for (size_t g = 0; g < map.groups.size(); ++g)
    if (map.groups[g].tiu.size() != stage.groups[g].bdcNum ||
        map.groups[g].gdma.size() != stage.groups[g].gdmaNum)
      throw other("command group " + std::to_string(g) + " has " +
                  std::to_string(stage.groups[g].bdcNum) + " TIU and " +
                  std::to_string(stage.groups[g].gdmaNum) +
                  " GDMA commands, the op map lists " +
                  std::to_string(map.groups[g].tiu.size()) + " and " +
                  std::to_string(map.groups[g].gdma.size()));
}

} // namespace tpu::isa
