//===- tpuc-onnx-test.cpp - ONNX backend node tests on the top interpreter ===//
//
//   tpuc-onnx-test --pass-list tests/onnx/node_tests_pass.txt
//                  --rejected-list tests/onnx/node_tests_rejected.txt
//   tpuc-onnx-test --report [test_name ...]       (every test if none given)
//
// For each ONNX backend node test (<data-dir>/<test>/model.onnx with
// test_data_set_0/input_N.pb and output_N.pb) the driver imports the model
// with the inputs' shapes, runs shape inference and canonicalisation,
// interprets the module and compares every output with output_N.pb like
// ONNX's backend runner (numpy assert_allclose: |actual - expected| <=
// atol + rtol * |expected|, default rtol 1e-3, atol 1e-7; NaN matches NaN).
//
// Node tests feed shapes, axes, pads and the like as graph inputs; inputs
// that sit in an operand the importer needs as a constant (OnnxOps.def's
// constant operands) are turned into initializers holding the test data, as
// an exporter would have written them.
//
// --pass-list: every listed test must pass (a missing test directory
// fails). --rejected-list: every listed test must still be rejected by the
// importer with an error (a test that now passes fails the run, so the lists
// stay honest). --report prints PASS / REJECTED / UNSUPPORTED / SKIP / FAIL
// for each test, for scripts/onnx_node_tests.py.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Npz.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

/// ONNX's backend test defaults (onnx/backend/test/runner: rtol=1e-3,
/// atol=1e-7).
constexpr double kDefaultRtol = 1e-3;
constexpr double kDefaultAtol = 1e-7;
constexpr const char *kDefaultDataDir = "/usr/share/libonnx-testdata/data/node";

constexpr const char *kUsage =
    "usage: tpuc-onnx-test [--data-dir DIR] --pass-list FILE "
    "[--rejected-list FILE]\n"
    "       tpuc-onnx-test [--data-dir DIR] [--pass-list FILE] --report "
    "[test ...]\n";

/// One line of a list file: a test name, optional rtol=/atol= overrides and
/// a "# reason" comment.
struct ListEntry {
  std::string name;
  double rtol = kDefaultRtol;
  double atol = kDefaultAtol;
  std::string reason;
};

enum class Outcome { Pass, Fail, Rejected, Unsupported, Skip };

struct Result {
  Outcome outcome;
  std::string message;
};

std::vector<ListEntry> readList(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw tpu::Error(path + ": cannot open list");
  std::vector<ListEntry> entries;
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    llvm::StringRef l(line);
    auto [body, comment] = l.split('#');
    body = body.trim();
    if (body.empty())
      continue;
    ListEntry e;
    e.reason = comment.trim().str();
    llvm::SmallVector<llvm::StringRef> fields;
    body.split(fields, ' ', -1, /*KeepEmpty=*/false);
    e.name = fields[0].str();
    for (llvm::StringRef f : llvm::ArrayRef(fields).drop_front()) {
      auto [key, value] = f.split('=');
      double *target = key == "rtol"   ? &e.rtol
                       : key == "atol" ? &e.atol
                                       : nullptr;
      if (!target || value.getAsDouble(*target))
        throw tpu::Error(path + ":" + std::to_string(lineNo) +
                         ": expected rtol=X or atol=X, got '" + f.str() + "'");
    }
    entries.push_back(e);
  }
  return entries;
}

onnx::TensorProto readTensor(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw tpu::Error(path + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes))
    throw tpu::Error(path + ": not a TensorProto");
  return t;
}

bool isTensorValue(const onnx::ValueInfoProto &vi) {
  return vi.type().has_tensor_type();
}

/// The test data of some float16/bfloat16 tests is stored as UINT16 bit
/// patterns; reads it as the type the graph declares.
void fixHalfType(onnx::TensorProto &t, int32_t declared) {
  if (t.data_type() == onnx::TensorProto::UINT16 &&
      (declared == onnx::TensorProto::BFLOAT16 ||
       declared == onnx::TensorProto::FLOAT16))
    t.set_data_type(declared);
}

/// Compares like numpy.testing.assert_allclose; "" if equal, else why not.
std::string compare(const std::vector<float> &actual,
                    const std::vector<int64_t> &actualShape,
                    const tpu::npz::Array &expected, double rtol, double atol) {
  if (actualShape != expected.shape)
    return "shape " + tpu::npz::shapeString(actualShape) + ", expected " +
           tpu::npz::shapeString(expected.shape);
  std::vector<double> want = expected.toDouble();
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    double a = actual[k], e = want[k];
    bool ok;
    if (std::isnan(e) || std::isnan(a))
      ok = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a))
      ok = a == e;
    else
      ok = std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok) {
      if (bad == 0)
        first = k;
      ++bad;
      if (std::isfinite(a) && std::isfinite(e))
        worst = std::max(worst, std::fabs(a - e));
    }
  }
  if (bad == 0)
    return "";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << bad << " of " << want.size() << " values differ (first at " << first
     << ": " << actual[first] << " vs " << want[first] << "; max abs diff "
     << worst << ")";
  return os.str();
}

/// Imports, interprets and checks one test.
Result runTest(mlir::MLIRContext &context, const std::string &dataDir,
               const ListEntry &entry) {
  std::string dir = dataDir + "/" + entry.name;
  std::string modelPath = dir + "/model.onnx";
  if (!llvm::sys::fs::exists(modelPath))
    return {Outcome::Fail, "missing test: " + modelPath + " does not exist"};
  onnx::ModelProto model = tpuc::frontend::loadOnnxModel(modelPath);
  onnx::GraphProto *graph = model.mutable_graph();
  for (const auto &vi : graph->input())
    if (!isTensorValue(vi))
      return {Outcome::Skip, "sequence/optional input '" + vi.name() + "'"};
  for (const auto &vi : graph->output())
    if (!isTensorValue(vi))
      return {Outcome::Skip, "sequence/optional output '" + vi.name() + "'"};

  llvm::StringSet<> initNames;
  for (const auto &t : graph->initializer())
    initNames.insert(t.name());
  std::vector<const onnx::ValueInfoProto *> inputs;
  std::vector<std::string> inputNames;
  for (const auto &vi : graph->input())
    if (!initNames.contains(vi.name())) {
      inputs.push_back(&vi);
      inputNames.push_back(vi.name());
    }

  // Inputs the importer needs as constants become initializers.
  llvm::StringSet<> constantInputs;
  for (const onnx::NodeProto &node : graph->node())
    for (int i = 0; i < node.input_size(); ++i)
      if (tpuc::frontend::isConstantOperand(node.op_type(), i))
        constantInputs.insert(node.input(i));

  std::string dataSet = dir + "/test_data_set_0";
  std::vector<std::vector<int64_t>> shapes;
  std::map<std::string, std::vector<float>> feeds;
  std::vector<std::string> runtimeInputs;
  for (size_t k = 0; k < inputNames.size(); ++k) {
    std::string path = dataSet + "/input_" + std::to_string(k) + ".pb";
    const auto &tensorType = inputs[k]->type().tensor_type();
    if (tensorType.elem_type() == onnx::TensorProto::STRING) {
      // No data to feed: the importer rejects the string input itself.
      std::vector<int64_t> dims;
      for (const auto &d : tensorType.shape().dim())
        dims.push_back(d.dim_value());
      shapes.push_back(dims);
      continue;
    }
    onnx::TensorProto t = readTensor(path);
    fixHalfType(t, tensorType.elem_type());
    if (constantInputs.contains(inputNames[k])) {
      t.set_name(inputNames[k]);
      *graph->add_initializer() = t;
      continue;
    }
    tpu::npz::Array a = tpuc::frontend::tensorProtoToArray(t, dir, path);
    shapes.push_back(a.shape);
    feeds[inputNames[k]] = a.toFloat();
    runtimeInputs.push_back(inputNames[k]);
  }

  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (!diagnostics.empty())
      diagnostics += "; ";
    diagnostics += d.str();
    return mlir::success();
  });

  tpuc::frontend::OnnxImportOptions options;
  options.inputShapes = shapes;
  tpuc::frontend::OnnxImportResult imported;
  try {
    imported =
        tpuc::frontend::importOnnxModel(context, model, modelPath, options);
  } catch (const tpu::Error &e) {
    llvm::StringRef msg = e.what();
    if (msg.contains("unsupported ONNX operators"))
      return {Outcome::Unsupported, msg.str()};
    return {Outcome::Rejected, msg.str()};
  }
  mlir::ModuleOp module = *imported.module;
  struct Release {
    mlir::ModuleOp m;
    ~Release() { tpuc::getWeightRegistry(m.getContext()).release(m); }
  } release{module};

  mlir::PassManager pm(&context);
  pm.addPass(tpuc::top::createShapeInferPass());
  pm.addPass(mlir::createCanonicalizerPass());
  if (mlir::failed(pm.run(module)))
    return {Outcome::Fail,
            "shape inference / canonicalisation failed: " + diagnostics};

  tpuc::ModuleInterpreter interpreter(module);
  interpreter.setNumThreads(1);
  for (const std::string &name : runtimeInputs)
    interpreter.setInput(name, feeds[name]);
  if (mlir::failed(interpreter.run()))
    return {Outcome::Fail, "interpreter failed: " + diagnostics};
  std::vector<std::string> outNames = interpreter.outputNames();
  if (outNames.size() != static_cast<size_t>(graph->output_size()))
    return {Outcome::Fail, "module returns " + std::to_string(outNames.size()) +
                               " values for " +
                               std::to_string(graph->output_size()) +
                               " graph outputs"};
  for (size_t k = 0; k < outNames.size(); ++k) {
    std::string path = dataSet + "/output_" + std::to_string(k) + ".pb";
    onnx::TensorProto t = readTensor(path);
    fixHalfType(t, graph->output(k).type().tensor_type().elem_type());
    tpu::npz::Array expected = tpuc::frontend::tensorProtoToArray(t, dir, path);
    std::string why =
        compare(interpreter.tensor(outNames[k]), interpreter.shape(outNames[k]),
                expected, entry.rtol, entry.atol);
    if (!why.empty())
      return {Outcome::Fail,
              "output '" + graph->output(k).name() + "': " + why};
  }
  return {Outcome::Pass, ""};
}

Result runTestSafely(mlir::MLIRContext &context, const std::string &dataDir,
                     const ListEntry &entry) {
  try {
    return runTest(context, dataDir, entry);
  } catch (const std::exception &e) {
    return {Outcome::Fail, e.what()};
  }
}

const char *outcomeName(Outcome o) {
  switch (o) {
  case Outcome::Pass:
    return "PASS";
  case Outcome::Fail:
    return "FAIL";
  case Outcome::Rejected:
    return "REJECTED";
  case Outcome::Unsupported:
    return "UNSUPPORTED";
  case Outcome::Skip:
    return "SKIP";
  }
  return "?";
}

std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  std::string dataDir = kDefaultDataDir;
  std::string passList, rejectedList;
  bool report = false;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc) {
        llvm::errs() << "tpuc-onnx-test: error: " << a << " needs a value\n";
        std::exit(1);
      }
      out = argv[++i];
    };
    if (a == "--data-dir")
      value(dataDir);
    else if (a == "--pass-list")
      value(passList);
    else if (a == "--rejected-list")
      value(rejectedList);
    else if (a == "--report")
      report = true;
    else if (a == "-h" || a == "--help") {
      llvm::outs() << kUsage;
      return 0;
    } else if (a.starts_with("-")) {
      llvm::errs() << "tpuc-onnx-test: error: unknown option '" << a << "'\n"
                   << kUsage;
      return 1;
    } else
      names.push_back(a.str());
  }
  if (!report && passList.empty()) {
    llvm::errs() << kUsage;
    return 1;
  }

  mlir::DialectRegistry registry;
  tpuc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  try {
    if (report) {
      // Tolerance overrides of the pass list apply to the report too.
      std::map<std::string, ListEntry> listed;
      if (!passList.empty())
        for (const ListEntry &e : readList(passList))
          listed[e.name] = e;
      if (names.empty()) {
        std::error_code ec;
        for (llvm::sys::fs::directory_iterator it(dataDir, ec), end;
             it != end && !ec; it.increment(ec))
          names.push_back(llvm::sys::path::filename(it->path()).str());
        std::sort(names.begin(), names.end());
      }
      for (const std::string &name : names) {
        ListEntry e;
        e.name = name;
        if (auto it = listed.find(name); it != listed.end())
          e = it->second;
        Result r = runTestSafely(context, dataDir, e);
        llvm::outs() << outcomeName(r.outcome) << " " << name;
        if (!r.message.empty())
          llvm::outs() << " : " << oneLine(r.message);
        llvm::outs() << "\n";
        llvm::outs().flush();
      }
      return 0;
    }

    unsigned failures = 0, passed = 0, rejected = 0;
    for (const ListEntry &e : readList(passList)) {
      Result r = runTestSafely(context, dataDir, e);
      if (r.outcome == Outcome::Pass) {
        ++passed;
        continue;
      }
      ++failures;
      llvm::outs() << "FAIL " << e.name
                   << " (listed as passing): " << outcomeName(r.outcome) << " "
                   << oneLine(r.message) << "\n";
    }
    if (!rejectedList.empty()) {
      for (const ListEntry &e : readList(rejectedList)) {
        if (e.reason.empty()) {
          ++failures;
          llvm::outs() << "FAIL " << e.name
                       << " (rejected list): no '# reason' given\n";
          continue;
        }
        Result r = runTestSafely(context, dataDir, e);
        if (r.outcome == Outcome::Rejected) {
          ++rejected;
          continue;
        }
        ++failures;
        llvm::outs() << "FAIL " << e.name
                     << " (listed as rejected): " << outcomeName(r.outcome)
                     << " " << oneLine(r.message)
                     << (r.outcome == Outcome::Pass
                             ? " -- it passes now: move it to the pass list"
                             : "")
                     << "\n";
      }
    }
    llvm::outs() << "onnx node tests: " << passed << " passed, " << rejected
                 << " rejected as listed, " << failures << " failed\n";
    return failures == 0 ? 0 : 1;
  } catch (const std::exception &e) {
    llvm::errs() << "tpuc-onnx-test: error: " << e.what() << "\n";
    return 1;
  }
}
