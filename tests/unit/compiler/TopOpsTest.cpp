//===- TopOpsTest.cpp - top ops through the interpreter -------------------===//
//
// Small modules parsed from text, run by ModuleInterpreter; expected values
// are derived by hand beside each check (ONNX semantics).
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
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace tpuc;

namespace {

class TopOps : public ::testing::Test {
protected:
  TopOps() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    // Keep diagnostics quiet unless a test looks at them.
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &ctx, [this](Diagnostic &d) {
          errors.push_back(d.str());
          return success();
        });
  }

  /// Parses a module from \p text (replacing the previous one).
  ModuleOp parse(const std::string &text) {
    // The next module may reuse the address of the one it replaces.
    if (owned)
      releaseWeights(*owned);
    owned = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(owned) << "parse failed: "
                       << (errors.empty() ? "" : errors.back());
    return owned ? *owned : nullptr;
  }

  /// Puts float data for weight \p name into the module's memory store.
  void addWeight(ModuleOp module, const std::string &name,
                 std::vector<int64_t> shape, std::vector<float> data) {
    getWeightRegistry(&ctx).get(module).memory[name] =
        tpu::npz::Array::from<float>(std::move(shape), data);
  }

  void expectNear(const std::vector<float> &got,
                  const std::vector<float> &want, float tol = 1e-5f) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], tol) << "at index " << i;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> owned;
  std::vector<std::string> errors;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

/// Wraps one op line in a module whose @main has input %arg0.
std::string unaryModule(const std::string &inType, const std::string &outType,
                        const std::string &opLine) {
  return "module {\n  func.func @main(%arg0: " + inType + ") -> " + outType +
         " {\n    %0 = \"top.Input\"(%arg0) {name = \"x\"} : (" + inType +
         ") -> " + inType + "\n    %1 = " + opLine + "\n    return %1 : " +
         outType + "\n  }\n}\n";
}

} // namespace

TEST_F(TopOps, SliceNegativeStep) {
  // x = [0..5], start -1 (-> 5), end INT64_MIN (clamped to -1), step -2:
  // indices 5, 3, 1.
  ModuleOp m = parse(unaryModule(
      "tensor<6xf32>", "tensor<3xf32>",
      R"("top.Slice"(%0) {name = "s", offset = [-1], ends = [-9223372036854775808], steps = [-2]} : (tensor<6xf32>) -> tensor<3xf32>)"));
  ASSERT_TRUE(m);
  ModuleInterpreter interp(m);
  interp.setInput("x", {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(succeeded(interp.run()));
  expectNear(interp.tensor("s"), {5, 3, 1});
}

TEST_F(TopOps, SliceClampsEnds) {
  // (2,5): rows 0..INT64_MAX (all), cols 1..-1 step 2 -> cols 1, 3.
  ModuleOp m = parse(unaryModule(
      "tensor<2x5xf32>", "tensor<2x2xf32>",
      R"("top.Slice"(%0) {name = "s", offset = [0, 1], ends = [9223372036854775807, -1], steps = [1, 2]} : (tensor<2x5xf32>) -> tensor<2x2xf32>)"));
  ASSERT_TRUE(m);
  ModuleInterpreter interp(m);
  interp.setInput("x", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(succeeded(interp.run()));
  expectNear(interp.tensor("s"), {1, 3, 6, 8});
}

TEST_F(TopOps, GatherNegativeIndex) {
  // x (3,2) = [[1,2],[3,4],[5,6]], indices [-1, 0] -> rows 2 and 0.
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<3x2xf32>) -> tensor<2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %1 = "top.Weight"() {name = "idx"} : () -> tensor<2xf32>
    %2 = "top.Gather"(%0, %1) {name = "g", axis = 0 : i64} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    return %2 : tensor<2x2xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "idx", {2}, {-1, 0});
  ModuleInterpreter interp(m);
  interp.setInput("x", {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(succeeded(interp.run()));
  expectNear(interp.tensor("g"), {5, 6, 1, 2});
}

TEST_F(TopOps, ReduceModes) {
  // (2,3) = [[1,2,3],[4,5,6]] over axis 1: mean [2,5], max [3,6],
  // min [1,4], sum [6,15]; over axis -2 with keepdims: sum [[5,7,9]].
  struct Case {
    const char *mode, *axes, *outType;
    bool keep;
    std::vector<float> want;
  };
  const Case cases[] = {
      {"ReduceMean", "[1]", "tensor<2xf32>", false, {2, 5}},
      {"ReduceMax", "[1]", "tensor<2xf32>", false, {3, 6}},
      {"ReduceMin", "[1]", "tensor<2xf32>", false, {1, 4}},
      {"ReduceSum", "[1]", "tensor<2xf32>", false, {6, 15}},
      {"ReduceSum", "[-2]", "tensor<1x3xf32>", true, {5, 7, 9}},
  };
  for (const Case &c : cases) {
    std::string line = std::string("\"top.Reduce\"(%0) {name = \"r\", mode = \"") +
                       c.mode + "\", axes = " + c.axes + ", keepdims = " +
                       (c.keep ? "true" : "false") +
                       "} : (tensor<2x3xf32>) -> " + c.outType;
    ModuleOp m = parse(unaryModule("tensor<2x3xf32>", c.outType, line));
    ASSERT_TRUE(m);
    ModuleInterpreter interp(m);
    interp.setInput("x", {1, 2, 3, 4, 5, 6});
    ASSERT_TRUE(succeeded(interp.run()));
    SCOPED_TRACE(c.mode);
    expectNear(interp.tensor("r"), c.want);
  }
}

TEST_F(TopOps, CastRounding) {
  // Integers truncate toward zero and saturate: -1.7 -> -1, 2.9 -> 2,
  // 300 -> 127 for int8. f16 of 0.1 is 0x2E66 = 0.0999755859375; bf16 of
  // 1 + 2^-8 ties to even -> 1.0.
  auto run = [&](const std::string &to, std::vector<float> in) {
    ModuleOp m = parse(unaryModule(
        "tensor<3xf32>", "tensor<3xf32>",
        "\"top.Cast\"(%0) {name = \"c\", to = \"" + to +
            "\"} : (tensor<3xf32>) -> tensor<3xf32>"));
    ModuleInterpreter interp(m);
    interp.setInput("x", std::move(in));
    EXPECT_TRUE(succeeded(interp.run()));
    return interp.tensor("c");
  };
  expectNear(run("int8", {-1.7f, 2.9f, 300.0f}), {-1, 2, 127}, 0);
  expectNear(run("uint8", {-1.7f, 2.9f, 300.0f}), {0, 2, 255}, 0);
  expectNear(run("f16", {0.1f, 1.0f, -2.0f}), {0.0999755859375f, 1, -2}, 0);
  expectNear(run("bf16", {1.00390625f, 1.0f, 0.0f}), {1, 1, 0}, 0);
  expectNear(run("bool", {-0.5f, 0.0f, 3.0f}), {1, 0, 1}, 0);
}

TEST_F(TopOps, ActivationsAtKnownPoints) {
  // Values at x = 1 (hand-evaluated): sigmoid 0.7310586, tanh 0.7615942,
  // exp e = 2.7182817, log 0, sqrt 1, erf 0.8427008, gelu 0.5 * (1 +
  // erf(1/sqrt 2)) = 0.8413447, gelu tanh 0.5 * (1 + tanh(0.7978846 *
  // 1.044715)) = 0.8411920, silu 0.7310586, hardswish 1 * (1/6 + 1/2) =
  // 0.6666667, hardsigmoid 0.2 + 0.5 = 0.7, leakyrelu(-1) = -0.01,
  // reciprocal(4) = 0.25, abs(-3) = 3, neg 1 = -1, clip(7, 0, 6) = 6.
  struct Case {
    std::string op, attrs;
    float x, want;
  };
  const Case cases[] = {
      {"Sigmoid", "", 1, 0.7310586f},
      {"Tanh", "", 1, 0.7615942f},
      {"Exp", "", 1, 2.7182817f},
      {"Log", "", 1, 0},
      {"Sqrt", "", 4, 2},
      {"Erf", "", 1, 0.8427008f},
      {"Gelu", "", 1, 0.8413447f},
      {"Gelu", ", approximate = \"tanh\"", 1, 0.8411920f},
      {"SiLU", "", 1, 0.7310586f},
      {"HardSwish", "", 1, 0.6666667f},
      {"HardSigmoid", "", 1, 0.7f},
      {"LeakyRelu", "", -1, -0.01f},
      {"Reciprocal", "", 4, 0.25f},
      {"Abs", "", -3, 3},
      {"Neg", "", 1, -1},
      {"Clip", ", min = 0.0 : f64, max = 6.0 : f64", 7, 6},
      {"Relu", ", relu_limit = 6.0 : f64", 7, 6},
      {"Relu", "", -7, 0},
  };
  for (const Case &c : cases) {
    ModuleOp m = parse(unaryModule(
        "tensor<1xf32>", "tensor<1xf32>",
        "\"top." + c.op + "\"(%0) {name = \"y\"" + c.attrs +
            "} : (tensor<1xf32>) -> tensor<1xf32>"));
    ASSERT_TRUE(m);
    ModuleInterpreter interp(m);
    interp.setInput("x", {c.x});
    ASSERT_TRUE(succeeded(interp.run()));
    EXPECT_NEAR(interp.tensor("y")[0], c.want, 1e-6f) << c.op << c.attrs;
  }
}

TEST_F(TopOps, BinaryBroadcastAndCompare) {
  // x (2,2) = [[1,2],[3,4]] against w (2) = [2, 2]:
  // Sub [[-1,0],[1,2]], Div [[.5,1],[1.5,2]], Pow [[1,4],[9,16]],
  // Max [[2,2],[3,4]], Min [[1,2],[2,2]], Greater [[0,0],[1,1]],
  // LessOrEqual [[1,1],[0,0]], Equal [[0,1],[0,0]].
  struct Case {
    std::string op, attrs;
    std::vector<float> want;
  };
  const Case cases[] = {
      {"Sub", "", {-1, 0, 1, 2}},
      {"Div", "", {0.5f, 1, 1.5f, 2}},
      {"Pow", "", {1, 4, 9, 16}},
      {"Max", "", {2, 2, 3, 4}},
      {"Min", "", {1, 2, 2, 2}},
      {"Compare", ", mode = \"Greater\"", {0, 0, 1, 1}},
      {"Compare", ", mode = \"LessOrEqual\"", {1, 1, 0, 0}},
      {"Compare", ", mode = \"Equal\"", {0, 1, 0, 0}},
  };
  for (const Case &c : cases) {
    ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %1 = "top.Weight"() {name = "w"} : () -> tensor<2xf32>
    %2 = "top.)" + c.op + R"("(%0, %1) {name = "y")" +
                       c.attrs + R"(} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    return %2 : tensor<2x2xf32>
  }
})");
    ASSERT_TRUE(m);
    addWeight(m, "w", {2}, {2, 2});
    ModuleInterpreter interp(m);
    interp.setInput("x", {1, 2, 3, 4});
    ASSERT_TRUE(succeeded(interp.run()));
    SCOPED_TRACE(c.op + c.attrs);
    expectNear(interp.tensor("y"), c.want);
  }
}

TEST_F(TopOps, WhereConcatSplitTileExpand) {
  // cond [1,0,1] selects x = [1,2,3] else y = [9]: [1,9,3].
  // concat([1,2,3], [1,9,3]) = 6 values; split [2,4] of it;
  // tile [1,9,3] x2 = [1,9,3,1,9,3]; expand (3) -> (2,3) repeats the row.
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<6xf32>, tensor<2xf32>, tensor<4xf32>, tensor<6xf32>, tensor<2x3xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<3xf32>) -> tensor<3xf32>
    %1 = "top.Weight"() {name = "cond"} : () -> tensor<3xf32>
    %2 = "top.Weight"() {name = "nine"} : () -> tensor<1xf32>
    %3 = "top.Where"(%1, %0, %2) {name = "w"} : (tensor<3xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
    %4 = "top.Concat"(%0, %3) {name = "cat", axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
    %5:2 = "top.Split"(%4) {name = "a", names = ["a", "b"], axis = 0 : i64, split = [2, 4]} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<4xf32>)
    %6 = "top.Tile"(%3) {name = "t", repeats = [2]} : (tensor<3xf32>) -> tensor<6xf32>
    %7 = "top.Expand"(%3) {name = "e", shape = [2, 1]} : (tensor<3xf32>) -> tensor<2x3xf32>
    return %3, %4, %5#0, %5#1, %6, %7 : tensor<3xf32>, tensor<6xf32>, tensor<2xf32>, tensor<4xf32>, tensor<6xf32>, tensor<2x3xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "cond", {3}, {1, 0, 1});
  addWeight(m, "nine", {1}, {9});
  ModuleInterpreter interp(m);
  EXPECT_EQ(interp.outputNames(),
            (std::vector<std::string>{"w", "cat", "a", "b", "t", "e"}));
  interp.setInput("x", {1, 2, 3});
  ASSERT_TRUE(succeeded(interp.run()));
  expectNear(interp.tensor("w"), {1, 9, 3});
  expectNear(interp.tensor("cat"), {1, 2, 3, 1, 9, 3});
  expectNear(interp.tensor("a"), {1, 2});
  expectNear(interp.tensor("b"), {3, 1, 9, 3});
  expectNear(interp.tensor("t"), {1, 9, 3, 1, 9, 3});
  expectNear(interp.tensor("e"), {1, 9, 3, 1, 9, 3});
  EXPECT_EQ(interp.shape("e"), (std::vector<int64_t>{2, 3}));
}

TEST_F(TopOps, InterpAndPadThroughOps) {
  // (1,1,1,2) = [1,2] -> (1,1,2,4) linear half_pixel with scales 2:
  // each row [1, 1.25, 1.75, 2]. Pad edge [0,0,0,1] on the last axis of
  // (1,1,1,2) -> [1,2,2].
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<1x1x1x2xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x1x1x3xf32>) {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
    %1 = "top.Interp"(%0) {name = "up", mode = "linear", coord_mode = "half_pixel", scale_h = 2.0 : f64, scale_w = 2.0 : f64} : (tensor<1x1x1x2xf32>) -> tensor<1x1x2x4xf32>
    %2 = "top.Pad"(%0) {name = "p", paddings = [0, 0, 0, 0, 0, 0, 0, 1], mode = "edge"} : (tensor<1x1x1x2xf32>) -> tensor<1x1x1x3xf32>
    return %1, %2 : tensor<1x1x2x4xf32>, tensor<1x1x1x3xf32>
  }
})");
  ASSERT_TRUE(m);
  ModuleInterpreter interp(m);
  interp.setInput("x", {1, 2});
  ASSERT_TRUE(succeeded(interp.run()));
  expectNear(interp.tensor("up"), {1, 1.25f, 1.75f, 2, 1, 1.25f, 1.75f, 2});
  expectNear(interp.tensor("p"), {1, 2, 2});
}

TEST_F(TopOps, LayerNormSoftmaxMatMulPermute) {
  // x (1,2,2) = [[1,2],[3,4]]: LayerNorm over the last axis gives
  // [-1, 1] per row (eps 0); Softmax along axis 1 of x gives per column
  // [0.1192029, 0.8807971]; MatMul x * W (2x2 identity swapped
  // [[0,1],[1,0]]) swaps columns: [[2,1],[4,3]]; with bias [10, 20] and
  // relu: [[12,21],[14,23]]; Permute [0,2,1] transposes: [[1,3],[2,4]].
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<1x2x2xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    %1 = "top.LayerNorm"(%0, %n, %n) {name = "ln", axis = -1 : i64, epsilon = 0.0 : f64} : (tensor<1x2x2xf32>, none, none) -> tensor<1x2x2xf32>
    %2 = "top.Softmax"(%0) {name = "sm", axis = 1 : i64} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    %w = "top.Weight"() {name = "swap"} : () -> tensor<2x2xf32>
    %b = "top.Weight"() {name = "bias"} : () -> tensor<2xf32>
    %3 = "top.MatMul"(%0, %w, %b) {name = "mm", do_relu = true} : (tensor<1x2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
    %4 = "top.Permute"(%0) {name = "tr", order = [0, 2, 1]} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    return %1, %2, %3, %4 : tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>
  }
})");
  ASSERT_TRUE(m);
  addWeight(m, "swap", {2, 2}, {0, 1, 1, 0});
  addWeight(m, "bias", {2}, {10, 20});
  ModuleInterpreter interp(m);
  interp.setInput("x", {1, 2, 3, 4});
  ASSERT_TRUE(succeeded(interp.run(/*keepAll=*/true)));
  expectNear(interp.tensor("ln"), {-1, 1, -1, 1});
  expectNear(interp.tensor("sm"), {0.1192029f, 0.1192029f, 0.8807971f,
                                   0.8807971f});
  expectNear(interp.tensor("mm"), {12, 21, 14, 23});
  expectNear(interp.tensor("tr"), {1, 3, 2, 4});
}

TEST_F(TopOps, KeepAllAndFreeing) {
  // y = relu(x) + x: with keepAll the intermediate "r" stays, without it
  // is freed after its last use (only inputs and outputs remain).
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "top.Relu"(%0) {name = "r"} : (tensor<2xf32>) -> tensor<2xf32>
    %2 = "top.Add"(%1, %0) {name = "y"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %2 : tensor<2xf32>
  }
})");
  ASSERT_TRUE(m);
  ModuleInterpreter interp(m);
  EXPECT_EQ(interp.tensorNames(), (std::vector<std::string>{"x", "r", "y"}));
  EXPECT_EQ(interp.inputNames(), (std::vector<std::string>{"x"}));
  interp.setInput("x", {-1, 2});
  ASSERT_TRUE(succeeded(interp.run(true)));
  expectNear(interp.tensor("r"), {0, 2});
  expectNear(interp.tensor("y"), {-1, 4});
  ASSERT_TRUE(succeeded(interp.run(false)));
  EXPECT_FALSE(interp.hasTensor("r"));
  EXPECT_THROW(interp.tensor("r"), tpu::Error);
  expectNear(interp.tensor("y"), {-1, 4});
  EXPECT_THROW(interp.shape("nope"), tpu::Error);
}

TEST_F(TopOps, RunReportsBadInputs) {
  ModuleOp m = parse(unaryModule(
      "tensor<2xf32>", "tensor<2xf32>",
      R"("top.Relu"(%0) {name = "r"} : (tensor<2xf32>) -> tensor<2xf32>)"));
  ASSERT_TRUE(m);
  {
    ModuleInterpreter interp(m);
    EXPECT_TRUE(failed(interp.run())); // x never set
  }
  {
    ModuleInterpreter interp(m);
    interp.setInput("x", {1, 2, 3});
    EXPECT_TRUE(failed(interp.run())); // wrong size
  }
  {
    ModuleInterpreter interp(m);
    interp.setInput("y", {1, 2});
    EXPECT_TRUE(failed(interp.run())); // unknown name
  }
}

TEST_F(TopOps, ShapeInferenceFillsTypes) {
  // Unranked results get their shapes; the function type follows.
  ModuleOp m = parse(R"(
module {
  func.func @main(%arg0: tensor<2x3x8x8xf32>) -> tensor<*xf32> {
    %n = "top.None"() : () -> none
    %0 = "top.Input"(%arg0) {name = "x"} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %w = "top.Weight"() {name = "w"} : () -> tensor<6x1x3x3xf32>
    %1 = "top.Conv"(%0, %w, %n) {name = "c", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], dilations = [1, 1], group = 3} : (tensor<2x3x8x8xf32>, tensor<6x1x3x3xf32>, none) -> tensor<*xf32>
    %2 = "top.MaxPool"(%1) {name = "p", kernel_shape = [2, 2], strides = [2, 2], pads = [0, 0, 1, 1]} : (tensor<*xf32>) -> tensor<*xf32>
    %3 = "top.Reshape"(%2) {name = "r", shape = [0, -1]} : (tensor<*xf32>) -> tensor<*xf32>
    return %3 : tensor<*xf32>
  }
})");
  ASSERT_TRUE(m);
  ASSERT_TRUE(succeeded(top::inferShapes(m)));
  // Conv: (8 + 1 - 3) / 2 + 1 = 4 per axis; pool (4 + 1 - 2) / 2 + 1 = 2;
  // reshape [0, -1] keeps 2 and folds 6 * 2 * 2 = 24.
  func::FuncOp f = module::getMainFunc(m);
  EXPECT_EQ(module::getShape(f.getResultTypes()[0]),
            (std::vector<int64_t>{2, 24}));
  EXPECT_TRUE(succeeded(verify(m)));
}
