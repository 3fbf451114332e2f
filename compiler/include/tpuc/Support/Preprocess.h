//===- Preprocess.h - Image inputs and their preprocessing -------*- C++ -*-===//
//
// A model whose input is an image records how an image becomes its input
// tensor, as TPU-MLIR's model_transform does, so that every later tool
// (tpuc run, calibration) feeds it the same numbers. `tpuc transform
// --mean/--scale/--pixel-format/...` sets the module attribute
//
//   module attributes {top.preprocess = {
//       mean = [123.675, 116.28, 103.53], scale = [0.0171, 0.0175, 0.0174],
//       pixel_format = "bgr", channel_format = "nchw",
//       resize_dims = [256, 256], keep_aspect_ratio = false,
//       pad_type = "center", pad_value = 0}}
//
// (mean and scale hold one value per channel of the model input, in its
// channel order; resize_dims is H, W.) An image becomes the tensor in these
// steps, each on 8-bit pixels until the normalisation (the order of
// TPU-MLIR's, which reads the image with OpenCV in the channel count the
// model wants, resizes and crops in uint8, then swaps and normalises):
//
//  1. decode (decodeImage): PNG through libpng, JPEG through libjpeg-turbo,
//     to 8-bit gray or RGB, row-major HWC. Alpha is dropped, palettes and
//     low-bit gray are expanded, 16-bit samples keep their high byte. EXIF
//     orientation and colour profiles are not applied.
//  2. channel count: "gray" takes a gray image as it is and an RGB one
//     through OpenCV's fixed-point BT.601 weights
//     (4899 R + 9617 G + 1868 B + 8192) >> 14; a gray image feeds an
//     rgb/bgr model in all three channels.
//  3. resize to resize_dims (default: the input's H, W) by bilinear
//     interpolation with half-pixel centres (resizeBilinear, OpenCV's
//     INTER_LINEAR formula, not its 11-bit fixed-point weights: a pixel may
//     differ from cv2.resize by 1), each result rounded to the nearest
//     uint8. With keep_aspect_ratio the image is scaled by
//     min(H / h, W / w) (sizes truncated to integers, as TPU-MLIR) and
//     pasted on a canvas of pad_value, centred (pad_type "center",
//     TPU-MLIR's default) or at the top left (pad_type "normal": the
//     padding at the bottom and right).
//  4. centre crop from resize_dims (R, C) to the input's H, W, starting at
//     (R / 2 - H / 2, C / 2 - W / 2) in integer division (TPU-MLIR's
//     offsets).
//  5. y = (x - mean[c]) * scale[c] in float32 (mean and scale rounded to
//     float32 first), model channel c taken from RGB channel c, or 2 - c
//     for "bgr"; laid out NCHW or NHWC. An input with N > 1 gets the same
//     image in every batch entry (as TPU-MLIR replicates a single image).
//
// A module without top.preprocess takes images as mean 0, scale 1, rgb,
// nchw, resize to the input's H, W (Preprocess{}).
//
//===----------------------------------------------------------------------===//
#ifndef TPUC_SUPPORT_PREPROCESS_H
#define TPUC_SUPPORT_PREPROCESS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpuc {

/// Channel order of the model input. Images decode as RGB.
enum class PixelFormat { RGB, BGR, Gray };
/// Where the channel dimension of the 4-D model input is.
enum class ChannelFormat { NCHW, NHWC };
/// Where keep_aspect_ratio puts the resized image on its canvas.
enum class PadType { Center, Normal };

struct Preprocess {
  /// One value per channel, or one for all (expandChannels makes them one
  /// per channel); empty means 0 and 1.
  std::vector<double> mean;
  std::vector<double> scale;
  PixelFormat pixelFormat = PixelFormat::RGB;
  ChannelFormat channelFormat = ChannelFormat::NCHW;
  /// {H, W} to resize to before the crop; empty: the input's H, W.
  std::vector<int64_t> resizeDims;
  bool keepAspectRatio = false;
  PadType padType = PadType::Center;
  /// The canvas value around a keep_aspect_ratio image, 0..255.
  int64_t padValue = 0;

  /// Channels of the model input the pixel format implies (1 or 3).
  int64_t channels() const { return pixelFormat == PixelFormat::Gray ? 1 : 3; }
};

/// Spellings in the attribute and on the command line.
llvm::StringRef toString(PixelFormat format);
llvm::StringRef toString(ChannelFormat format);
llvm::StringRef toString(PadType type);
std::optional<PixelFormat> parsePixelFormat(llvm::StringRef text);
std::optional<ChannelFormat> parseChannelFormat(llvm::StringRef text);
std::optional<PadType> parsePadType(llvm::StringRef text);

/// Checks \p pre against the model input \p inputName of \p shape and
/// completes it: mean and scale become one value per channel, resizeDims
/// the input's H, W when empty. Errors name the option (--mean, --scale,
/// --pixel-format, --resize-dims, --pad-value) and the input: counts of
/// mean/scale other than 1 or the channel count, an input that is not 4-D,
/// a channel count other than the pixel format's, resize dims smaller than
/// the input's H, W (the crop needs at least that), non-finite values.
llvm::Error completePreprocess(Preprocess &pre, llvm::StringRef inputName,
                               llvm::ArrayRef<int64_t> shape);

/// Attribute name.
inline constexpr llvm::StringLiteral kPreprocessAttr("top.preprocess");

namespace module {
/// Records \p pre as the module attribute top.preprocess.
void setPreprocess(mlir::ModuleOp module, const Preprocess &pre);
/// The module's top.preprocess, std::nullopt when it has none. An entry it
/// does not list takes the default of Preprocess; an error names the entry
/// that is unknown or malformed.
llvm::Expected<std::optional<Preprocess>> getPreprocess(mlir::ModuleOp module);
} // namespace module

/// True for the names of files loadImageInput reads: .jpg, .jpeg and .png
/// in any case.
bool isImagePath(llvm::StringRef path);

/// An 8-bit image, row-major HWC, channels 1 (gray) or 3 (RGB).
struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  std::vector<uint8_t> pixels;

  uint8_t at(int64_t y, int64_t x, int64_t c) const {
    return pixels[(y * width + x) * channels + c];
  }
};

/// Decodes the PNG or JPEG file \p path (told apart by their signatures,
/// not by the name). Errors name the file and what is wrong: not a PNG or
/// JPEG, truncated or corrupt data (a libjpeg warning is an error too: its
/// pixels would be made up), CMYK/YCCK JPEG, more than 2^28 pixels.
llvm::Expected<Image> decodeImage(llvm::StringRef path);

/// \p image resized to \p height x \p width: bilinear with half-pixel
/// centres, source coordinate s = (d + 0.5) * (in / out) - 0.5 clamped to
/// [0, in - 1], computed in double and rounded to the nearest integer
/// (ties away from zero).
Image resizeBilinear(const Image &image, int64_t height, int64_t width);

/// The model input tensor (\p inputShape, 4-D as \p pre's channel format
/// says) for the image file \p path: decodeImage, then the steps of the
/// header comment. \p pre is completed for \p inputShape first (a copy:
/// completePreprocess, so a Preprocess read from a module can be passed as
/// it is); errors name the file.
llvm::Expected<std::vector<float>>
loadImageInput(llvm::StringRef path, const Preprocess &pre,
               llvm::ArrayRef<int64_t> inputShape);

} // namespace tpuc

#endif // TPUC_SUPPORT_PREPROCESS_H
