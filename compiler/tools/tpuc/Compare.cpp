//===- Compare.cpp - tpuc compare: per-tensor similarity of two npz -------===//
//
//   tpuc compare actual.npz reference.npz [--tolerance C[,E]]
//                [--max-abs-rel R] [--names a,b,...] [--allow-missing]
//                [--dequant model_ops.json|model_tpu.mlir] [--first-mismatch]
//
// For every tensor in both files (in the order of actual.npz), prints cosine
// and Euclidean similarity, SQNR, max absolute error and max |reference|
// (definitions in tpuc/Support/Compare.h) and PASS/FAIL. A tensor in only one
// of the files is an error (exit 1, naming it) unless --names selects the
// tensors or --allow-missing makes it a warning (for --dump-all / --expose-all
// files, which hold intermediates the other side may not have). Exit status 0
// only if at least one tensor was compared and every compared tensor passes.
//
// --dequant: an INT8 dump holds int8 / uint8 arrays; each integer array of
// a tensor the file lists as quantised is compared as (q - zero_point) *
// scale, on either side, so an INT8 dump compares with a float one. The
// scales come from the op map tpuc deploy writes beside the bmodel
// (<stem>_ops.json, DDR tensors only) or from a tpu module (<stem>_tpu.mlir
// or _final.mlir: every tensor, inside layer groups too). Float arrays are
// never dequantised.
//
// --first-mismatch: after the table, "first mismatch: NAME" names the first
// failing tensor in the order of actual.npz ("first mismatch: none" if all
// pass). tpusim --dump-all and tpuc run --dump-all write tensors in program
// order, so this is the first op whose output departs.
//
//===----------------------------------------------------------------------===//
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Support/Compare.h"

#include "tpu/isa/Npz.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <string>
#include <vector>

namespace {

namespace cl = llvm::cl;

cl::SubCommand
    command("compare",
            "per-tensor similarity of two .npz files (cosine, euclid, SQNR)");
tpuc::cli::Category category("tpuc compare options");

constexpr const char *kOverview =
    R"(tpuc compare: per-tensor similarity of two .npz files

  tpuc compare actual.npz reference.npz [--tolerance C[,E]]
               [--max-abs-rel R] [--names a,b,...] [--allow-missing]
               [--dequant FILE] [--first-mismatch]

Per tensor present in both files (a = actual, b = reference):
  cosine  = <a,b> / (||a|| ||b||)
  euclid  = max(0, 1 - ||a-b|| / ||b||)
  sqnr    = 10 log10(||b||^2 / ||a-b||^2) dB
  max|err| = max |a-b|, max|ref| = max |b|
A tensor passes if cosine >= C and euclid >= E (default 0.99,0.90),
no NaN/inf differs, and (with --max-abs-rel R) max|err| <= R * max|ref|.
Exit status 0 only if every compared tensor passes.
)";

cl::list<std::string> filesArg(cl::Positional,
                               cl::desc("actual.npz reference.npz"),
                               cl::sub(command), cl::cat(category));
cl::opt<std::string> toleranceArg(
    "tolerance",
    cl::desc("minimum cosine and euclid similarity (default 0.99,0.90)"),
    cl::value_desc("COSINE[,EUCLID]"), cl::sub(command), cl::cat(category));
cl::opt<std::string> maxAbsRelArg(
    "max-abs-rel",
    cl::desc("also require max|err| <= R * max|ref| (a non-negative number)"),
    cl::value_desc("R"), cl::sub(command), cl::cat(category));
cl::opt<std::string> namesArg(
    "names",
    cl::desc("compare only these tensors (each must be in both files)"),
    cl::value_desc("a,b,..."), cl::sub(command), cl::cat(category));
cl::opt<bool> allowMissingArg(
    "allow-missing",
    cl::desc("a tensor in one file only is a warning (by default an error)"),
    cl::sub(command), cl::cat(category));
cl::opt<std::string> dequantArg(
    "dequant",
    cl::desc("compare integer arrays of quantised tensors as (q - "
             "zero_point) * scale, the scales from FILE: the <stem>_ops.json "
             "of tpuc deploy or a tpu module (.mlir)"),
    cl::value_desc("FILE"), cl::sub(command), cl::cat(category));
cl::opt<bool> firstMismatchArg(
    "first-mismatch",
    cl::desc("print 'first mismatch: NAME', the first failing tensor in the "
             "order of actual.npz (program order for tpusim / tpuc run "
             "--dump-all files)"),
    cl::sub(command), cl::cat(category));

/// Names listed once each before a warning gets too long.
constexpr size_t kMaxListedNames = 8;

int fail(const llvm::Twine &message) {
  llvm::errs() << "tpuc compare: error: " << message << "\n";
  return 1;
}

/// Reports the tensors only in \p file, as an error or a warning.
void reportOnlyIn(const std::vector<std::string> &names, llvm::StringRef file,
                  bool error) {
  if (names.empty())
    return;
  llvm::errs() << "tpuc compare: " << (error ? "error: " : "warning: ")
               << names.size() << " tensor(s) only in " << file << ":";
  for (size_t i = 0; i < names.size() && i < kMaxListedNames; ++i)
    llvm::errs() << " " << names[i];
  if (names.size() > kMaxListedNames)
    llvm::errs() << " ...";
  llvm::errs() << "\n";
}

/// True for the integer dtypes a quantised tensor is stored in.
bool isInteger(tpu::npz::DType t) {
  using tpu::npz::DType;
  return t == DType::I8 || t == DType::U8 || t == DType::I16 ||
         t == DType::U16 || t == DType::I32 || t == DType::U32;
}

} // namespace

static int runCompare() {
  std::vector<std::string> files = filesArg;
  tpuc::Tolerance tol;
  std::vector<std::string> selected;
  bool haveSelection = namesArg.getNumOccurrences() != 0;
  bool allowMissing = allowMissingArg;
  bool firstMismatch = firstMismatchArg;
  std::string dequantPath = dequantArg;
  if (toleranceArg.getNumOccurrences()) {
    llvm::Expected<tpuc::Tolerance> parsed =
        tpuc::parseTolerance(toleranceArg, tol);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    tol = *parsed;
  }
  if (maxAbsRelArg.getNumOccurrences()) {
    double r;
    if (llvm::StringRef(maxAbsRelArg).getAsDouble(r) || r < 0)
      return fail("--max-abs-rel needs a non-negative number");
    tol.maxAbsRel = r;
  }
  if (haveSelection) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(namesArg).split(parts, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts)
      selected.push_back(p.trim().str());
  }
  if (files.size() != 2)
    return fail("expected two .npz files (see tpuc compare --help)");
  if (haveSelection && selected.empty())
    return fail("--names lists no tensor");

  tpuc::QuantParamMap quant;
  if (!dequantPath.empty()) {
    if (llvm::StringRef(dequantPath).ends_with(".json")) {
      quant = tpuc::quantParamsOfOpMap(dequantPath);
    } else {
      std::unique_ptr<mlir::MLIRContext> context = tpuc::tool::createContext();
      tpuc::tool::ParsedModule parsed;
      if (std::string error = tpuc::tool::parseModule(
              *context, dequantPath, /*requireTop=*/false, parsed);
          !error.empty())
        return fail(error);
      quant = tpuc::quantParamsOf(*parsed.module);
    }
  }

  tpu::npz::Npz actual = tpu::npz::readNpz(files[0]);
  tpu::npz::Npz reference = tpu::npz::readNpz(files[1]);

  std::vector<std::string> names;
  if (haveSelection) {
    for (const std::string &name : selected) {
      if (!actual.contains(name))
        return fail("'" + name + "' is not in " + files[0]);
      if (!reference.contains(name))
        return fail("'" + name + "' is not in " + files[1]);
      names.push_back(name);
    }
  } else {
    std::vector<std::string> onlyActual, onlyReference;
    for (const std::string &name : actual.names())
      (reference.contains(name) ? names : onlyActual).push_back(name);
    for (const std::string &name : reference.names())
      if (!actual.contains(name))
        onlyReference.push_back(name);
    reportOnlyIn(onlyActual, files[0], /*error=*/!allowMissing);
    reportOnlyIn(onlyReference, files[1], /*error=*/!allowMissing);
    if (!allowMissing && (!onlyActual.empty() || !onlyReference.empty()))
      return fail("the files hold different tensors (select some with "
                  "--names, or pass --allow-missing)");
  }
  if (names.empty())
    return fail("no tensor name is in both " + files[0] + " and " + files[1]);

  // --dequant: an integer array against a float one that its file does
  // not list stays raw codes, which compare as nonsense: said, and refused
  // when the file lists none of the compared tensors (another model's
  // file). Arrays integer on both sides (indices, argmax) compare as they
  // are.
  if (!dequantPath.empty()) {
    std::vector<std::string> raw;
    size_t listed = 0;
    for (const std::string &name : names) {
      bool mixed = isInteger(actual.get(name).dtype) !=
                   isInteger(reference.get(name).dtype);
      if (quant.count(name))
        ++listed;
      else if (mixed)
        raw.push_back(name);
    }
    if (listed == 0 && !raw.empty())
      return fail("--dequant " + dequantPath +
                  " lists none of the compared tensors (the file of another "
                  "model?); their integer codes would compare raw");
    if (!raw.empty()) {
      llvm::errs() << "tpuc compare: warning: --dequant " << dequantPath
                   << " does not list " << raw.size()
                   << " integer tensor(s), compared as raw codes:";
      for (size_t i = 0; i < raw.size() && i < 5; ++i)
        llvm::errs() << " " << raw[i];
      llvm::errs() << (raw.size() > 5 ? " ..." : "")
                   << " (an op map lists DDR tensors only; a tpu module "
                      "lists every tensor)\n";
    }
  }

  std::vector<tpuc::TensorComparison> rows;
  rows.reserve(names.size());
  for (const std::string &name : names) {
    const tpu::npz::Array &a = actual.get(name);
    const tpu::npz::Array &b = reference.get(name);
    std::vector<double> av = a.toDouble(), bv = b.toDouble();
    if (auto it = quant.find(name); it != quant.end()) {
      if (isInteger(a.dtype))
        tpuc::dequantize(av, it->second);
      if (isInteger(b.dtype))
        tpuc::dequantize(bv, it->second);
    }
    rows.push_back(tpuc::compareTensors(name, a.shape, av, b.shape, bv, tol));
  }
  tpuc::printComparisonTable(llvm::outs(), rows, tol);
  if (firstMismatch) {
    auto bad = llvm::find_if(
        rows, [](const tpuc::TensorComparison &r) { return !r.pass; });
    llvm::outs() << "first mismatch: "
                 << (bad == rows.end() ? std::string("none") : bad->name)
                 << "\n";
  }
  for (const tpuc::TensorComparison &row : rows)
    if (!row.pass)
      return 1;
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::compare{command, kOverview, runCompare};
