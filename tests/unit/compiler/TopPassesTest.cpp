//===- TopPassesTest.cpp - Canonicalisation numerics and weight files -----===//
//
// The fusion patterns must not change what a module computes: each test
// checks hand-derived outputs before and after --canonicalize, and the
// folded weights' values. Weight files are read from numpy-written npz
// (tests/data/compiler/gen_weights.py).
//
//===----------------------------------------------------------------------===//
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/Dialect/Top/Transforms/Passes.h"
#include "tpuc/InitAll.h"
#include "tpuc/Interpreter/Interpreter.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace tpuc;

namespace {

class TopPasses : public ::testing::Test {
protected:
  TopPasses() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  ModuleOp parse(const std::string &text) {
    // The next module may reuse the address of the one it replaces.
    if (owned)
      releaseWeights(*owned);
    owned = parseSourceString<ModuleOp>(text, &ctx);
    return owned ? *owned : nullptr;
  }

  void addWeight(ModuleOp module, const std::string &name,
                 std::vector<int64_t> shape, std::vector<float> data) {
    getWeightRegistry(&ctx).get(module).memory[name] =
        tpu::npz::Array::from<float>(std::move(shape), data);
  }

  LogicalResult canonicalize(ModuleOp module) {
    PassManager pm(&ctx);
    pm.addPass(createCanonicalizerPass());
    return pm.run(module);
  }

  std::vector<float> run(ModuleOp module, std::vector<float> x,
                         const std::string &out) {
    ModuleInterpreter interp(module);
    interp.setInput("x", std::move(x));
    EXPECT_TRUE(succeeded(interp.run()));
    return interp.tensor(out);
  }

  template <typename OpT> int count(ModuleOp module) {
    int n = 0;
    module.walk([&](OpT) { ++n; });
    return n;
  }

  void expectNear(const std::vector<float> &got,
                  const std::vector<float> &want, float tol = 1e-5f) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], tol) << "at index " << i;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> owned;
};

} // namespace

TEST_F(TopPasses, BatchNormFoldsIntoConv) {
  // 1x1 conv w = 2, b = 1, then BN mean 1, var 4, eps 0, scale 3, bias 0.5:
  // y = ((2x + 1) - 1) / 2 * 3 + 0.5 = 3x + 0.5, so the fused filter is 3
  // and the fused bias 0.5; x = [1, 2] -> [3.5, 6.5].
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
    %w = "top.Weight"() {name = "w"} : () -> tensor<1x1x1x1xf32>
    %b = "top.Weight"() {name = "b"} : () -> tensor<1xf32>
    %1 = "top.Conv"(%0, %w, %b) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x1x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x1x2xf32>
    %mean = "top.Weight"() {name = "mean"} : () -> tensor<1xf32>
    %var = "top.Weight"() {name = "var"} : () -> tensor<1xf32>
    %s = "top.Weight"() {name = "s"} : () -> tensor<1xf32>
    %t = "top.Weight"() {name = "t"} : () -> tensor<1xf32>
    %2 = "top.BatchNorm"(%1, %mean, %var, %s, %t) {name = "bn", epsilon = 0.0 : f64} : (tensor<1x1x1x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x2xf32>
    return %2 : tensor<1x1x1x2xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "w", {1, 1, 1, 1}, {2});
  addWeight(m, "b", {1}, {1});
  addWeight(m, "mean", {1}, {1});
  addWeight(m, "var", {1}, {4});
  addWeight(m, "s", {1}, {3});
  addWeight(m, "t", {1}, {0.5f});
  expectNear(run(m, {1, 2}, "bn"), {3.5f, 6.5f});
  ASSERT_TRUE(succeeded(canonicalize(m)));
  EXPECT_EQ(count<top::BatchNormOp>(m), 0);
  ASSERT_EQ(count<top::ConvOp>(m), 1);
  top::ConvOp conv;
  m.walk([&](top::ConvOp op) { conv = op; });
  EXPECT_EQ(conv.getName(), "bn");
  EXPECT_EQ(getWeightData(conv.getFilter().getDefiningOp<top::WeightOp>()),
            std::vector<float>{3});
  EXPECT_EQ(getWeightData(conv.getBias().getDefiningOp<top::WeightOp>()),
            std::vector<float>{0.5f});
  expectNear(run(m, {1, 2}, "bn"), {3.5f, 6.5f});
}

TEST_F(TopPasses, MulAddReluFoldIntoConv) {
  // Two channels: 1x1 conv weights [2, -1], no bias; Mul by per-channel
  // (1,2,1,1) [3, 4]; Add scalar 1; Relu. Fused: w = [6, -4], b = [1, 1],
  // do_relu. x (1,1,1,2) = [-1, 1]: conv [[-2, 2], [1, -1]] -> *[3,4] ->
  // [[-6, 6], [4, -4]] -> +1 -> [[-5, 7], [5, -3]] -> relu [[0, 7], [5, 0]].
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<1x1x1x2xf32>) -> tensor<1x2x1x2xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
    %w = "top.Weight"() {name = "w"} : () -> tensor<2x1x1x1xf32>
    %1 = "top.Conv"(%0, %w, %n) {name = "conv", kernel_shape = [1, 1], strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x1x1x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x1x2xf32>
    %s = "top.Weight"() {name = "s"} : () -> tensor<1x2x1x1xf32>
    %2 = "top.Mul"(%s, %1) {name = "mul"} : (tensor<1x2x1x1xf32>, tensor<1x2x1x2xf32>) -> tensor<1x2x1x2xf32>
    %one = "top.Weight"() {name = "one"} : () -> tensor<1xf32>
    %3 = "top.Add"(%2, %one) {name = "add"} : (tensor<1x2x1x2xf32>, tensor<1xf32>) -> tensor<1x2x1x2xf32>
    %4 = "top.Relu"(%3) {name = "relu"} : (tensor<1x2x1x2xf32>) -> tensor<1x2x1x2xf32>
    return %4 : tensor<1x2x1x2xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "w", {2, 1, 1, 1}, {2, -1});
  addWeight(m, "s", {1, 2, 1, 1}, {3, 4});
  addWeight(m, "one", {1}, {1});
  std::vector<float> want = {0, 7, 5, 0};
  expectNear(run(m, {-1, 1}, "relu"), want);
  ASSERT_TRUE(succeeded(canonicalize(m)));
  EXPECT_EQ(count<top::MulOp>(m) + count<top::AddOp>(m) +
                count<top::ReluOp>(m),
            0);
  top::ConvOp conv;
  m.walk([&](top::ConvOp op) { conv = op; });
  ASSERT_TRUE(conv);
  EXPECT_TRUE(conv.getDoRelu());
  EXPECT_EQ(conv.getName(), "relu");
  EXPECT_EQ(getWeightData(conv.getFilter().getDefiningOp<top::WeightOp>()),
            (std::vector<float>{6, -4}));
  EXPECT_EQ(getWeightData(conv.getBias().getDefiningOp<top::WeightOp>()),
            (std::vector<float>{1, 1}));
  expectNear(run(m, {-1, 1}, "relu"), want);
}

TEST_F(TopPasses, ConstantFolding) {
  // Add of two weights [1,2] + [10,20] = [11,22], reshaped to (2,1), then
  // multiplied into x (2,1) = [[1],[2]]: [[11],[44]]. Only the Mul stays.
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<2x1xf32>) -> tensor<2x1xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %a = "top.Weight"() {name = "a"} : () -> tensor<2xf32>
    %b = "top.Weight"() {name = "b"} : () -> tensor<2xf32>
    %1 = "top.Add"(%a, %b) {name = "sum"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = "top.Reshape"(%1) {name = "col", shape = [2, 1]} : (tensor<2xf32>) -> tensor<2x1xf32>
    %3 = "top.Mul"(%0, %2) {name = "y"} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    return %3 : tensor<2x1xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "a", {2}, {1, 2});
  addWeight(m, "b", {2}, {10, 20});
  ASSERT_TRUE(succeeded(canonicalize(m)));
  EXPECT_EQ(count<top::AddOp>(m), 0);
  EXPECT_EQ(count<top::ReshapeOp>(m), 0);
  EXPECT_EQ(count<top::WeightOp>(m), 1);
  top::WeightOp w;
  m.walk([&](top::WeightOp op) { w = op; });
  EXPECT_EQ(w.getName(), "col");
  EXPECT_EQ(getWeightData(w), (std::vector<float>{11, 22}));
  expectNear(run(m, {1, 2}, "y"), {11, 44});
}

TEST_F(TopPasses, WeightsFromNumpyFile) {
  // weights.npz (numpy): w float32 [[1,2],[3,4]], idx int64 [0,-1],
  // h float16 [0.5, 1.5].
  ModuleOp m = parse(R"(
module attributes {top.weight_file = "weights.npz"} {
  func.func @main() -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = "top.Weight"() {name = "w"} : () -> tensor<2x2xf32>
    %1 = "top.Weight"() {name = "idx"} : () -> tensor<2xf32>
    %2 = "top.Weight"() {name = "h"} : () -> tensor<2xf32>
    return %0, %1, %2 : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
  }
})");
  ASSERT_TRUE(m);
  std::string dataDir = std::string(TPU_TEST_DATA_DIR) + "/compiler";
  ASSERT_TRUE(succeeded(loadWeights(m, dataDir)));
  SmallVector<top::WeightOp> ws;
  m.walk([&](top::WeightOp op) { ws.push_back(op); });
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(getWeightData(ws[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(getWeightData(ws[1]), (std::vector<float>{0, -1}));
  EXPECT_EQ(getWeightData(ws[2]), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(uniqueWeightName(m, "w"), "w_1");
  EXPECT_EQ(uniqueWeightName(m, "fresh"), "fresh");

  // A pass-created weight joins them; saving writes all four with their
  // dtypes kept, and points the module at the new file.
  OpBuilder b(&ctx);
  b.setInsertionPointToStart(&module::getMainFunc(m).getBody().front());
  top::WeightOp made =
      createWeight(b, b.getUnknownLoc(), "made", {3}, {7, 8, 9});
  EXPECT_EQ(getWeightData(made), (std::vector<float>{7, 8, 9}));
  EXPECT_THROW(createWeight(b, b.getUnknownLoc(), "bad", {2}, {1}),
               tpu::Error);
  llvm::SmallString<128> out;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tpuc-weights", out));
  llvm::sys::path::append(out, "saved.npz");
  ASSERT_TRUE(succeeded(saveWeights(m, out)));
  EXPECT_EQ(module::getWeightFile(m), "saved.npz");
  tpu::npz::Npz saved = tpu::npz::readNpz(std::string(out));
  EXPECT_EQ(saved.names(),
            (std::vector<std::string>{"made", "w", "idx", "h"}));
  EXPECT_EQ(saved.get("idx").dtype, tpu::npz::DType::I64);
  EXPECT_EQ(saved.get("made").toFloat(), (std::vector<float>{7, 8, 9}));
  // A name that is nowhere is an error naming the weight.
  top::WeightOp missing = b.create<top::WeightOp>(
      b.getUnknownLoc(), module::getF32Type(&ctx, {1}), "missing");
  try {
    getWeightData(missing);
    FAIL() << "expected tpu::Error";
  } catch (const tpu::Error &e) {
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos);
  }
  missing->erase();
  llvm::sys::fs::remove(out);
  llvm::sys::fs::remove(llvm::sys::path::parent_path(out));
}
