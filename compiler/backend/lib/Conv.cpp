//===- Conv.cpp - Convolutions and their weight layouts -------------------===//
//
// conv2d and convTranspose2d: their checks, then a group of one
// (runAlone, LayerGroup.h; the local form, its slicing along N, output
// channels, rows and columns, its resident weights and double buffering
// are the scheduler's), and the weight layouts the local form reads.
//
// A transposed convolution runs as the convolution of the zero-inserted
// input (opd0_*_ins0 = stride - 1) with the kernel rotated by 180 degrees
// (kernel_rotate) and pads dilation * (k - 1) - pad; pads that turn
// negative crop the input instead.
//
// Depthwise convolutions (one input channel per group) use sPorD
// depthwise with (1, C, kh, kw) weights and a per-channel bias in the
// input precision (converted from the fp32 bias in local memory).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tpuc/Backend/LayerGroup.h"

#include <algorithm>

namespace tpu::backend {

using namespace detail;

namespace {

/// [N, C, H, W] of a rank-4 (or rank-3: H = 1) tensor.
std::array<int64_t, 4> dims4(const OpCtx &ctx, const GTensor &t,
                             const char *what) {
  if (t.shape.size() == 4)
    return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
  if (t.shape.size() == 3)
    return {t.shape[0], t.shape[1], 1, t.shape[2]};
  ctx.fail(std::string(what) + " must have rank 3 or 4, got rank " +
           std::to_string(t.shape.size()));
}

void checkParam(const OpCtx &ctx, bool ok, const std::string &what) {
  if (!ok)
    ctx.fail(what);
}

} // namespace

bool isDepthwise(int64_t inChannels, int64_t outChannels, int64_t groups) {
  return groups > 1 && groups == inChannels && groups == outChannels;
}

namespace {

/// conv2d of `p` (its transposed form included) under `ctx`.
void runConvParams(CmdEmitter &em, const OpCtx &ctx, const ConvParams &p) {
  const bool transposed = isTransposedForm(p);
  if (p.quant) {
    auto int8 = [&](const GTensor &t, const char *what) {
      checkParam(ctx, t.prec == Prec::Int8,
                 std::string(transposed ? "an integer deconvolution"
                                        : "an integer convolution") +
                     " needs an int8 / uint8 " + what + ", got " +
                     isa::precName(t.prec));
    };
    int8(p.input, "input");
    int8(p.output, "output");
    // The command inserts zeros and pads with the pad value; both must be
    // real 0, which only a zero point of 0 gives for the inserted ones.
    if (transposed)
      checkParam(ctx, p.quant->inputZeroPoint == 0,
                 "an integer deconvolution needs an input zero point of 0");
  } else {
    requireFloat(ctx, p.input, "input");
    requireFloat(ctx, p.output, "output");
  }
  auto in = dims4(ctx, p.input, "input");
  auto out = dims4(ctx, p.output, "output");
  int64_t groups = p.groups;
  checkParam(ctx, out[0] == in[0], "input and output batch differ");
  checkParam(ctx, groups >= 1 && in[1] % groups == 0 && out[1] % groups == 0,
             "groups " + std::to_string(groups) +
                 " must divide the input and output channels");
  checkParam(ctx,
             p.kernelH >= 1 && p.kernelW >= 1 && p.strideH >= 1 &&
                 p.strideW >= 1 && p.dilationH >= 1 && p.dilationW >= 1,
             "kernel, strides and dilations must be positive");
  checkParam(ctx,
             transposed || (p.padTop >= 0 && p.padBottom >= 0 &&
                            p.padLeft >= 0 && p.padRight >= 0),
             "pads must not be negative");
  checkParam(ctx, p.insH >= 0 && p.insW >= 0 && p.insH < 16 && p.insW < 16,
             "zeros inserted must be in 0..15 (the field is 4 bits)");
  int64_t vih = (in[2] - 1) * (p.insH + 1) + 1;
  int64_t viw = (in[3] - 1) * (p.insW + 1) + 1;
  int64_t eoh =
      (vih + p.padTop + p.padBottom - p.dilationH * (p.kernelH - 1) - 1) /
          p.strideH +
      1;
  int64_t eow =
      (viw + p.padLeft + p.padRight - p.dilationW * (p.kernelW - 1) - 1) /
          p.strideW +
      1;
  checkParam(ctx, eoh == out[2] && eow == out[3],
             "output is " + std::to_string(out[2]) + " x " +
                 std::to_string(out[3]) + ", the parameters give " +
                 std::to_string(eoh) + " x " + std::to_string(eow));
  // Every convolution the chip runs has a local form (the group's CONV /
  // depthwise sPorD tile, the INT8 requantisation, the fused function):
  // alone, a group of one. A 1-D convolution is the 2-D one of a single
  // row.
  ConvParams c = p;
  c.input.shape.assign(in.begin(), in.end());
  c.output.shape.assign(out.begin(), out.end());
  runAlone(em, ctx.kernel, c, {c.input}, c.output);
}

} // namespace

void conv2d(CmdEmitter &em, const ConvParams &p) {
  runConvParams(em, OpCtx{"conv2d", p.name}, p);
}

ConvParams transposedAsConv(const ConvTransposeParams &p) {
  ConvParams c;
  c.name = p.name;
  c.input = p.input;
  c.output = p.output;
  c.filterAddr = p.filterAddr;
  c.biasAddr = p.biasAddr;
  c.quant = p.quant;
  c.kernelH = p.kernelH;
  c.kernelW = p.kernelW;
  c.dilationH = p.dilationH;
  c.dilationW = p.dilationW;
  c.groups = p.groups;
  c.act = p.act;
  c.insH = p.strideH - 1;
  c.insW = p.strideW - 1;
  c.rotate = true;
  c.padTop = p.dilationH * (p.kernelH - 1) - p.padTop;
  c.padBottom = p.dilationH * (p.kernelH - 1) - p.padBottom + p.outputPadH;
  c.padLeft = p.dilationW * (p.kernelW - 1) - p.padLeft;
  c.padRight = p.dilationW * (p.kernelW - 1) - p.padRight + p.outputPadW;
  return c;
}

void convTranspose2d(CmdEmitter &em, const ConvTransposeParams &p) {
  OpCtx ctx{"convTranspose2d", p.name};
  checkParam(ctx,
             p.strideH >= 1 && p.strideW >= 1 && p.strideH <= 16 &&
                 p.strideW <= 16,
             "strides must be in 1..16 (zero insertion is 4 bits)");
  runConvParams(em, ctx, transposedAsConv(p));
}

//===----------------------------------------------------------------------===//
// Weight layouts
//===----------------------------------------------------------------------===//

std::vector<uint8_t> encodeFloats(const float *v, size_t count,
                                  isa::Prec prec) {
  unsigned eb = elemBytes(prec);
  if (!isa::isFloat(prec)) {
    // Integer values held as floats (quantised weights): their low bytes.
    if (prec == Prec::Int4)
      throw Error("encodeFloats: int4 is not supported");
    std::vector<uint8_t> out(count * eb);
    for (size_t i = 0; i < count; ++i) {
      auto bits = uint64_t(int64_t(v[i]));
      for (unsigned b = 0; b < eb; ++b)
        out[i * eb + b] = uint8_t(bits >> (8 * b));
    }
    return out;
  }
  std::vector<uint8_t> out(count * eb);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = floatBits(v[i], prec);
    for (unsigned b = 0; b < eb; ++b)
      out[i * eb + b] = uint8_t(bits >> (8 * b));
  }
  return out;
}

namespace detail {

Shape4 convFilterTile(const isa::ChipParams &chip, Prec prec, int64_t oc,
                      int64_t icg, int64_t kh, int64_t kw, bool depthwise) {
  if (depthwise)
    return {1, uint32_t(oc), uint32_t(kh), uint32_t(kw)};
  int64_t icp = chip.icParallel(prec);
  return {1, uint32_t(oc), uint32_t(ceilDiv(icg, icp)),
          uint32_t(kh * kw * icp)};
}

} // namespace detail

uint64_t convFilterBytes(int64_t oc, int64_t icPerGroup, int64_t kh, int64_t kw,
                         isa::Prec prec, int64_t groups,
                         const isa::ChipParams &chip) {
  Shape4 t = convFilterTile(chip, prec, 1, icPerGroup, kh, kw,
                            isDepthwise(groups * icPerGroup, oc, groups));
  return uint64_t(oc) * t.h * t.w * elemBytes(prec);
}

std::vector<uint8_t> reorderConvFilter(const float *w, int64_t oc,
                                       int64_t icPerGroup, int64_t kh,
                                       int64_t kw, isa::Prec prec,
                                       int64_t groups,
                                       const isa::ChipParams &chip) {
  if (isDepthwise(groups * icPerGroup, oc, groups))
    return encodeFloats(w, size_t(oc * kh * kw), prec);
  int64_t icp = chip.icParallel(prec);
  int64_t blocks = ceilDiv(icPerGroup, icp);
  int64_t kArea = kh * kw;
  std::vector<float> r(size_t(oc * blocks * kArea * icp), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < icPerGroup; ++i)
      for (int64_t k = 0; k < kArea; ++k)
        r[size_t(((o * blocks + i / icp) * kArea + k) * icp + i % icp)] =
            w[size_t((o * icPerGroup + i) * kArea + k)];
  return encodeFloats(r.data(), r.size(), prec);
}

std::vector<uint8_t> reorderConvTransposeFilter(const float *w, int64_t ic,
                                                int64_t ocPerGroup, int64_t kh,
                                                int64_t kw, isa::Prec prec,
                                                int64_t groups,
                                                const isa::ChipParams &chip) {
  // ONNX [ic, ocPerGroup, kh, kw] -> conv [oc, icPerGroup, kh, kw] per group;
  // the command rotates the kernel.
  int64_t icg = ic / groups, oc = ocPerGroup * groups, kArea = kh * kw;
  std::vector<float> c(size_t(oc * icg * kArea));
  for (int64_t grp = 0; grp < groups; ++grp)
    for (int64_t o = 0; o < ocPerGroup; ++o)
      for (int64_t i = 0; i < icg; ++i)
        for (int64_t k = 0; k < kArea; ++k)
          c[size_t((((grp * ocPerGroup + o) * icg) + i) * kArea + k)] =
              w[size_t(((grp * icg + i) * ocPerGroup + o) * kArea + k)];
  // Never depthwise-reordered: convTranspose2d always uses the general path.
  int64_t icp = chip.icParallel(prec);
  int64_t blocks = ceilDiv(icg, icp);
  std::vector<float> r(size_t(oc * blocks * kArea * icp), 0.0f);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < icg; ++i)
      for (int64_t k = 0; k < kArea; ++k)
        r[size_t(((o * blocks + i / icp) * kArea + k) * icp + i % icp)] =
            c[size_t((o * icg + i) * kArea + k)];
  return encodeFloats(r.data(), r.size(), prec);
}

std::vector<uint8_t> splitRequantRecords(const std::vector<uint8_t> &rows,
                                         int64_t oc, int64_t words) {
  constexpr size_t kWord = 4;
  if ((words != 4 && words != 8) || rows.size() != size_t(oc * words) * kWord)
    throw Error("backend: requantisation records must be " +
                std::to_string(oc) + " rows of 4 or 8 int32 words");
  // The parts as (first word, word count), in storage order.
  std::vector<std::pair<int64_t, int64_t>> parts{{0, 1}, {1, 3}};
  if (words == 8)
    parts.insert(parts.end(), {{4, 3}, {7, 1}});
  std::vector<uint8_t> out;
  out.reserve(rows.size());
  for (auto [first, count] : parts)
    for (int64_t c = 0; c < oc; ++c) {
      auto at = rows.begin() + ptrdiff_t((c * words + first) * kWord);
      out.insert(out.end(), at, at + ptrdiff_t(count * kWord));
    }
  return out;
}

RequantRecordParts requantRecordParts(uint64_t addr, int64_t oc, int64_t c) {
  constexpr uint64_t kWord = 4;
  RequantRecordParts p;
  p.bias = addr + uint64_t(c) * kWord;
  p.step1 = addr + uint64_t(oc) * kWord + uint64_t(c) * 3 * kWord;
  p.step2 = addr + uint64_t(oc) * 4 * kWord + uint64_t(c) * 3 * kWord;
  return p;
}

} // namespace tpu::backend
