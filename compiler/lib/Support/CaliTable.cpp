//===- CaliTable.cpp - Calibration tables (TPU-MLIR's text format) --------===//
//
// Reader and writer of CaliTable.h. Header comments round-trip: a line
// "# text" is kept as "text" and written back as "# text"; any other comment
// line of the main section ("###", "#text") is kept and written verbatim.
// The column line "# op_name ..." is not kept (the writer emits it). The
// writer adds a "#asym_op" section (one name a line) when asymOps is not
// empty, so a table read and written keeps its asymmetric ops.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/CaliTable.h"

#include "tpu/isa/Bmodel.h"
#include "tpu/isa/Error.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tpuc {

namespace {

/// TPU-MLIR's floor for thresholds.
constexpr double kMinThreshold = 1e-5;

enum class Section { Main, Int4Th, AsymOp, WeightScale, Int4Op };

/// The optional section a line opens, if it is a section marker.
std::optional<Section> sectionMarker(llvm::StringRef line) {
  if (line.starts_with("#int4_th"))
    return Section::Int4Th;
  if (line.starts_with("#asym_op"))
    return Section::AsymOp;
  if (line.starts_with("#weight_scale"))
    return Section::WeightScale;
  if (line.starts_with("#int4_op"))
    return Section::Int4Op;
  return std::nullopt;
}

bool isColumnLine(llvm::StringRef comment) {
  return comment.ltrim("# \t").starts_with("op_name");
}

} // namespace

llvm::Expected<CaliTable> parseCaliTable(llvm::StringRef text,
                                         llvm::StringRef path) {
  CaliTable table;
  table.path = path.str();
  auto error = [&](unsigned line, const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ":" + llvm::Twine(line) + ": " +
                                       message);
  };
  Section section = Section::Main;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (size_t index = 0; index < lines.size(); ++index) {
    unsigned lineNo = index + 1;
    llvm::StringRef raw = lines[index].rtrim("\r");
    llvm::StringRef line = raw.trim();
    if (line.empty())
      continue;
    if (std::optional<Section> s = sectionMarker(line)) {
      section = *s;
      continue;
    }
    if (line.starts_with("#")) {
      if (section == Section::Main && !isColumnLine(line))
        table.header.push_back(line.starts_with("# ")
                                   ? line.drop_front(2).str()
                                   : line.str());
      continue;
    }
    if (section == Section::AsymOp) {
      table.asymOps.push_back(line.split(' ').first.split('\t').first.str());
      continue;
    }
    if (section != Section::Main)
      continue; // int4 thresholds, weight scales: read and ignored
    llvm::SmallVector<llvm::StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    // Tabs separate fields too.
    llvm::SmallVector<llvm::StringRef> split;
    for (llvm::StringRef f : fields)
      f.split(split, '\t', -1, /*KeepEmpty=*/false);
    if (split.size() != 4)
      return error(lineNo, "expected 'name threshold min max', got " +
                               llvm::Twine(split.size()) + " fields: '" +
                               line + "'");
    double values[3];
    const char *what[3] = {"threshold", "min", "max"};
    for (int k = 0; k < 3; ++k)
      if (split[k + 1].getAsDouble(values[k]) || !std::isfinite(values[k]))
        return error(lineNo, "tensor '" + split[0] + "': " + what[k] + " '" +
                                 split[k + 1] + "' is not a finite number");
    // A threshold is a magnitude: a negative one is a broken table (it
    // would be floored to kMinThreshold and saturate the whole tensor).
    if (values[0] < 0)
      return error(lineNo, "tensor '" + split[0] + "': threshold " +
                               split[1] + " is negative");
    CaliEntry entry;
    entry.threshold = std::max(values[0], kMinThreshold);
    entry.min = values[1];
    entry.max = values[2];
    entry.line = lineNo;
    if (entry.min > entry.max)
      return error(lineNo, "tensor '" + split[0] + "': min " + split[2] +
                               " > max " + split[3]);
    auto [it, inserted] = table.entries.try_emplace(split[0], entry);
    if (!inserted)
      return error(lineNo, "tensor '" + split[0] +
                               "' is listed twice (first on line " +
                               llvm::Twine(it->second.line) + ")");
    table.order.push_back(split[0].str());
  }
  if (table.order.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": the calibration table has no "
                                          "entries");
  return table;
}

llvm::Expected<CaliTable> readCaliTable(llvm::StringRef path) {
  if (std::string why = tpu::isa::bmodel::notAFile(path.str()); !why.empty())
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "cannot read '" + path.str() + "': it " + why);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read '" + path +
                                                          "': " +
                                                          buffer.getError()
                                                              .message());
  return parseCaliTable((*buffer)->getBuffer(), path);
}

std::string formatCaliTable(const CaliTable &table) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &h : table.header)
    os << (llvm::StringRef(h).starts_with("#") ? "" : "# ") << h << "\n";
  os << "# op_name    threshold    min    max\n";
  for (const std::string &name : table.order) {
    const CaliEntry *e = table.find(name);
    if (!e)
      continue;
    os << name << " "
       << llvm::format("%.7f %.7f %.7f", std::max(e->threshold, kMinThreshold),
                       e->min, e->max)
       << "\n";
  }
  if (!table.asymOps.empty()) {
    os << "#asym_op\n";
    for (const std::string &name : table.asymOps)
      os << name << "\n";
  }
  os.flush();
  return text;
}

llvm::Error writeCaliTable(const CaliTable &table, llvm::StringRef path) {
  std::string text = formatCaliTable(table);
  try {
    // O_TMPFILE (or a hidden temporary) renamed into place.
    tpu::isa::bmodel::writeFileAtomically(
        path.str(), std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const tpu::Error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), e.what());
  }
  return llvm::Error::success();
}


std::string formatModelQuant(const llvm::StringMap<ModelQuant> &quant) {
  std::vector<std::string> names;
  for (const auto &e : quant)
    names.push_back(e.getKey().str());
  std::sort(names.begin(), names.end());
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &n : names) {
    const ModelQuant &q = quant.find(n)->second;
    const char *storage = q.storage == ModelQuant::Storage::Int8    ? "i8"
                          : q.storage == ModelQuant::Storage::UInt8 ? "u8"
                                                                    : "i32";
    os << n << ' ' << storage << ' ' << q.zeroPoint;
    for (double s : q.scales) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %a", s);
      os << buf;
    }
    os << '\n';
  }
  return text;
}

llvm::Expected<llvm::StringMap<ModelQuant>>
parseModelQuant(llvm::StringRef text, llvm::StringRef path) {
  llvm::StringMap<ModelQuant> out;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/true);
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].trim();
    if (line.empty())
      continue;
    auto error = [&](const llvm::Twine &what) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ":" + llvm::Twine(i + 1) + ": " +
                                         what + ": '" + line + "'");
    };
    llvm::SmallVector<llvm::StringRef> f;
    line.split(f, ' ', -1, /*KeepEmpty=*/false);
    if (f.size() < 4)
      return error("expected 'name i8|u8|i32 zero_point scale...'");
    ModelQuant q;
    if (f[1] == "i8")
      q.storage = ModelQuant::Storage::Int8;
    else if (f[1] == "u8")
      q.storage = ModelQuant::Storage::UInt8;
    else if (f[1] == "i32")
      q.storage = ModelQuant::Storage::Int32;
    else
      return error("storage type '" + f[1] + "' is not i8, u8 or i32");
    if (f[2].getAsInteger(10, q.zeroPoint))
      return error("zero point '" + f[2] + "' is not an integer");
    for (size_t k = 3; k < f.size(); ++k) {
      std::string s = f[k].str();
      char *end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0)
        return error("scale '" + f[k] + "' is not a positive number");
      q.scales.push_back(v);
    }
    if (!out.try_emplace(f[0], std::move(q)).second)
      return error("tensor '" + f[0] + "' is listed twice");
  }
  return out;
}

} // namespace tpuc
