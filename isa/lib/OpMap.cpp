//===- OpMap.cpp - Which op every command of a bmodel was emitted for -----===//
#include "tpu/isa/OpMap.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace tpu::isa {

void writeOpMap(const OpMap &map, const std::string &path) {
  nlohmann::json j;
  j["version"] = 1;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpMapEntry &e : map.ops)
    ops.push_back({{"name", e.name},
                   {"type", e.type},
                   {"group", e.members},
                   {"lmem_bytes", e.lmemBytes}});
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
    return Error(path + ": " + what + "; it describes another bmodel");
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
