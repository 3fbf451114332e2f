//===- Calibrate.cpp - tpuc calibrate: INT8 calibration table -------------===//
//
//   tpuc calibrate model_top.mlir --dataset DIR --input-num N
//       -o model_cali_table [--method kld|minmax|percentile9999|mse|
//       aciq_gauss|aciq_laplace | --search-threshold [--search-samples K]]
//       [--tune-num K] [--threads T]
//
// TPU-MLIR's run_calibration: runs the top (f32) interpreter on the first N
// samples of DIR (tpuc/Calibration/Dataset.h gives the rules: .npz files,
// or .jpg/.jpeg/.png images through the module's top.preprocess) and writes,
// per tensor of the module (every named op result, model inputs included,
// weights excluded; program order), the threshold of --method and the
// observed min and max, in TPU-MLIR's table format (tpuc/Support/CaliTable.h).
//
// One streaming pass: the interpreter's observer hands every tensor to a
// per-thread accumulator (tpuc/Calibration/Histogram.h: min, max, absmax and
// a 2048-bin power-of-two histogram of |x|) as soon as it is computed, and
// the interpreter frees it after its last use; nothing keeps the
// activations of more than one sample per thread. Samples are spread over
// T threads, each with its own ModuleInterpreter (own buffers and its own
// copy of the weights); the module's weight store is filled before the
// threads start and only read afterwards. The accumulators merge exactly,
// so the table does not depend on T nor on which thread ran which sample.
//
// --tune-num K (a simplified form of TPU-MLIR's auto-tune): per tensor, the
// candidates t_j = t0 + (absmax - t0) * j / K, j = 0..K, t0 the threshold
// of --method; a second pass over the first min(N, 5) samples sums, per
// tensor and candidate, the squared error of the tensor against its
// symmetric INT8 fake quantisation with t_j (calibration::fakeQuantInt8);
// the candidate with the least error wins (the first on ties). The
// criterion is local: each tensor is quantised alone, its inputs float. The
// per-sample sums are added in sample order, so tuning is deterministic too.
//
// --search-threshold (TPU-MLIR's search_threshold): the one statistics pass
// gives every method's thresholds; for each method, in the fixed order kld,
// minmax, percentile9999, mse, aciq_gauss, aciq_laplace, the module is
// lowered to INT8 in memory with that table (Int8Search.h: what
// `tpuc deploy --quantize INT8 --int8-fallback F32` builds) and run on the
// first K samples (--search-samples, default min(N, 4)); the method whose
// outputs are closest to the top module's (mean cosine over the outputs and
// the K samples) is written, the first in that order on ties. A line per
// method gives its cosine, and the header records them. K larger than the
// samples the dataset gives is an error (nothing is searched on fewer
// samples than asked for); --method and --tune-num do not combine with it.
//
// Progress goes to stderr: a bar with the ETA when stderr is a terminal, a
// summary line (samples, tensors, seconds) otherwise. Any error names the
// file, the input or the tensor, exits 1 and writes nothing.
//
//===----------------------------------------------------------------------===//
#include "Int8Search.h"
#include "Subcommands.h"
#include "ToolCommon.h"

#include "tpuc/Calibration/Dataset.h"
#include "tpuc/Calibration/Histogram.h"
#include "tpuc/Calibration/Thresholds.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/CaliTable.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Preprocess.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"
#include "tpu/isa/Format.h"
#include "tpu/isa/Npz.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace cal = tpuc::calibration;

namespace {

constexpr const char *kTool = "tpuc calibrate";

/// Samples the --tune-num pass runs on (TPU-MLIR's default tune_num).
constexpr size_t kTuneSamples = 5;

/// Default samples of --search-threshold.
constexpr size_t kSearchSamples = 4;

namespace cl = llvm::cl;

cl::SubCommand
    command("calibrate",
            "INT8 calibration table (thresholds per tensor) from a dataset");
tpuc::cli::Category category("tpuc calibrate options");

constexpr const char *kOverview =
    R"(tpuc calibrate: the INT8 calibration table of a top module

  tpuc calibrate model_top.mlir --dataset DIR --input-num N
                 -o model_cali_table [--method M | --search-threshold
                 [--search-samples K]] [--tune-num K] [--threads T]

Runs the top interpreter on the first N samples of DIR and writes a
calibration table (TPU-MLIR's format: name threshold min max per tensor)
for INT8 deployment.
)";

cl::opt<std::string> modelArg(cl::Positional, cl::desc("model_top.mlir"),
                              cl::sub(command), cl::cat(category));
cl::opt<std::string> datasetArg(
    "dataset",
    cl::desc("directory of samples, sorted by file name: .npz files, each "
             "one float32 array per model input, named as the input (a "
             "one-input model also takes a file with a single array of any "
             "name), or .jpg/.jpeg/.png images for a one-input model, "
             "preprocessed as the module records (tpuc transform "
             "--mean/--scale/...); not both kinds"),
    cl::value_desc("DIR"), cl::sub(command), cl::cat(category));
cl::opt<std::string> inputNumArg(
    "input-num",
    cl::desc("samples to use (the first N; fewer if DIR holds fewer, with a "
             "warning)"),
    cl::value_desc("N"), cl::sub(command), cl::cat(category));
cl::opt<std::string> outputArg("output",
                               cl::desc("the calibration table to write"),
                               cl::value_desc("FILE"), cl::sub(command),
                               cl::cat(category));
cl::alias outputShort("o", cl::desc("Alias for --output"),
                      cl::aliasopt(outputArg), cl::NotHidden,
                      cl::cat(category));
/// The methods the library has, for --method's help.
const std::string kMethodNames = cal::methodNames();
cl::opt<std::string> methodArg(
    "method",
    cl::desc("threshold method (default kld): kld (TensorRT entropy), "
             "minmax (max |x|), percentile9999, mse (least INT8 squared "
             "error), aciq_gauss, aciq_laplace"),
    cl::value_desc(kMethodNames), cl::init("kld"), cl::sub(command), cl::cat(category));
cl::opt<bool> searchThresholdArg(
    "search-threshold",
    cl::desc("try every method: lower to INT8 in memory with each table and "
             "keep the one whose outputs are closest (mean cosine) to the "
             "f32 module's"),
    cl::sub(command), cl::cat(category));
cl::opt<std::string> searchSamplesArg(
    "search-samples",
    cl::desc("samples the search runs (the first K; default min(N, 4))"),
    cl::value_desc("K"), cl::sub(command), cl::cat(category));
cl::opt<std::string> tuneNumArg(
    "tune-num",
    cl::desc("refine each threshold among K + 1 candidates from the "
             "method's threshold to max |x|, by the least INT8 "
             "fake-quantisation error on the first 5 samples (default 0: no "
             "tuning)"),
    cl::value_desc("K"), cl::sub(command), cl::cat(category));
cl::opt<std::string> threadsArg(
    "threads",
    cl::desc("threads, samples run in parallel (default: all cores)"),
    cl::value_desc("T"), cl::sub(command), cl::cat(category));

struct CalibrateOptions {
  std::string model, dataset, output, method = "kld";
  bool haveMethod = false;
  size_t inputNum = 0;
  bool haveInputNum = false;
  bool searchThreshold = false;
  size_t searchSamples = 0; ///< 0: min(N, kSearchSamples)
  unsigned tuneNum = 0;
  unsigned threads = 0;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

/// The parsed options, checked; returns -1 to go on, else the exit status.
int readOptions(CalibrateOptions &opts) {
  opts.model = modelArg;
  opts.dataset = datasetArg;
  opts.output = outputArg;
  opts.method = methodArg;
  opts.haveMethod = methodArg.getNumOccurrences() != 0;
  opts.searchThreshold = searchThresholdArg;
  if (searchSamplesArg.getNumOccurrences() &&
      (!llvm::to_integer(searchSamplesArg.getValue(), opts.searchSamples) ||
       opts.searchSamples == 0))
    return fail("--search-samples needs a positive integer, got '" +
                searchSamplesArg + "'");
  opts.haveInputNum = inputNumArg.getNumOccurrences() != 0;
  if (opts.haveInputNum &&
      (!llvm::to_integer(inputNumArg.getValue(), opts.inputNum) ||
       opts.inputNum == 0))
    return fail("--input-num needs a positive integer, got '" + inputNumArg +
                "'");
  if (tuneNumArg.getNumOccurrences() &&
      !llvm::to_integer(tuneNumArg.getValue(), opts.tuneNum))
    return fail("--tune-num needs an integer >= 0, got '" + tuneNumArg + "'");
  if (threadsArg.getNumOccurrences() &&
      (!llvm::to_integer(threadsArg.getValue(), opts.threads) ||
       opts.threads == 0))
    return fail("--threads needs a positive integer, got '" + threadsArg + "'");
  if (std::string e = tpuc::tool::missingRequired(
          "calibrate", {{"a model", !opts.model.empty()},
                        {"--dataset", !opts.dataset.empty()},
                        {"--input-num", opts.haveInputNum},
                        {"-o", !opts.output.empty()}});
      !e.empty())
    return fail(e);
  if (opts.searchThreshold && opts.haveMethod)
    return fail("--search-threshold tries every method; drop --method");
  if (opts.searchThreshold && opts.tuneNum)
    return fail("--search-threshold and --tune-num do not combine (the "
                "search compares the methods' own thresholds)");
  if (opts.searchSamples && !opts.searchThreshold)
    return fail("--search-samples needs --search-threshold");
  return -1;
}

/// The table's "genetated time" line: SOURCE_DATE_EPOCH (UTC) when set, so
/// that reruns give identical files, else the local time.
std::string generationTime() {
  return tpu::isa::formatTimestamp("%Y-%m-%d %H:%M:%S");
}

/// Progress of the sample pass on stderr.
class Progress {
public:
  Progress(const char *what, size_t total)
      : what(what), total(total), tty(::isatty(2)),
        start(std::chrono::steady_clock::now()) {}

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }
  /// Redraws the bar (terminal only).
  void update(size_t done) {
    if (!tty)
      return;
    constexpr size_t width = 30;
    size_t filled = total ? done * width / total : width;
    double s = seconds();
    std::string bar(filled, '#');
    bar.resize(width, '.');
    llvm::errs() << "\r" << kTool << ": " << what << " [" << bar << "] "
                 << done << "/" << total;
    if (done > 0 && done < total)
      llvm::errs() << llvm::format("  %.1f s, ETA %.0f s ", s,
                                   s / done * (total - done));
    else
      llvm::errs() << llvm::format("  %.1f s             ", s);
    llvm::errs().flush();
  }
  void finish(size_t done) {
    update(done);
    if (tty)
      llvm::errs() << "\n";
  }

private:
  const char *what;
  size_t total;
  bool tty;
  std::chrono::steady_clock::time_point start;
};

/// Runs \p work(worker, sample) for every sample on \p numWorkers threads
/// (each sample once, by an atomic counter) while the calling thread redraws
/// \p progress. Stops at the first error; rethrows the error of the
/// lowest-numbered failed sample as tpu::Error.
void forEachSample(size_t numSamples, unsigned numWorkers, Progress &progress,
                   const std::function<void(unsigned, size_t)> &work) {
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<std::pair<size_t, std::string>> firstError;
  auto body = [&](unsigned worker) {
    for (;;) {
      size_t s = next.fetch_add(1);
      if (s >= numSamples || stop)
        break;
      try {
        work(worker, s);
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!firstError || s < firstError->first)
          firstError = {s, e.what()};
        stop = true;
      }
      done.fetch_add(1);
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < numWorkers; ++w)
    threads.emplace_back(body, w);
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (done < numSamples && !stop) {
      cv.wait_for(lock, std::chrono::milliseconds(250));
      lock.unlock();
      progress.update(done);
      lock.lock();
    }
  }
  for (std::thread &t : threads)
    t.join();
  if (firstError)
    throw tpu::Error(firstError->second);
  progress.finish(done);
}

} // namespace

static int runCalibrate() {
  CalibrateOptions opts;
  if (int status = readOptions(opts); status >= 0)
    return status;
  std::optional<cal::Method> method = cal::parseMethod(opts.method);
  if (!method)
    return fail("unknown --method '" + opts.method + "' (one of " +
                cal::methodNames() + ")");
  if (std::string error = tpuc::tool::checkOutputPaths(
          {opts.output}, tpuc::tool::moduleInputs(opts.model, "the module"));
      !error.empty())
    return fail(error);

  // The dataset first: a bad directory should not wait for the module.
  cal::DatasetFiles dataset = cal::listDataset(opts.dataset, opts.inputNum);
  if (dataset.available < opts.inputNum)
    llvm::errs() << kTool << ": warning: --input-num " << opts.inputNum
                 << " but '" << opts.dataset << "' holds "
                 << dataset.available << " sample"
                 << (dataset.available == 1 ? "" : "s") << "; using "
                 << dataset.available << "\n";
  const size_t numSamples = dataset.files.size();
  const size_t searchSamples =
      opts.searchSamples ? opts.searchSamples
                         : std::min(numSamples, kSearchSamples);
  if (opts.searchThreshold && searchSamples > numSamples)
    return fail("--search-samples " + llvm::Twine(searchSamples) + " but '" +
                opts.dataset + "' gives " + llvm::Twine(numSamples) +
                " sample" + (numSamples == 1 ? "" : "s") +
                " (--input-num " + llvm::Twine(opts.inputNum) +
                "); nothing written");

  std::unique_ptr<mlir::MLIRContext> context = tpuc::tool::createContext();
  tpuc::tool::ParsedModule parsed;
  // loadModule fills the weight store before any thread starts; the
  // interpreters only read it.
  if (std::string error = tpuc::tool::loadModule(*context, opts.model,
                                                 /*requireTop=*/true, parsed);
      !error.empty())
    return fail(error);
  mlir::ModuleOp module = *parsed.module;
  mlir::func::FuncOp func = tpuc::module::getMainFunc(module);
  if (!func || func.isExternal())
    return fail("'" + opts.model + "' has no main function");
  tpuc::tool::checkFitsHostMemory(module, opts.model);
  // Images go through the module's preprocessing.
  llvm::Expected<std::optional<tpuc::Preprocess>> recorded =
      tpuc::module::getPreprocess(module);
  if (!recorded)
    return fail(opts.model + ": " + llvm::toString(recorded.takeError()));
  std::vector<cal::SampleDecoder> decoders;
  for (const std::string &file : dataset.files)
    decoders.push_back(
        cal::decoderFor(file, recorded->value_or(tpuc::Preprocess{})));

  unsigned threads =
      opts.threads ? opts.threads
                   : std::max(1u, std::thread::hardware_concurrency());
  unsigned numWorkers =
      static_cast<unsigned>(std::min<size_t>(threads, numSamples));
  std::vector<std::unique_ptr<tpuc::ModuleInterpreter>> interpreters;
  for (unsigned w = 0; w < numWorkers; ++w) {
    interpreters.push_back(std::make_unique<tpuc::ModuleInterpreter>(module));
    // Threads beyond one per sample go to the kernels.
    interpreters.back()->setNumThreads(threads / numWorkers +
                                       (w < threads % numWorkers ? 1 : 0));
  }
  tpuc::ModuleInterpreter &first = *interpreters.front();
  const std::vector<std::string> names = first.tensorNames();
  std::vector<tpu::npz::InputSpec> specs;
  for (const std::string &name : first.inputNames())
    specs.push_back({name, first.shape(name), tpu::npz::DType::F32});

  auto runSample = [&](unsigned w, size_t s) {
    tpuc::ModuleInterpreter &interp = *interpreters[w];
    cal::SampleInputs inputs = decoders[s](dataset.files[s], specs);
    for (size_t k = 0; k < specs.size(); ++k)
      interp.setInput(specs[k].name, std::move(inputs[k]));
    if (mlir::failed(interp.run()))
      throw tpu::Error("interpreting '" + opts.model + "' on sample '" +
                       dataset.files[s] + "' failed");
  };

  // Pass 1: statistics.
  std::vector<std::vector<cal::TensorStats>> perWorker(
      numWorkers, std::vector<cal::TensorStats>(names.size()));
  for (unsigned w = 0; w < numWorkers; ++w)
    interpreters[w]->setObserver(
        [&stats = perWorker[w]](unsigned index, llvm::StringRef,
                                llvm::ArrayRef<float> data) {
          stats[index].add(data.data(), data.size());
        });
  Progress progress("samples", numSamples);
  forEachSample(numSamples, numWorkers, progress, runSample);
  std::vector<cal::TensorStats> stats = std::move(perWorker[0]);
  for (unsigned w = 1; w < numWorkers; ++w)
    for (size_t t = 0; t < names.size(); ++t)
      stats[t].merge(perWorker[w][t]);
  perWorker.clear();

  // Thresholds, tensors in parallel (each a pure function of its stats).
  auto thresholdsOf = [&](cal::Method m) {
    std::vector<double> out(names.size());
    std::atomic<size_t> next{0};
    auto body = [&] {
      for (size_t t; (t = next.fetch_add(1)) < names.size();) {
        cal::HistogramInput in{stats[t].usedHistogram(), stats[t].binWidth(),
                               stats[t].min(), stats[t].max(),
                               stats[t].absMax()};
        out[t] = cal::computeThreshold(m, in);
      }
    };
    std::vector<std::thread> pool;
    for (unsigned k = 1; k < threads; ++k)
      pool.emplace_back(body);
    body();
    for (std::thread &th : pool)
      th.join();
    return out;
  };
  // The table of \p m with \p th (header: TPU-MLIR's lines, "genetated" is
  // its spelling).
  auto makeTable = [&](cal::Method m, const std::vector<double> &th,
                       size_t tuneSamples) {
    tpuc::CaliTable table;
    table.path = opts.output;
    table.header = {
        "cali version: 1.0 (tpuc calibrate)",
        "mlir: " + opts.model,
        "genetated time: " + generationTime(),
        std::string("threshold method: ") + cal::methodName(m),
        "histogram number: " + std::to_string(cal::TensorStats::kBins),
        "sample number: " + std::to_string(numSamples),
        "###",
        "tune number: " + std::to_string(opts.tuneNum) +
            (opts.tuneNum ? " (candidates), on " +
                                std::to_string(tuneSamples) + " samples"
                          : std::string()),
        "###"};
    for (size_t t = 0; t < names.size(); ++t) {
      tpuc::CaliEntry e;
      e.threshold = th[t];
      e.min = stats[t].min();
      e.max = stats[t].max();
      table.entries[names[t]] = e;
      table.order.push_back(names[t]);
    }
    return table;
  };

  // --search-threshold: every method's table through the INT8 module.
  std::vector<std::string> searchLines;
  if (opts.searchThreshold) {
    std::vector<cal::SampleInputs> inputs;
    for (size_t s = 0; s < searchSamples; ++s)
      inputs.push_back(decoders[s](dataset.files[s], specs));
    for (auto &interp : interpreters)
      interp->setObserver(nullptr);
    tpuc::tool::Int8Evaluator evaluator(module, std::move(inputs), threads);
    double best = -2;
    for (cal::Method m : cal::allMethods()) {
      tpuc::CaliTable candidate = makeTable(m, thresholdsOf(m), 0);
      tpuc::tool::Int8Evaluator::Result r =
          evaluator.evaluate(candidate, nullptr, tpuc::QuantMode::F32);
      std::string line = llvm::formatv("{0,-15} cosine {1:f8}",
                                       cal::methodName(m), r.cosine)
                             .str();
      llvm::outs() << kTool << ": search: " << line << "\n";
      searchLines.push_back(line);
      if (r.cosine > best) { // strictly: the earlier method wins ties
        best = r.cosine;
        method = m;
      }
    }
    llvm::outs() << kTool << ": search: " << cal::methodName(*method)
                 << " is closest to f32 (INT8, fallback F32, "
                 << searchSamples << " sample"
                 << (searchSamples == 1 ? "" : "s") << ")\n";
  }
  std::vector<double> thresholds = thresholdsOf(*method);

  // Pass 2 (--tune-num): candidates by local fake-quantisation error.
  size_t tuneSamples = opts.tuneNum ? std::min(numSamples, kTuneSamples) : 0;
  if (opts.tuneNum) {
    const unsigned k = opts.tuneNum;
    std::vector<std::vector<double>> candidates(names.size());
    for (size_t t = 0; t < names.size(); ++t)
      for (unsigned j = 0; j <= k; ++j) {
        double t0 = thresholds[t], top = stats[t].absMax();
        candidates[t].push_back(t0 + (top - t0) * double(j) / double(k));
      }
    // error[sample][tensor][candidate]
    std::vector<std::vector<std::vector<double>>> error(
        tuneSamples, std::vector<std::vector<double>>(
                         names.size(), std::vector<double>(k + 1, 0.0)));
    std::vector<size_t> current(numWorkers);
    for (unsigned w = 0; w < numWorkers; ++w)
      interpreters[w]->setObserver([&, w](unsigned index, llvm::StringRef,
                                          llvm::ArrayRef<float> data) {
        std::vector<double> &e = error[current[w]][index];
        for (size_t j = 0; j <= k; ++j) {
          double tj = candidates[index][j];
          if (!(tj > 0))
            continue; // an all-zero tensor: nothing to choose
          double sum = 0;
          for (float x : data)
            if (std::isfinite(x)) {
              double d = double(x) - cal::fakeQuantInt8(x, tj);
              sum += d * d;
            }
          e[j] = sum;
        }
      });
    Progress tuneProgress("tuning", tuneSamples);
    forEachSample(tuneSamples, std::min<unsigned>(numWorkers, tuneSamples),
                  tuneProgress, [&](unsigned w, size_t s) {
                    current[w] = s;
                    runSample(w, s);
                  });
    for (size_t t = 0; t < names.size(); ++t) {
      double best = std::numeric_limits<double>::infinity();
      for (unsigned j = 0; j <= k; ++j) {
        double sum = 0;
        for (size_t s = 0; s < tuneSamples; ++s)
          sum += error[s][t][j];
        if (sum < best) {
          best = sum;
          thresholds[t] = candidates[t][j];
        }
      }
    }
  }
  for (auto &interp : interpreters)
    interp->setObserver(nullptr);

  tpuc::CaliTable table = makeTable(*method, thresholds, tuneSamples);
  if (opts.searchThreshold) {
    // After TPU-MLIR's lines, so that its readers see the same header.
    table.header.push_back("search threshold: mean INT8 cosine to f32 on " +
                           std::to_string(searchSamples) + " samples");
    for (const std::string &line : searchLines)
      table.header.push_back("  " + line);
    table.header.push_back("###");
  }
  for (size_t t = 0; t < names.size(); ++t)
    if (uint64_t bad = stats[t].nonFiniteCount())
      llvm::errs() << kTool << ": warning: tensor '" << names[t] << "': "
                   << bad << " non-finite values (NaN, inf) left out of its "
                   << "statistics\n";
  if (llvm::Error error = tpuc::writeCaliTable(table, opts.output))
    return fail(llvm::toString(std::move(error)));
  llvm::errs() << kTool << ": " << numSamples << " samples, " << names.size()
               << " tensors, "
               << llvm::format("%.2f", progress.seconds()) << " s\n";
  llvm::outs() << kTool << ": " << opts.output << " (" << names.size()
               << " tensors, " << cal::methodName(*method)
               << (opts.searchThreshold ? ", searched" : "")
               << (opts.tuneNum ? ", tuned" : "") << ")\n";
  tpuc::getWeightRegistry(context.get()).release(module);
  return 0;
}

const tpuc::cli::Subcommand tpuc::cli::calibrate{command, kOverview,
                                                 runCalibrate};
