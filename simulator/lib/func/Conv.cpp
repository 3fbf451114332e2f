//===- Conv.cpp - Convolution, pooling/depthwise and matrix multiply ------===//
//
// CONV (isa/docs/bm1684x.md 4.5 sCONV), PorD (sPorD), MM (sMM) and MM2 (sMM2).
//
// Every kernel first gathers its operands into dense buffers (zero-insertion
// and padding materialised, weights converted and rotated), then runs a
// contiguous inner loop, then writes results with one conversion. Integer
// paths with operands of at most 8 bits accumulate in int32 (wrapping modulo
// 2^32, which realistic shapes never reach); int16/int32 operands sum exactly
// (semantics.md "CONV"); float paths accumulate in fp32 in the order stated
// in semantics.md "Convolution" (products rounded to fp32, then added; the
// AVX2 / AVX-512 conv tiles fuse the two only where that gives the same
// bits, see fmaExact). The ROI variants of PorD pool one window per box
// (semantics.md "PorD").
//
//===----------------------------------------------------------------------===//

#include "FuncImpl.h"
#include "SimdImpl.h"

#include "tpu/isa/Numerics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The fp32 accumulation order is part of the documented semantics: products
// are rounded before they are added, so the compiler must not fuse them (the
// fused conv tiles call the FMA intrinsics explicitly).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__x86_64__) && defined(__clang__)
/// Hot loops get an AVX2 variant chosen at load time (the baseline build
/// targets plain x86-64).
#define TPUSIM_HOT __attribute__((target_clones("avx2", "default")))
#else
#define TPUSIM_HOT
#endif

namespace tpu::sim {
namespace detail {

using isa::Prec;
using isa::RoundMode;

namespace {

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

/// Output columns of one register tile of the conv kernel (see convTile).
constexpr unsigned kOxTile = 16;

struct ConvGeom {
  uint32_t n, ic, ih, iw, oc, oh, ow, kh, kw;
  uint32_t sh, sw, dh, dw, insH, insW;
  uint32_t padT, padL;
  /// Dense padded input plane (covers every position the outputs read).
  uint32_t vh, vw;
};

/// A zero stride field means stride 1 (semantics.md "Convolution").
uint32_t strideOf(uint64_t field) { return field == 0 ? 1 : uint32_t(field); }

/// `colTile` is the number of output columns the kernel computes in whole
/// tiles per row: kOxTile for convTile (which reads the plane row by row),
/// 1 for the walk kernels (ConvWalk: their tiles span row ends and run into
/// the kTileOverrun padding after the plane, so the plane needs no
/// widening; a narrower plane is fewer positions computed and dropped, the
/// same sums for the kept ones).
ConvGeom convGeom(const TiuOp &op, uint32_t ic, unsigned colTile = kOxTile) {
  const isa::cmd::TiuLong &f = op.f;
  ConvGeom g{};
  g.n = uint32_t(f.res0_n);
  g.ic = ic;
  g.ih = uint32_t(f.opd0_h);
  g.iw = uint32_t(f.opd0_w);
  g.oc = uint32_t(f.res0_c);
  g.oh = uint32_t(f.res0_h);
  g.ow = uint32_t(f.res0_w);
  g.kh = uint32_t(f.opd1_h);
  g.kw = uint32_t(f.opd1_w);
  g.sh = strideOf(f.res_op_y_str);
  g.sw = strideOf(f.res_op_x_str);
  g.dh = uint32_t(f.opd1_y_ins0) + 1;
  g.dw = uint32_t(f.opd1_x_ins0) + 1;
  g.insH = uint32_t(f.opd0_y_ins0);
  g.insW = uint32_t(f.opd0_x_ins0);
  g.padT = uint32_t(f.opd0_up_pad);
  g.padL = uint32_t(f.opd0_lf_pad);
  if (g.n == 0 || g.ic == 0 || g.ih == 0 || g.iw == 0 || g.oc == 0 ||
      g.oh == 0 || g.ow == 0 || g.kh == 0 || g.kw == 0)
    failOp(op, "a dimension is zero (n " + std::to_string(g.n) + ", ic " +
                   std::to_string(g.ic) + ", ih " + std::to_string(g.ih) +
                   ", iw " + std::to_string(g.iw) + ", oc " +
                   std::to_string(g.oc) + ", oh " + std::to_string(g.oh) +
                   ", ow " + std::to_string(g.ow) + ", kh " +
                   std::to_string(g.kh) + ", kw " + std::to_string(g.kw) + ")");
  // Padded extent per the output-size formula of isa/docs/bm1684x.md 4.5, widened to
  // whatever the stated output size reads (extra positions are padding).
  uint64_t realH = uint64_t(g.ih - 1) * (g.insH + 1) + 1;
  uint64_t realW = uint64_t(g.iw - 1) * (g.insW + 1) + 1;
  uint64_t needH = uint64_t(g.oh - 1) * g.sh + uint64_t(g.kh - 1) * g.dh + 1;
  // The kernel computes whole tiles of colTile columns: widen the plane so
  // the last tile reads padding instead of running off the end.
  uint64_t needW =
      (alignUp(g.ow, colTile) - 1) * g.sw + uint64_t(g.kw - 1) * g.dw + 1;
  g.vh = uint32_t(std::max(g.padT + realH + f.opd0_dn_pad, needH));
  g.vw = uint32_t(std::max(g.padL + realW + f.opd0_rt_pad, needW));
  return g;
}

/// Fills `out` (vh x vw) with one input plane: real elements from `load`,
/// inserted zeros with `ins`, everything else with `pad`.
template <typename T, typename Load>
void buildPlane(const ConvGeom &g, T pad, T ins, Load load, T *out) {
  std::fill(out, out + size_t(g.vh) * g.vw, pad);
  uint32_t stepH = g.insH + 1, stepW = g.insW + 1;
  uint64_t realH = uint64_t(g.ih - 1) * stepH + 1;
  uint64_t realW = uint64_t(g.iw - 1) * stepW + 1;
  for (uint64_t vy = 0; vy < realH; ++vy) {
    T *row = out + (g.padT + vy) * g.vw + g.padL;
    if (vy % stepH) {
      std::fill(row, row + realW, ins);
      continue;
    }
    uint32_t iy = uint32_t(vy / stepH);
    if (stepW == 1) {
      for (uint32_t ix = 0; ix < g.iw; ++ix)
        row[ix] = load(iy, ix);
      continue;
    }
    std::fill(row, row + realW, ins);
    for (uint32_t ix = 0; ix < g.iw; ++ix)
      row[uint64_t(ix) * stepW] = load(iy, ix);
  }
}

/// Output channels of one register tile: 16 columns x 4 channels of fp32
/// are eight AVX2 registers.
constexpr unsigned kOcTile = 4;

/// One register tile: out[b][j] for NB output channels and kOxTile output
/// columns from ox0, summing plane[ic][oy*sh + ky*dh][(ox0+j)*sw + kx*dw] *
/// w[b][ic][ky][kx] over ic, then ky, then kx (the documented order). T is
/// float or uint32_t (two's-complement int32 arithmetic without overflow UB).
/// The plane is wide enough that a full tile never reads past it.
template <typename T, unsigned NB>
inline __attribute__((always_inline)) void
convTile(const T *planes, const T *wts, T *out, uint32_t oy, uint32_t ox0,
         const ConvGeom &g) {
  T r[NB][kOxTile] = {};
  size_t plane = size_t(g.vh) * g.vw;
  size_t kArea = size_t(g.kh) * g.kw;
  size_t wPerOc = size_t(g.ic) * kArea;
  for (uint32_t ic = 0; ic < g.ic; ++ic) {
    for (uint32_t ky = 0; ky < g.kh; ++ky) {
      const T *row = planes + ic * plane +
                     (size_t(oy) * g.sh + size_t(ky) * g.dh) * g.vw +
                     size_t(ox0) * g.sw;
      const T *w = wts + ic * kArea + size_t(ky) * g.kw;
      for (uint32_t kx = 0; kx < g.kw; ++kx) {
        const T *x = row + size_t(kx) * g.dw;
        T xv[kOxTile];
        if (g.sw == 1) {
          for (unsigned j = 0; j < kOxTile; ++j)
            xv[j] = x[j];
        } else {
          for (unsigned j = 0; j < kOxTile; ++j)
            xv[j] = x[size_t(j) * g.sw];
        }
        for (unsigned b = 0; b < NB; ++b) {
          T wv = w[b * wPerOc + kx];
          for (unsigned j = 0; j < kOxTile; ++j)
            r[b][j] = r[b][j] + wv * xv[j];
        }
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned j = 0; j < kOxTile; ++j)
      out[b * kOxTile + j] = r[b][j];
}

/// All tiles of one output row for `nb` (<= kOcTile) channels; `out` is
/// [nb][ow rounded up to kOxTile].
template <typename T>
inline __attribute__((always_inline)) void
convRowImpl(const T *planes, const T *wts, T *out, unsigned nb, uint32_t oy,
            const ConvGeom &g) {
  T tile[kOcTile * kOxTile];
  size_t owPad = alignUp(g.ow, kOxTile);
  for (uint32_t ox0 = 0; ox0 < g.ow; ox0 += kOxTile) {
    switch (nb) {
    case 4:
      convTile<T, 4>(planes, wts, tile, oy, ox0, g);
      break;
    case 3:
      convTile<T, 3>(planes, wts, tile, oy, ox0, g);
      break;
    case 2:
      convTile<T, 2>(planes, wts, tile, oy, ox0, g);
      break;
    default:
      convTile<T, 1>(planes, wts, tile, oy, ox0, g);
      break;
    }
    for (unsigned b = 0; b < nb; ++b)
      std::memcpy(out + b * owPad + ox0, tile + b * kOxTile,
                  sizeof(T) * kOxTile);
  }
}

TPUSIM_HOT void convRow(const uint32_t *planes, const uint32_t *wts,
                        uint32_t *out, unsigned nb, uint32_t oy,
                        const ConvGeom &g) {
  convRowImpl(planes, wts, out, nb, oy, g);
}

/// Full convolution of one batch: out[oc][oy][ox].
template <typename T>
void convPlanes(const T *planes, const T *wts, T *out, const ConvGeom &g) {
  size_t wPerOc = size_t(g.ic) * g.kh * g.kw;
  size_t owPad = alignUp(g.ow, kOxTile);
  std::vector<T> rows(size_t(kOcTile) * owPad);
  for (uint32_t oc0 = 0; oc0 < g.oc; oc0 += kOcTile) {
    unsigned nb = std::min<unsigned>(kOcTile, g.oc - oc0);
    for (uint32_t oy = 0; oy < g.oh; ++oy) {
      convRow(planes, wts + oc0 * wPerOc, rows.data(), nb, oy, g);
      for (unsigned b = 0; b < nb; ++b)
        std::memcpy(out + (size_t(oc0 + b) * g.oh + oy) * g.ow,
                    rows.data() + size_t(b) * owPad, sizeof(T) * g.ow);
    }
  }
}

//===----------------------------------------------------------------------===//
// Vectorised conv kernels (one source, three SIMD builds; SimdImpl.h)
//===----------------------------------------------------------------------===//

/// Elements past the last plane position a tile may read (the widest tile
/// is 32 positions; with a channel pair interleaved, 64 int16).
constexpr size_t kTileOverrun = 64;
size_t tileOverrun(const ConvGeom &) { return kTileOverrun; }

/// A conv as the kernels walk it: `chans` input planes of `planeStride`
/// elements, tap t of every plane at offset taps[t], and output position
/// p = oy * rowW + ox reading plane element p + taps[t] (one tile spans row
/// ends; the columns past ow are computed and dropped). The taps are in
/// (ky, kx) order and the planes in ic order, so the sums keep the
/// documented order: ic, then ky, then kx. A strided conv's planes are
/// first split into phases (phaseWalk): element (y, x) of the padded plane
/// goes to phase (y mod sh, x mod sw) at (y div sh, x div sw), so that
/// output (oy, ox) at tap (ky, kx) reads phase (ky * dh mod sh, kx * dw mod
/// sw) at (oy + ky * dh div sh, ox + kx * dw div sw): positions again one
/// apart along a row, each tap's offset naming its phase.
struct ConvWalk {
  uint32_t chans;
  size_t planeStride;
  size_t rowW;
  size_t bufLen; ///< positions per channel in the block buffer
  std::vector<int64_t> taps;
  /// The phases stored, (y mod sh, x mod sw) each (only those a tap reads;
  /// one, (0, 0), for unit strides, where the planes are used as built),
  /// phaseLen elements apart; reach: the largest tap offset within a
  /// phase.
  std::vector<std::pair<uint32_t, uint32_t>> phases;
  size_t phaseLen = 0;
  int64_t reach = 0;
};

bool isDirect(const ConvGeom &g) { return g.sh == 1 && g.sw == 1; }

/// The walk of `g` (see ConvWalk) for tiles of `ox` positions.
ConvWalk convWalk(const ConvGeom &g, unsigned ox) {
  ConvWalk w;
  w.chans = g.ic;
  size_t ph = ceilDiv(g.vh, g.sh), pw = ceilDiv(g.vw, g.sw);
  w.phaseLen = ph * pw;
  w.rowW = pw;
  w.bufLen = alignUp(size_t(g.oh - 1) * pw + g.ow, ox);
  std::vector<int> index(size_t(g.sh) * g.sw, -1);
  for (uint32_t ky = 0; ky < g.kh; ++ky)
    for (uint32_t kx = 0; kx < g.kw; ++kx) {
      uint64_t ey = uint64_t(ky) * g.dh, ex = uint64_t(kx) * g.dw;
      int &at = index[(ey % g.sh) * g.sw + ex % g.sw];
      if (at < 0) {
        at = int(w.phases.size());
        w.phases.push_back({uint32_t(ey % g.sh), uint32_t(ex % g.sw)});
      }
      int64_t shift = int64_t(ey / g.sh) * int64_t(pw) + int64_t(ex / g.sw);
      w.reach = std::max(w.reach, shift);
      w.taps.push_back(int64_t(at) * int64_t(w.phaseLen) + shift);
    }
  w.planeStride = w.phases.size() * w.phaseLen + kTileOverrun;
  return w;
}

/// The walk of `g` for tiles of `ox` positions over planes interleaved U to
/// a unit ([chans / U][vh * vw + kTileOverrun][U] elements of T, 4 bytes a
/// position: single float planes, the int tiles' int16 channel pairs, the
/// quad tiles' byte quads). A strided conv's planes are first copied to
/// their phases (ConvWalk), in the same interleave, on the kernel threads,
/// and `planes` then points at the copy; elements no phase position maps
/// to (past the plane) and the overrun are zero. `unitAlign`: the copy has
/// room for units up to a multiple of it, zero (the AMX tiles read whole K
/// steps).
template <unsigned U, typename T>
ConvWalk interleavedWalk(const ConvGeom &g, unsigned ox, const T *&planes,
                         size_t unitAlign = 1) {
  static_assert(sizeof(T) * U == 4, "a position is one 32-bit word");
  ConvWalk walk = convWalk(g, ox);
  if (isDirect(g))
    return walk;
  size_t inStride = size_t(g.vh) * g.vw + kTileOverrun;
  size_t units = ceilDiv(walk.chans, U);
  size_t room = alignUp(units, unitAlign);
  auto *cols =
      reinterpret_cast<uint32_t *>(scratch<T, 1>(room * walk.planeStride * U));
  const auto *in = reinterpret_cast<const uint32_t *>(planes);
  size_t pw = walk.rowW, ph = walk.phaseLen / pw;
  parallelTasks(int64_t(room), [&](int64_t u) {
    uint32_t *out = cols + size_t(u) * walk.planeStride;
    if (size_t(u) >= units) {
      std::fill_n(out, walk.planeStride, 0u);
      return;
    }
    const uint32_t *src = in + size_t(u) * inStride;
    for (size_t k = 0; k < walk.phases.size(); ++k) {
      auto [py, px] = walk.phases[k];
      uint32_t *dst = out + k * walk.phaseLen;
      for (size_t r = 0; r < ph; ++r, dst += pw) {
        size_t y = r * g.sh + py;
        if (y >= g.vh) {
          std::fill_n(dst, pw, 0u);
          continue;
        }
        const uint32_t *row = src + y * g.vw + px;
        // Columns c with c * sw + px < vw come from the row.
        size_t n =
            px < g.vw ? std::min<size_t>(pw, (g.vw - px + g.sw - 1) / g.sw) : 0;
        for (size_t c = 0; c < n; ++c)
          dst[c] = row[c * g.sw];
        std::fill(dst + n, dst + pw, 0u);
      }
    }
    std::fill(out + walk.phases.size() * walk.phaseLen, out + walk.planeStride,
              0u);
  });
  planes = reinterpret_cast<const T *>(cols);
  return walk;
}

//--- Float tiles: NB channels x OX positions, r = r + w * x over the
// planes, then the taps: each output's sum in the documented order, every
// product rounded before its add (fp-contract is off in this file, so no
// build fuses them), except in the fused AVX2 / AVX-512 tiles, which compute
// r = fma(w, x, r) in the same order and run only where fmaExact says the
// bits are the same. `w` is [plane][tap][NB] for one block of channels.
// Every tile (float and int) sums `chans` planes (pairs) into the NB rows of
// out (outStride apart): from zero with `first`, else from what out holds,
// so a long sum can run in chunks of planes in its own order; ONE: the walk
// has a single tap at offset 0 (1x1 walks, strided or not), known at compile
// time.

template <unsigned OX, unsigned NB, bool ONE>
TPUSIM_INLINE void floatTilePortable(const float *x0, const ConvWalk &walk,
                                     uint32_t chans, const float *w, float *out,
                                     size_t outStride, bool first) {
  float r[NB][OX];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned j = 0; j < OX; ++j)
      r[b][j] = first ? 0.0f : out[b * outStride + j];
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t c = 0; c < chans; ++c) {
    const float *xc = x0 + c * walk.planeStride;
    const float *wc = w + size_t(c) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const float *x = xc + (ONE ? 0 : walk.taps[t]);
      for (unsigned b = 0; b < NB; ++b) {
        float wv = wc[t * NB + b];
        for (unsigned j = 0; j < OX; ++j)
          r[b][j] = r[b][j] + wv * x[j];
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned j = 0; j < OX; ++j)
      out[b * outStride + j] = r[b][j];
}

#if TPUSIM_X86_PATHS
/// The AVX2 / AVX-512 float tile NAME<V, NB>: V vectors (type VEC, PFX the
/// intrinsics' prefix, LANES floats each) of NB channels; FUSED selects
/// r = fma(w, x, r) over r = r + w * x. A macro because the fused AVX2 tile
/// needs its own target attribute ("fma" is not part of AVX2, and the
/// intrinsic is checked against the function that calls it).
#define TPUSIM_FLOAT_TILE(NAME, TARGET, VEC, PFX, LANES, FUSED)                \
  template <unsigned V, unsigned NB, bool ONE>                                 \
  TARGET TPUSIM_INLINE void NAME(const float *x0, const ConvWalk &walk,        \
                                 uint32_t chans, const float *w, float *out,   \
                                 size_t outStride, bool first) {               \
    VEC r[NB][V];                                                              \
    for (unsigned b = 0; b < NB; ++b)                                          \
      for (unsigned v = 0; v < V; ++v)                                         \
        r[b][v] = first ? PFX##_setzero_ps()                                   \
                        : PFX##_loadu_ps(out + b * outStride + (LANES)*v);     \
    size_t nTaps = ONE ? 1 : walk.taps.size();                                 \
    for (uint32_t c = 0; c < chans; ++c) {                                     \
      const float *xc = x0 + c * walk.planeStride;                             \
      const float *wc = w + size_t(c) * nTaps * NB;                            \
      for (size_t t = 0; t < nTaps; ++t) {                                     \
        const float *x = xc + (ONE ? 0 : walk.taps[t]);                        \
        VEC xv[V];                                                             \
        for (unsigned v = 0; v < V; ++v)                                       \
          xv[v] = PFX##_loadu_ps(x + (LANES)*v);                               \
        for (unsigned b = 0; b < NB; ++b) {                                    \
          VEC wv = PFX##_set1_ps(wc[t * NB + b]);                              \
          for (unsigned v = 0; v < V; ++v) {                                   \
            if constexpr (FUSED)                                               \
              r[b][v] = PFX##_fmadd_ps(wv, xv[v], r[b][v]);                    \
            else                                                               \
              r[b][v] = PFX##_add_ps(r[b][v], PFX##_mul_ps(wv, xv[v]));        \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    for (unsigned b = 0; b < NB; ++b)                                          \
      for (unsigned v = 0; v < V; ++v)                                         \
        PFX##_storeu_ps(out + b * outStride + (LANES)*v, r[b][v]);             \
  }

TPUSIM_FLOAT_TILE(floatTileAvx2, TPUSIM_TARGET_AVX2, __m256, _mm256, 8, false)
TPUSIM_FLOAT_TILE(floatTileAvx2Fma, TPUSIM_TARGET_AVX2_FMA, __m256, _mm256, 8,
                  true)
TPUSIM_FLOAT_TILE(floatTileAvx512, TPUSIM_TARGET_AVX512, __m512, _mm512, 16,
                  false)
// AVX-512F has the 512-bit FMA itself (no separate feature).
TPUSIM_FLOAT_TILE(floatTileAvx512Fma, TPUSIM_TARGET_AVX512, __m512, _mm512, 16,
                  true)
#undef TPUSIM_FLOAT_TILE
#endif

//--- Integer tiles over pairs of planes: planes are int16 with the two
// planes of a pair interleaved ([pair][position][2]), weights one int32
// per (pair, tap, channel) holding (w_even, w_odd) as int16 halves; each
// step adds x_even * w_even + x_odd * w_odd (exact in int32: operands of at
// most 8 bits times weights within int16) to a wrapping 32-bit sum, which
// is the sum of the products modulo 2^32 whatever the order.

template <unsigned OX, unsigned NB, bool ONE>
TPUSIM_INLINE void
intTilePortable(const int16_t *x0, const ConvWalk &walk, uint32_t pairs,
                const int32_t *w, uint32_t *out, size_t outStride, bool first) {
  uint32_t r[NB][OX];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned j = 0; j < OX; ++j)
      r[b][j] = first ? 0u : out[b * outStride + j];
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t pr = 0; pr < pairs; ++pr) {
    const int16_t *xc = x0 + 2 * pr * walk.planeStride;
    const int32_t *wc = w + size_t(pr) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const int16_t *x = xc + (ONE ? 0 : 2 * walk.taps[t]);
      for (unsigned b = 0; b < NB; ++b) {
        int32_t wp = wc[t * NB + b];
        int32_t w0 = int16_t(uint32_t(wp) & 0xFFFF), w1 = int16_t(wp >> 16);
        for (unsigned j = 0; j < OX; ++j)
          r[b][j] += uint32_t(x[2 * j] * w0 + x[2 * j + 1] * w1);
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned j = 0; j < OX; ++j)
      out[b * outStride + j] = r[b][j];
}

#if defined(__SSE2__)
/// The portable path on x86-64, whose baseline has SSE2's pmaddwd: the
/// same pair tile, OX = 4 * V positions.
template <unsigned V, unsigned NB, bool ONE>
TPUSIM_INLINE void intTileSse2(const int16_t *x0, const ConvWalk &walk,
                               uint32_t pairs, const int32_t *w, uint32_t *out,
                               size_t outStride, bool first) {
  __m128i r[NB][V];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      r[b][v] = first ? _mm_setzero_si128()
                      : _mm_loadu_si128(reinterpret_cast<const __m128i *>(
                            out + b * outStride + 4 * v));
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t pr = 0; pr < pairs; ++pr) {
    const int16_t *xc = x0 + 2 * pr * walk.planeStride;
    const int32_t *wc = w + size_t(pr) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const int16_t *x = xc + (ONE ? 0 : 2 * walk.taps[t]);
      __m128i xv[V];
      for (unsigned v = 0; v < V; ++v)
        xv[v] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x) + v);
      for (unsigned b = 0; b < NB; ++b) {
        __m128i wv = _mm_set1_epi32(wc[t * NB + b]);
        for (unsigned v = 0; v < V; ++v)
          r[b][v] = _mm_add_epi32(r[b][v], _mm_madd_epi16(xv[v], wv));
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(out + b * outStride + 4 * v),
                       r[b][v]);
}
#define TPUSIM_INT_TILE_PORTABLE intTileSse2
#define TPUSIM_INT_TILE_PORTABLE_A 2
#else
#define TPUSIM_INT_TILE_PORTABLE intTilePortable
#define TPUSIM_INT_TILE_PORTABLE_A 8
#endif

#if TPUSIM_X86_PATHS
template <unsigned V, unsigned NB, bool ONE>
TPUSIM_TARGET_AVX2 TPUSIM_INLINE void
intTileAvx2(const int16_t *x0, const ConvWalk &walk, uint32_t pairs,
            const int32_t *w, uint32_t *out, size_t outStride, bool first) {
  __m256i r[NB][V];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      r[b][v] = first ? _mm256_setzero_si256()
                      : _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                            out + b * outStride + 8 * v));
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t pr = 0; pr < pairs; ++pr) {
    const int16_t *xc = x0 + 2 * pr * walk.planeStride;
    const int32_t *wc = w + size_t(pr) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const int16_t *x = xc + (ONE ? 0 : 2 * walk.taps[t]);
      __m256i xv[V];
      for (unsigned v = 0; v < V; ++v)
        xv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x) + v);
      for (unsigned b = 0; b < NB; ++b) {
        __m256i wv = _mm256_set1_epi32(wc[t * NB + b]);
        for (unsigned v = 0; v < V; ++v)
          r[b][v] = _mm256_add_epi32(r[b][v], _mm256_madd_epi16(xv[v], wv));
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(out + b * outStride + 8 * v), r[b][v]);
}

template <unsigned V, unsigned NB, bool ONE>
TPUSIM_TARGET_AVX512 TPUSIM_INLINE void
intTileAvx512(const int16_t *x0, const ConvWalk &walk, uint32_t pairs,
              const int32_t *w, uint32_t *out, size_t outStride, bool first) {
  __m512i r[NB][V];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      r[b][v] = first ? _mm512_setzero_si512()
                      : _mm512_loadu_si512(reinterpret_cast<const __m512i *>(
                            out + b * outStride + 16 * v));
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t pr = 0; pr < pairs; ++pr) {
    const int16_t *xc = x0 + 2 * pr * walk.planeStride;
    const int32_t *wc = w + size_t(pr) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const int16_t *x = xc + (ONE ? 0 : 2 * walk.taps[t]);
      __m512i xv[V];
      for (unsigned v = 0; v < V; ++v)
        xv[v] = _mm512_loadu_si512(reinterpret_cast<const __m512i *>(x) + v);
      for (unsigned b = 0; b < NB; ++b) {
        __m512i wv = _mm512_set1_epi32(wc[t * NB + b]);
        for (unsigned v = 0; v < V; ++v)
          r[b][v] = _mm512_add_epi32(r[b][v], _mm512_madd_epi16(xv[v], wv));
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      _mm512_storeu_si512(
          reinterpret_cast<__m512i *>(out + b * outStride + 16 * v), r[b][v]);
}
#endif

/// Tile shape of each path: OX positions x NB channels (the accumulators
/// fill most of the vector registers: 16 zmm, 12 ymm, 8 xmm).
struct TileShape {
  unsigned ox, nb;
};
TileShape tileShape(SimdPath p) {
  switch (vectorBuild(p)) {
  case SimdPath::Avx512:
    return {32, 8};
  case SimdPath::Avx2:
    return {16, 6};
  default:
    return {8, 4};
  }
}

/// One block of NB channels over positions [p0, p1) (multiples of OX) and
/// `chans` planes (pairs for the int tiles) from `planes` with weights `w`,
/// into acc ([NB][walk.bufLen]), tile by tile: the sums start at zero with
/// `first`, else they go on from acc. Tile is one of the tiles above (T
/// float or uint32_t, X the plane element type, S the plane elements per
/// position).
#define TPUSIM_BLOCK(NAME, TARGET, X, W, T, S, OX, NB, TILE, A)                \
  TARGET void NAME(const X *planes, const ConvWalk &walk, uint32_t chans,      \
                   const W *w, T *acc, size_t p0, size_t p1, bool first) {     \
    if (walk.taps.size() == 1) {                                               \
      for (size_t p = p0; p < p1; p += (OX))                                   \
        TILE<A, NB, true>(planes + (S)*p, walk, chans, w, acc + p,             \
                          walk.bufLen, first);                                 \
      return;                                                                  \
    }                                                                          \
    for (size_t p = p0; p < p1; p += (OX))                                     \
      TILE<A, NB, false>(planes + (S)*p, walk, chans, w, acc + p, walk.bufLen, \
                         first);                                               \
  }

TPUSIM_BLOCK(floatBlockPortable, , float, float, float, 1, 8, 4,
             floatTilePortable, 8)
TPUSIM_BLOCK(intBlockPortable, , int16_t, int32_t, uint32_t, 2, 8, 4,
             TPUSIM_INT_TILE_PORTABLE, TPUSIM_INT_TILE_PORTABLE_A)
#if TPUSIM_X86_PATHS
TPUSIM_BLOCK(floatBlockAvx2, TPUSIM_TARGET_AVX2, float, float, float, 1, 16, 6,
             floatTileAvx2, 2)
TPUSIM_BLOCK(floatBlockAvx2Fma, TPUSIM_TARGET_AVX2_FMA, float, float, float, 1,
             16, 6, floatTileAvx2Fma, 2)
TPUSIM_BLOCK(intBlockAvx2, TPUSIM_TARGET_AVX2, int16_t, int32_t, uint32_t, 2,
             16, 6, intTileAvx2, 2)
TPUSIM_BLOCK(floatBlockAvx512, TPUSIM_TARGET_AVX512, float, float, float, 1, 32,
             8, floatTileAvx512, 2)
TPUSIM_BLOCK(floatBlockAvx512Fma, TPUSIM_TARGET_AVX512, float, float, float, 1,
             32, 8, floatTileAvx512Fma, 2)
TPUSIM_BLOCK(intBlockAvx512, TPUSIM_TARGET_AVX512, int16_t, int32_t, uint32_t,
             2, 32, 8, intTileAvx512, 2)
#endif
#undef TPUSIM_BLOCK

#if TPUSIM_X86_PATHS
/// The 8-bit tile of the AVX-512 VNNI path: channel quads ([quad][position]
/// [4] bytes, the inputs offset to unsigned) against weight quads (four
/// int8 in an int32 per channel of the block), four products per 32-bit lane
/// and instruction (vpdpbusd adds them to the lane without saturating, so the
/// sums wrap as the pair tiles' do). `init` (NB values) starts the sums with
/// `first`: the correction for the input offset (packQuadWeights).
template <unsigned V, unsigned NB, bool ONE>
TPUSIM_TARGET_AVX512VNNI TPUSIM_INLINE void
quadTileVnni(const uint8_t *x0, const ConvWalk &walk, uint32_t quads,
             const int32_t *w, const int32_t *init, uint32_t *out,
             size_t outStride, bool first) {
  __m512i r[NB][V];
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      r[b][v] = first ? _mm512_set1_epi32(init[b])
                      : _mm512_loadu_si512(reinterpret_cast<const __m512i *>(
                            out + b * outStride + 16 * v));
  size_t nTaps = ONE ? 1 : walk.taps.size();
  for (uint32_t q = 0; q < quads; ++q) {
    const uint8_t *xc = x0 + 4 * size_t(q) * walk.planeStride;
    const int32_t *wc = w + size_t(q) * nTaps * NB;
    for (size_t t = 0; t < nTaps; ++t) {
      const uint8_t *x = xc + (ONE ? 0 : 4 * walk.taps[t]);
      __m512i xv[V];
      for (unsigned v = 0; v < V; ++v)
        xv[v] = _mm512_loadu_si512(reinterpret_cast<const __m512i *>(x) + v);
      for (unsigned b = 0; b < NB; ++b) {
        __m512i wv = _mm512_set1_epi32(wc[t * NB + b]);
        for (unsigned v = 0; v < V; ++v)
          r[b][v] = _mm512_dpbusd_epi32(r[b][v], xv[v], wv);
      }
    }
  }
  for (unsigned b = 0; b < NB; ++b)
    for (unsigned v = 0; v < V; ++v)
      _mm512_storeu_si512(
          reinterpret_cast<__m512i *>(out + b * outStride + 16 * v), r[b][v]);
}

/// Tile shape of quadTileVnni: 32 positions (two vectors) x 8 channels.
constexpr TileShape kQuadTile{32, 8};

/// quadTileVnni over positions [p0, p1) of one block (TPUSIM_BLOCK's walk).
TPUSIM_TARGET_AVX512VNNI void quadBlockVnni(const uint8_t *planes,
                                            const ConvWalk &walk,
                                            uint32_t quads, const int32_t *w,
                                            const int32_t *init, uint32_t *acc,
                                            size_t p0, size_t p1, bool first) {
  if (walk.taps.size() == 1) {
    for (size_t p = p0; p < p1; p += kQuadTile.ox)
      quadTileVnni<2, kQuadTile.nb, true>(planes + 4 * p, walk, quads, w, init,
                                          acc + p, walk.bufLen, first);
    return;
  }
  for (size_t p = p0; p < p1; p += kQuadTile.ox)
    quadTileVnni<2, kQuadTile.nb, false>(planes + 4 * p, walk, quads, w, init,
                                         acc + p, walk.bufLen, first);
}
#endif

#if TPUSIM_X86_PATHS
/// The AMX tile of the `amx` path: 32 output channels x 32 positions,
/// four int32 C tiles (channel half h, position half v), each K step 16
/// channel quads at one tap: A tiles (weights, signed) rows = channels,
/// 16 quad words each; B tiles (inputs as they are, signed or unsigned)
/// rows = quads, 16 positions of 4 bytes each, read straight from the quad
/// planes (row stride one quad plane). tdpbssd / tdpbsud add the products
/// to the int32 sums without saturating, so they wrap as the other tiles'.
constexpr TileShape kAmxTile{32, 32};
/// Quads per K step, words per step and tap (32 rows of 16 quads).
constexpr uint32_t kAmxQuads = 16;
constexpr size_t kAmxStepWords = size_t(kAmxTile.nb) * kAmxQuads;
/// Weight words of one 32-channel block: [step][tap][32][16].
size_t amxWeightWords(uint32_t quads, size_t taps) {
  return ceilDiv(quads, kAmxQuads) * taps * kAmxStepWords;
}

/// Where a block's A-tile rows lie: row (channel m of the block, K step s,
/// tap t) at base + m * rowStride + (s * taps + t) * stepStride, 64 bytes.
/// Packed (packQuadWeights<true>): rowStride 64, stepStride 32 rows;
/// straight from the weight slots: rowStride one lane, stepStride 64.
struct AmxWeights {
  std::vector<const uint8_t *> blockBase; ///< per 32-channel block
  size_t rowStride = 0, stepStride = 0;
};

/// The AMX tile configuration: palette 1, tiles 0-3 the sums, 4-5 the
/// weights, 6-7 the inputs, all 16 rows of 64 bytes.
struct alignas(64) AmxConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colBytes[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

/// Positions [p0, p1) of one 32-channel block over `quads` quads of the
/// planes (a chunk: quads past the last real one are zero planes), the
/// sums from zero with `first`, else from acc (its 32 rows, walk.bufLen
/// apart). a: the block's row (0, first step of the chunk, tap 0).
/// SIGNED_X: the inputs are int8 (tdpbssd), else uint8 (tdpbsud).
template <bool SIGNED_X>
TPUSIM_TARGET_AMX void
amxBlock(const uint8_t *planes, const ConvWalk &walk, uint32_t quads,
         const uint8_t *a, size_t aRowStride, size_t aStepStride, uint32_t *acc,
         size_t p0, size_t p1, bool first) {
  static const AmxConfig config;
  _tile_loadconfig(&config);
  size_t nTaps = walk.taps.size();
  uint32_t steps = uint32_t(ceilDiv(quads, kAmxQuads));
  size_t quadBytes = walk.planeStride * 4;
  size_t rowBytes = walk.bufLen * sizeof(uint32_t);
  const uint8_t *a1 = a + 16 * aRowStride;
  uint32_t *acc1 = acc + size_t(16) * walk.bufLen;
  for (size_t p = p0; p < p1; p += kAmxTile.ox) {
    if (first) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
    } else {
      _tile_loadd(0, acc + p, rowBytes);
      _tile_loadd(1, acc + p + 16, rowBytes);
      _tile_loadd(2, acc1 + p, rowBytes);
      _tile_loadd(3, acc1 + p + 16, rowBytes);
    }
    for (uint32_t s = 0; s < steps; ++s) {
      const uint8_t *xs = planes + size_t(s) * kAmxQuads * quadBytes + 4 * p;
      size_t ws = size_t(s) * nTaps * aStepStride;
      for (size_t t = 0; t < nTaps; ++t) {
        const uint8_t *x = xs + 4 * walk.taps[t];
        size_t wt = ws + t * aStepStride;
        _tile_loadd(4, a + wt, aRowStride);
        _tile_loadd(5, a1 + wt, aRowStride);
        _tile_loadd(6, x, quadBytes);
        _tile_loadd(7, x + 64, quadBytes);
        if constexpr (SIGNED_X) {
          _tile_dpbssd(0, 4, 6);
          _tile_dpbssd(1, 4, 7);
          _tile_dpbssd(2, 5, 6);
          _tile_dpbssd(3, 5, 7);
        } else {
          _tile_dpbsud(0, 4, 6);
          _tile_dpbsud(1, 4, 7);
          _tile_dpbsud(2, 5, 6);
          _tile_dpbsud(3, 5, 7);
        }
      }
    }
    _tile_stored(0, acc + p, rowBytes);
    _tile_stored(1, acc + p + 16, rowBytes);
    _tile_stored(2, acc1 + p, rowBytes);
    _tile_stored(3, acc1 + p + 16, rowBytes);
  }
  _tile_release();
}
#endif

/// Fills one contiguous input plane (vh x vw, then the overrun as
/// padding) at out: rows from row(iy, dst) (iw values), inserted zeros
/// `ins`, everything else `pad`. Every position is written once: the
/// padding around the real rows, then the rows (straight into the plane
/// without inserted columns, else through rowBuf).
template <typename T, typename Row>
void buildPlaneRows(const ConvGeom &g, size_t planeLen, T pad, T ins, Row row,
                    T *out, T *rowBuf) {
  auto fill = [&](size_t from, size_t to, T v) {
    std::fill(out + from, out + to, v);
  };
  uint32_t stepH = g.insH + 1, stepW = g.insW + 1;
  uint64_t realH = uint64_t(g.ih - 1) * stepH + 1;
  uint64_t realW = uint64_t(g.iw - 1) * stepW + 1;
  fill(0, size_t(g.padT) * g.vw, pad);
  for (uint64_t vy = 0; vy < realH; ++vy) {
    size_t start = (g.padT + vy) * g.vw;
    size_t left = start + g.padL, right = left + realW;
    fill(start, left, pad);
    fill(right, start + g.vw, pad);
    if (vy % stepH) {
      fill(left, right, ins);
      continue;
    }
    T *dst = out + left;
    if (stepW == 1) {
      row(uint32_t(vy / stepH), dst);
      continue;
    }
    row(uint32_t(vy / stepH), rowBuf);
    if (stepW != 1)
      fill(left, right, ins);
    for (uint32_t ix = 0; ix < g.iw; ++ix)
      dst[uint64_t(ix) * stepW] = rowBuf[ix];
  }
  fill((g.padT + realH) * g.vw, planeLen, pad);
}

/// Weights per channel that the packers load at a time: a block's chunks
/// (NB channels x kPackChunk floats, at most 32 KiB) stay in L1 while they
/// are interleaved, where whole channels (up to 4608 weights each in
/// ResNet-50) would go through L2 once per channel.
constexpr size_t kPackChunk = 1024;

/// dst[k * NB + b] = rows[b * kPackChunk + k] for k < count, b < NB (rows
/// past `nb` are zeros).
template <typename T, unsigned NB>
void interleaveChunk(const T *rows, unsigned nb, size_t count, T *dst) {
  for (size_t k = 0; k < count; ++k)
    for (unsigned b = 0; b < NB; ++b)
      dst[k * NB + b] = b < nb ? rows[b * kPackChunk + k] : T(0);
}
#if TPUSIM_X86_PATHS
/// interleaveChunk<T, 6> for 4-byte T (the AVX2 tiles' blocks, float or
/// int16-pair weights): 8 weights of the 6 rows at a time transposed in
/// registers (shuffles only, so the bits move unchanged) and stored as 8
/// runs of 6, each store 8 wide, the 2 extra lanes overwritten by the next
/// store. Returns the weights done: the rest (at least one) go through the
/// scalar loop, which also overwrites the last vector store's extra lanes.
TPUSIM_TARGET_AVX2 size_t interleave6Avx2(const void *rowsBits, unsigned nb,
                                          size_t count, void *dstBits) {
  const float *rows = static_cast<const float *>(rowsBits);
  float *dst = static_cast<float *>(dstBits);
  const __m256 zero = _mm256_setzero_ps();
  size_t k = 0;
  for (; k + 8 < count; k += 8) {
    __m256 r[6];
    for (unsigned b = 0; b < 6; ++b)
      r[b] = b < nb ? _mm256_loadu_ps(rows + b * kPackChunk + k) : zero;
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
    __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
    __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
    __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
    // s[j] holds rows 0..3 of weights j and j + 4; s[j + 4] rows 4, 5.
    __m256 s[8] = {
        _mm256_shuffle_ps(t0, t2, 0x44),   _mm256_shuffle_ps(t0, t2, 0xEE),
        _mm256_shuffle_ps(t1, t3, 0x44),   _mm256_shuffle_ps(t1, t3, 0xEE),
        _mm256_shuffle_ps(t4, zero, 0x44), _mm256_shuffle_ps(t4, zero, 0xEE),
        _mm256_shuffle_ps(t5, zero, 0x44), _mm256_shuffle_ps(t5, zero, 0xEE)};
    float *d = dst + k * 6;
    for (unsigned j = 0; j < 4; ++j)
      _mm256_storeu_ps(d + j * 6, _mm256_permute2f128_ps(s[j], s[j + 4], 0x20));
    for (unsigned j = 0; j < 4; ++j)
      _mm256_storeu_ps(d + (j + 4) * 6,
                       _mm256_permute2f128_ps(s[j], s[j + 4], 0x31));
  }
  return k;
}

/// The eight rows r[0..7] of an 8 x 8 float matrix transposed into t (t[k]
/// holds element k of every row; shuffles only, the bits move unchanged).
TPUSIM_TARGET_AVX2 TPUSIM_INLINE void transpose8x8(const __m256 r[8],
                                                   __m256 t[8]) {
  __m256 u[8];
  for (unsigned j = 0; j < 4; ++j) {
    u[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
    u[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
  }
  // s[j] holds rows 0..3 of elements j and j + 4; s[j + 4] rows 4..7.
  __m256 s[8] = {
      _mm256_shuffle_ps(u[0], u[2], 0x44), _mm256_shuffle_ps(u[0], u[2], 0xEE),
      _mm256_shuffle_ps(u[1], u[3], 0x44), _mm256_shuffle_ps(u[1], u[3], 0xEE),
      _mm256_shuffle_ps(u[4], u[6], 0x44), _mm256_shuffle_ps(u[4], u[6], 0xEE),
      _mm256_shuffle_ps(u[5], u[7], 0x44), _mm256_shuffle_ps(u[5], u[7], 0xEE)};
  for (unsigned j = 0; j < 4; ++j) {
    t[j] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x20);
    t[j + 4] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x31);
  }
}

/// interleaveChunk<T, 8> for 4-byte T (the AVX-512 tiles' blocks): 8
/// weights of the 8 rows at a time transposed in registers (shuffles only)
/// and stored as 8 runs of 8. Returns the weights done (a multiple of 8);
/// the rest go through the scalar loop.
TPUSIM_TARGET_AVX2 size_t interleave8Avx2(const void *rowsBits, unsigned nb,
                                          size_t count, void *dstBits) {
  const float *rows = static_cast<const float *>(rowsBits);
  float *dst = static_cast<float *>(dstBits);
  const __m256 zero = _mm256_setzero_ps();
  size_t k = 0;
  for (; k + 8 <= count; k += 8) {
    __m256 r[8], t[8];
    for (unsigned b = 0; b < 8; ++b)
      r[b] = b < nb ? _mm256_loadu_ps(rows + b * kPackChunk + k) : zero;
    transpose8x8(r, t);
    for (unsigned j = 0; j < 8; ++j)
      _mm256_storeu_ps(dst + (k + j) * 8, t[j]);
  }
  return k;
}
#endif

template <typename T>
void interleaveChunk(const T *rows, unsigned nbMax, unsigned nb, size_t count,
                     T *dst) {
  switch (nbMax) {
  case 8:
#if TPUSIM_X86_PATHS
    // Blocks of 8 are the AVX-512 tiles' (the CPU has AVX2).
    if constexpr (sizeof(T) == sizeof(float)) {
      size_t k = interleave8Avx2(rows, nb, count, dst);
      return interleaveChunk<T, 8>(rows + k, nb, count - k, dst + k * 8);
    }
#endif
    return interleaveChunk<T, 8>(rows, nb, count, dst);
  case 6:
#if TPUSIM_X86_PATHS
    if constexpr (sizeof(T) == sizeof(float)) {
      size_t k = interleave6Avx2(rows, nb, count, dst);
      return interleaveChunk<T, 6>(rows + k, nb, count - k, dst + k * 6);
    }
#endif
    return interleaveChunk<T, 6>(rows, nb, count, dst);
  default:
    return interleaveChunk<T, 4>(rows, nb, count, dst);
  }
}

/// interleaveChunk for rows `rowLen` apart: the packers' rows are
/// kPackChunk long unless one channel's weights for a single unit (pair,
/// quad) are more.
template <typename T>
void interleaveRows(const T *rows, size_t rowLen, unsigned nbMax, unsigned nb,
                    size_t count, T *dst) {
  if (rowLen == kPackChunk) {
    interleaveChunk(rows, nbMax, nb, count, dst);
    return;
  }
  for (size_t k = 0; k < count; ++k)
    for (unsigned b = 0; b < nbMax; ++b)
      dst[k * nbMax + b] = b < nb ? rows[b * rowLen + k] : T(0);
}

/// What fmaExact needs to know of a set of float operands: the largest
/// finite and the smallest nonzero magnitude, as bit patterns of |v| (which
/// order like the magnitudes; as int32, which the baseline build vectorises
/// too), and whether a NaN occurred.
struct FloatRange {
  /// Bits of the largest finite |v| (0: no nonzero finite value).
  int32_t maxFinite = 0;
  /// Bits of the smallest nonzero |v| (INT32_MAX: no nonzero value).
  int32_t minNonzero = std::numeric_limits<int32_t>::max();
  bool nan = false;

  /// Takes in v[0 .. n - 1] (one pass the compiler vectorises; the callers
  /// scan data they have just written, still in cache); the magnitudes only
  /// with `magnitudes` (a third of the work without: fp16 products are
  /// always in range and fp32 ones never fuse, so those need only the NaN
  /// test).
  void scan(const float *v, size_t n, bool magnitudes) {
    int32_t mx = maxFinite, mn = minNonzero, isNan = 0;
    if (!magnitudes) {
      for (size_t i = 0; i < n; ++i)
        isNan |= int32_t((floatAsBits(v[i]) & 0x7FFFFFFFu) > 0x7F800000u);
      nan = nan || isNan;
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      int32_t a = int32_t(floatAsBits(v[i]) & 0x7FFFFFFFu);
      mx = std::max(mx, a < 0x7F800000 ? a : 0);
      mn = std::min(mn, a == 0 ? std::numeric_limits<int32_t>::max() : a);
      isNan |= int32_t(a > 0x7F800000);
    }
    maxFinite = mx;
    minNonzero = mn;
    nan = nan || isNan;
  }
  void merge(const FloatRange &o) {
    maxFinite = std::max(maxFinite, o.maxFinite);
    minNonzero = std::min(minNonzero, o.minNonzero);
    nan = nan || o.nan;
  }
};

/// Whether the fused tiles give the bits of the unfused ones for fp16 or
/// bf16 weights in `w` and inputs in `x` (for fp16 the magnitudes need not
/// have been scanned): fma(w, x, r) rounds r + w * x once, the unfused step
/// rounds the product first, so the two agree for every r when every
/// product is exact in fp32. Products of fp16 / bf16 values have at most
/// 22 / 16 significant bits, so they are exact unless they leave fp32's
/// normal range, which bf16 products can (bf16 has fp32's exponent range;
/// nonzero fp16 products lie within [2^-48, 2^32]): their bounds below are
/// exact in double. Infinities give the same either way (inf * 0 is the
/// default NaN in both, as is inf - inf, and a sum holding the default NaN
/// stays it). NaN operands are excluded: with two NaNs which payload wins
/// depends on the operand order of the instruction, and the compiler
/// chooses among the FMA encodings (132 / 213 / 231) freely (execConv runs
/// such batches on the portable tiles).
bool fmaExact(const FloatRange &w, const FloatRange &x) {
  if (w.nan || x.nan)
    return false;
  double hi = double(bitsAsFloat(uint32_t(w.maxFinite))) *
              double(bitsAsFloat(uint32_t(x.maxFinite)));
  if (hi > double(std::numeric_limits<float>::max()))
    return false;
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  if (w.minNonzero == kNone || x.minNonzero == kNone)
    return true; // every product is a zero
  double lo = double(bitsAsFloat(uint32_t(w.minNonzero))) *
              double(bitsAsFloat(uint32_t(x.minNonzero)));
  return lo >= double(std::numeric_limits<float>::min());
}

/// The float weights as convFloatFast reads them for `path`: per block of
/// NB = tileShape(path).nb output channels, [plane][tap][NB] (the walk's
/// planes and taps are [ic][tap] either way), zero for the channels past
/// oc; blocks one after another. load(oc, k0, count, dst) writes weights
/// k0 .. k0 + count - 1 of channel oc's wPerOc weights, [ic][tap], to dst;
/// it runs on the kernel threads. With `range`, the weights' range
/// (FloatRange, its magnitudes with `magnitudes`) is stored there. Tag: the
/// scratch buffer (see scratch).
template <int Tag = 2, typename Load>
float *packFloatWeights(const ConvGeom &g, SimdPath path, Load load,
                        FloatRange *range = nullptr, bool magnitudes = false) {
  unsigned nbMax = tileShape(path).nb;
  size_t wPerOc = size_t(g.ic) * g.kh * g.kw;
  int64_t blocks = int64_t(ceilDiv(g.oc, nbMax));
  float *packed = scratch<float, Tag>(size_t(blocks) * wPerOc * nbMax);
  std::vector<FloatRange> ranges(range ? size_t(blocks) : 0);
  parallelTasks(blocks, [&](int64_t blk) {
    uint32_t oc0 = uint32_t(blk) * nbMax;
    unsigned nb = std::min<unsigned>(nbMax, g.oc - oc0);
    float *w = packed + size_t(blk) * wPerOc * nbMax;
    float *rows = scratch<float, 6>(size_t(nbMax) * kPackChunk);
    for (size_t k0 = 0; k0 < wPerOc; k0 += kPackChunk) {
      size_t count = std::min(kPackChunk, wPerOc - k0);
      for (unsigned b = 0; b < nb; ++b) {
        load(oc0 + b, k0, count, rows + b * kPackChunk);
        if (range)
          ranges[size_t(blk)].scan(rows + b * kPackChunk, count, magnitudes);
      }
      interleaveChunk(rows, nbMax, nb, count, w + k0 * nbMax);
    }
  });
  if (range) {
    *range = FloatRange();
    for (const FloatRange &r : ranges)
      range->merge(r);
  }
  return packed;
}

#if TPUSIM_X86_PATHS
/// One block of packFloatWeights' layout for fp16 weights and blocks of 8
/// channels (the AVX-512 tiles), straight from the channels' slots: `slot`
/// (nb of them) the slots' first bytes, weight k = ic * taps + tap of a
/// channel at element off[k] of its slot (execConv's weightOffsets). With
/// an IC_PARALLEL that is a multiple of 8, eight input channels from a
/// multiple of 8 at one tap lie together in a slot, so each step loads
/// them for the 8 channels (8 x 16 bytes), converts them (vcvtph2ps:
/// fp16ToFp32's bits for every value but a NaN), transposes them in
/// registers and stores the 8 weights of each (ic, tap); input channels
/// past the last multiple of 8 go one by one. Returns false if a weight is
/// a NaN (tested on the bits): then the block holds garbage and the caller
/// packs the general way, whose conversion keeps NaN payloads.
__attribute__((target("avx2,f16c"))) bool
packHalfBlock8(const uint8_t *const *slot, unsigned nb, uint32_t ic,
               size_t taps, const uint64_t *off, float *w) {
  const __m128i magMask = _mm_set1_epi16(0x7FFF), inf = _mm_set1_epi16(0x7C00);
  __m128i nan = _mm_setzero_si128();
  uint32_t ic8 = ic / 8 * 8;
  for (uint32_t c0 = 0; c0 < ic8; c0 += 8)
    for (size_t t = 0; t < taps; ++t) {
      size_t at = 2 * off[c0 * taps + t];
      __m256 r[8], o[8];
      for (unsigned b = 0; b < 8; ++b) {
        if (b >= nb) {
          r[b] = _mm256_setzero_ps();
          continue;
        }
        __m128i h =
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(slot[b] + at));
        nan =
            _mm_or_si128(nan, _mm_cmpgt_epi16(_mm_and_si128(h, magMask), inf));
        r[b] = _mm256_cvtph_ps(h);
      }
      transpose8x8(r, o);
      // Input channel c0 + j at tap t: weight (c0 + j) * taps + t.
      for (unsigned j = 0; j < 8; ++j)
        _mm256_storeu_ps(w + ((c0 + j) * taps + t) * 8, o[j]);
    }
  bool anyNan = _mm_movemask_epi8(nan) != 0;
  for (size_t k = size_t(ic8) * taps; k < size_t(ic) * taps; ++k)
    for (unsigned b = 0; b < 8; ++b) {
      uint16_t h = 0;
      if (b < nb)
        std::memcpy(&h, slot[b] + 2 * off[k], 2);
      anyNan |= (h & 0x7FFF) > 0x7C00;
      w[k * 8 + b] = fp16ToFp32Fast(h);
    }
  return !anyNan;
}
#endif

/// Where a walk kernel leaves its sums: channel oc's output (oy, ox) at
/// data[oc * chanStride + oy * rowStride + ox] (the walk's positions, with
/// the columns past ow computed and ignored).
template <typename T> struct ConvAcc {
  const T *data;
  size_t chanStride, rowStride;
  T at(uint32_t oc, uint32_t oy, uint32_t ox) const {
    return data[oc * chanStride + oy * rowStride + ox];
  }
};

/// The order of a walk kernel's work, for the caches (the sums' order is
/// the tiles' own, whatever this says: a chunk goes on from the sums the
/// one before left in acc): planes in chunks of `kc` units (planes, or
/// channel pairs for the int tiles) and positions in chunks of `pc`. A
/// task is one position chunk and one group of channel blocks; it runs its
/// plane chunks in order, each over its blocks, so the chunk's planes (kc x
/// pc positions and the taps' reach, at most kChunkBytes) stay in the
/// core's L2 while every block of the group reads them, and a block's
/// weights for the chunk (kc x taps x NB, at most kChunkWeights floats)
/// stay in L1 across the chunk's tiles.
struct ConvOrder {
  uint32_t kc;
  size_t pc;
  int64_t pcs, groups;
};
constexpr size_t kChunkBytes = 256 * 1024;
constexpr size_t kChunkWeights = 512;
ConvOrder convOrder(const ConvWalk &walk, uint32_t units, TileShape ts,
                    int64_t blocks) {
  ConvOrder o;
  size_t nTaps = walk.taps.size();
  size_t chunks = ceilDiv(size_t(units) * nTaps, kChunkWeights);
  o.kc = uint32_t(ceilDiv(units, std::max<size_t>(chunks, 1)));
  int64_t reach = walk.reach;
  // 4 bytes per unit, phase and position (a float, an int16 pair or a byte
  // quad).
  size_t fit = kChunkBytes / (4 * size_t(o.kc) * walk.phases.size());
  size_t pcMax =
      fit > size_t(reach) ? (fit - size_t(reach)) / ts.ox * ts.ox : 0;
  pcMax = std::max<size_t>(pcMax, ts.ox);
  // Chunks of equal size (the last may be one tile short).
  o.pcs = int64_t(ceilDiv(walk.bufLen, pcMax));
  o.pc = alignUp(ceilDiv(walk.bufLen, size_t(o.pcs)), ts.ox);
  o.pcs = int64_t(ceilDiv(walk.bufLen, o.pc));
  // Enough tasks for the threads to share out evenly.
  o.groups = std::clamp<int64_t>(int64_t(ceilDiv(8, o.pcs)), 1, blocks);
  return o;
}

/// Runs block(plane0, chans, blk, p0, p1, first) over `o`'s tasks on the
/// kernel threads: plane0 the chunk's first unit, chans its units, blocks
/// blk of the task's group over positions [p0, p1).
template <typename Block>
void runConvOrder(const ConvOrder &o, uint32_t units, int64_t blocks,
                  size_t bufLen, Block block) {
  parallelTasks(o.pcs * o.groups, [&](int64_t task) {
    int64_t pcI = task / o.groups, grp = task % o.groups;
    size_t p0 = size_t(pcI) * o.pc, p1 = std::min(bufLen, p0 + o.pc);
    int64_t b0 = blocks * grp / o.groups, b1 = blocks * (grp + 1) / o.groups;
    for (uint32_t c0 = 0; c0 < units; c0 += o.kc) {
      uint32_t cn = std::min(o.kc, units - c0);
      for (int64_t blk = b0; blk < b1; ++blk)
        block(c0, cn, blk, p0, p1, c0 == 0);
    }
  });
}

/// The float conv of one batch on the tiles of `path`: planes [ic][vh * vw
/// + kTileOverrun], weights from packFloatWeights for `path`. `fused`: the
/// AVX2 / AVX-512 tiles may be the fused ones (the caller has checked
/// fmaExact; AVX2 also needs the CPU's FMA).
ConvAcc<float> convFloatFast(const float *planes, const float *packed,
                             const ConvGeom &g, SimdPath path, bool fused) {
  TileShape ts = tileShape(path);
  ConvWalk walk = interleavedWalk<1>(g, ts.ox, planes);
  // w[oc][ic][tap] is w[oc][plane][tap'] of the walk either way.
  size_t nTaps = walk.taps.size();
  size_t wPerOc = size_t(walk.chans) * nTaps;
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  float *acc = scratch<float, 3>(size_t(blocks) * ts.nb * walk.bufLen);
  bool fma = fused && (vectorBuild(path) == SimdPath::Avx512 ||
                       (path == SimdPath::Avx2 && cpuHasFma()));
  ConvOrder o = convOrder(walk, walk.chans, ts, blocks);
  runConvOrder(o, walk.chans, blocks, walk.bufLen,
               [&](uint32_t c0, uint32_t cn, int64_t blk, size_t p0, size_t p1,
                   bool first) {
                 const float *x = planes + c0 * walk.planeStride;
                 const float *w = packed + size_t(blk) * wPerOc * ts.nb +
                                  size_t(c0) * nTaps * ts.nb;
                 float *a = acc + size_t(blk) * ts.nb * walk.bufLen;
                 switch (vectorBuild(path)) {
#if TPUSIM_X86_PATHS
                 case SimdPath::Avx512:
                   if (fma)
                     floatBlockAvx512Fma(x, walk, cn, w, a, p0, p1, first);
                   else
                     floatBlockAvx512(x, walk, cn, w, a, p0, p1, first);
                   break;
                 case SimdPath::Avx2:
                   if (fma)
                     floatBlockAvx2Fma(x, walk, cn, w, a, p0, p1, first);
                   else
                     floatBlockAvx2(x, walk, cn, w, a, p0, p1, first);
                   break;
#endif
                 default:
                   floatBlockPortable(x, walk, cn, w, a, p0, p1, first);
                   break;
                 }
               });
  return {acc, walk.bufLen, walk.rowW};
}

/// The integer weights as convIntFast reads them for `path`: per block of
/// NB channels, [pair][tap][NB] of (w_even, w_odd) int16 halves over the
/// planes of the walk (element k = plane * taps + tap of a channel is
/// weight [ic][tap] k); a missing odd plane and
/// the channels past oc have weight 0. load(oc, k0, count, dst) writes
/// weights k0 .. k0 + count - 1 of channel oc's wPerOc weights w - zp,
/// [ic][tap], to dst as int32 and returns false if one does not fit int16
/// (then the result is null: the pair kernels cannot run). load runs on
/// the kernel threads.
template <typename Load>
const int32_t *packIntWeights(const ConvGeom &g, SimdPath path, Load load) {
  TileShape ts = tileShape(path);
  ConvWalk walk = convWalk(g, ts.ox);
  size_t nTaps = walk.taps.size();
  uint32_t pairs = uint32_t(ceilDiv(walk.chans, 2));
  size_t wPerOc = size_t(walk.chans) * nTaps;
  size_t wLen = size_t(pairs) * nTaps * ts.nb;
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  int32_t *packed = scratch<int32_t, 2>(size_t(blocks) * wLen);
  // Pairs per chunk: the chunk's 2 * nTaps weights per pair fit kPackChunk
  // (at least one pair: a wider kernel takes a larger row buffer).
  uint32_t chunkPairs = uint32_t(std::max<size_t>(1, kPackChunk / (2 * nTaps)));
  size_t rowLen = std::max(kPackChunk, 2 * nTaps);
  std::atomic<bool> fits{true};
  parallelTasks(blocks, [&](int64_t blk) {
    uint32_t oc0 = uint32_t(blk) * ts.nb;
    unsigned nb = std::min<unsigned>(ts.nb, g.oc - oc0);
    int32_t *w = packed + size_t(blk) * wLen;
    int32_t *rows = scratch<int32_t, 6>(size_t(ts.nb) * rowLen);
    uint32_t *pairRows = scratch<uint32_t, 9>(size_t(ts.nb) * rowLen);
    bool blockFits = true;
    for (uint32_t p0 = 0; p0 < pairs; p0 += chunkPairs) {
      uint32_t np = std::min(chunkPairs, pairs - p0);
      size_t k0 = size_t(p0) * 2 * nTaps;
      size_t count = std::min(size_t(np) * 2 * nTaps, wPerOc - k0);
      size_t outCount = size_t(np) * nTaps;
      for (unsigned b = 0; b < nb; ++b) {
        int32_t *row = rows + b * rowLen;
        if (!load(oc0 + b, k0, count, row))
          blockFits = false;
        // A lone last plane pairs with zeros.
        std::fill(row + count, row + size_t(np) * 2 * nTaps, 0);
        uint32_t *dst = pairRows + b * rowLen;
        if (nTaps == 1) {
          // 1x1 kernels: the pairs are neighbours (a loop the compiler
          // vectorises; the general one runs one tap at a time).
          for (uint32_t c2 = 0; c2 < np; ++c2)
            dst[c2] = uint32_t(uint16_t(int16_t(row[2 * c2]))) |
                      uint32_t(uint16_t(int16_t(row[2 * c2 + 1]))) << 16;
          continue;
        }
        for (uint32_t c2 = 0; c2 < np; ++c2) {
          const int32_t *even = row + size_t(2 * c2) * nTaps;
          for (size_t t = 0; t < nTaps; ++t) {
            uint32_t lo = uint16_t(int16_t(even[t]));
            uint32_t hi = uint16_t(int16_t(even[t + nTaps]));
            dst[size_t(c2) * nTaps + t] = lo | hi << 16;
          }
        }
      }
      interleaveRows(pairRows, rowLen, ts.nb, nb, outCount,
                     reinterpret_cast<uint32_t *>(w) + k0 / 2 * ts.nb);
    }
    if (!blockFits)
      fits = false;
  });
  return fits ? packed : nullptr;
}

#if TPUSIM_X86_PATHS
/// dst[(q * taps + t) * 4 + j] = src[(4 * q + j) * taps + t] for q < quads:
/// four planes' taps to the tap-major quads of packQuadWeights. TAPS: the
/// tap count as a constant (0: `taps` at run time).
template <unsigned TAPS>
void transposeQuads(const uint8_t *src, uint8_t *dst, uint32_t quads,
                    size_t taps) {
  const size_t n = TAPS ? TAPS : taps;
  for (uint32_t q = 0; q < quads; ++q, src += 4 * n, dst += 4 * n)
    for (size_t t = 0; t < n; ++t)
      for (unsigned j = 0; j < 4; ++j)
        dst[t * 4 + j] = src[j * n + t];
}

/// The sum of n int8 values (SSE2, which every x86-64 has: the bytes
/// flipped to unsigned, x + 128, summed by psadbw against zero, less
/// 128 * n).
int64_t sumInt8(const uint8_t *v, size_t n) {
  const __m128i flip = _mm_set1_epi8(char(0x80)), zero = _mm_setzero_si128();
  __m128i acc = zero;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i x = _mm_xor_si128(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(v + i)), flip);
    acc = _mm_add_epi64(acc, _mm_sad_epu8(x, zero));
  }
  int64_t sum = _mm_cvtsi128_si64(acc) +
                _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)) -
                128 * int64_t(i);
  for (; i < n; ++i)
    sum += int8_t(v[i]);
  return sum;
}

/// Where a channel's weights lie when they are int8 with no zero point (the
/// symmetric weights of INT8 models): `slotOf(oc)` is the start of channel
/// oc's slot in local memory (null: use load), its weight (ic, tap) at
/// (ic / icp) * taps * icp + tap * icp + ic % icp (semantics.md "CONV");
/// `inOrder`: that is offset ic * taps + tap (1x1 kernels); `offsets`: the
/// offset of weight k = ic * taps + tap. Such channels skip load: on the
/// direct walk with icp a multiple of 4, each quad's four channels at one
/// tap are one 32-bit word of the slot; otherwise the bytes are gathered in
/// [ic][tap] order and transposed to quads.
struct QuadSlots {
  std::function<const uint8_t *(uint32_t)> slotOf;
  bool inOrder = false;
  uint32_t icp = 0;
  const uint64_t *offsets = nullptr;
};
/// The 8-bit weights as convQuadVnni reads them: per block of 8 channels,
/// [quad][tap][8] int32 of four int8 (byte j: plane 4 * quad + j of the
/// walk, as packIntWeights'; a missing plane and the
/// channels past oc are 0). load is packIntWeights'. `offset`: the input is
/// signed and the tile reads it as x + 128, which adds 128 * sum(w) to each
/// sum, so init[oc] (one per channel, blocks one after another) is
/// -128 * sum(w) modulo 2^32, else 0. Null (nothing to run on) if a weight
/// w - zp does not fit int8. AMX: the layout of the AMX tiles instead
/// (amxWeightWords: per block of 32 channels [step][tap][32][16] words),
/// for inputs without offset (`offset` false). `blockWords`: where to
/// store the words of one block (the blocks' stride).
template <bool AMX, typename Load>
const int32_t *packQuadWeights(const ConvGeom &g, bool offset, Load load,
                               const QuadSlots &slots, const int32_t **initOut,
                               size_t *blockWords = nullptr) {
  TileShape ts = AMX ? kAmxTile : kQuadTile;
  ConvWalk walk = convWalk(g, ts.ox);
  size_t nTaps = walk.taps.size();
  uint32_t quads = uint32_t(ceilDiv(walk.chans, 4));
  size_t wPerOc = size_t(walk.chans) * nTaps;
  size_t wLen =
      AMX ? amxWeightWords(quads, nTaps) : size_t(quads) * nTaps * ts.nb;
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  int32_t *packed = scratch<int32_t, 14>(size_t(blocks) * wLen);
  int32_t *init = scratch<int32_t, 15>(size_t(blocks) * ts.nb);
  if (blockWords)
    *blockWords = wLen;
  // Quads per chunk: their 4 * nTaps weights fit kPackChunk (at least one;
  // for AMX whole K steps, at least one).
  uint32_t chunkQuads = uint32_t(std::max<size_t>(1, kPackChunk / (4 * nTaps)));
  if (AMX)
    chunkQuads = std::max(kAmxQuads, chunkQuads / kAmxQuads * kAmxQuads);
  size_t rowLen = std::max(kPackChunk, size_t(chunkQuads) * 4 * nTaps);
  std::atomic<bool> fits{true};
  parallelTasks(blocks, [&](int64_t blk) {
    uint32_t oc0 = uint32_t(blk) * ts.nb;
    unsigned nb = std::min<unsigned>(ts.nb, g.oc - oc0);
    uint32_t *w = reinterpret_cast<uint32_t *>(packed + size_t(blk) * wLen);
    int32_t *rows = scratch<int32_t, 6>(size_t(ts.nb) * rowLen);
    uint32_t *quadRows = scratch<uint32_t, 9>(size_t(ts.nb) * rowLen);
    uint32_t sums[AMX ? kAmxTile.nb : kQuadTile.nb] = {};
    bool blockFits = true;
    // The AMX layout has room for quads and channels that do not exist:
    // zero weights (the planes there are zero too).
    if (AMX && (nb < ts.nb || quads % kAmxQuads))
      std::fill_n(w, wLen, 0u);
    for (uint32_t q0 = 0; q0 < quads; q0 += chunkQuads) {
      uint32_t nq = std::min(chunkQuads, quads - q0);
      size_t k0 = size_t(q0) * 4 * nTaps;
      size_t count = std::min(size_t(nq) * 4 * nTaps, wPerOc - k0);
      size_t outCount = size_t(nq) * nTaps;
      for (unsigned b = 0; b < nb; ++b) {
        const uint8_t *slot = slots.slotOf ? slots.slotOf(oc0 + b) : nullptr;
        uint32_t *dst = quadRows + b * rowLen;
        auto *bytes = reinterpret_cast<uint8_t *>(dst);
        size_t len = size_t(nq) * 4 * nTaps;
        if (slot && !slots.inOrder && slots.icp % 4 == 0) {
          // A quad's four channels at one tap are one word of the slot; a
          // last quad short of channels keeps its real ones' bytes.
          uint32_t perGroup = slots.icp / 4;
          for (uint32_t c4 = 0; c4 < nq; ++c4) {
            uint32_t q = q0 + c4;
            const uint8_t *at = slot +
                                size_t(q / perGroup) * nTaps * slots.icp +
                                size_t(q % perGroup) * 4;
            for (size_t t = 0; t < nTaps; ++t)
              std::memcpy(dst + size_t(c4) * nTaps + t, at + t * slots.icp, 4);
          }
          if (uint32_t real = g.ic - 4 * (q0 + nq - 1); real < 4)
            for (size_t t = 0; t < nTaps; ++t)
              dst[size_t(nq - 1) * nTaps + t] &= (1u << (8 * real)) - 1;
        } else {
          // Weights k0 .. k0 + count - 1 as bytes in [ic][tap] order (from
          // the slot, or through load: checked against int8, then narrowed
          // in place, each int32 read before its bytes are overwritten),
          // then zeros; four planes' taps to tap-major quads.
          auto *row = reinterpret_cast<uint8_t *>(rows + b * rowLen);
          uint8_t *ordered = nTaps == 1 ? bytes : row;
          if (slot && slots.inOrder) {
            std::memcpy(ordered, slot + k0, count);
          } else if (slot) {
            for (size_t k = 0; k < count; ++k)
              ordered[k] = slot[slots.offsets[k0 + k]];
          } else {
            const int32_t *wide = rows + b * rowLen;
            if (!load(oc0 + b, k0, count, rows + b * rowLen))
              blockFits = false;
            auto [lo, hi] = std::minmax_element(wide, wide + count);
            if (count && (*lo < std::numeric_limits<int8_t>::min() ||
                          *hi > std::numeric_limits<int8_t>::max()))
              blockFits = false;
            for (size_t k = 0; k < count; ++k)
              ordered[k] = uint8_t(wide[k]);
          }
          std::fill(ordered + count, ordered + len, uint8_t(0));
          if (nTaps == 9)
            transposeQuads<9>(ordered, bytes, nq, 9);
          else if (nTaps != 1)
            transposeQuads<0>(ordered, bytes, nq, nTaps);
        }
        if (offset)
          sums[b] += uint32_t(sumInt8(bytes, len));
      }
      if constexpr (AMX) {
        // Words (quads s * 16 .. s * 16 + 15 of the chunk, tap t) of
        // channel b to row b of A tile (step, t): one run of 16 words with
        // one tap, else every nTaps-th word.
        for (unsigned b = 0; b < nb; ++b) {
          const uint32_t *row = quadRows + b * rowLen;
          for (uint32_t s = 0; s * kAmxQuads < nq; ++s) {
            uint32_t n = std::min(kAmxQuads, nq - s * kAmxQuads);
            uint32_t *step =
                w + (size_t(q0 / kAmxQuads) + s) * nTaps * kAmxStepWords +
                b * kAmxQuads;
            const uint32_t *from = row + size_t(s) * kAmxQuads * nTaps;
            if (nTaps == 1) {
              std::memcpy(step, from, n * sizeof(uint32_t));
              continue;
            }
            for (size_t t = 0; t < nTaps; ++t)
              for (uint32_t j = 0; j < n; ++j)
                step[t * kAmxStepWords + j] = from[j * nTaps + t];
          }
        }
      } else {
        interleaveRows(quadRows, rowLen, ts.nb, nb, outCount,
                       w + size_t(q0) * nTaps * ts.nb);
      }
    }
    for (unsigned b = 0; b < ts.nb; ++b)
      init[size_t(blk) * ts.nb + b] = offset ? int32_t(0u - 128u * sums[b]) : 0;
    if (!blockFits)
      fits = false;
  });
  *initOut = init;
  return fits ? packed : nullptr;
}

/// The 8-bit conv of one batch on the AVX-512 VNNI path: planes as channel
/// quads ([ic / 4][vh * vw + kTileOverrun][4] bytes, offset to unsigned),
/// weights and starting sums from packQuadWeights; the sums are int32 bits
/// (those of convIntFast).
ConvAcc<uint32_t> convQuadVnni(const uint8_t *planes, const int32_t *packed,
                               const int32_t *init, const ConvGeom &g) {
  TileShape ts = kQuadTile;
  ConvWalk walk = interleavedWalk<4>(g, ts.ox, planes);
  size_t nTaps = walk.taps.size();
  uint32_t quads = uint32_t(ceilDiv(walk.chans, 4));
  size_t wLen = size_t(quads) * nTaps * ts.nb;
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  uint32_t *acc = scratch<uint32_t, 3>(size_t(blocks) * ts.nb * walk.bufLen);
  ConvOrder o = convOrder(walk, quads, ts, blocks);
  runConvOrder(o, quads, blocks, walk.bufLen,
               [&](uint32_t c0, uint32_t cn, int64_t blk, size_t p0, size_t p1,
                   bool first) {
                 quadBlockVnni(
                     planes + size_t(c0) * 4 * walk.planeStride, walk, cn,
                     packed + size_t(blk) * wLen + size_t(c0) * nTaps * ts.nb,
                     init + size_t(blk) * ts.nb,
                     acc + size_t(blk) * ts.nb * walk.bufLen, p0, p1, first);
               });
  return {acc, walk.bufLen, walk.rowW};
}
#endif

#if TPUSIM_X86_PATHS
/// The 8-bit conv of one batch on the AMX tiles (amxBlock): planes as
/// convQuadVnni's but not offset (signedX: int8, else uint8), with zero
/// planes up to a multiple of 16 quads; weights per `w`.
ConvAcc<uint32_t> convQuadAmx(const uint8_t *planes, const AmxWeights &w,
                              bool signedX, const ConvGeom &g) {
  TileShape ts = kAmxTile;
  ConvWalk walk = interleavedWalk<4>(g, ts.ox, planes, kAmxQuads);
  size_t nTaps = walk.taps.size();
  uint32_t quads = uint32_t(ceilDiv(walk.chans, 4));
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  uint32_t *acc = scratch<uint32_t, 3>(size_t(blocks) * ts.nb * walk.bufLen);
  ConvOrder o = convOrder(walk, quads, ts, blocks);
  // Chunks of whole K steps.
  o.kc = uint32_t(std::min<size_t>(alignUp(o.kc, kAmxQuads), quads));
  runConvOrder(o, quads, blocks, walk.bufLen,
               [&](uint32_t c0, uint32_t cn, int64_t blk, size_t p0, size_t p1,
                   bool first) {
                 const uint8_t *x = planes + size_t(c0) * 4 * walk.planeStride;
                 const uint8_t *a =
                     w.blockBase[size_t(blk)] +
                     size_t(c0 / kAmxQuads) * nTaps * w.stepStride;
                 uint32_t *out = acc + size_t(blk) * ts.nb * walk.bufLen;
                 if (signedX)
                   amxBlock<true>(x, walk, cn, a, w.rowStride, w.stepStride,
                                  out, p0, p1, first);
                 else
                   amxBlock<false>(x, walk, cn, a, w.rowStride, w.stepStride,
                                   out, p0, p1, first);
               });
  return {acc, walk.bufLen, walk.rowW};
}
#endif

/// The integer conv (operands of at most 8 bits) of one batch: planes
/// interleaved by channel pairs ([ic / 2][vh * vw + kTileOverrun][2]),
/// weights from packIntWeights for the current SIMD path; the sums are
/// int32 bits.
ConvAcc<uint32_t> convIntFast(const int16_t *planes, const int32_t *packed,
                              const ConvGeom &g) {
  SimdPath path = simdPath();
  TileShape ts = tileShape(path);
  ConvWalk walk = interleavedWalk<2>(g, ts.ox, planes);
  size_t nTaps = walk.taps.size();
  uint32_t pairs = uint32_t(ceilDiv(walk.chans, 2));
  size_t wLen = size_t(pairs) * nTaps * ts.nb;
  int64_t blocks = int64_t(ceilDiv(g.oc, ts.nb));
  uint32_t *acc = scratch<uint32_t, 3>(size_t(blocks) * ts.nb * walk.bufLen);
  ConvOrder o = convOrder(walk, pairs, ts, blocks);
  runConvOrder(o, pairs, blocks, walk.bufLen,
               [&](uint32_t c0, uint32_t cn, int64_t blk, size_t p0, size_t p1,
                   bool first) {
                 // Pair c0 starts 2 * c0 planes in.
                 const int16_t *x = planes + size_t(c0) * 2 * walk.planeStride;
                 const int32_t *w =
                     packed + size_t(blk) * wLen + size_t(c0) * nTaps * ts.nb;
                 uint32_t *a = acc + size_t(blk) * ts.nb * walk.bufLen;
                 switch (vectorBuild(path)) {
#if TPUSIM_X86_PATHS
                 case SimdPath::Avx512:
                   intBlockAvx512(x, walk, cn, w, a, p0, p1, first);
                   break;
                 case SimdPath::Avx2:
                   intBlockAvx2(x, walk, cn, w, a, p0, p1, first);
                   break;
#endif
                 default:
                   intBlockPortable(x, walk, cn, w, a, p0, p1, first);
                   break;
                 }
               });
  return {acc, walk.bufLen, walk.rowW};
}

//===----------------------------------------------------------------------===//
// Operand helpers
//===----------------------------------------------------------------------===//

/// (1, C, 1, 1) one value per channel (layout code 2), or an immediate.
struct PerChannel {
  bool isConst = false;
  Immediate imm;
  std::unique_ptr<OperandView> view;

  int64_t getInt(uint32_t c) const {
    return isConst ? imm.asInt() : view->getInt(0, c, 0, 0);
  }
  float getFloat(uint32_t c) const {
    return isConst ? imm.asFloat() : view->getFloat(0, c, 0, 0);
  }
};

PerChannel perChannel(const TiuOp &op, const MachineState &m,
                      const LaneGeometry &geo, bool isConst, uint64_t addr,
                      ElemType type, uint32_t c, const char *what) {
  PerChannel p;
  p.isConst = isConst;
  if (isConst) {
    p.imm = Immediate{type, addr};
    return p;
  }
  LocalTensor t = tiuTensor(op, geo, Opd::Opd2, addr, type, {1, c, 1, 1}, 2);
  p.view = std::make_unique<OperandView>(m, t, what, op);
  return p;
}

/// Pad / insert value pair per input channel (opd3: (1, C, 1, 2), compact)
/// or one immediate used for both (semantics.md "Padding values").
struct PadValues {
  bool isConst = false;
  Immediate imm;
  std::unique_ptr<OperandView> view;

  template <typename T> T pad(uint32_t c, bool asFloat) const {
    if (asFloat)
      return T(isConst ? imm.asFloat() : view->getFloat(0, c, 0, 0));
    return T(isConst ? imm.asInt() : view->getInt(0, c, 0, 0));
  }
  template <typename T> T ins(uint32_t c, bool asFloat) const {
    if (asFloat)
      return T(isConst ? imm.asFloat() : view->getFloat(0, c, 0, 1));
    return T(isConst ? imm.asInt() : view->getInt(0, c, 0, 1));
  }
};

PadValues padValues(const TiuOp &op, const MachineState &m,
                    const LaneGeometry &geo, ElemType type, uint32_t c) {
  PadValues p;
  p.isConst = op.f.opd3_const != 0;
  if (p.isConst) {
    p.imm = Immediate{type, op.f.opd3_addr};
    return p;
  }
  LocalTensor t;
  t.addr = uint32_t(op.f.opd3_addr);
  t.type = type;
  t.shape = {1, c, 1, 2};
  t.stride = {0, 2, 0, 1};
  p.view = std::make_unique<OperandView>(m, t, "pad values (opd3)", op);
  return p;
}

bool isIntPrec(Prec p) { return !isa::isFloat(p); }

/// Converts an int32 accumulator to the integer result precision, with
/// optional ReLU.
int64_t finishInt(int64_t v, bool relu) { return relu && v < 0 ? 0 : v; }

/// int64 value of an exact 128-bit sum, saturated to the int64 range.
int64_t clampToInt64(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max())
    return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min())
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

/// Integer conv with an operand wider than 8 bits: sum of exact products
/// in 128 bits (int32 x int32 products need 64), clamped to int64 once,
/// then bias/shift (wrq), res_add and relu as the int8 path; the store
/// saturates to the result type. `wts` holds w - kzp per [oc][ic][ky][kx].
void convWideInt(const ConvGeom &g, const OperandView &in,
                 const ResultView &out, const std::vector<int64_t> &wts,
                 const PadValues &pads, bool wrq, int64_t wrqBias, int wrqShift,
                 RoundMode mode, bool resAdd, bool relu) {
  size_t kArea = size_t(g.kh) * g.kw;
  size_t wPerOc = size_t(g.ic) * kArea;
  size_t planeSize = size_t(g.vh) * g.vw;
  std::vector<int64_t> planes(size_t(g.ic) * planeSize);
  for (uint32_t n = 0; n < g.n; ++n) {
    for (uint32_t ic = 0; ic < g.ic; ++ic)
      buildPlane<int64_t>(
          g, wrq ? 0 : pads.pad<int64_t>(ic, false),
          wrq ? 0 : pads.ins<int64_t>(ic, false),
          [&](uint32_t y, uint32_t x) { return in.getInt(n, ic, y, x); },
          planes.data() + ic * planeSize);
    for (uint32_t oc = 0; oc < g.oc; ++oc) {
      if (!out.enabled(oc))
        continue;
      const int64_t *w = wts.data() + oc * wPerOc;
      for (uint32_t oy = 0; oy < g.oh; ++oy)
        for (uint32_t ox = 0; ox < g.ow; ++ox) {
          __int128 acc = 0;
          for (uint32_t ic = 0; ic < g.ic; ++ic) {
            const int64_t *x = planes.data() + ic * planeSize +
                               size_t(oy) * g.sh * g.vw + size_t(ox) * g.sw;
            for (uint32_t ky = 0; ky < g.kh; ++ky)
              for (uint32_t kx = 0; kx < g.kw; ++kx)
                acc +=
                    __int128(x[size_t(ky) * g.dh * g.vw + size_t(kx) * g.dw]) *
                    w[ic * kArea + ky * g.kw + kx];
          }
          int64_t v = clampToInt64(acc);
          if (wrq)
            v = isa::rightShiftRound(clampToInt64(__int128(v) + wrqBias),
                                     wrqShift, mode);
          if (resAdd)
            v = clampToInt64(__int128(v) + out.getInt(n, oc, oy, ox));
          out.setInt(n, oc, oy, ox, finishInt(v, relu));
        }
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// CONV
//===----------------------------------------------------------------------===//

void execConv(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  LaneGeometry geo(m.chip);
  Prec inPrec = precOf(op, f.opd0_prec, "opd0_prec");
  Prec wPrec = precOf(op, f.opd1_prec, "opd1_prec");
  Prec resPrec = precOf(op, f.res0_prec, "res0_prec");
  bool isFloatPath = isa::isFloat(inPrec);
  if (op.eu > 2)
    failOp(op, "conv sub-op " + std::to_string(op.eu) + " does not exist");
  if (isFloatPath) {
    if (wPrec != inPrec)
      failOp(op, std::string("float conv needs weights of the input "
                             "precision, got ") +
                     isa::precName(inPrec) + " x " + isa::precName(wPrec));
    if (!isa::isFloat(resPrec))
      failOp(op, std::string("float conv cannot produce ") +
                     isa::precName(resPrec));
    if (op.eu != 0)
      failOp(op, "the wrq variants are integer-only");
  } else {
    if (isa::isFloat(wPrec))
      failOp(op, std::string("integer conv needs integer weights, got ") +
                     isa::precName(inPrec) + " x " + isa::precName(wPrec));
    if (!isIntPrec(resPrec))
      failOp(op, std::string("integer conv cannot produce ") +
                     isa::precName(resPrec));
  }

  // The walk kernels' plane (see convGeom); the int32 fallback below, whose
  // convTile reads whole tiles of each row, takes its own wider geometry.
  ConvGeom g = convGeom(op, uint32_t(f.opd0_c), /*colTile=*/1);
  bool inSigned = f.opd0_sign, wSigned = f.opd1_sign;
  ElemType inType{inPrec, inSigned};
  ElemType wType{wPrec, wSigned};
  bool resSigned = f.opd0_sign || f.opd1_sign || f.opd2_sign;
  ElemType resType{resPrec, resSigned};
  const TiuOp &name = op;

  // Views (each checked once against its lane).
  LocalTensor inT = tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, inType,
                              {g.n, g.ic, g.ih, g.iw}, unsigned(f.opd0_str));
  OperandView in(m, inT, "input (opd0)", name);
  LocalTensor outT = tiuTensor(op, geo, Opd::Res0, f.res0_addr, resType,
                               {g.n, g.oc, g.oh, g.ow}, unsigned(f.res0_str));
  ResultView out(m, outT, "result (res0)", name, tiuLaneMask(op, geo));

  // Weights: per output channel one slot of ceil(ic/P) blocks of
  // [kh][kw][P] (isa/docs/bm1684x.md 3.4), P = IC_PARALLEL of the weight type.
  uint32_t icp = m.chip.icParallel(wPrec);
  size_t kArea = size_t(g.kh) * g.kw;
  uint64_t slotElems = ceilDiv(g.ic, icp) * kArea * icp;
  std::unique_ptr<OperandView> wView;
  if (!f.opd1_const) {
    LocalTensor wT;
    wT.addr = uint32_t(f.opd1_addr);
    wT.type = wType;
    wT.shape = {1, g.oc, 1,
                uint32_t(std::min<uint64_t>(
                    slotElems, std::numeric_limits<uint32_t>::max()))};
    wT.stride = {0, int64_t(slotElems), 0, 1};
    wView = std::make_unique<OperandView>(m, wT, "weights (opd1)", name);
  }
  auto weightIndex = [&](uint32_t ic, uint32_t ky, uint32_t kx) {
    if (f.kernel_rotate) {
      ky = g.kh - 1 - ky;
      kx = g.kw - 1 - kx;
    }
    return uint64_t(ic / icp) * kArea * icp + (uint64_t(ky) * g.kw + kx) * icp +
           ic % icp;
  };
  size_t wPerOc = size_t(g.ic) * kArea;
  // Element offset (from a channel's slot) of every weight, [ic][ky][kx].
  auto weightOffsets = [&] {
    std::vector<uint64_t> off(wPerOc);
    for (uint32_t ic = 0; ic < g.ic; ++ic)
      for (uint32_t ky = 0; ky < g.kh; ++ky)
        for (uint32_t kx = 0; kx < g.kw; ++kx)
          off[ic * kArea + ky * g.kw + kx] = weightIndex(ic, ky, kx);
    return off;
  };
  // Whether weight k sits at offset k of its slot (1x1 kernels: the
  // IC_PARALLEL blocks hold the channels in order), so that runs of them
  // copy as they lie.
  auto inOrder = [](const std::vector<uint64_t> &off) {
    for (size_t k = 0; k < off.size(); ++k)
      if (off[k] != k)
        return false;
    return true;
  };
  size_t planeSize = size_t(g.vh) * g.vw;
  size_t outPlane = size_t(g.oh) * g.ow;
  bool resAdd = f.res_add;
  bool relu = f.relu || op.eu == 2;

  // The weights go straight from local memory to the kernels' packed form
  // (packFloatWeights / packIntWeights), on the kernel threads.
  SimdPath path = simdPath();

  if (isFloatPath) {
    // Each batch runs on the tiles of `path`, fp16 / bf16 operands on the
    // fused ones where fmaExact allows (on the ranges of the weights and of
    // the batch's planes; fp32 products are rounded, so fusing them would
    // change the bits), except that a batch with a NaN operand runs on the
    // portable tiles whatever the path: when two NaNs meet in a sum, the
    // payload that wins depends on the operand order of the add (which the
    // compiler may commute, and does in the AVX2 build) or of the FMA form,
    // so only one build of the tile gives the same bits on every path.
    bool halfOperands = inPrec == Prec::Fp16 || inPrec == Prec::Bf16;
    FloatRange wRange;
    Immediate wImm{wType, f.opd1_addr};
    std::vector<uint64_t> wOff = weightOffsets();
    bool wInOrder = inOrder(wOff);
    auto loadW = [&](uint32_t oc, size_t k0, size_t count, float *dst) {
      if (f.opd1_const) {
        std::fill(dst, dst + count, wImm.asFloat());
        return;
      }
      const uint8_t *base = wView->laneStart(oc);
      uint64_t i0 = uint64_t(wView->index(0, oc, 0, 0));
      const uint64_t *off = wOff.data() + k0;
      if (wType.prec == Prec::Fp16) {
        // The bits in [ic][ky][kx] order, then the vectorised row
        // conversion (the same values as element by element).
        uint16_t bits[kPackChunk];
        const uint8_t *slot = base + i0 * 2;
        if (wInOrder)
          std::memcpy(bits, slot + k0 * 2, count * 2);
        else
          for (size_t k = 0; k < count; ++k)
            std::memcpy(&bits[k], slot + off[k] * 2, 2);
        fp16RowToFp32(bits, dst, count);
        return;
      }
      for (size_t k = 0; k < count; ++k)
        dst[k] = loadFloatFast(base, i0 + off[k], wType);
    };
    // Magnitudes matter for bf16 only (see fmaExact).
    bool bf16 = inPrec == Prec::Bf16;
    const float *packed = nullptr;
#if TPUSIM_X86_PATHS
    // fp16 weights for the AVX-512 tiles: straight from the slots (the
    // same floats as loadW and interleaveChunk give; a NaN weight, rare,
    // sends the whole pack the general way).
    if (wType.prec == Prec::Fp16 && !f.opd1_const && icp % 8 == 0 &&
        tileShape(path).nb == 8 && useF16c()) {
      int64_t blocks = int64_t(ceilDiv(g.oc, 8u));
      float *dst = scratch<float, 2>(size_t(blocks) * wPerOc * 8);
      std::atomic<bool> clean{true};
      parallelTasks(blocks, [&](int64_t blk) {
        uint32_t oc0 = uint32_t(blk) * 8;
        unsigned nb = std::min(8u, g.oc - oc0);
        const uint8_t *slot[8];
        for (unsigned b = 0; b < nb; ++b)
          slot[b] = wView->laneStart(oc0 + b) +
                    uint64_t(wView->index(0, oc0 + b, 0, 0)) * 2;
        if (!packHalfBlock8(slot, nb, g.ic, kArea, wOff.data(),
                            dst + size_t(blk) * wPerOc * 8))
          clean.store(false, std::memory_order_relaxed);
      });
      if (clean.load())
        packed = dst; // wRange: no NaN (fp16 magnitudes are not needed)
    }
#endif
    if (!packed)
      packed = packFloatWeights(g, path, loadW, &wRange, bf16);
    // The weights for the portable tiles, packed at the first NaN batch
    // (when `path` is another).
    const float *portablePacked = path == SimdPath::Portable ? packed : nullptr;
    Prec biasPrec = precOf(op, f.opd2_prec, "opd2_prec");
    if (!isa::isFloat(biasPrec))
      failOp(op, "float conv bias (opd2) must be a float type");
    PerChannel bias = perChannel(op, m, geo, f.opd2_const, f.opd2_addr,
                                 {biasPrec, true}, g.oc, "bias (opd2)");
    PadValues pads = padValues(op, m, geo, inType, g.ic);
    size_t planeStride = planeSize + tileOverrun(g);
    float *planes = scratch<float, 4>(size_t(g.ic) * planeStride);
    // The epilogue reads the bias and its own results (the planes are built
    // before it).
    bool anyOrder = out.elementsApart() &&
                    (!bias.view || channelOrderFree(out, *bias.view));
    std::vector<FloatRange> planeRanges(g.ic);
    // fp16 inputs with contiguous rows convert from local memory directly
    // (halfRowToFloat), whole planes at once where the plane has no
    // columns of padding or inserted values and the rows lie back to back.
    const Stride4 &inStride = in.tensor().stride;
    bool halfRows = inPrec == Prec::Fp16 && inStride.w == 1;
    bool mergedRows = halfRows && g.vw == g.iw && g.insH == 0 &&
                      (g.ih == 1 || inStride.h == int64_t(g.iw));
    for (uint32_t n = 0; n < g.n; ++n) {
      // The planes on the kernel threads: each reads its channel of the
      // input and writes only its own plane of the scratch (and range).
      parallelTasks(g.ic, [&](int64_t c) {
        uint32_t ic = uint32_t(c);
        float *plane = planes + ic * planeStride;
        float pad = pads.pad<float>(ic, true), ins = pads.ins<float>(ic, true);
        planeRanges[ic] = FloatRange();
        if (halfRows) {
          // fp16 rows straight from local memory; the NaN test (all an
          // fp16 range needs) from the conversion and the two fill
          // values, which every plane holds (the overrun is padding) or
          // may hold (inserted values).
          const uint8_t *lane = in.laneStart(ic);
          auto rowAt = [&](uint32_t y) {
            return lane + uint64_t(in.index(n, ic, y, 0)) * 2;
          };
          bool nan = std::isnan(pad) || std::isnan(ins);
          if (mergedRows) {
            // No columns of padding or inserted values: the rows follow
            // one another in the plane as in local memory.
            size_t top = size_t(g.padT) * g.vw, len = size_t(g.ih) * g.iw;
            std::fill(plane, plane + top, pad);
            nan |= halfRowToFloat(rowAt(0), plane + top, len);
            std::fill(plane + top + len, plane + planeStride, pad);
          } else {
            buildPlaneRows<float>(
                g, planeStride, pad, ins,
                [&](uint32_t y, float *dst) {
                  nan |= halfRowToFloat(rowAt(y), dst, g.iw);
                },
                plane, scratch<float, 8>(g.iw));
          }
          planeRanges[ic].nan = nan;
          return;
        }
        buildPlaneRows<float>(
            g, planeStride, pad, ins,
            [&](uint32_t y, float *dst) { in.rowFloat(n, ic, y, dst, g.iw); },
            plane, scratch<float, 8>(g.iw));
        // The whole plane, padding and overrun included: everything a
        // tile reads (a strided conv's phases are copied from here, with
        // zeros where no element maps).
        planeRanges[ic].scan(plane, planeStride, bf16);
      });
      FloatRange xRange;
      for (const FloatRange &r : planeRanges)
        xRange.merge(r);
      ConvAcc<float> acc;
      if (wRange.nan || xRange.nan) {
        if (!portablePacked)
          portablePacked = packFloatWeights<9>(g, SimdPath::Portable, loadW);
        acc = convFloatFast(planes, portablePacked, g, SimdPath::Portable,
                            /*fused=*/false);
      } else {
        acc = convFloatFast(planes, packed, g, path,
                            halfOperands && fmaExact(wRange, xRange));
      }
      // Rows of the sums and of the result that both lie back to back
      // (1x1 convs without padding or stride) are one row of oh * ow.
      const Stride4 &outStride = out.tensor().stride;
      bool oneRow = acc.rowStride == g.ow && outStride.w == 1 &&
                    (g.oh == 1 || outStride.h == int64_t(g.ow));
      uint32_t rows = oneRow ? 1 : g.oh;
      uint32_t len = oneRow ? g.oh * g.ow : g.ow;
      forEachChannel(out, g.oc, anyOrder, [&](uint32_t oc) {
        float b = bias.getFloat(oc);
        const float *a = acc.data + oc * acc.chanStride;
        float *row = scratch<float, 10>(len);
        float *prev = scratch<float, 11>(len);
        for (uint32_t oy = 0; oy < rows; ++oy) {
          for (uint32_t ox = 0; ox < len; ++ox)
            row[ox] = a[size_t(oy) * acc.rowStride + ox] + b;
          if (resAdd) {
            out.rowFloat(n, oc, oy, prev, len);
            for (uint32_t ox = 0; ox < len; ++ox)
              row[ox] = prev[ox] + row[ox];
          }
          // As a select (NaN and -0 kept), which vectorises; the
          // conditional store did not.
          if (relu)
            for (uint32_t ox = 0; ox < len; ++ox)
              row[ox] = row[ox] < 0 ? 0.0f : row[ox];
          out.storeRowFloat(n, oc, oy, row, len);
        }
      });
    }
    return;
  }

  // Integer path.
  RoundMode mode = roundModeOf(op);
  bool wrq = op.eu != 0;
  int64_t wrqBias = 0;
  int wrqShift = 0;
  PerChannel kzp;
  if (wrq) {
    if (!f.opd2_const || !f.opd3_const)
      failOp(op, "conv.wrq needs immediate opd2 (int16 bias) and opd3 "
                 "(uint8 shift)");
    wrqBias = Immediate{{Prec::Int16, bool(f.opd2_sign)}, f.opd2_addr}.asInt();
    wrqShift = int(f.opd3_addr & 0xFF);
  } else {
    // Kernel zero point in opd2_prec (INT8 in the short form, 4.5).
    Prec zpPrec = precOf(op, f.opd2_prec, "opd2_prec");
    if (isa::isFloat(zpPrec))
      failOp(op, std::string("the kernel zero point (opd2) of an integer "
                             "conv must be an integer, got ") +
                     isa::precName(zpPrec));
    kzp = perChannel(op, m, geo, f.opd2_const, f.opd2_addr,
                     {zpPrec, bool(f.opd2_sign)}, g.ic,
                     "kernel zero point (opd2)");
  }
  std::vector<int64_t> zps(g.ic);
  for (uint32_t ic = 0; ic < g.ic; ++ic)
    zps[ic] = wrq ? 0 : kzp.getInt(ic);
  // Operands of at most 8 bits use the int32 accumulator (wrapping, as the
  // documented int8 path); wider operands sum exactly (semantics.md "CONV").
  bool narrow = isa::precBits(inPrec) <= 8 && isa::precBits(wPrec) <= 8;
  Immediate wImm{wType, f.opd1_addr};
  std::vector<uint64_t> wOff = weightOffsets();
  bool wInOrder = inOrder(wOff);
  auto fitsInt16 = [](int64_t v) {
    return v >= std::numeric_limits<int16_t>::min() &&
           v <= std::numeric_limits<int16_t>::max();
  };
  // 8-bit weights in local memory (the common case) take a loop without
  // type dispatch; with zero points within [-32512, 32640] every w - zp
  // fits int16 and is not checked.
  bool byteWeights = !f.opd1_const && wPrec == Prec::Int8;
  bool zpsSafe = std::all_of(zps.begin(), zps.end(), [](int64_t z) {
    return z >= std::numeric_limits<int16_t>::min() + 256 &&
           z <= std::numeric_limits<int16_t>::max() - 127;
  });
  std::vector<int32_t> zpOf; // zps[ic] of weight k
  if (byteWeights && zpsSafe) {
    zpOf.resize(wPerOc);
    for (size_t k = 0; k < wPerOc; ++k)
      zpOf[k] = int32_t(zps[k / kArea]);
  }
  // w - zp of weights k0 .. k0 + count - 1 of channel oc, [ic][tap]; false
  // if one does not fit int16.
  auto loadWeights = [&](uint32_t oc, size_t k0, size_t count, auto *dst) {
    const uint8_t *base = f.opd1_const ? nullptr : wView->laneStart(oc);
    uint64_t i0 = f.opd1_const ? 0 : uint64_t(wView->index(0, oc, 0, 0));
    if (byteWeights && zpsSafe) {
      const uint8_t *p = base + i0;
      const uint64_t *off = wOff.data() + k0;
      const int32_t *zp = zpOf.data() + k0;
      if (wInOrder && wSigned)
        for (size_t k = 0; k < count; ++k)
          dst[k] = int32_t(int8_t(p[k0 + k])) - zp[k];
      else if (wInOrder)
        for (size_t k = 0; k < count; ++k)
          dst[k] = int32_t(p[k0 + k]) - zp[k];
      else if (wSigned)
        for (size_t k = 0; k < count; ++k)
          dst[k] = int32_t(int8_t(p[off[k]])) - zp[k];
      else
        for (size_t k = 0; k < count; ++k)
          dst[k] = int32_t(p[off[k]]) - zp[k];
      return true;
    }
    bool fits = true;
    for (size_t i = 0; i < count; ++i) {
      size_t k = k0 + i;
      int64_t v = (f.opd1_const ? wImm.asInt()
                                : loadIntFast(base, i0 + wOff[k], wType)) -
                  zps[k / kArea];
      fits = fits && fitsInt16(v);
      dst[i] = v;
    }
    return fits;
  };
  // Narrow operands whose weights w - zp all fit int16: the pair kernels
  // (convIntFast); otherwise the general paths below.
  auto loadPacked = [&](uint32_t oc, size_t k0, size_t count, int32_t *dst) {
    return loadWeights(oc, k0, count, dst);
  };
  // 8-bit inputs whose weights w - zp fit int8, on the AVX-512 VNNI path:
  // the quad kernel (convQuadVnni); other narrow operands whose weights fit
  // int16: the pair kernels (convIntFast); otherwise the general paths
  // below.
  bool quadPath = false; // the quad planes and the VNNI or AMX tiles
#if TPUSIM_X86_PATHS
  const int32_t *quadPacked = nullptr, *quadInit = nullptr;
  bool useAmx = false;
  AmxWeights amxW; // the AMX path's weights
  if (narrow && inPrec == Prec::Int8 &&
      (path == SimdPath::Avx512Vnni || path == SimdPath::Amx)) {
    QuadSlots slots;
    if (byteWeights && wSigned && !f.kernel_rotate &&
        std::all_of(zps.begin(), zps.end(), [](int64_t z) { return z == 0; })) {
      slots.slotOf = [&](uint32_t oc) {
        return wView->laneStart(oc) + uint64_t(wView->index(0, oc, 0, 0));
      };
      slots.inOrder = wInOrder;
      slots.icp = icp;
      slots.offsets = wOff.data();
    }
    useAmx = path == SimdPath::Amx;
    int64_t amxBlocks = int64_t(ceilDiv(g.oc, kAmxTile.nb));
    if (useAmx && slots.slotOf && icp == 4 * kAmxQuads &&
        m.chip.npuNum >= kAmxTile.nb) {
      // The A tiles straight from the slots (a slot is [ic / 64][tap][64
      // bytes]; a row is 64 of them, the next channel's one lane on) where
      // each block's 32 channels, with those past oc (whose sums are
      // dropped), lie in consecutive lanes at one slot offset. Bytes of
      // channels past ic meet zero planes.
      const uint8_t *lane0 = m.lmem.at(0, 0, 0);
      size_t laneStride = size_t(m.lmem.at(1, 0, 0) - lane0);
      amxW.rowStride = laneStride;
      amxW.stepStride = icp;
      for (int64_t b = 0; b < amxBlocks; ++b) {
        const uint8_t *first = slots.slotOf(uint32_t(b) * kAmxTile.nb);
        size_t lane = size_t(first - lane0) / laneStride;
        if (lane + kAmxTile.nb > m.chip.npuNum) {
          amxW.blockBase.clear();
          break;
        }
        amxW.blockBase.push_back(first);
      }
    }
    if (!amxW.blockBase.empty()) {
      quadPath = true;
    } else if (useAmx) {
      size_t blockWords = 0;
      quadPacked = packQuadWeights<true>(g, /*offset=*/false, loadPacked, slots,
                                         &quadInit, &blockWords);
      if (quadPacked) {
        amxW.rowStride = kAmxQuads * sizeof(int32_t);
        amxW.stepStride = kAmxStepWords * sizeof(int32_t);
        for (int64_t b = 0; b < amxBlocks; ++b)
          amxW.blockBase.push_back(reinterpret_cast<const uint8_t *>(
              quadPacked + size_t(b) * blockWords));
      }
    } else {
      quadPacked =
          packQuadWeights<false>(g, inSigned, loadPacked, slots, &quadInit);
    }
    quadPath = quadPath || quadPacked;
  }
#endif
  const int32_t *packed =
      narrow && !quadPath ? packIntWeights(g, path, loadPacked) : nullptr;
  std::vector<int64_t> wts;
  if (!packed && !quadPath) {
    wts.resize(size_t(g.oc) * wPerOc);
    for (uint32_t oc = 0; oc < g.oc; ++oc)
      loadWeights(oc, 0, wPerOc, wts.data() + oc * wPerOc);
  }
  PadValues pads;
  if (!wrq)
    pads = padValues(op, m, geo, inType, g.ic);
  if (!narrow) {
    convWideInt(g, in, out, wts, pads, wrq, wrqBias, wrqShift, mode, resAdd,
                relu);
    return;
  }
  // Sums stored as they are (int32 results in contiguous rows, no shift,
  // res_add or relu: the usual INT8 conv, whose bias and requantisation
  // follow as AR and RQ commands) are copied row by row.
  const LocalTensor &ot = out.tensor();
  const bool rawInt32 = !wrq && !resAdd && !relu &&
                        ot.type.prec == Prec::Int32 && ot.type.isSigned &&
                        ot.stride.w == 1;
  // The epilogue of one batch: int32 sums to results.
  // The epilogue reads only the sums and its own results.
  auto finish = [&](uint32_t n, ConvAcc<uint32_t> acc) {
    forEachChannel(out, g.oc, out.elementsApart(), [&](uint32_t oc) {
      const uint32_t *a = acc.data + oc * acc.chanStride;
      if (rawInt32) {
        for (uint32_t oy = 0; oy < g.oh; ++oy) {
          const uint32_t *src = a + size_t(oy) * acc.rowStride;
          uint8_t *dst = out.laneStart(oc) +
                         uint64_t(out.index(n, oc, oy, 0)) * sizeof(uint32_t);
          std::memcpy(dst, src, size_t(g.ow) * sizeof(uint32_t));
        }
        return;
      }
      int64_t *row = scratch<int64_t, 10>(g.ow);
      int64_t *prev = scratch<int64_t, 11>(g.ow);
      for (uint32_t oy = 0; oy < g.oh; ++oy) {
        for (uint32_t ox = 0; ox < g.ow; ++ox) {
          int64_t v = int32_t(a[size_t(oy) * acc.rowStride + ox]);
          if (wrq)
            v = isa::rightShiftRound(v + wrqBias, wrqShift, mode);
          row[ox] = v;
        }
        if (resAdd) {
          out.rowInt(n, oc, oy, prev, g.ow);
          for (uint32_t ox = 0; ox < g.ow; ++ox)
            row[ox] += prev[ox];
        }
        for (uint32_t ox = 0; ox < g.ow; ++ox)
          row[ox] = finishInt(row[ox], relu);
        out.storeRowInt(n, oc, oy, row, g.ow, /*wrap=*/false);
      }
    });
  };
  // Input plane ic of batch n as T (vh x vw, then the overrun as padding):
  // pad and insert values and elements through conv (int64 to T). 8-bit
  // rows that lie contiguous (the usual case) are read as bytes, without the
  // int64 row.
  auto buildIntPlane = [&](uint32_t n, uint32_t ic, auto *plane,
                           size_t planeStride, auto conv) {
    using T = std::remove_pointer_t<decltype(plane)>;
    T padV = conv(wrq ? 0 : pads.pad<int64_t>(ic, false));
    T insV = conv(wrq ? 0 : pads.ins<int64_t>(ic, false));
    int64_t *rowBuf = scratch<int64_t, 8>(g.iw);
    bool bytes = inPrec == Prec::Int8 && in.tensor().stride.w == 1;
    buildPlaneRows<T>(
        g, planeStride, padV, insV,
        [&](uint32_t y, T *dst) {
          if (bytes) {
            const uint8_t *p =
                in.laneStart(ic) + uint64_t(in.index(n, ic, y, 0));
            // The width in a local: a byte store through dst could alias
            // g, so the loop would reload g.iw every element and stay
            // scalar.
            uint32_t iw = g.iw;
            if (inSigned)
              for (uint32_t x = 0; x < iw; ++x)
                dst[x] = conv(int8_t(p[x]));
            else
              for (uint32_t x = 0; x < iw; ++x)
                dst[x] = conv(p[x]);
            return;
          }
          in.rowInt(n, ic, y, rowBuf, g.iw);
          for (uint32_t x = 0; x < g.iw; ++x)
            dst[x] = conv(rowBuf[x]);
        },
        plane, scratch<T, 8>(g.iw));
  };
#if TPUSIM_X86_PATHS
  if (quadPath) {
    // The planes as channel quads of bytes; for the VNNI tile the input
    // offset to unsigned (x + 128 when signed, as packQuadWeights' starting
    // sums expect), the AMX tiles take it as it is (int8 or uint8).
    size_t planeStride = planeSize + tileOverrun(g);
    uint32_t quads = uint32_t(ceilDiv(g.ic, 4));
    uint8_t off = inSigned && !useAmx ? 0x80 : 0;
    // Zero planes past the last quad: the AMX tiles read whole K steps (a
    // strided conv's phase copy makes its own).
    uint32_t quadsRoom =
        useAmx && isDirect(g) ? alignUp(quads, kAmxQuads) : quads;
    uint8_t *planes = scratch<uint8_t, 4>(size_t(quadsRoom) * planeStride * 4);
    std::fill(planes + size_t(quads) * planeStride * 4,
              planes + size_t(quadsRoom) * planeStride * 4, uint8_t(0));
    for (uint32_t n = 0; n < g.n; ++n) {
      auto buildPlane = [&](uint32_t ic, uint8_t *plane) {
        buildIntPlane(n, ic, plane, planeStride,
                      [off](int64_t v) { return uint8_t(v + off); });
      };
      parallelTasks(quads, [&](int64_t q) {
        uint8_t *one[4] = {scratch<uint8_t, 16>(planeStride),
                           scratch<uint8_t, 17>(planeStride),
                           scratch<uint8_t, 18>(planeStride),
                           scratch<uint8_t, 19>(planeStride)};
        for (uint32_t j = 0; j < 4; ++j) {
          uint32_t ic = uint32_t(q) * 4 + j;
          // Channels missing from a last quad meet weight 0.
          if (ic < g.ic)
            buildPlane(ic, one[j]);
          else
            std::fill_n(one[j], planeStride, uint8_t(0));
        }
        uint8_t *dst = planes + size_t(q) * planeStride * 4;
        size_t i = 0;
        // 16 positions at a time: bytes of planes 0/1 and 2/3 paired, then
        // the pairs paired (SSE2, which every x86-64 has).
        for (; i + 16 <= planeStride; i += 16) {
          auto ld = [&](int j) {
            return _mm_loadu_si128(
                reinterpret_cast<const __m128i *>(one[j] + i));
          };
          __m128i a = ld(0), b = ld(1), c = ld(2), d = ld(3);
          __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
          __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
          auto st = [&](size_t at, __m128i v) {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + 4 * i + at), v);
          };
          st(0, _mm_unpacklo_epi16(ab0, cd0));
          st(16, _mm_unpackhi_epi16(ab0, cd0));
          st(32, _mm_unpacklo_epi16(ab1, cd1));
          st(48, _mm_unpackhi_epi16(ab1, cd1));
        }
        for (; i < planeStride; ++i) {
          dst[4 * i] = one[0][i];
          dst[4 * i + 1] = one[1][i];
          dst[4 * i + 2] = one[2][i];
          dst[4 * i + 3] = one[3][i];
        }
      });
      finish(n, useAmx ? convQuadAmx(planes, amxW, inSigned, g)
                       : convQuadVnni(planes, quadPacked, quadInit, g));
    }
    return;
  }
#endif
  if (packed) {
    // Every operand fits int16: the pair kernels (convIntFast).
    size_t planeStride = planeSize + tileOverrun(g);
    uint32_t pairs = uint32_t(ceilDiv(g.ic, 2));
    int16_t *planes = scratch<int16_t, 4>(size_t(pairs) * planeStride * 2);
    for (uint32_t n = 0; n < g.n; ++n) {
      // The planes on the kernel threads, a channel pair per task: each
      // plane is built contiguous (the rows straight into it), then the
      // pair is interleaved into its own elements of the scratch (strided
      // 2-byte stores while building cost more than the build).
      auto buildPlane = [&](uint32_t ic, int16_t *plane) {
        buildIntPlane(n, ic, plane, planeStride,
                      [](int64_t v) { return int16_t(v); });
      };
      parallelTasks(pairs, [&](int64_t pr) {
        uint32_t ic = uint32_t(pr) * 2;
        int16_t *even = scratch<int16_t, 12>(planeStride);
        int16_t *odd = scratch<int16_t, 13>(planeStride);
        buildPlane(ic, even);
        // A lone last channel pairs with zeros (they meet weight 0).
        if (ic + 1 < g.ic)
          buildPlane(ic + 1, odd);
        else
          std::fill_n(odd, planeStride, int16_t(0));
        int16_t *dst = planes + size_t(pr) * planeStride * 2;
        for (size_t i = 0; i < planeStride; ++i) {
          dst[2 * i] = even[i];
          dst[2 * i + 1] = odd[i];
        }
      });
      finish(n, convIntFast(planes, packed, g));
    }
    return;
  }
  std::vector<uint32_t> wts32(wts.size());
  for (size_t i = 0; i < wts.size(); ++i)
    wts32[i] = uint32_t(wts[i]);
  // Same weights and outputs; only the plane is wider (convTile).
  ConvGeom gTile = convGeom(op, uint32_t(f.opd0_c));
  size_t tilePlaneSize = size_t(gTile.vh) * gTile.vw;
  std::vector<uint32_t> planes(size_t(gTile.ic) * tilePlaneSize);
  for (uint32_t n = 0; n < g.n; ++n) {
    for (uint32_t ic = 0; ic < g.ic; ++ic) {
      uint32_t padV = wrq ? 0 : uint32_t(pads.pad<int64_t>(ic, false));
      uint32_t insV = wrq ? 0 : uint32_t(pads.ins<int64_t>(ic, false));
      buildPlane<uint32_t>(
          gTile, padV, insV,
          [&](uint32_t y, uint32_t x) {
            return uint32_t(in.getInt(n, ic, y, x));
          },
          planes.data() + ic * tilePlaneSize);
    }
    uint32_t *acc = scratch<uint32_t, 5>(size_t(g.oc) * outPlane);
    convPlanes<uint32_t>(planes.data(), wts32.data(), acc, gTile);
    finish(n, {acc, outPlane, g.ow});
  }
}

//===----------------------------------------------------------------------===//
// PorD: depthwise and pooling
//===----------------------------------------------------------------------===//

namespace {

constexpr unsigned kEuDepthwise = 0, kEuAvgPool = 1, kEuDepthwiseRelu = 2,
                   kEuMaxPool = 4, kEuRoiDepthwise = 5, kEuRoiAvgPool = 6,
                   kEuRoiMaxPool = 7;

/// One ROI box: int16 [x0, y0, x1, y1] (semantics.md "PorD", ROI variants).
struct RoiBox {
  int64_t x0, y0, x1, y1;
};
constexpr uint32_t kRoiWords = 4;

/// Input and result precisions of a PorD command, checked: both float or
/// both integer, integer input int8 or int16.
std::pair<Prec, Prec> porDPrecs(const TiuOp &op) {
  Prec inPrec = precOf(op, op.f.opd0_prec, "opd0_prec");
  Prec resPrec = precOf(op, op.f.res0_prec, "res0_prec");
  bool isFloatPath = isa::isFloat(inPrec);
  if (isFloatPath != isa::isFloat(resPrec))
    failOp(op, std::string("cannot produce ") + isa::precName(resPrec) +
                   " from " + isa::precName(inPrec));
  if (!isFloatPath && (inPrec == Prec::Int4 || inPrec == Prec::Int32))
    failOp(op, std::string("integer input must be int8 or int16, got ") +
                   isa::precName(inPrec));
  return {inPrec, resPrec};
}

/// The signed right shift of the integer PorD paths: the low byte of
/// res1_addr.
int porDShift(const TiuOp &op) {
  return int(int8_t(uint8_t(op.f.res1_addr & 0xFF)));
}

/// Depthwise weights: (1, C, kh, kw) compact in opd1, or the immediate
/// opd1 when opd1_const; kernel_rotate flips the window.
class DepthwiseWeights {
public:
  /// Reads nothing unless `depthwise` (pooling uses opd1 otherwise).
  DepthwiseWeights(const TiuOp &op, const MachineState &m,
                   const LaneGeometry &geo, bool depthwise, uint32_t c,
                   uint32_t kh, uint32_t kw)
      : f_(op.f), kh_(kh), kw_(kw),
        type_{precOf(op, op.f.opd1_prec, "opd1_prec"), bool(op.f.opd1_sign)},
        imm_{type_, op.f.opd1_addr} {
    if (depthwise && !f_.opd1_const) {
      LocalTensor wT =
          tiuTensor(op, geo, Opd::Opd1, f_.opd1_addr, type_, {1, c, kh, kw}, 1);
      view_ = std::make_unique<OperandView>(m, wT, "weights (opd1)", op);
    }
  }

  /// The immediate opd1 (also the pooling scale / multiplier).
  const Immediate &imm() const { return imm_; }
  /// The weights in local memory (null for an immediate or pooling).
  const OperandView *view() const { return view_.get(); }

  /// The kh * kw taps of channel `c` in window order, converted to T.
  template <typename T> void taps(uint32_t c, T *out) const {
    for (uint32_t ky = 0; ky < kh_; ++ky)
      for (uint32_t kx = 0; kx < kw_; ++kx)
        out[ky * kw_ + kx] = T(get(c, ky, kx));
  }

private:
  double get(uint32_t c, uint32_t ky, uint32_t kx) const {
    if (f_.kernel_rotate) {
      ky = kh_ - 1 - ky;
      kx = kw_ - 1 - kx;
    }
    if (f_.opd1_const)
      return isa::isFloat(type_.prec) ? imm_.asFloat() : double(imm_.asInt());
    return view_->get(0, c, ky, kx);
  }

  const isa::cmd::TiuLong &f_;
  uint32_t kh_, kw_;
  ElemType type_;
  Immediate imm_;
  std::unique_ptr<OperandView> view_;
};

/// One window tap of pooling / depthwise: the running maximum, the
/// weighted sum or the plain sum, in the order the taps come.
template <typename T>
inline void poolTap(T &acc, T v, T weight, bool maxPool, bool depthwise) {
  if (maxPool)
    acc = std::max(acc, v);
  else if (depthwise)
    acc = acc + v * weight;
  else
    acc = acc + v;
}

/// ROI depthwise / average / max pooling (eu 5, 6, 7). Output (n, c, 0, b)
/// pools the kh x kw window whose top-left corner is box b's (x0, y0);
/// window positions right of x1, below y1 or outside the input read the
/// out-of-range value (immediate opd2, else 0). Stride, dilation,
/// insertion and padding fields are not used.
void execPorDRoi(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  LaneGeometry geo(m.chip);
  auto [inPrec, resPrec] = porDPrecs(op);
  bool isFloatPath = isa::isFloat(inPrec);
  uint32_t n = uint32_t(f.res0_n), c = uint32_t(f.res0_c);
  uint32_t ih = uint32_t(f.opd0_h), iw = uint32_t(f.opd0_w);
  uint32_t boxes = uint32_t(f.res0_w);
  uint32_t kh = uint32_t(f.opd1_h), kw = uint32_t(f.opd1_w);
  if (n == 0 || c == 0 || ih == 0 || iw == 0 || boxes == 0 || kh == 0 ||
      kw == 0)
    failOp(op, "a dimension is zero (n " + std::to_string(n) + ", c " +
                   std::to_string(c) + ", ih " + std::to_string(ih) + ", iw " +
                   std::to_string(iw) + ", boxes (res0_w) " +
                   std::to_string(boxes) + ", kh " + std::to_string(kh) +
                   ", kw " + std::to_string(kw) + ")");
  if (f.res0_h != 1)
    failOp(op, "ROI results are one row of res0_w boxes: res0_h must be 1, "
               "got " +
                   std::to_string(f.res0_h));
  bool depthwise = op.eu == kEuRoiDepthwise;
  bool maxPool = op.eu == kEuRoiMaxPool;
  ElemType inType{inPrec, bool(f.opd0_sign)};
  ElemType resType{resPrec, bool(f.opd0_sign)};
  const TiuOp &name = op;
  LocalTensor inT = tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, inType,
                              {n, c, ih, iw}, unsigned(f.opd0_str));
  OperandView in(m, inT, "input (opd0)", name);
  LocalTensor outT = tiuTensor(op, geo, Opd::Res0, f.res0_addr, resType,
                               {n, c, 1, boxes}, unsigned(f.res0_str));
  ResultView out(m, outT, "result (res0)", name, tiuLaneMask(op, geo));

  // Boxes (opd3): (1, res0_w, 1, 4) int16, compact (isa/docs/bm1684x.md 4.5).
  LocalTensor boxT;
  boxT.addr = uint32_t(f.opd3_addr);
  boxT.type = {Prec::Int16, true};
  boxT.shape = {1, boxes, 1, kRoiWords};
  boxT.stride = {0, kRoiWords, 0, 1};
  OperandView boxView(m, boxT, "ROI boxes (opd3)", name);
  std::vector<RoiBox> box(boxes);
  for (uint32_t b = 0; b < boxes; ++b)
    box[b] = {boxView.getInt(0, b, 0, 0), boxView.getInt(0, b, 0, 1),
              boxView.getInt(0, b, 0, 2), boxView.getInt(0, b, 0, 3)};

  DepthwiseWeights weights(op, m, geo, depthwise, c, kh, kw);
  Immediate except{inType, f.opd2_const ? f.opd2_addr : 0};
  size_t kArea = size_t(kh) * kw;
  // The window of box b as input coordinates, or -1 where it reads the
  // out-of-range value.
  std::vector<int64_t> at(kArea);
  auto window = [&](const RoiBox &bx) {
    for (uint32_t ky = 0; ky < kh; ++ky)
      for (uint32_t kx = 0; kx < kw; ++kx) {
        int64_t y = bx.y0 + ky, x = bx.x0 + kx;
        bool inside = y <= bx.y1 && x <= bx.x1 && y >= 0 && x >= 0 &&
                      y < int64_t(ih) && x < int64_t(iw);
        at[ky * kw + kx] = inside ? y * iw + x : -1;
      }
  };

  // The pooling both paths share, in T = float or int64_t: `lowest` starts
  // a max pool, `exceptV` is the out-of-range value, `read` loads an input
  // element and `store` finishes and writes acc as (nn, ch, 0, b).
  auto poolBoxes = [&](auto lowest, auto exceptV, auto read, auto store) {
    using T = decltype(lowest);
    std::vector<T> w(kArea);
    for (uint32_t b = 0; b < boxes; ++b) {
      window(box[b]);
      for (uint32_t ch = 0; ch < c; ++ch) {
        if (!out.enabled(ch))
          continue;
        if (depthwise)
          weights.taps(ch, w.data());
        for (uint32_t nn = 0; nn < n; ++nn) {
          T acc = maxPool ? lowest : T(0);
          for (size_t k = 0; k < kArea; ++k) {
            T v = at[k] < 0 ? exceptV
                            : read(nn, ch, uint32_t(at[k] / iw),
                                   uint32_t(at[k] % iw));
            poolTap(acc, v, w[k], maxPool, depthwise);
          }
          store(nn, ch, b, acc);
        }
      }
    }
  };

  if (isFloatPath) {
    float exceptV = except.asFloat();
    // Average scale: immediate fp32 in opd1 when opd1_const, else
    // 1 / (kh * kw) rounded to fp32 (as plain average pooling).
    float avgScale = f.opd1_const && !depthwise
                         ? isa::bitsToFloat(uint32_t(f.opd1_addr))
                         : 1.0f / float(kArea);
    poolBoxes(
        -std::numeric_limits<float>::infinity(), exceptV,
        [&](uint32_t nn, uint32_t ch, uint32_t y, uint32_t x) {
          return in.getFloat(nn, ch, y, x);
        },
        [&](uint32_t nn, uint32_t ch, uint32_t b, float acc) {
          if (op.eu == kEuRoiAvgPool)
            acc = acc * avgScale;
          out.setFloat(nn, ch, 0, b, acc);
        });
    return;
  }

  RoundMode mode = roundModeOf(op);
  int shift = porDShift(op);
  int64_t exceptV = except.asInt();
  int64_t avgMul = f.opd1_const && !depthwise ? weights.imm().asInt() : 1;
  poolBoxes(
      std::numeric_limits<int64_t>::min(), exceptV,
      [&](uint32_t nn, uint32_t ch, uint32_t y, uint32_t x) {
        return in.getInt(nn, ch, y, x);
      },
      [&](uint32_t nn, uint32_t ch, uint32_t b, int64_t acc) {
        if (!maxPool) {
          if (!depthwise)
            acc *= avgMul;
          acc = isa::rightShiftRound(acc, shift, mode);
        }
        out.setInt(nn, ch, 0, b, acc);
      });
}

} // namespace

void execPorD(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  if (op.eu == kEuRoiDepthwise || op.eu == kEuRoiAvgPool ||
      op.eu == kEuRoiMaxPool)
    return execPorDRoi(op, m);
  if (op.eu != kEuDepthwise && op.eu != kEuAvgPool &&
      op.eu != kEuDepthwiseRelu && op.eu != kEuMaxPool)
    failOp(op, "PorD sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  auto [inPrec, resPrec] = porDPrecs(op);
  bool isFloatPath = isa::isFloat(inPrec);
  bool depthwise = op.eu == kEuDepthwise || op.eu == kEuDepthwiseRelu;
  ConvGeom g = convGeom(op, uint32_t(f.res0_c));
  ElemType inType{inPrec, bool(f.opd0_sign)};
  // Depthwise+relu results are unsigned unless int32 (isa/docs/bm1684x.md 4.5).
  bool resSigned =
      op.eu == kEuDepthwiseRelu ? resPrec == Prec::Int32 : bool(f.opd0_sign);
  ElemType resType{resPrec, resSigned};
  const TiuOp &name = op;
  LocalTensor inT = tiuTensor(op, geo, Opd::Opd0, f.opd0_addr, inType,
                              {g.n, g.ic, g.ih, g.iw}, unsigned(f.opd0_str));
  OperandView in(m, inT, "input (opd0)", name);
  LocalTensor outT = tiuTensor(op, geo, Opd::Res0, f.res0_addr, resType,
                               {g.n, g.oc, g.oh, g.ow}, unsigned(f.res0_str));
  ResultView out(m, outT, "result (res0)", name, tiuLaneMask(op, geo));
  PadValues pads = padValues(op, m, geo, inType, g.ic);
  RoundMode mode = roundModeOf(op);
  int shift = porDShift(op);
  size_t kArea = size_t(g.kh) * g.kw;
  size_t planeSize = size_t(g.vh) * g.vw;

  DepthwiseWeights weights(op, m, geo, depthwise, g.oc, g.kh, g.kw);
  PerChannel bias;
  if (depthwise)
    bias = perChannel(op, m, geo, f.opd2_const, f.opd2_addr,
                      {precOf(op, f.opd2_prec, "opd2_prec"), bool(f.opd2_sign)},
                      g.oc, "bias (opd2)");

  // Channels on the kernel threads when no operand the channel loop reads
  // (input, weights, bias, pad values) can tell the order
  // (semantics.md "Conventions"), in (n, c) order otherwise.
  auto orderFree = [&](const OperandView *v) {
    return !v || channelOrderFree(out, *v);
  };
  bool anyOrder = channelOrderFree(out, in) && orderFree(weights.view()) &&
                  orderFree(bias.view.get()) && orderFree(pads.view.get());

  // The pooling both paths share, in T = float or int64_t: `lowest` starts
  // a max pool, `readRow` loads an input row (as getFloat / getInt would,
  // element by element), `biasOf` gives channel c's bias and `store`
  // finishes and writes acc as (n, c, oy, ox).
  auto poolPlanes = [&](auto lowest, auto readRow, auto biasOf, auto store) {
    using T = decltype(lowest);
    constexpr bool isFloat = std::is_same_v<T, float>;
    auto channel = [&](uint32_t n, uint32_t c, T *plane, T *w, T *rowBuf) {
      buildPlaneRows<T>(
          g, planeSize, pads.pad<T>(c, isFloat), pads.ins<T>(c, isFloat),
          [&](uint32_t y, T *dst) { readRow(n, c, y, dst); }, plane, rowBuf);
      if (depthwise)
        weights.taps(c, w);
      T b = depthwise ? biasOf(c) : T(0);
      // A row of outputs at a time, tap by tap across the row (a loop the
      // compiler vectorises, its branches in poolTap the same for the whole
      // row); each output still takes its taps in (ky, kx) order.
      bool isMax = op.eu == kEuMaxPool;
      uint32_t ow = g.ow;
      size_t sw = g.sw;
      T *acc = scratch<T, 33>(ow);
      for (uint32_t oy = 0; oy < g.oh; ++oy) {
        std::fill(acc, acc + ow, isMax ? lowest : T(0));
        const T *row = plane + size_t(oy) * g.sh * g.vw;
        for (uint32_t ky = 0; ky < g.kh; ++ky)
          for (uint32_t kx = 0; kx < g.kw; ++kx) {
            const T *x = row + size_t(ky) * g.dh * g.vw + size_t(kx) * g.dw;
            T wt = depthwise ? w[ky * g.kw + kx] : T(0);
            for (uint32_t ox = 0; ox < ow; ++ox)
              poolTap(acc[ox], x[ox * sw], wt, isMax, depthwise);
          }
        for (uint32_t ox = 0; ox < ow; ++ox)
          store(n, c, oy, ox, acc[ox], b);
      }
    };
    if (anyOrder) {
      forEachChannel(out, g.oc, true, [&](uint32_t c) {
        T *plane = scratch<T, 30>(planeSize), *w = scratch<T, 31>(kArea),
          *rowBuf = scratch<T, 32>(g.iw);
        for (uint32_t n = 0; n < g.n; ++n)
          channel(n, c, plane, w, rowBuf);
      });
      return;
    }
    std::vector<T> plane(planeSize), w(kArea), rowBuf(g.iw);
    for (uint32_t n = 0; n < g.n; ++n)
      for (uint32_t c = 0; c < g.oc; ++c)
        if (out.enabled(c))
          channel(n, c, plane.data(), w.data(), rowBuf.data());
  };

  if (isFloatPath) {
    // Average pooling scale: immediate fp32 in opd1 when opd1_const, else
    // 1 / (kh * kw) rounded to fp32.
    float avgScale = f.opd1_const && !depthwise
                         ? isa::bitsToFloat(uint32_t(f.opd1_addr))
                         : 1.0f / float(kArea);
    poolPlanes(
        -std::numeric_limits<float>::infinity(),
        [&](uint32_t n, uint32_t c, uint32_t y, float *dst) {
          in.rowFloat(n, c, y, dst, g.iw);
        },
        [&](uint32_t c) { return bias.getFloat(c); },
        [&](uint32_t n, uint32_t c, uint32_t oy, uint32_t ox, float acc,
            float b) {
          if (depthwise)
            acc = acc + b;
          else if (op.eu == kEuAvgPool)
            acc = acc * avgScale;
          if (op.eu == kEuDepthwiseRelu && acc < 0)
            acc = 0;
          out.setFloat(n, c, oy, ox, acc);
        });
    return;
  }

  // Integer average pooling: multiplier immediate in opd1 when opd1_const,
  // else 1 (a sum pool), then the shift.
  int64_t avgMul = f.opd1_const && !depthwise ? weights.imm().asInt() : 1;
  poolPlanes(
      std::numeric_limits<int64_t>::min(),
      [&](uint32_t n, uint32_t c, uint32_t y, int64_t *dst) {
        in.rowInt(n, c, y, dst, g.iw);
      },
      [&](uint32_t c) { return bias.getInt(c); },
      [&](uint32_t n, uint32_t c, uint32_t oy, uint32_t ox, int64_t acc,
          int64_t b) {
        if (op.eu != kEuMaxPool) {
          if (depthwise)
            acc += b;
          else
            acc *= avgMul;
          acc = isa::rightShiftRound(acc, shift, mode);
        }
        out.setInt(n, c, oy, ox, finishInt(acc, op.eu == kEuDepthwiseRelu));
      });
}

//===----------------------------------------------------------------------===//
// MM (matrix(w) layout) and MM2 (matrix2 layout)
//===----------------------------------------------------------------------===//

namespace {

/// A rows x cols row-major copy of at(r, c) in the gemm's element type:
/// fp32, or the integer's two's-complement bits (the uint32 gemm wraps).
template <typename T, typename At>
std::vector<T> denseMatrix(uint32_t rows, uint32_t cols, At at) {
  std::vector<T> v(size_t(rows) * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      double x = at(r, c);
      if constexpr (std::is_same_v<T, float>)
        v[size_t(r) * cols + c] = float(x);
      else
        v[size_t(r) * cols + c] = uint32_t(int64_t(x));
    }
  return v;
}

/// y[m][j] = sum over k ascending of a[m][k] * b[k][j] (documented order).
template <typename T>
inline __attribute__((always_inline)) void
gemmImpl(const T *a, const T *b, T *y, uint32_t mRows, uint32_t kDim,
         uint32_t nCols) {
  for (uint32_t i = 0; i < mRows; ++i) {
    T *yr = y + size_t(i) * nCols;
    std::fill(yr, yr + nCols, T(0));
    for (uint32_t k = 0; k < kDim; ++k) {
      T av = a[size_t(i) * kDim + k];
      const T *br = b + size_t(k) * nCols;
      for (uint32_t j = 0; j < nCols; ++j)
        yr[j] = yr[j] + av * br[j];
    }
  }
}

TPUSIM_HOT void gemm(const float *a, const float *b, float *y, uint32_t mRows,
                     uint32_t kDim, uint32_t nCols) {
  gemmImpl(a, b, y, mRows, kDim, nCols);
}

TPUSIM_HOT void gemm(const uint32_t *a, const uint32_t *b, uint32_t *y,
                     uint32_t mRows, uint32_t kDim, uint32_t nCols) {
  gemmImpl(a, b, y, mRows, kDim, nCols);
}

/// y[i][j0 + w] += a[i][k] * row[w] for every row i and w < count (the
/// step of gemmRight; the same expression as gemmImpl's).
template <typename T>
inline __attribute__((always_inline)) void
axpyBlockImpl(const T *a, const T *row, T *y, uint32_t mRows, uint32_t kDim,
              uint32_t nCols, uint32_t k, uint32_t j0, uint32_t count) {
  for (uint32_t i = 0; i < mRows; ++i) {
    T av = a[size_t(i) * kDim + k];
    T *yr = y + size_t(i) * nCols + j0;
    for (uint32_t w = 0; w < count; ++w)
      yr[w] = yr[w] + av * row[w];
  }
}
TPUSIM_HOT void axpyBlock(const float *a, const float *row, float *y,
                          uint32_t mRows, uint32_t kDim, uint32_t nCols,
                          uint32_t k, uint32_t j0, uint32_t count) {
  axpyBlockImpl(a, row, y, mRows, kDim, nCols, k, j0, count);
}
TPUSIM_HOT void axpyBlock(const uint32_t *a, const uint32_t *row, uint32_t *y,
                          uint32_t mRows, uint32_t kDim, uint32_t nCols,
                          uint32_t k, uint32_t j0, uint32_t count) {
  axpyBlockImpl(a, row, y, mRows, kDim, nCols, k, j0, count);
}

/// An element reader of a matrix operand: immediate or view.
struct MatrixReader {
  bool isConst = false;
  Immediate imm;
  std::unique_ptr<OperandView> view;
  uint32_t blockW = 1; ///< matrix(w) block width; 0 = matrix2 layout.

  double get(uint32_t r, uint32_t k) const {
    if (isConst)
      return isa::isFloat(imm.type.prec) ? double(imm.asFloat())
                                         : double(imm.asInt());
    if (blockW == 0)
      return view->get(0, r, 0, k);
    return view->get(r, k / blockW, 0, k % blockW);
  }

  /// The rows x cols matrix as denseMatrix(rows, cols, get) gives it, a
  /// row of a block at a time for a matrix(w) view (one type dispatch per
  /// block row rather than per element; the same values: rowFloat converts
  /// as loadFloat, rowInt as loadInt, and get is their double).
  template <typename T>
  std::vector<T> dense(uint32_t rows, uint32_t cols) const {
    if (isConst || blockW == 0)
      return denseMatrix<T>(rows, cols,
                            [&](uint32_t r, uint32_t k) { return get(r, k); });
    std::vector<T> v(size_t(rows) * cols);
    std::vector<int64_t> ints(std::is_same_v<T, float> ? 0 : blockW);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t k0 = 0; k0 < cols; k0 += blockW) {
        uint32_t count = std::min(blockW, cols - k0);
        T *dst = v.data() + size_t(r) * cols + k0;
        if constexpr (std::is_same_v<T, float>) {
          view->rowFloat(r, k0 / blockW, 0, dst, count);
        } else {
          view->rowInt(r, k0 / blockW, 0, ints.data(), count);
          for (uint32_t i = 0; i < count; ++i)
            dst[i] = uint32_t(ints[i]);
        }
      }
    return v;
  }
};

/// y = a * b as gemm computes it (y[i][j] sums a[i][k] * b[k][j] over k
/// ascending, from zero, each product rounded before its add) with the
/// right matrix read from its view where it lies: a matrix(w) view goes a
/// block row (one lane's blockW columns of one k) at a time into the sums
/// of those columns, without a dense copy of b (the FC of a classifier
/// has megabytes of it); the loops run over k outside, so each sum still
/// takes its products in ascending k.
template <typename T>
void gemmRight(const T *a, const MatrixReader &b, T *y, uint32_t mRows,
               uint32_t kDim, uint32_t nCols) {
  if (b.isConst || b.blockW == 0) {
    std::vector<T> bv = b.dense<T>(kDim, nCols);
    gemm(a, bv.data(), y, mRows, kDim, nCols);
    return;
  }
  uint32_t bw = b.blockW;
  const OperandView &v = *b.view;
  // 8-bit integer rows are read in place (a classifier's FC reads millions
  // of them, a few bytes each, where a converting call per row costs more
  // than its products).
  Prec bp = v.type().prec;
  bool bytes =
      !std::is_same_v<T, float> && v.tensor().stride.w == 1 && bp == Prec::Int8;
  bool bSigned = v.type().isSigned;
  std::fill(y, y + size_t(mRows) * nCols, T(0));
  // A block of columns per task: each writes only its own columns of y,
  // and each sum takes its products in ascending k on any thread.
  uint32_t blocks = uint32_t(ceilDiv(nCols, bw));
  parallelTasks(blocks, [&](int64_t blk) {
    uint32_t j0 = uint32_t(blk) * bw;
    uint32_t count = std::min(bw, nCols - j0);
    uint32_t c = uint32_t(blk);
    if constexpr (!std::is_same_v<T, float>) {
      if (bytes) {
        // Row k of the block at first + k * (n stride).
        const uint8_t *first = v.laneStart(c) + v.index(0, c, 0, 0);
        int64_t strideK = v.tensor().stride.n;
        for (uint32_t i = 0; i < mRows; ++i) {
          T *yr = y + size_t(i) * nCols + j0;
          const T *ar = a + size_t(i) * kDim;
          const uint8_t *p = first;
          for (uint32_t k = 0; k < kDim; ++k, p += strideK) {
            T av = ar[k];
            if (bSigned)
              for (uint32_t w = 0; w < count; ++w)
                yr[w] += av * uint32_t(int32_t(int8_t(p[w])));
            else
              for (uint32_t w = 0; w < count; ++w)
                yr[w] += av * uint32_t(p[w]);
          }
        }
        return;
      }
    }
    T *row = scratch<T, 41>(bw);
    int64_t *ints =
        std::is_same_v<T, float> ? nullptr : scratch<int64_t, 41>(bw);
    for (uint32_t k = 0; k < kDim; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        v.rowFloat(k, c, 0, row, count);
      } else {
        v.rowInt(k, c, 0, ints, count);
        for (uint32_t w = 0; w < count; ++w)
          row[w] = uint32_t(ints[w]);
      }
      axpyBlock(a, row, y, mRows, kDim, nCols, k, j0, count);
    }
  });
}

MatrixReader matrixW(const TiuOp &op, const MachineState &m,
                     const LaneGeometry &geo, Opd which, bool isConst,
                     uint64_t addr, ElemType type, uint32_t rows, uint32_t cols,
                     uint32_t w, unsigned str, const char *what) {
  MatrixReader r;
  r.isConst = isConst;
  r.blockW = w;
  if (isConst) {
    r.imm = Immediate{type, addr};
    return r;
  }
  if (w == 0)
    failOp(op, std::string(what) + " has block width 0");
  Shape4 s{rows, uint32_t(ceilDiv(cols, w)), 1, w};
  LocalTensor t = tiuTensor(op, geo, which, addr, type, s, str);
  r.view = std::make_unique<OperandView>(m, t, what, op);
  return r;
}

MatrixReader matrix2(const TiuOp &op, const MachineState &m,
                     const LaneGeometry &geo, Opd which, bool isConst,
                     uint64_t addr, ElemType type, uint32_t rows, uint32_t cols,
                     const char *what) {
  MatrixReader r;
  r.isConst = isConst;
  r.blockW = 0;
  if (isConst) {
    r.imm = Immediate{type, addr};
    return r;
  }
  LocalTensor t = tiuTensor(op, geo, which, addr, type, {1, rows, 1, cols}, 0);
  r.view = std::make_unique<OperandView>(m, t, what, op);
  return r;
}

/// Validates operand precisions of a matrix multiply.
void checkMatmulTypes(const TiuOp &op, Prec a, Prec b, Prec res) {
  bool fa = isa::isFloat(a);
  if (fa != isa::isFloat(b) || (fa && a != b))
    failOp(op, std::string("operands must have one float type or both be "
                           "integers, got ") +
                   isa::precName(a) + " x " + isa::precName(b));
  if (fa != isa::isFloat(res))
    failOp(op, std::string("cannot produce ") + isa::precName(res) + " from " +
                   isa::precName(a));
  if (!fa && (a != Prec::Int8 && a != Prec::Int16))
    failOp(op, std::string("integer matmul supports int8/int16, got ") +
                   isa::precName(a));
}

} // namespace

void execMM(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  if (op.eu < 1 || op.eu > 3)
    failOp(op, "MM sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Prec aPrec = precOf(op, f.opd0_prec, "opd0_prec");
  Prec bPrec = precOf(op, f.opd1_prec, "opd1_prec");
  Prec resPrec = precOf(op, f.res0_prec, "res0_prec");
  checkMatmulTypes(op, aPrec, bPrec, resPrec);
  bool isFloatPath = isa::isFloat(aPrec);
  bool wrq = op.eu != 1;
  if (wrq && isFloatPath)
    failOp(op, "the wrq variants are integer-only");

  uint32_t storedRows = uint32_t(f.opd0_n);
  if (f.opd0_c == 0)
    failOp(op, "opd0_c (lane columns of the left matrix) is zero");
  uint32_t storedCols = uint32_t(f.opd0_w * (f.opd0_c - 1) + f.opd1_w);
  uint32_t mRows = f.left_tran ? storedCols : storedRows;
  uint32_t kDim = f.left_tran ? storedRows : storedCols;
  uint32_t nCols = uint32_t(f.res0_c * f.res0_w);
  if (mRows == 0 || kDim == 0 || nCols == 0)
    failOp(op, "empty matrix (M " + std::to_string(mRows) + ", K " +
                   std::to_string(kDim) + ", N " + std::to_string(nCols) + ")");
  uint32_t resW = uint32_t(f.res0_w);
  MatrixReader a =
      matrixW(op, m, geo, Opd::Opd0, f.opd0_const, f.opd0_addr,
              {aPrec, bool(f.opd0_sign)}, storedRows, storedCols,
              uint32_t(f.opd0_w), unsigned(f.opd0_str), "left matrix (opd0)");
  MatrixReader b = matrixW(op, m, geo, Opd::Opd1, f.opd1_const, f.opd1_addr,
                           {bPrec, bool(f.opd1_sign)}, kDim, nCols, resW,
                           unsigned(f.opd1_str), "right matrix (opd1)");
  ElemType resType{resPrec, true};
  LocalTensor outT =
      tiuTensor(op, geo, Opd::Res0, f.res0_addr, resType,
                {mRows, uint32_t(f.res0_c), 1, resW}, unsigned(f.res0_str));
  ResultView out(m, outT, "result (res0)", name, tiuLaneMask(op, geo));
  auto aAt = [&](uint32_t i, uint32_t k) {
    return f.left_tran ? a.get(k, i) : a.get(i, k);
  };

  if (isFloatPath) {
    std::vector<float> av = f.left_tran ? denseMatrix<float>(mRows, kDim, aAt)
                                        : a.dense<float>(mRows, kDim);
    float *yv = scratch<float, 40>(size_t(mRows) * nCols);
    gemmRight(av.data(), b, yv, mRows, kDim, nCols);
    Prec biasPrec = precOf(op, f.opd2_prec, "opd2_prec");
    MatrixReader bias = matrixW(op, m, geo, Opd::Opd2, f.opd2_const,
                                f.opd2_addr, {biasPrec, true}, 1, nCols, resW,
                                unsigned(f.opd2_str), "bias (opd2)");
    for (uint32_t j = 0; j < nCols; ++j) {
      if (!out.enabled(j / resW))
        continue;
      float bj = float(bias.get(0, j));
      for (uint32_t i = 0; i < mRows; ++i) {
        float v = yv[size_t(i) * nCols + j] + bj;
        if (f.res_add)
          v = out.getFloat(i, j / resW, 0, j % resW) + v;
        if (f.relu && v < 0)
          v = 0;
        out.setFloat(i, j / resW, 0, j % resW, v);
      }
    }
    return;
  }

  std::vector<uint32_t> av = f.left_tran
                                 ? denseMatrix<uint32_t>(mRows, kDim, aAt)
                                 : a.dense<uint32_t>(mRows, kDim);
  uint32_t *yv = scratch<uint32_t, 40>(size_t(mRows) * nCols);
  gemmRight(av.data(), b, yv, mRows, kDim, nCols);
  RoundMode mode = roundModeOf(op);
  // mm.normal: opd2 = per-column int8 right shift; wrq: opd2 = per-column
  // int16 bias, opd3_addr = right shift (semantics.md "Matrix multiply").
  Prec p2 = wrq ? Prec::Int16 : Prec::Int8;
  MatrixReader p2r =
      matrixW(op, m, geo, Opd::Opd2, f.opd2_const, f.opd2_addr,
              {p2, bool(f.opd2_sign) || !wrq}, 1, nCols, resW,
              unsigned(f.opd2_str), wrq ? "bias (opd2)" : "shift (opd2)");
  int wrqShift = int(f.opd3_addr & 0xFF);
  bool relu = f.relu || op.eu == 3;
  for (uint32_t j = 0; j < nCols; ++j) {
    if (!out.enabled(j / resW))
      continue;
    int64_t p = int64_t(p2r.get(0, j));
    for (uint32_t i = 0; i < mRows; ++i) {
      int64_t v = int32_t(yv[size_t(i) * nCols + j]);
      if (f.res_add)
        v += out.getInt(i, j / resW, 0, j % resW);
      v = wrq ? isa::rightShiftRound(v + p, wrqShift, mode)
              : isa::rightShiftRound(v, int(p), mode);
      out.setInt(i, j / resW, 0, j % resW, finishInt(v, relu));
    }
  }
}

void execMM2(const TiuOp &op, MachineState &m) {
  const isa::cmd::TiuLong &f = op.f;
  constexpr unsigned kNN = 4, kNT = 5, kTT = 6;
  if (op.eu != kNN && op.eu != kNT && op.eu != kTT)
    failOp(op, "MM2 sub-op " + std::to_string(op.eu) + " does not exist");
  LaneGeometry geo(m.chip);
  const TiuOp &name = op;
  Prec aPrec = precOf(op, f.opd0_prec, "opd0_prec");
  Prec bPrec = precOf(op, f.opd1_prec, "opd1_prec");
  Prec resPrec = precOf(op, f.res0_prec, "res0_prec");
  checkMatmulTypes(op, aPrec, bPrec, resPrec);
  bool isFloatPath = isa::isFloat(aPrec);
  uint32_t mRows = uint32_t(f.res0_c), nCols = uint32_t(f.res0_w);
  uint32_t kDim = op.eu == kNN ? uint32_t(f.opd1_c) : uint32_t(f.opd1_w);
  uint32_t rightStoredRows = op.eu == kNN ? kDim : nCols;
  uint32_t rightStoredCols = op.eu == kNN ? nCols : kDim;
  if (op.eu != kNN && f.opd1_c != nCols)
    failOp(op, "opd1_c (" + std::to_string(f.opd1_c) + ") must equal res0_w (" +
                   std::to_string(nCols) +
                   ") when the right matrix is transposed");
  if (op.eu == kNN && f.opd1_w != nCols)
    failOp(op, "opd1_w (" + std::to_string(f.opd1_w) + ") must equal res0_w (" +
                   std::to_string(nCols) + ")");
  if (mRows == 0 || kDim == 0 || nCols == 0)
    failOp(op, "empty matrix");
  bool leftT = op.eu == kTT;
  MatrixReader a = matrix2(op, m, geo, Opd::Opd0, f.opd0_const, f.opd0_addr,
                           {aPrec, bool(f.opd0_sign)}, leftT ? kDim : mRows,
                           leftT ? mRows : kDim, "left matrix (opd0)");
  MatrixReader b = matrix2(op, m, geo, Opd::Opd1, f.opd1_const, f.opd1_addr,
                           {bPrec, bool(f.opd1_sign)}, rightStoredRows,
                           rightStoredCols, "right matrix (opd1)");
  ElemType resType{resPrec, bool(f.opd0_sign || f.opd1_sign)};
  LocalTensor outT = tiuTensor(op, geo, Opd::Res0, f.res0_addr, resType,
                               {1, mRows, 1, nCols}, 0);
  ResultView out(m, outT, "result (res0)", name, tiuLaneMask(op, geo));
  auto aAt = [&](uint32_t i, uint32_t k) {
    return leftT ? a.get(k, i) : a.get(i, k);
  };
  auto bAt = [&](uint32_t k, uint32_t j) {
    return op.eu == kNN ? b.get(k, j) : b.get(j, k);
  };

  if (isFloatPath) {
    std::vector<float> av = denseMatrix<float>(mRows, kDim, aAt);
    std::vector<float> bv = denseMatrix<float>(kDim, nCols, bAt);
    std::vector<float> yv(size_t(mRows) * nCols);
    gemm(av.data(), bv.data(), yv.data(), mRows, kDim, nCols);
    for (uint32_t i = 0; i < mRows; ++i) {
      if (!out.enabled(i))
        continue;
      for (uint32_t j = 0; j < nCols; ++j) {
        float v = yv[size_t(i) * nCols + j];
        if (f.res_add)
          v = out.getFloat(0, i, 0, j) + v;
        out.setFloat(0, i, 0, j, v);
      }
    }
    return;
  }

  // Integer: right-operand zero point. NN/NT: (1, lanes, 1, N) EU-aligned,
  // each lane holding the per-column vector; TT: (1, M, 1, 1) compact, one
  // per result row (isa/docs/bm1684x.md 4.5 sMM2).
  ElemType zpType{bPrec, bool(f.opd1_sign)};
  std::unique_ptr<OperandView> zpView;
  Immediate zpImm{zpType, f.opd2_addr};
  if (!f.opd2_const) {
    LocalTensor zt = op.eu == kTT
                         ? tiuTensor(op, geo, Opd::Opd2, f.opd2_addr, zpType,
                                     {1, mRows, 1, 1}, 1)
                         : tiuTensor(op, geo, Opd::Opd2, f.opd2_addr, zpType,
                                     {1, geo.lanes, 1, nCols}, 0);
    zpView = std::make_unique<OperandView>(m, zt, "zero point (opd2)", name);
  }
  unsigned resLane = outT.startLane(geo);
  unsigned zpLane = f.opd2_const ? 0 : zpView->tensor().startLane(geo);
  auto zp = [&](uint32_t i, uint32_t j) -> int64_t {
    if (f.opd2_const)
      return zpImm.asInt();
    if (op.eu == kTT)
      return zpView->getInt(0, i, 0, 0);
    uint32_t ch = (resLane + i + geo.lanes - zpLane % geo.lanes) % geo.lanes;
    return zpView->getInt(0, ch, 0, j);
  };
  std::vector<uint32_t> av = denseMatrix<uint32_t>(mRows, kDim, aAt);
  std::vector<uint32_t> bv = denseMatrix<uint32_t>(kDim, nCols, bAt);
  for (uint32_t i = 0; i < mRows; ++i) {
    if (!out.enabled(i))
      continue;
    for (uint32_t j = 0; j < nCols; ++j) {
      uint32_t z = uint32_t(zp(i, j));
      uint32_t acc = 0;
      for (uint32_t k = 0; k < kDim; ++k)
        acc += av[size_t(i) * kDim + k] * (bv[size_t(k) * nCols + j] - z);
      int64_t v = int32_t(acc);
      if (f.res_add)
        v += out.getInt(0, i, 0, j);
      out.setInt(0, i, 0, j, v);
    }
  }
}

} // namespace detail
} // namespace tpu::sim
