//===- OnnxImporterTest.cpp - Import-time evaluation of shape subgraphs ---===//
//
// Models built in memory whose outputs are computed entirely from constants
// and input shapes: the importer must fold them, so @main returns a
// top.Weight whose data is checked against values derived by hand (the
// derivation sits beside each expectation). Also the errors of values that
// must be constant but are not.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Frontend/OnnxImporter.h"
#include "tpuc/Dialect/Top/IR/TopOps.h"
#include "tpuc/InitAll.h"
#include "tpuc/Support/Module.h"
#include "tpuc/Support/Weights.h"

#include "tpu/isa/Error.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using tpuc::frontend::importOnnxModel;
using tpuc::frontend::OnnxImportOptions;

/// A graph under construction.
class GraphBuilder {
public:
  explicit GraphBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    auto *imp = model.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model.mutable_graph()->set_name("g");
  }

  void input(const std::string &name, std::vector<int64_t> dims) {
    auto *vi = model.mutable_graph()->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string &name) {
    model.mutable_graph()->add_output()->set_name(name);
  }
  void ints(const std::string &name, std::vector<int64_t> dims,
            std::vector<int64_t> values) {
    auto *t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t v : values)
      t->add_int64_data(v);
  }
  void floats(const std::string &name, std::vector<int64_t> dims,
              std::vector<float> values) {
    auto *t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
  }
  onnx::NodeProto &node(const std::string &op, std::vector<std::string> in,
                        std::vector<std::string> out) {
    auto *n = model.mutable_graph()->add_node();
    n->set_op_type(op);
    for (auto &i : in)
      n->add_input(i);
    for (auto &o : out)
      n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto &n, const std::string &name, int64_t v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }

  onnx::ModelProto model;
};

class OnnxImporterTest : public ::testing::Test {
protected:
  OnnxImporterTest() {
    mlir::DialectRegistry registry;
    tpuc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Imports \p g and returns the data and shape of the folded output
  /// \p index (which must be a top.Weight).
  std::vector<float> folded(GraphBuilder &g, std::vector<int64_t> &shape,
                            unsigned index = 0) {
    auto result = importOnnxModel(context, g.model, "test.onnx", {});
    mlir::ModuleOp module = *result.module;
    auto ret = llvm::cast<mlir::func::ReturnOp>(
        tpuc::module::getMainFunc(module).getBody().front().getTerminator());
    auto weight = ret.getOperand(index).getDefiningOp<tpuc::top::WeightOp>();
    EXPECT_TRUE(weight) << "output " << index << " was not folded";
    if (!weight)
      return {};
    shape = tpuc::module::getShape(weight.getOutput());
    std::vector<float> data = tpuc::getWeightData(weight);
    tpuc::getWeightRegistry(&context).release(module);
    return data;
  }

  std::string importError(GraphBuilder &g, OnnxImportOptions options = {}) {
    try {
      importOnnxModel(context, g.model, "test.onnx", options);
    } catch (const tpu::Error &e) {
      return e.what();
    }
    return "";
  }

  mlir::MLIRContext context;
};

TEST_F(OnnxImporterTest, ShapeGatherSliceConcatFold) {
  // x is [2, 3, 4]: Shape = [2, 3, 4]; Gather(-1) = 4 (a scalar);
  // Unsqueeze -> [4]; Slice [0:2] = [2, 3]; Concat -> [2, 3, 4].
  GraphBuilder g;
  g.input("x", {2, 3, 4});
  g.ints("minus1", {}, {-1});
  g.ints("axes0", {1}, {0});
  g.ints("start", {1}, {0});
  g.ints("end", {1}, {2});
  g.node("Shape", {"x"}, {"s"});
  g.node("Gather", {"s", "minus1"}, {"last"});
  g.node("Unsqueeze", {"last", "axes0"}, {"last1"});
  g.node("Slice", {"s", "start", "end"}, {"head"});
  auto &cat = g.node("Concat", {"head", "last1"}, {"y"});
  GraphBuilder::attr(cat, "axis", 0);
  g.output("y");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(shape, (std::vector<int64_t>{3}));
}

TEST_F(OnnxImporterTest, RangeCountsLikeCeil) {
  // Range(1, 10, 3): ceil((10 - 1) / 3) = 3 values 1, 4, 7;
  // Range(10, 1, -4): ceil((1 - 10) / -4) = 3 values 10, 6, 2.
  GraphBuilder g;
  g.ints("a", {}, {1});
  g.ints("b", {}, {10});
  g.ints("c", {}, {3});
  g.ints("d", {}, {-4});
  g.node("Range", {"a", "b", "c"}, {"up"});
  g.node("Range", {"b", "a", "d"}, {"down"});
  g.output("up");
  g.output("down");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape, 0), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(folded(g, shape, 1), (std::vector<float>{10, 6, 2}));
}

TEST_F(OnnxImporterTest, IntegerModAndDiv) {
  // fmod = 0 takes the divisor's sign (Python %): -7 % 3 = 2, 7 % -3 = -2,
  // -7 % -3 = -1, 7 % 3 = 1. fmod = 1 takes the dividend's (C %): -1, 1,
  // -1, 1. Integer Div truncates toward zero: -7 / 3 = -2, 7 / -3 = -2.
  GraphBuilder g(13);
  g.ints("a", {4}, {-7, 7, -7, 7});
  g.ints("b", {4}, {3, -3, -3, 3});
  g.node("Mod", {"a", "b"}, {"py"});
  auto &c = g.node("Mod", {"a", "b"}, {"c"});
  GraphBuilder::attr(c, "fmod", 1);
  g.node("Div", {"a", "b"}, {"q"});
  g.output("py");
  g.output("c");
  g.output("q");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape, 0), (std::vector<float>{2, -2, -1, 1}));
  EXPECT_EQ(folded(g, shape, 1), (std::vector<float>{-1, 1, -1, 1}));
  EXPECT_EQ(folded(g, shape, 2), (std::vector<float>{-2, -2, 2, 2}));
}

TEST_F(OnnxImporterTest, SliceNegativeStepToTheStart) {
  // data = 0..9; start -2 is index 8; step -3 with end INT64_MIN (clamped
  // to "before index 0") visits 8, 5, 2.
  GraphBuilder g;
  g.ints("data", {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  g.ints("st", {1}, {-2});
  g.ints("en", {1}, {std::numeric_limits<int64_t>::min()});
  g.ints("ax", {1}, {0});
  g.ints("sp", {1}, {-3});
  g.node("Slice", {"data", "st", "en", "ax", "sp"}, {"y"});
  g.output("y");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape), (std::vector<float>{8, 5, 2}));
}

TEST_F(OnnxImporterTest, ConstantOfShapeTileReduceProd) {
  // ConstantOfShape([2, 1]) with the default value gives float zeros;
  // Add 5 -> [[5], [5]]; Tile [1, 3] -> 2x3 of 5; ReduceProd over axis 1
  // without keepdims -> [125, 125].
  GraphBuilder g;
  g.ints("shape", {2}, {2, 1});
  g.floats("five", {}, {5});
  g.ints("reps", {2}, {1, 3});
  g.ints("axis1", {1}, {1});
  g.node("ConstantOfShape", {"shape"}, {"zeros"});
  g.node("Add", {"zeros", "five"}, {"fives"});
  g.node("Tile", {"fives", "reps"}, {"tiled"});
  auto &r = g.node("ReduceProd", {"tiled"}, {"y"});
  GraphBuilder::attr(r, "keepdims", 0);
  auto *axes = r.add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  g.output("tiled");
  g.output("y");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape, 0), std::vector<float>(6, 5.0f));
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(folded(g, shape, 1), (std::vector<float>{125, 125}));
  EXPECT_EQ(shape, (std::vector<int64_t>{2}));
}

TEST_F(OnnxImporterTest, WhereEqualAndCastTruncation) {
  // Equal([1, 2, 3], [1, 0, 3]) = [T, F, T] selects [10, -1, 30];
  // Cast float -> INT64 truncates toward zero: -1.7 -> -1, 2.9 -> 2.
  GraphBuilder g;
  g.ints("a", {3}, {1, 2, 3});
  g.ints("b", {3}, {1, 0, 3});
  g.ints("x", {3}, {10, 20, 30});
  g.ints("y", {1}, {-1});
  g.floats("f", {2}, {-1.7f, 2.9f});
  g.node("Equal", {"a", "b"}, {"eq"});
  g.node("Where", {"eq", "x", "y"}, {"sel"});
  auto &cast = g.node("Cast", {"f"}, {"i"});
  GraphBuilder::attr(cast, "to", onnx::TensorProto::INT64);
  g.output("sel");
  g.output("i");
  std::vector<int64_t> shape;
  EXPECT_EQ(folded(g, shape, 0), (std::vector<float>{10, -1, 30}));
  EXPECT_EQ(folded(g, shape, 1), (std::vector<float>{-1, 2}));
}

TEST_F(OnnxImporterTest, RunTimeShapeOperandIsAnError) {
  // Reshape's shape taken from a float input cast to int64 depends on
  // run-time data: the error names the node and the operand.
  GraphBuilder g;
  g.input("x", {2, 3});
  g.input("s", {2});
  auto &cast = g.node("Cast", {"s"}, {"s64"});
  GraphBuilder::attr(cast, "to", onnx::TensorProto::INT64);
  auto &r = g.node("Reshape", {"x", "s64"}, {"y"});
  r.set_name("reshape_node");
  g.output("y");
  std::string err = importError(g);
  EXPECT_NE(err.find("test.onnx: node 'reshape_node' (Reshape): input 'shape' "
                     "('s64') must be a constant"),
            std::string::npos)
      << err;
}

TEST_F(OnnxImporterTest, UnsupportedOpsAreListedOnce) {
  GraphBuilder g;
  g.input("x", {4});
  g.node("Sin", {"x"}, {"a"}).set_name("first_sin");
  g.node("Cos", {"a"}, {"b"}).set_name("cos");
  g.node("Sin", {"b"}, {"y"}).set_name("second_sin");
  g.output("y");
  EXPECT_EQ(importError(g),
            "test.onnx: unsupported ONNX operators: Sin (node 'first_sin'), "
            "Cos (node 'cos') (supported operators: tpuc transform "
            "--list-ops)");
}

TEST_F(OnnxImporterTest, OpsetOutsideTheTableIsUnsupported) {
  // LayerNormalization exists from opset 17 on.
  GraphBuilder g(13);
  g.input("x", {2, 4});
  g.floats("scale", {4}, {1, 1, 1, 1});
  g.node("LayerNormalization", {"x", "scale"}, {"y"});
  g.output("y");
  EXPECT_NE(importError(g).find("LayerNormalization (node 'y'; supported for "
                                "opsets 17 to 21, model has 13)"),
            std::string::npos);
}

TEST_F(OnnxImporterTest, DispatchTableQueries) {
  const tpuc::frontend::OnnxOpInfo *slice =
      tpuc::frontend::lookupOnnxOp("Slice");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->constantOperands.size(), 4u);
  EXPECT_TRUE(tpuc::frontend::isConstantOperand("Reshape", 1));
  EXPECT_FALSE(tpuc::frontend::isConstantOperand("Reshape", 0));
  EXPECT_EQ(tpuc::frontend::lookupOnnxOp("NoSuchOp"), nullptr);
}

} // namespace
