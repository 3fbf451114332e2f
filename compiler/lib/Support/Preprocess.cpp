//===- Preprocess.cpp - Image inputs and their preprocessing --------------===//
//
// Decoding goes through libpng and libjpeg-turbo, whose errors are reported
// by longjmp out of an error callback. Every setjmp sits in a small function
// of its own (readPngHeader, readPngRows, startJpeg, readJpegRows) whose
// frame holds no C++ object with a destructor and changes no local after
// the setjmp; the buffers are allocated by the caller between those
// phases. A jump thus skips no destructor and reads no indeterminate local.
//
//===----------------------------------------------------------------------===//
#include "tpuc/Support/Preprocess.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>
#include <png.h>

// The resize is specified as a sequence of double operations (the unit
// tests recompute it in numpy); a fused multiply-add would round
// differently.
#pragma STDC FP_CONTRACT OFF

using namespace mlir;

namespace tpuc {

namespace {

/// At most 2^28 pixels (16384 x 16384) per image: a corrupt header cannot
/// make the decoder allocate gigabytes.
constexpr uint64_t kMaxPixels = uint64_t(1) << 28;
/// A progressive JPEG with more scans than this is refused (a crafted file
/// can otherwise take minutes: libjpeg-turbo's advice, djpeg -maxscans).
constexpr int kMaxJpegScans = 1000;

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

//===----------------------------------------------------------------------===//
// PNG
//===----------------------------------------------------------------------===//

struct PngSource {
  ArrayRef<uint8_t> data;
  size_t pos = 0;
  char message[256] = {};
};

void pngError(png_structp png, png_const_charp message) {
  auto *source = static_cast<PngSource *>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof(source->message), "%s", message);
  png_longjmp(png, 1);
}

/// Warnings (an unknown ancillary chunk, a questionable sRGB profile) do
/// not change the pixels: ignored.
void pngWarning(png_structp, png_const_charp) {}

void pngRead(png_structp png, png_bytep out, size_t n) {
  auto *source = static_cast<PngSource *>(png_get_io_ptr(png));
  if (source->data.size() - source->pos < n)
    png_error(png, "the file ends early (truncated)");
  std::memcpy(out, source->data.data() + source->pos, n);
  source->pos += n;
}

/// Reads the header and sets the transformations to 8-bit gray, gray+alpha,
/// RGB or RGBA. False after a libpng error (message in the source).
bool readPngHeader(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png)))
    return false;
  png_read_info(png, info);
  if (uint64_t(png_get_image_width(png, info)) *
          png_get_image_height(png, info) >
      kMaxPixels)
    png_error(png, "more than 2^28 pixels");
  int depth = png_get_bit_depth(png, info);
  int colorType = png_get_color_type(png, info);
  if (depth == 16)
    png_set_strip_16(png); // keeps the high byte
  if (colorType == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(png); // RGBA when the palette has tRNS
  if (colorType == PNG_COLOR_TYPE_GRAY && depth < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool readPngRows(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)))
    return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

/// Decodes \p data; an error message (without the file name) on failure.
std::string decodePng(ArrayRef<uint8_t> data, Image &out) {
  PngSource source;
  source.data = data;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source,
                                           pngError, pngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "libpng could not allocate its state";
  }
  png_set_read_fn(png, &source, pngRead);
  std::string message;
  if (readPngHeader(png, info)) {
    int64_t height = png_get_image_height(png, info);
    int64_t width = png_get_image_width(png, info);
    int64_t channels = png_get_channels(png, info); // 1..4 after the header
    size_t rowBytes = png_get_rowbytes(png, info);
    std::vector<uint8_t> raw(rowBytes * height);
    std::vector<png_bytep> rows(height);
    for (int64_t y = 0; y < height; ++y)
      rows[y] = raw.data() + y * rowBytes;
    if (rowBytes != size_t(width * channels)) {
      message = "unexpected row size after libpng's transformations";
    } else if (readPngRows(png, rows.data())) {
      // Drop the alpha channel: gray+alpha -> gray, RGBA -> RGB.
      int64_t keep = channels == 2 || channels == 4 ? channels - 1 : channels;
      out.height = height;
      out.width = width;
      out.channels = keep;
      out.pixels.resize(height * width * keep);
      for (int64_t p = 0; p < height * width; ++p)
        for (int64_t c = 0; c < keep; ++c)
          out.pixels[p * keep + c] = raw[p * channels + c];
    } else {
      message = source.message;
    }
  } else {
    message = source.message;
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return message.empty() ? "" : "bad PNG data: " + message;
}

//===----------------------------------------------------------------------===//
// JPEG
//===----------------------------------------------------------------------===//

struct JpegErrors {
  jpeg_error_mgr pub; // first: libjpeg's cinfo->err points here
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64] = {};
};

[[noreturn]] void jpegErrorExit(j_common_ptr cinfo) {
  auto *errors = reinterpret_cast<JpegErrors *>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

/// libjpeg reports damaged data (a premature end, a corrupt marker) as a
/// warning (level -1) and goes on with made-up pixels: an error here. Trace
/// messages (level >= 0) are dropped.
void jpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level < 0)
    jpegErrorExit(cinfo);
}

void jpegProgress(j_common_ptr cinfo) {
  auto *d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number <= kMaxJpegScans)
    return;
  auto *errors = reinterpret_cast<JpegErrors *>(cinfo->err);
  std::snprintf(errors->message, sizeof(errors->message),
                "more than %d progressive scans", kMaxJpegScans);
  std::longjmp(errors->jump, 1);
}

/// Reads the header and starts decompression to 8-bit gray or RGB. False
/// with errors->message set on failure.
bool startJpeg(j_decompress_ptr cinfo, JpegErrors *errors,
               jpeg_progress_mgr *progress, ArrayRef<uint8_t> data) {
  if (setjmp(errors->jump))
    return false;
  jpeg_create_decompress(cinfo);
  cinfo->progress = progress;
  jpeg_mem_src(cinfo, data.data(), data.size());
  jpeg_read_header(cinfo, TRUE);
  switch (cinfo->jpeg_color_space) {
  case JCS_GRAYSCALE:
    cinfo->out_color_space = JCS_GRAYSCALE;
    break;
  case JCS_CMYK:
  case JCS_YCCK:
    std::snprintf(errors->message, sizeof(errors->message),
                  "a %s JPEG: only grayscale and RGB (YCbCr) JPEGs are "
                  "supported; convert it to RGB",
                  cinfo->jpeg_color_space == JCS_CMYK ? "CMYK" : "YCCK");
    return false;
  default:
    cinfo->out_color_space = JCS_RGB;
    break;
  }
  if (uint64_t(cinfo->image_width) * cinfo->image_height > kMaxPixels) {
    std::snprintf(errors->message, sizeof(errors->message),
                  "more than 2^28 pixels");
    return false;
  }
  jpeg_start_decompress(cinfo);
  return true;
}

bool readJpegRows(j_decompress_ptr cinfo, JpegErrors *errors, uint8_t *out) {
  if (setjmp(errors->jump))
    return false;
  size_t rowBytes = size_t(cinfo->output_width) * cinfo->output_components;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + size_t(cinfo->output_scanline) * rowBytes;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

std::string decodeJpeg(ArrayRef<uint8_t> data, Image &out) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof(cinfo)); // jpeg_destroy is safe on it
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = jpegErrorExit;
  errors.pub.emit_message = jpegEmitMessage;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = jpegProgress;
  std::string message;
  if (startJpeg(&cinfo, &errors, &progress, data)) {
    int64_t channels = cinfo.output_components;
    if (channels != 1 && channels != 3) {
      message = std::to_string(channels) + " components after decoding";
    } else {
      std::vector<uint8_t> pixels(size_t(cinfo.output_width) *
                                  cinfo.output_height * channels);
      if (readJpegRows(&cinfo, &errors, pixels.data())) {
        out.height = cinfo.output_height;
        out.width = cinfo.output_width;
        out.channels = channels;
        out.pixels = std::move(pixels);
      } else {
        message = errors.message;
      }
    }
  } else {
    message = errors.message;
  }
  jpeg_destroy_decompress(&cinfo);
  return message.empty() ? "" : "bad JPEG data: " + message;
}

//===----------------------------------------------------------------------===//
// Pixel operations
//===----------------------------------------------------------------------===//

/// \p image with \p channels channels: RGB -> gray by OpenCV's fixed-point
/// BT.601 weights, gray -> RGB by copying.
Image toChannels(const Image &image, int64_t channels) {
  if (image.channels == channels)
    return image;
  Image out{image.height, image.width, channels, {}};
  int64_t n = image.height * image.width;
  out.pixels.resize(n * channels);
  for (int64_t p = 0; p < n; ++p) {
    const uint8_t *in = &image.pixels[p * image.channels];
    if (channels == 1)
      out.pixels[p] = uint8_t(
          (4899 * uint32_t(in[0]) + 9617 * uint32_t(in[1]) +
           1868 * uint32_t(in[2]) + 8192) >>
          14);
    else
      for (int64_t c = 0; c < channels; ++c)
        out.pixels[p * channels + c] = in[0];
  }
  return out;
}

/// keep_aspect_ratio: the image scaled into \p height x \p width and
/// pasted on a canvas of \p padValue.
Image letterbox(const Image &image, int64_t height, int64_t width,
                PadType padType, uint8_t padValue) {
  double s = std::min(double(width) / double(image.width),
                      double(height) / double(image.height));
  int64_t w = std::clamp<int64_t>(int64_t(double(image.width) * s), 1, width);
  int64_t h =
      std::clamp<int64_t>(int64_t(double(image.height) * s), 1, height);
  Image resized = resizeBilinear(image, h, w);
  int64_t top = padType == PadType::Center ? (height - h) / 2 : 0;
  int64_t left = padType == PadType::Center ? (width - w) / 2 : 0;
  int64_t c = image.channels;
  Image out{height, width, c,
            std::vector<uint8_t>(size_t(height * width * c), padValue)};
  for (int64_t y = 0; y < h; ++y)
    std::copy_n(&resized.pixels[y * w * c], w * c,
                &out.pixels[((top + y) * width + left) * c]);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Options and the module attribute
//===----------------------------------------------------------------------===//

StringRef toString(PixelFormat format) {
  switch (format) {
  case PixelFormat::RGB:
    return "rgb";
  case PixelFormat::BGR:
    return "bgr";
  case PixelFormat::Gray:
    return "gray";
  }
  return "";
}
StringRef toString(ChannelFormat format) {
  return format == ChannelFormat::NCHW ? "nchw" : "nhwc";
}
StringRef toString(PadType type) {
  return type == PadType::Center ? "center" : "normal";
}
std::optional<PixelFormat> parsePixelFormat(StringRef text) {
  return llvm::StringSwitch<std::optional<PixelFormat>>(text)
      .Case("rgb", PixelFormat::RGB)
      .Case("bgr", PixelFormat::BGR)
      .Case("gray", PixelFormat::Gray)
      .Default(std::nullopt);
}
std::optional<ChannelFormat> parseChannelFormat(StringRef text) {
  return llvm::StringSwitch<std::optional<ChannelFormat>>(text)
      .Case("nchw", ChannelFormat::NCHW)
      .Case("nhwc", ChannelFormat::NHWC)
      .Default(std::nullopt);
}
std::optional<PadType> parsePadType(StringRef text) {
  return llvm::StringSwitch<std::optional<PadType>>(text)
      .Case("center", PadType::Center)
      .Case("normal", PadType::Normal)
      .Default(std::nullopt);
}

llvm::Error completePreprocess(Preprocess &pre, StringRef inputName,
                               ArrayRef<int64_t> shape) {
  std::string input = inputName.empty()
                          ? std::string("the model input")
                          : "input '" + inputName.str() + "'";
  std::string described = input + " (" + shapeString(shape) + ", " +
                          toString(pre.channelFormat).str() + ")";
  if (shape.size() != 4)
    return error("an image feeds a 4-D input (" +
                 toString(pre.channelFormat).upper() + "); " + input +
                 " has shape " + shapeString(shape));
  for (int64_t d : shape)
    if (d <= 0)
      return error(described + " has a dimension that is not static");
  bool nchw = pre.channelFormat == ChannelFormat::NCHW;
  int64_t channels = nchw ? shape[1] : shape[3];
  int64_t height = nchw ? shape[2] : shape[1];
  int64_t width = nchw ? shape[3] : shape[2];
  if (channels != pre.channels())
    return error("--pixel-format " + toString(pre.pixelFormat) + " needs " +
                 llvm::Twine(pre.channels()) + " channel" +
                 (pre.channels() == 1 ? "" : "s") + ", " + described +
                 " has " + llvm::Twine(channels) +
                 (channels == 3 || channels == 1
                      ? ""
                      : " (is --channel-format right?)"));
  auto complete = [&](std::vector<double> &values, StringRef option,
                      double fill) -> llvm::Error {
    if (values.empty())
      values.assign(channels, fill);
    else if (values.size() == 1)
      values.assign(channels, values[0]);
    else if (int64_t(values.size()) != channels)
      return error(option + " has " + llvm::Twine(values.size()) +
                   " values, " + described + " with --pixel-format " +
                   toString(pre.pixelFormat) + " needs 1 or " +
                   llvm::Twine(channels));
    for (double v : values)
      if (!std::isfinite(v))
        return error(option + " has a value that is not finite");
    return llvm::Error::success();
  };
  if (llvm::Error e = complete(pre.mean, "--mean", 0.0))
    return e;
  if (llvm::Error e = complete(pre.scale, "--scale", 1.0))
    return e;
  if (pre.resizeDims.empty())
    pre.resizeDims = {height, width};
  if (pre.resizeDims.size() != 2 || pre.resizeDims[0] <= 0 ||
      pre.resizeDims[1] <= 0)
    return error("--resize-dims needs two positive sizes H,W");
  if (pre.resizeDims[0] < height || pre.resizeDims[1] < width)
    return error("--resize-dims " + llvm::Twine(pre.resizeDims[0]) + "," +
                 llvm::Twine(pre.resizeDims[1]) + " is smaller than " +
                 described + ": the centre crop to the input's H, W needs " +
                 "resize dims of at least " + llvm::Twine(height) + "," +
                 llvm::Twine(width));
  if (uint64_t(pre.resizeDims[0]) * uint64_t(pre.resizeDims[1]) > kMaxPixels)
    return error("--resize-dims: more than 2^28 pixels");
  if (pre.padValue < 0 || pre.padValue > 255)
    return error("--pad-value " + llvm::Twine(pre.padValue) +
                 " is not a pixel value 0..255");
  return llvm::Error::success();
}

namespace module {

void setPreprocess(ModuleOp module, const Preprocess &pre) {
  Builder b(module.getContext());
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("mean", b.getF64ArrayAttr(pre.mean)),
      b.getNamedAttr("scale", b.getF64ArrayAttr(pre.scale)),
      b.getNamedAttr("pixel_format", b.getStringAttr(toString(pre.pixelFormat))),
      b.getNamedAttr("channel_format",
                     b.getStringAttr(toString(pre.channelFormat))),
      b.getNamedAttr("resize_dims", b.getI64ArrayAttr(pre.resizeDims)),
      b.getNamedAttr("keep_aspect_ratio", b.getBoolAttr(pre.keepAspectRatio)),
      b.getNamedAttr("pad_type", b.getStringAttr(toString(pre.padType))),
      b.getNamedAttr("pad_value", b.getI64IntegerAttr(pre.padValue))};
  module->setAttr(kPreprocessAttr, b.getDictionaryAttr(entries));
}

llvm::Expected<std::optional<Preprocess>> getPreprocess(ModuleOp module) {
  Attribute attr = module->getAttr(kPreprocessAttr);
  if (!attr)
    return std::nullopt;
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return error(kPreprocessAttr + " is not a dictionary");
  Preprocess pre;
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName().getValue();
    Attribute value = entry.getValue();
    auto bad = [&](StringRef what) {
      return error(kPreprocessAttr + ": '" + key + "' is not " + what);
    };
    auto numbers = [&](std::vector<double> &out) -> llvm::Error {
      auto array = dyn_cast<ArrayAttr>(value);
      if (!array)
        return bad("an array of numbers");
      out.clear();
      for (Attribute a : array) {
        if (auto f = dyn_cast<FloatAttr>(a))
          out.push_back(f.getValueAsDouble());
        else if (auto i = dyn_cast<IntegerAttr>(a))
          out.push_back(double(i.getInt()));
        else
          return bad("an array of numbers");
      }
      return llvm::Error::success();
    };
    auto string = [&]() -> std::optional<StringRef> {
      if (auto s = dyn_cast<StringAttr>(value))
        return s.getValue();
      return std::nullopt;
    };
    if (key == "mean" || key == "scale") {
      if (llvm::Error e = numbers(key == "mean" ? pre.mean : pre.scale))
        return std::move(e);
    } else if (key == "pixel_format") {
      std::optional<StringRef> s = string();
      std::optional<PixelFormat> f = s ? parsePixelFormat(*s) : std::nullopt;
      if (!f)
        return bad("\"rgb\", \"bgr\" or \"gray\"");
      pre.pixelFormat = *f;
    } else if (key == "channel_format") {
      std::optional<StringRef> s = string();
      std::optional<ChannelFormat> f =
          s ? parseChannelFormat(*s) : std::nullopt;
      if (!f)
        return bad("\"nchw\" or \"nhwc\"");
      pre.channelFormat = *f;
    } else if (key == "pad_type") {
      std::optional<StringRef> s = string();
      std::optional<PadType> t = s ? parsePadType(*s) : std::nullopt;
      if (!t)
        return bad("\"center\" or \"normal\"");
      pre.padType = *t;
    } else if (key == "resize_dims") {
      auto array = dyn_cast<ArrayAttr>(value);
      if (!array || !llvm::all_of(array, llvm::IsaPred<IntegerAttr>))
        return bad("an array of integers");
      pre.resizeDims.clear();
      for (Attribute a : array)
        pre.resizeDims.push_back(cast<IntegerAttr>(a).getInt());
    } else if (key == "keep_aspect_ratio") {
      auto b = dyn_cast<BoolAttr>(value);
      if (!b)
        return bad("true or false");
      pre.keepAspectRatio = b.getValue();
    } else if (key == "pad_value") {
      auto i = dyn_cast<IntegerAttr>(value);
      if (!i)
        return bad("an integer");
      pre.padValue = i.getInt();
    } else {
      return error(kPreprocessAttr + ": unknown entry '" + key +
                   "' (known: mean, scale, pixel_format, channel_format, "
                   "resize_dims, keep_aspect_ratio, pad_type, pad_value)");
    }
  }
  return pre;
}

} // namespace module

//===----------------------------------------------------------------------===//
// Images
//===----------------------------------------------------------------------===//

bool isImagePath(StringRef path) {
  std::string ext = llvm::sys::path::extension(path).lower();
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

llvm::Expected<Image> decodeImage(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error("cannot read '" + path + "': " + buffer.getError().message());
  ArrayRef<uint8_t> data(
      reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
      (*buffer)->getBufferSize());
  static const uint8_t kPngSignature[8] = {0x89, 'P',  'N',  'G',
                                           '\r', '\n', 0x1a, '\n'};
  Image image;
  std::string message;
  if (data.size() >= 8 && std::memcmp(data.data(), kPngSignature, 8) == 0)
    message = decodePng(data, image);
  else if (data.size() >= 3 && data[0] == 0xff && data[1] == 0xd8 &&
           data[2] == 0xff)
    message = decodeJpeg(data, image);
  else
    message = data.empty() ? "the file is empty"
                           : "neither a PNG nor a JPEG file (no PNG or JPEG "
                             "signature at its start)";
  if (!message.empty())
    return error("'" + path + "': " + message);
  return image;
}

Image resizeBilinear(const Image &image, int64_t height, int64_t width) {
  if (image.height == height && image.width == width)
    return image;
  struct Tap {
    int64_t i0, i1;
    double f;
  };
  auto taps = [](int64_t in, int64_t out) {
    std::vector<Tap> t(out);
    double scale = double(in) / double(out);
    for (int64_t d = 0; d < out; ++d) {
      double s = (double(d) + 0.5) * scale - 0.5;
      s = std::clamp(s, 0.0, double(in - 1));
      int64_t i0 = int64_t(std::floor(s));
      t[d] = {i0, std::min(i0 + 1, in - 1), s - double(i0)};
    }
    return t;
  };
  std::vector<Tap> ys = taps(image.height, height);
  std::vector<Tap> xs = taps(image.width, width);
  int64_t channels = image.channels;
  Image out{height, width, channels,
            std::vector<uint8_t>(size_t(height * width * channels))};
  for (int64_t y = 0; y < height; ++y) {
    const Tap &ty = ys[y];
    for (int64_t x = 0; x < width; ++x) {
      const Tap &tx = xs[x];
      for (int64_t c = 0; c < channels; ++c) {
        double top = double(image.at(ty.i0, tx.i0, c)) * (1.0 - tx.f) +
                     double(image.at(ty.i0, tx.i1, c)) * tx.f;
        double bottom = double(image.at(ty.i1, tx.i0, c)) * (1.0 - tx.f) +
                        double(image.at(ty.i1, tx.i1, c)) * tx.f;
        double v = top * (1.0 - ty.f) + bottom * ty.f;
        out.pixels[(y * width + x) * channels + c] =
            uint8_t(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
      }
    }
  }
  return out;
}

llvm::Expected<std::vector<float>>
loadImageInput(StringRef path, const Preprocess &given,
               ArrayRef<int64_t> inputShape) {
  Preprocess pre = given;
  if (llvm::Error e = completePreprocess(pre, "", inputShape))
    return error("'" + path + "': " + llvm::toString(std::move(e)));
  llvm::Expected<Image> decoded = decodeImage(path);
  if (!decoded)
    return decoded.takeError();
  Image image = toChannels(*decoded, pre.channels());

  int64_t resizeH = pre.resizeDims[0], resizeW = pre.resizeDims[1];
  image = pre.keepAspectRatio
              ? letterbox(image, resizeH, resizeW, pre.padType,
                          uint8_t(pre.padValue))
              : resizeBilinear(image, resizeH, resizeW);

  bool nchw = pre.channelFormat == ChannelFormat::NCHW;
  int64_t batch = inputShape[0];
  int64_t channels = pre.channels();
  int64_t height = nchw ? inputShape[2] : inputShape[1];
  int64_t width = nchw ? inputShape[3] : inputShape[2];
  // TPU-MLIR's centre crop offsets.
  int64_t top = resizeH / 2 - height / 2;
  int64_t left = resizeW / 2 - width / 2;

  std::vector<float> mean(pre.mean.begin(), pre.mean.end());
  std::vector<float> scale(pre.scale.begin(), pre.scale.end());
  int64_t perImage = channels * height * width;
  std::vector<float> out(size_t(batch * perImage));
  for (int64_t c = 0; c < channels; ++c) {
    // Model channel c is image channel c, reversed for bgr.
    int64_t from = pre.pixelFormat == PixelFormat::BGR ? 2 - c : c;
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        float v = float(image.at(top + y, left + x, from));
        size_t at = nchw ? (c * height + y) * width + x
                         : (y * width + x) * channels + c;
        out[at] = (v - mean[c]) * scale[c];
      }
  }
  for (int64_t n = 1; n < batch; ++n)
    std::copy_n(out.begin(), perImage, out.begin() + n * perImage);
  return out;
}

} // namespace tpuc
