//===- Disasm.cpp - Text and JSON views of BM1684X commands ---------------===//
#include "tpu/isa/Disasm.h"

#include "tpu/isa/Format.h"

namespace tpu::isa {

namespace {

/// Addresses (`*_addr*`) and lane masks (`localmem_mask_*`) print in hex.
bool printsAsHex(std::string_view field) {
  return field.find("addr") != std::string_view::npos ||
         field.rfind("localmem_mask", 0) == 0;
}

std::string formatValue(std::string_view field, uint64_t v) {
  return printsAsHex(field) ? formatHex(v) : std::to_string(v);
}

LayoutId layoutByName(std::string_view name) {
  for (unsigned i = 0; i < kNumLayouts; ++i)
    if (name == allLayouts()[i].name)
      return allLayouts()[i].id;
  throw Error("command JSON: unknown layout '" + std::string(name) + "'");
}

} // namespace

std::string disassemble(const RawCommand &c, const DisasmOptions &opts) {
  std::string out = mnemonic(c);
  const LayoutInfo &li = c.info();
  for (unsigned i = 0; i < li.numFields; ++i) {
    const FieldInfo &f = li.fields[i];
    uint64_t v = extractBits(c.words(), f.lsb, f.width);
    if (v == 0 && (f.reserved || !opts.showZero))
      continue;
    out += ' ';
    out += f.name;
    out += '=';
    out += formatValue(f.name, v);
  }
  return out;
}

nlohmann::json toJson(const RawCommand &c) {
  const LayoutInfo &li = c.info();
  nlohmann::json fields = nlohmann::json::object();
  for (unsigned i = 0; i < li.numFields; ++i) {
    const FieldInfo &f = li.fields[i];
    uint64_t v = extractBits(c.words(), f.lsb, f.width);
    if (!f.reserved || v != 0)
      fields[f.name] = v;
  }
  return {{"layout", li.name},
          {"mnemonic", mnemonic(c)},
          {"bytes", li.bytes()},
          {"fields", std::move(fields)}};
}

RawCommand fromJson(const nlohmann::json &j) {
  if (!j.is_object())
    throw Error("command JSON: expected an object");
  for (const auto &[key, value] : j.items())
    if (key != "layout" && key != "mnemonic" && key != "bytes" &&
        key != "fields")
      throw Error("command JSON: unknown key '" + key + "'");
  auto layout = j.find("layout");
  if (layout == j.end() || !layout->is_string())
    throw Error("command JSON: missing string \"layout\"");
  RawCommand c(layoutByName(layout->get<std::string>()));
  auto fields = j.find("fields");
  if (fields == j.end())
    return c;
  if (!fields->is_object())
    throw Error("command JSON: \"fields\" must be an object");
  const LayoutInfo &li = c.info();
  for (const auto &[name, value] : fields->items()) {
    int idx = li.findField(name);
    if (idx < 0)
      throw Error("command JSON: " + std::string(li.name) + " has no field '" +
                  name + "'");
    if (!value.is_number_unsigned() &&
        !(value.is_number_integer() && value.get<int64_t>() >= 0))
      throw Error("command JSON: " + std::string(li.name) + "." + name +
                  ": expected a non-negative integer, got " + value.dump());
    try {
      c.set(static_cast<unsigned>(idx), value.get<uint64_t>());
    } catch (const Error &e) {
      throw Error(std::string("command JSON: ") + e.what());
    }
  }
  return c;
}

} // namespace tpu::isa
