//===- PreprocessTest.cpp - Image decoding and preprocessing --------------===//
//
// Against numpy and PIL: tests/data/preprocess/gen_images.py wrote the
// images with PIL, the pixels PIL decodes (decode_<image>) and, per case of
// cases.json, the input tensor of preprocess_ref.py (case_<name>), which
// restates Preprocess.h's steps in numpy.
//
// Every comparison is exact:
//  - PNG decoding is lossless, PIL and libpng agree on every pixel.
//  - JPEG: PIL decodes with the same libjpeg-turbo (Debian's
//    libjpeg62-turbo) and the same defaults (islow IDCT, fancy upsampling).
//  - mean/scale/channel swap: the same float32 operations in numpy.
//  - resize: preprocess_ref.resize is the same sequence of float64
//    operations as resizeBilinear (compiled without FMA contraction), so the
//    two round each pixel alike. Measured: 0 pixels differ in every case.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Preprocess.h"
#include "tpuc/InitAll.h"

#include "tpu/isa/Npz.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace tpuc;

namespace {

const std::string kDir = std::string(TPU_TEST_DATA_DIR) + "/preprocess/";

const tpu::npz::Npz &expected() {
  static const tpu::npz::Npz npz = tpu::npz::readNpz(kDir + "expected.npz");
  return npz;
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

TEST(Preprocess, IsImagePath) {
  EXPECT_TRUE(isImagePath("a.png"));
  EXPECT_TRUE(isImagePath("dir.x/a.JPG"));
  EXPECT_TRUE(isImagePath("a.Jpeg"));
  EXPECT_FALSE(isImagePath("a.npz"));
  EXPECT_FALSE(isImagePath("png"));
  EXPECT_FALSE(isImagePath("a.png.npz"));
  EXPECT_FALSE(isImagePath("a.bmp"));
}

// Every image PIL decodes, pixel for pixel (gray, RGB, RGBA without its
// alpha, palette with tRNS, 1-bit, 16-bit gray and RGB by their high byte,
// baseline, progressive and gray JPEG).
TEST(Preprocess, DecodeMatchesPil) {
  int checked = 0;
  for (const std::string &name : expected().names()) {
    if (name.rfind("decode_", 0) != 0)
      continue;
    std::string file = name.substr(7);
    SCOPED_TRACE(file);
    llvm::Expected<Image> image = decodeImage(kDir + file);
    ASSERT_TRUE(bool(image)) << llvm::toString(image.takeError());
    const tpu::npz::Array &want = *expected().find(name);
    ASSERT_EQ(want.shape.size(), 3u);
    EXPECT_EQ(image->height, want.shape[0]);
    EXPECT_EQ(image->width, want.shape[1]);
    EXPECT_EQ(image->channels, want.shape[2]);
    ASSERT_EQ(image->pixels.size(), want.numel());
    const uint8_t *w = want.as<uint8_t>();
    size_t differ = 0;
    for (size_t i = 0; i < want.numel(); ++i)
      differ += image->pixels[i] != w[i];
    EXPECT_EQ(differ, 0u);
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

Preprocess fromJson(const llvm::json::Object &c) {
  Preprocess pre;
  auto numbers = [&](llvm::StringRef key, std::vector<double> &out) {
    if (const llvm::json::Array *a = c.getArray(key))
      for (const llvm::json::Value &v : *a)
        out.push_back(*v.getAsNumber());
  };
  numbers("mean", pre.mean);
  numbers("scale", pre.scale);
  if (auto s = c.getString("pixel_format"))
    pre.pixelFormat = *parsePixelFormat(*s);
  if (auto s = c.getString("channel_format"))
    pre.channelFormat = *parseChannelFormat(*s);
  if (auto s = c.getString("pad_type"))
    pre.padType = *parsePadType(*s);
  if (const llvm::json::Array *a = c.getArray("resize_dims"))
    for (const llvm::json::Value &v : *a)
      pre.resizeDims.push_back(*v.getAsInteger());
  if (auto b = c.getBoolean("keep_aspect_ratio"))
    pre.keepAspectRatio = *b;
  if (auto v = c.getInteger("pad_value"))
    pre.padValue = *v;
  return pre;
}

// Every case of cases.json against preprocess_ref.preprocess, bit for bit.
TEST(Preprocess, LoadImageInputMatchesNumpy) {
  auto buffer = llvm::MemoryBuffer::getFile(kDir + "cases.json");
  ASSERT_TRUE(bool(buffer));
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Object *cases = json->getAsObject();
  ASSERT_NE(cases, nullptr);
  EXPECT_EQ(cases->size(), 12u);
  for (const auto &[name, value] : *cases) {
    SCOPED_TRACE(name.str());
    const llvm::json::Object &c = *value.getAsObject();
    std::vector<int64_t> shape;
    for (const llvm::json::Value &v : *c.getArray("shape"))
      shape.push_back(*v.getAsInteger());
    Preprocess pre = fromJson(c);
    llvm::Expected<std::vector<float>> got =
        loadImageInput(kDir + c.getString("image")->str(), pre, shape);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    const tpu::npz::Array &want = *expected().find("case_" + name.str());
    EXPECT_EQ(want.shape, shape);
    ASSERT_EQ(got->size(), want.numel());
    const float *w = want.as<float>();
    size_t differ = 0;
    float maxDiff = 0;
    for (size_t i = 0; i < got->size(); ++i) {
      differ += (*got)[i] != w[i];
      maxDiff = std::max(maxDiff, std::abs((*got)[i] - w[i]));
    }
    EXPECT_EQ(differ, 0u) << "max |diff| " << maxDiff;
  }
}

// Hand-derived resize values: a 1x2 row [0, 100] to 1x4. Source x of
// output d is (d + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to
// [0, 1]: 0, 0.25, 0.75, 1 -> 0, 25, 75, 100. Then 2x1 [10, 21] to 3x1:
// (d + 0.5) * 2/3 - 0.5 = -1/6, 0.5, 7/6 -> 0, 0.5, 1 -> 10, 15.5 -> 16
// (ties away from zero), 21.
TEST(Preprocess, ResizeByHand) {
  Image row{1, 2, 1, {0, 100}};
  Image wide = resizeBilinear(row, 1, 4);
  EXPECT_EQ(wide.pixels, (std::vector<uint8_t>{0, 25, 75, 100}));
  Image column{2, 1, 1, {10, 21}};
  Image tall = resizeBilinear(column, 3, 1);
  EXPECT_EQ(tall.pixels, (std::vector<uint8_t>{10, 16, 21}));
  // Same size: a copy.
  EXPECT_EQ(resizeBilinear(row, 1, 2).pixels, row.pixels);
}

void expectDecodeError(const std::string &file, const std::string &part) {
  llvm::Expected<Image> image = decodeImage(kDir + file);
  ASSERT_FALSE(bool(image)) << file << " decoded";
  std::string message = llvm::toString(image.takeError());
  EXPECT_NE(message.find("'" + kDir + file + "'"), std::string::npos)
      << message;
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

// Damaged files are errors naming the file, not crashes or made-up pixels.
TEST(Preprocess, DecodeErrors) {
  expectDecodeError("truncated.png", "bad PNG data: the file ends early");
  expectDecodeError("truncated.jpg", "bad JPEG data: Premature end of JPEG");
  expectDecodeError("random.png", "neither a PNG nor a JPEG file");
  expectDecodeError("cmyk.jpg", "a CMYK JPEG: only grayscale and RGB");
  expectDecodeError("missing.png", "cannot read");
  // Every prefix of a valid PNG and JPEG: an error, never a crash.
  for (const char *file : {"rgb.png", "rgb.jpg", "progressive.jpg"}) {
    auto buffer = llvm::MemoryBuffer::getFile(kDir + file);
    ASSERT_TRUE(bool(buffer));
    llvm::StringRef data = (*buffer)->getBuffer();
    std::string tmp = testing::TempDir() + "/prefix_" + file;
    for (size_t n = 0; n < data.size(); n += 7) {
      {
        std::error_code ec;
        llvm::raw_fd_ostream os(tmp, ec);
        ASSERT_FALSE(ec);
        os << data.take_front(n);
      }
      llvm::Expected<Image> image = decodeImage(tmp);
      EXPECT_FALSE(bool(image)) << file << " cut at " << n << " decoded";
      if (!image)
        llvm::consumeError(image.takeError());
    }
  }
}

// Bytes of valid files flipped at random (a fixed seed): decoding returns
// an image or an error, and an image has the size its header promised.
TEST(Preprocess, DecodeMutatedFiles) {
  std::mt19937 rng(1684);
  int errors = 0, decoded = 0;
  for (const char *file :
       {"rgb.png", "palette.png", "rgb.jpg", "progressive.jpg", "gray.jpg"}) {
    auto buffer = llvm::MemoryBuffer::getFile(kDir + file);
    ASSERT_TRUE(bool(buffer));
    std::string original = (*buffer)->getBuffer().str();
    std::string tmp = testing::TempDir() + "/mutated_" + file;
    for (int k = 0; k < 300; ++k) {
      std::string data = original;
      int flips = 1 + int(rng() % 8);
      for (int f = 0; f < flips; ++f)
        data[rng() % data.size()] = char(rng() % 256);
      {
        std::error_code ec;
        llvm::raw_fd_ostream os(tmp, ec);
        ASSERT_FALSE(ec);
        os << data;
      }
      llvm::Expected<Image> image = decodeImage(tmp);
      if (!image) {
        llvm::consumeError(image.takeError());
        ++errors;
        continue;
      }
      ++decoded;
      EXPECT_EQ(image->pixels.size(),
                size_t(image->height * image->width * image->channels));
    }
  }
  EXPECT_EQ(errors + decoded, 1500);
  // Most flips hit a PNG CRC or a JPEG marker or Huffman code.
  EXPECT_GT(errors, 500);
}

TEST(Preprocess, CompleteChecksCounts) {
  Preprocess pre;
  pre.mean = {1, 2};
  EXPECT_EQ(errorOf(completePreprocess(pre, "x", {1, 3, 8, 8})),
            "--mean has 2 values, input 'x' (1x3x8x8, nchw) with "
            "--pixel-format rgb needs 1 or 3");
  pre = Preprocess{};
  pre.scale = {1, 2, 3};
  pre.pixelFormat = PixelFormat::Gray;
  EXPECT_EQ(errorOf(completePreprocess(pre, "x", {1, 3, 8, 8})),
            "--pixel-format gray needs 1 channel, input 'x' (1x3x8x8, nchw) "
            "has 3");
  pre = Preprocess{};
  EXPECT_EQ(errorOf(completePreprocess(pre, "x", {1, 3, 8})),
            "an image feeds a 4-D input (NCHW); input 'x' has shape 1x3x8");
  pre = Preprocess{};
  pre.channelFormat = ChannelFormat::NHWC;
  EXPECT_EQ(errorOf(completePreprocess(pre, "x", {1, 3, 8, 8})),
            "--pixel-format rgb needs 3 channels, input 'x' (1x3x8x8, nhwc) "
            "has 8 (is --channel-format right?)");
  pre = Preprocess{};
  pre.resizeDims = {7, 9};
  EXPECT_NE(errorOf(completePreprocess(pre, "x", {1, 3, 8, 8}))
                .find("--resize-dims 7,9 is smaller than input 'x'"),
            std::string::npos);
  // Completed: one value per channel, resize dims from the input.
  pre = Preprocess{};
  pre.mean = {5};
  ASSERT_FALSE(bool(completePreprocess(pre, "x", {1, 3, 8, 6})));
  EXPECT_EQ(pre.mean, (std::vector<double>{5, 5, 5}));
  EXPECT_EQ(pre.scale, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(pre.resizeDims, (std::vector<int64_t>{8, 6}));
}

// setPreprocess / getPreprocess round trip; a hand-written partial
// attribute takes the defaults; a malformed entry is an error.
TEST(Preprocess, ModuleAttribute) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  llvm::Expected<std::optional<Preprocess>> none =
      module::getPreprocess(*module);
  ASSERT_TRUE(bool(none));
  EXPECT_FALSE(none->has_value());

  Preprocess pre;
  pre.mean = {123.675, 116.28, 103.53};
  pre.scale = {0.0171, 0.0175, 0.0174};
  pre.pixelFormat = PixelFormat::BGR;
  pre.resizeDims = {256, 256};
  pre.keepAspectRatio = true;
  pre.padType = PadType::Normal;
  pre.padValue = 114;
  module::setPreprocess(*module, pre);
  llvm::Expected<std::optional<Preprocess>> back =
      module::getPreprocess(*module);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->mean, pre.mean);
  EXPECT_EQ((*back)->scale, pre.scale);
  EXPECT_EQ((*back)->pixelFormat, PixelFormat::BGR);
  EXPECT_EQ((*back)->channelFormat, ChannelFormat::NCHW);
  EXPECT_EQ((*back)->resizeDims, pre.resizeDims);
  EXPECT_TRUE((*back)->keepAspectRatio);
  EXPECT_EQ((*back)->padType, PadType::Normal);
  EXPECT_EQ((*back)->padValue, 114);

  mlir::OwningOpRef<mlir::ModuleOp> partial =
      mlir::parseSourceString<mlir::ModuleOp>(
          "module attributes {top.preprocess = {pixel_format = \"gray\", "
          "mean = [0, 1.5]}} {}",
          &context);
  ASSERT_TRUE(partial);
  back = module::getPreprocess(*partial);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ((*back)->pixelFormat, PixelFormat::Gray);
  EXPECT_EQ((*back)->mean, (std::vector<double>{0, 1.5}));
  EXPECT_TRUE((*back)->scale.empty());

  mlir::OwningOpRef<mlir::ModuleOp> bad =
      mlir::parseSourceString<mlir::ModuleOp>(
          "module attributes {top.preprocess = {pixel_format = \"rgba\"}} {}",
          &context);
  ASSERT_TRUE(bad);
  back = module::getPreprocess(*bad);
  ASSERT_FALSE(bool(back));
  EXPECT_EQ(errorOf(back.takeError()),
            "top.preprocess: 'pixel_format' is not \"rgb\", \"bgr\" or "
            "\"gray\"");
  mlir::OwningOpRef<mlir::ModuleOp> typo =
      mlir::parseSourceString<mlir::ModuleOp>(
          "module attributes {top.preprocess = {means = [1.0]}} {}", &context);
  back = module::getPreprocess(*typo);
  ASSERT_FALSE(bool(back));
  EXPECT_NE(errorOf(back.takeError()).find("unknown entry 'means'"),
            std::string::npos);
}

} // namespace
