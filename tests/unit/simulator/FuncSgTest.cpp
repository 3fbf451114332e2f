//===- FuncSgTest.cpp - SG / SGL gather, scatter and select -------------===//
//
// Every SG/SGL sub-op (tsk 6, eu 0..19) against a plain nested-loop
// reference written from isa/docs/bm1684x.md 4.5 and the decisions of
// simulator/docs/semantics.md "SG / SGL: gather and scatter". Element
// positions come from FuncTestUtil.h's layout formulas, never from the
// simulator's views. Each run pre-fills the result with random bits, so
// elements the op must leave alone are checked too.
//
//===----------------------------------------------------------------------===//

#include "FuncTestUtil.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

using namespace tpu;
using namespace tpu::sim;
using namespace tpu::sim::test;

namespace {

/// One bank of a lane: 256 KiB in 16 banks (isa/docs/bm1684x.md 2).
constexpr uint64_t kBankBytes = kLaneBytes / 16;
/// Operand offsets inside a lane (pe_m's four table copies sit in the upper
/// half, one bank apart).
constexpr uint32_t kA = 0x0000, kB = 0x8000, kR = 0x10000, kR1 = 0x18000,
                   kPem = 0x20000;

const char *const kSgNames[] = {
    "pl_gather_d1coor",    "pl_gather_d2coor",       "pl_gather_rec",
    "pl_scatter_d1coor",   "pl_scatter_d2coor",      "pe_s_gather_d1coor",
    "pe_s_scatter_d1coor", "pe_m_gather_d1coor",     "pe_s_mask_select",
    "pe_s_nonzero",        "pe_s_scatter_pp_d1coor", "pl_gather_perw",
    "pl_scatter_perw",     "pe_s_gather_hzd",        "pe_s_scatter_hzd",
    "pe_s_mask_selhzd",    "pe_s_nonzero_hzd",       "pe_s_gather_line",
    "pe_s_scatter_line",   "pe_s_mask_seline"};

uint64_t maskOf(Prec p) {
  unsigned bits = bytesOf(p) * 8;
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

/// A local tensor and the host copy of its elements, [n][c][h][w].
struct HT {
  Ref r;
  std::vector<uint64_t> v;
  explicit HT(Ref ref) : r(ref), v(size_t(ref.n) * ref.c * ref.h * ref.w) {}
  uint64_t &operator()(uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
    return v[((size_t(n) * r.c + c) * r.h + h) * r.w + w];
  }
  uint64_t operator()(uint32_t n, uint32_t c, uint32_t h, uint32_t w) const {
    return v[((size_t(n) * r.c + c) * r.h + h) * r.w + w];
  }
  template <typename Fn> void forEach(Fn fn) {
    for (uint32_t n = 0; n < r.n; ++n)
      for (uint32_t c = 0; c < r.c; ++c)
        for (uint32_t h = 0; h < r.h; ++h)
          for (uint32_t w = 0; w < r.w; ++w)
            fn(n, c, h, w);
  }
  void store(MachineState &m) {
    forEach([&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
      refSetBits(m, r, n, c, h, w, (*this)(n, c, h, w));
    });
  }
  void load(MachineState &m) {
    forEach([&](uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
      (*this)(n, c, h, w) = refGetBits(m, r, n, c, h, w);
    });
  }
  /// Random bits, stored, then read back (tensors whose channels share
  /// storage keep the last write).
  void randomize(MachineState &m, std::mt19937 &rng) {
    for (auto &x : v)
      x = uint64_t(rng()) & maskOf(r.prec);
    store(m);
    load(m);
  }
};

::testing::AssertionResult sameAs(MachineState &m, const HT &want) {
  HT got(want.r);
  got.load(m);
  for (uint32_t n = 0; n < want.r.n; ++n)
    for (uint32_t c = 0; c < want.r.c; ++c)
      for (uint32_t h = 0; h < want.r.h; ++h)
        for (uint32_t w = 0; w < want.r.w; ++w)
          if (got(n, c, h, w) != want(n, c, h, w))
            return ::testing::AssertionFailure()
                   << "at (" << n << ", " << c << ", " << h << ", " << w
                   << "): got 0x" << std::hex << got(n, c, h, w) << ", want 0x"
                   << want(n, c, h, w);
  return ::testing::AssertionSuccess();
}

/// Line-aligned strides: every row starts on an EU boundary (the "T3"
/// layout of 4.5: h stride = align(w, EU_NUM), c stride = h * h stride).
Ref lineRef(uint32_t addr, Prec p, uint32_t n, uint32_t c, uint32_t h,
            uint32_t w) {
  unsigned start = addr >> kLaneShift;
  int64_t slots = (start + c + kLanes - 1) / kLanes;
  int64_t hs = int64_t(alignUp(w, kEuBytes / bytesOf(p)));
  return {addr, p, n, c, h, w, slots * h * hs, h * hs, hs, 1};
}

/// One line-aligned table per lane shared by all channels of the lane
/// (c and n stride 0; Sophgo's "A_cstride_is0").
Ref perLaneRef(uint32_t addr, Prec p, uint32_t c, uint32_t h, uint32_t w) {
  int64_t hs = int64_t(alignUp(w, kEuBytes / bytesOf(p)));
  return {addr, p, 1, c, h, w, 0, 0, hs, 1};
}

/// The table of the pe_* sub-ops for opd0_str 0 (EU-aligned) or 4.
Ref tableRef(unsigned str, uint32_t addr, Prec p, uint32_t c, uint32_t h,
             uint32_t w) {
  return str == 4 ? perLaneRef(addr, p, c, h, w) : euRef(addr, p, 1, c, h, w);
}

enum class Mode {
  InRange,   ///< every index valid, limit and fill off
  LimitFill, ///< some out of range, limit on, fill on
  LimitKeep, ///< some out of range, limit on, fill off
  Reject,    ///< some out of range, limit off (gathers: fill on)
};

const char *modeName(Mode m) {
  switch (m) {
  case Mode::InRange:
    return "in-range";
  case Mode::LimitFill:
    return "limit+fill";
  case Mode::LimitKeep:
    return "limit";
  default:
    return "no-limit";
  }
}

bool limitOn(Mode m) { return m == Mode::LimitFill || m == Mode::LimitKeep; }
bool fillOn(Mode m) { return m == Mode::LimitFill || m == Mode::Reject; }

/// Index values: uniform in [0, bound), and outside it in a quarter of the
/// cases (just past the end, further, and the all-ones value of the index
/// type) unless the mode is in-range. `force` gives an out-of-range value.
struct IndexPicker {
  std::mt19937 &rng;
  Mode mode;
  Prec type;
  uint64_t operator()(uint64_t bound, bool force = false) {
    if (force || (mode != Mode::InRange && rng() % 4 == 0)) {
      switch (rng() % 3) {
      case 0:
        return bound;
      case 1:
        return bound + 1 + rng() % 4;
      default:
        return maskOf(type);
      }
    }
    return rng() % bound;
  }
};

template <typename Cmd>
void expectRejected(const Cmd &c, MachineState &m, const std::string &name,
                    const std::string &what) {
  try {
    runTiu(c, m);
    ADD_FAILURE() << name << ": accepted, expected an error about " << what;
  } catch (const Error &e) {
    std::string s = e.what();
    EXPECT_NE(s.find(name), std::string::npos) << s;
    EXPECT_NE(s.find(what), std::string::npos) << s;
  }
}

/// Sets the res0 shape fields of an SG or SGL command.
template <typename Cmd>
void setRes0(Cmd &g, uint32_t n, uint32_t c, uint32_t h, uint32_t w) {
  g.res0_n = n;
  g.res0_c = c;
  g.res0_h = h;
  g.res0_w = w;
}

/// Points opd0, opd1 and res0 of an SG or SGL command at the tensors.
template <typename Cmd>
void setAddrs(Cmd &g, const HT &a, const HT &b, const HT &r) {
  g.opd0_addr = a.r.addr;
  g.opd1_addr = b.r.addr;
  g.res0_addr = r.r.addr;
}

/// The res1 count tensor of the packing sub-ops, (n, c, 1, 1) int16
/// compact, pre-filled with random bits.
HT randomCount(MachineState &m, std::mt19937 &rng, unsigned lane, uint32_t n,
               uint32_t c) {
  HT cnt(compactRef(laddr(lane, kR1), Prec::Int16, n, c, 1, 1));
  cnt.randomize(m, rng);
  return cnt;
}

/// Reference of the packing sub-ops: per (n, c), value(n, c, w) for each
/// w < wa with selected(n, c, w), packed into `want` from w = 0 (at most
/// its width), the number selected into wantCnt(n, c, 0, 0).
template <typename Sel, typename Val>
void packRef(HT &want, HT &wantCnt, uint32_t wa, Sel selected, Val value) {
  for (uint32_t n = 0; n < want.r.n; ++n)
    for (uint32_t c = 0; c < want.r.c; ++c) {
      uint32_t k = 0;
      for (uint32_t w = 0; w < wa; ++w)
        if (selected(n, c, w)) {
          if (k < want.r.w)
            want(n, c, 0, k) = value(n, c, w);
          ++k;
        }
      wantCnt(n, c, 0, 0) = k;
    }
}

/// Reference decode of index `v` at position i of a pl_* sub-op: d2coor
/// packs h in the low `cb` bits and w above; perw gives h (w = i); d1coor
/// gives w (h = 0).
std::pair<uint64_t, uint64_t> plCoord(uint64_t v, uint32_t i, bool d2,
                                      bool perw, Prec ip, unsigned cb) {
  if (d2)
    return {v & maskOf(ip), v >> cb};
  if (perw)
    return {v, i};
  return {0, v};
}

isa::cmd::SSG sgCmd(unsigned eu, Prec t, Prec idx, Mode mode,
                    uint32_t fillRaw) {
  isa::cmd::SSG g;
  g.cmd_short = 1;
  g.tsk_typ = 6;
  g.tsk_eu_typ = eu;
  g.res0_prec = g.opd0_prec = uint64_t(t);
  g.opd1_prec = uint64_t(idx);
  g.opd3_const = limitOn(mode);
  g.opd2_const = fillOn(mode);
  g.opd2_addr = fillRaw;
  return g;
}

isa::cmd::SSGL sglCmd(unsigned eu, Prec t, Prec idx, Mode mode,
                      uint32_t fillRaw) {
  isa::cmd::SSGL g;
  g.cmd_short = 1;
  g.tsk_typ = 6;
  g.tsk_eu_typ = eu;
  g.res0_prec = uint64_t(t);
  g.opd1_prec = uint64_t(idx);
  g.opd3_const = limitOn(mode);
  g.opd2_const = fillOn(mode);
  g.opd2_addr = fillRaw;
  return g;
}

std::string trace(unsigned eu, Prec t, Prec idx, Mode mode, unsigned lane,
                  unsigned str = 0) {
  return std::string(kSgNames[eu]) + " data " + std::to_string(unsigned(t)) +
         " index " + std::to_string(unsigned(idx)) + " " + modeName(mode) +
         " lane " + std::to_string(lane) + " opd0_str " + std::to_string(str);
}

const Prec kDataTypes[] = {Prec::Int8, Prec::Fp16, Prec::Fp32};
const Prec kIndexTypes[] = {Prec::Int8, Prec::Int16, Prec::Int32};
const Mode kGatherModes[] = {Mode::InRange, Mode::LimitFill, Mode::LimitKeep,
                             Mode::Reject};
const Mode kScatterModes[] = {Mode::InRange, Mode::LimitKeep, Mode::Reject};
// Lane 62 with 5 channels wraps into lanes 0..2 (channel slot 1).
const unsigned kStartLanes[] = {62, 0};

//===----------------------------------------------------------------------===//
// pl_* gathers and scatters: one index vector shared by all n and c
//===----------------------------------------------------------------------===//

/// eu 0, 1, 11: out[n][c][0][i] = A[n][c][h_i][w_i] with (h_i, w_i) =
/// (0, B[i]) / the pair B[i] (h low half) / (B[i], i).
void runPlGather(MachineState &m, std::mt19937 &rng, unsigned eu, Prec t,
                 Prec ip, Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(eu, t, ip, mode, lane));
  const uint32_t N = 2, C = 5, W = 9;
  bool d2 = eu == 1, perw = eu == 11;
  uint32_t ha = eu == 0 ? 1 : 4, wa = perw ? W : 7;
  HT a(euRef(laddr(lane, kA), t, N, C, ha, wa));
  a.randomize(m, rng);
  unsigned cb = bytesOf(ip) * 8;
  Prec bp = d2 ? (ip == Prec::Int8 ? Prec::Int16 : Prec::Int32) : ip;
  HT b(compactRef(laddr(0, kB), bp, 1, W, 1, 1));
  IndexPicker pick{rng, mode, ip};
  for (uint32_t i = 0; i < W; ++i) {
    bool force = mode == Mode::Reject && i == 3;
    if (d2)
      b(0, i, 0, 0) = pick(ha, force) | (pick(wa) << cb);
    else
      b(0, i, 0, 0) = pick(perw ? ha : wa, force);
  }
  b.store(m);
  HT r(euRef(laddr(lane, kR), t, N, C, 1, W));
  r.randomize(m, rng);
  uint32_t fillRaw = rng();
  auto g = sgCmd(eu, t, ip, mode, fillRaw);
  setRes0(g, N, C, 1, W);
  g.opd0_h = ha;
  g.opd0_w = wa;
  g.opd1_c = W;
  setAddrs(g, a, b, r);
  if (mode == Mode::Reject)
    return expectRejected(g, m, kSgNames[eu], "limit_enable");
  runTiu(g, m);
  HT want = r;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < W; ++i) {
        auto [h, w] = plCoord(b(0, i, 0, 0), i, d2, perw, ip, cb);
        if (h < ha && w < wa)
          want(n, c, 0, i) = a(n, c, uint32_t(h), uint32_t(w));
        else if (fillOn(mode))
          want(n, c, 0, i) = fillRaw & maskOf(t);
      }
  EXPECT_TRUE(sameAs(m, want));
}

/// eu 3, 4, 12: out[n][c][h_i][w_i] = A[n][c][0][i], i < opd0_w, later i
/// win on collisions.
void runPlScatter(MachineState &m, std::mt19937 &rng, unsigned eu, Prec t,
                  Prec ip, Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(eu, t, ip, mode, lane));
  const uint32_t N = 2, C = 5, S = 8;
  bool d2 = eu == 4, perw = eu == 12;
  uint32_t H = eu == 3 ? 1 : 3, W = perw ? S : 5;
  HT a(euRef(laddr(lane, kA), t, N, C, 1, S));
  a.randomize(m, rng);
  unsigned cb = bytesOf(ip) * 8;
  Prec bp = d2 ? (ip == Prec::Int8 ? Prec::Int16 : Prec::Int32) : ip;
  HT b(compactRef(laddr(0, kB), bp, 1, S, 1, 1));
  IndexPicker pick{rng, mode, ip};
  for (uint32_t i = 0; i < S; ++i) {
    bool force = mode == Mode::Reject && i == 5;
    if (d2)
      b(0, i, 0, 0) = pick(H) | (pick(W, force) << cb);
    else
      b(0, i, 0, 0) = pick(perw ? H : W, force);
  }
  b.store(m);
  HT r(euRef(laddr(lane, kR), t, N, C, H, W));
  r.randomize(m, rng);
  auto g = sgCmd(eu, t, ip, mode, 0);
  g.opd2_const = 0; // fill is not defined for scatters
  setRes0(g, N, C, H, W);
  g.opd0_h = 1;
  g.opd0_w = S;
  g.opd1_c = S;
  setAddrs(g, a, b, r);
  if (mode == Mode::Reject)
    return expectRejected(g, m, kSgNames[eu], "limit_enable");
  runTiu(g, m);
  HT want = r;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < S; ++i) {
        auto [h, w] = plCoord(b(0, i, 0, 0), i, d2, perw, ip, cb);
        if (h < H && w < W)
          want(n, c, uint32_t(h), uint32_t(w)) = a(n, c, 0, i);
      }
  EXPECT_TRUE(sameAs(m, want));
}

TEST(FuncSg, PlGatherD1D2PerW) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(601);
  for (unsigned eu : {0u, 1u, 11u})
    for (Prec t : kDataTypes)
      for (Prec ip : kIndexTypes) {
        if (eu == 1 && ip == Prec::Int32)
          continue; // (h, w) pairs of 32-bit coordinates do not exist
        for (Mode mode : kGatherModes)
          for (unsigned lane : kStartLanes)
            runPlGather(m, rng, eu, t, ip, mode, lane);
      }
}

TEST(FuncSg, PlScatterD1D2PerW) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(602);
  for (unsigned eu : {3u, 4u, 12u})
    for (Prec t : kDataTypes)
      for (Prec ip : kIndexTypes) {
        if (eu == 4 && ip == Prec::Int32)
          continue;
        for (Mode mode : kScatterModes)
          for (unsigned lane : kStartLanes)
            runPlScatter(m, rng, eu, t, ip, mode, lane);
      }
}

//===----------------------------------------------------------------------===//
// pl_gather_rec
//===----------------------------------------------------------------------===//

/// out[n][c][y*kw + x][i] = A[n][c][h0 + y][w0 + x] for y < rh, x < rw of
/// record i = (h0, w0, rh, rw); other window positions are masked.
void runPlGatherRec(MachineState &m, std::mt19937 &rng, Prec t, Prec ip,
                    Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(2, t, ip, mode, lane));
  const uint32_t N = 2, C = 5, ha = 5, wa = 6, kh = 2, kw = 3, W = 7;
  HT a(euRef(laddr(lane, kA), t, N, C, ha, wa));
  a.randomize(m, rng);
  HT b(compactRef(laddr(0, kB), ip, 1, W, 1, 4));
  for (uint32_t i = 0; i < W; ++i) {
    uint64_t h0, w0, rh, rw;
    if (mode == Mode::InRange) {
      h0 = rng() % ha;
      w0 = rng() % wa;
      rh = rng() % (std::min<uint64_t>(kh + 1, ha - h0) + 1);
      rw = rng() % (std::min<uint64_t>(kw + 1, wa - w0) + 1);
    } else {
      h0 = rng() % (ha + 1);
      w0 = rng() % (wa + 1);
      rh = rng() % (kh + 2);
      rw = rng() % (kw + 2);
    }
    if (mode == Mode::Reject && i == 2) {
      h0 = ha - 1;
      rh = 2; // row ha is inside the rectangle, outside the data
      rw = 1;
    }
    b(0, i, 0, 0) = h0;
    b(0, i, 0, 1) = w0;
    b(0, i, 0, 2) = rh;
    b(0, i, 0, 3) = rw;
  }
  b.store(m);
  HT r(lineRef(laddr(lane, kR), t, N, C, kh * kw, W));
  r.randomize(m, rng);
  uint32_t fillRaw = rng();
  auto g = sgCmd(2, t, ip, mode, fillRaw);
  setRes0(g, N, C, kh * kw, W);
  g.opd0_h = ha;
  g.opd0_w = wa;
  g.opd1_c = W;
  g.opd3_addr = (kh << 16) | kw;
  setAddrs(g, a, b, r);
  if (mode == Mode::Reject)
    return expectRejected(g, m, "pl_gather_rec", "limit_enable");
  runTiu(g, m);
  HT want = r;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t y = 0; y < kh; ++y)
        for (uint32_t x = 0; x < kw; ++x)
          for (uint32_t i = 0; i < W; ++i) {
            uint64_t h = b(0, i, 0, 0) + y, w = b(0, i, 0, 1) + x;
            bool inRect = y < b(0, i, 0, 2) && x < b(0, i, 0, 3);
            if (inRect && h < ha && w < wa)
              want(n, c, y * kw + x, i) = a(n, c, uint32_t(h), uint32_t(w));
            else if (fillOn(mode))
              want(n, c, y * kw + x, i) = fillRaw & maskOf(t);
          }
  EXPECT_TRUE(sameAs(m, want));
}

TEST(FuncSg, PlGatherRec) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(603);
  for (Prec t : kDataTypes)
    for (Prec ip : kIndexTypes)
      for (Mode mode : kGatherModes)
        for (unsigned lane : kStartLanes)
          runPlGatherRec(m, rng, t, ip, mode, lane);
}

//===----------------------------------------------------------------------===//
// pe_* gathers and scatters: per-element indices, one table per channel
//===----------------------------------------------------------------------===//

/// eu 5, 13: out[n][c][0][w] = T[0][c][k / Wa][k % Wa], k = B[n][c][0][w];
/// eu 7: T has four copies one bank apart, element w reads copy w % 4.
void runPeGather(MachineState &m, std::mt19937 &rng, unsigned eu, unsigned str,
                 Prec t, Prec ip, Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(eu, t, ip, mode, lane, str));
  const uint32_t N = 2, C = 5, W = 10, wa = 7;
  bool multi = eu == 7;
  uint32_t ha = multi ? 1 : 3;
  Ref tr = tableRef(str, laddr(lane, multi ? kPem : kA), t, C, ha, wa);
  if (multi) {
    tr.n = 4;
    tr.ns = int64_t(kBankBytes / bytesOf(t));
  }
  HT a(tr);
  a.randomize(m, rng); // the copies differ: the test sees which one is read
  HT b(euRef(laddr(lane, kB), ip, N, C, 1, W));
  IndexPicker pick{rng, mode, ip};
  b.forEach([&](uint32_t n, uint32_t c, uint32_t, uint32_t w) {
    b(n, c, 0, w) = pick(ha * wa, mode == Mode::Reject && n == 1 && w == 4);
  });
  b.store(m);
  HT r(euRef(laddr(lane, kR), t, N, C, 1, W));
  r.randomize(m, rng);
  uint32_t fillRaw = rng();
  auto g = sgCmd(eu, t, ip, mode, fillRaw);
  g.opd0_str = str;
  setRes0(g, N, C, 1, W);
  g.opd0_h = ha;
  g.opd0_w = wa;
  g.opd1_c = C;
  g.opd1_w = W;
  setAddrs(g, a, b, r);
  if (mode == Mode::Reject)
    return expectRejected(g, m, kSgNames[eu], "limit_enable");
  runTiu(g, m);
  HT want = r;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t w = 0; w < W; ++w) {
        uint64_t k = b(n, c, 0, w);
        if (k < uint64_t(ha) * wa)
          want(n, c, 0, w) =
              a(multi ? w % 4 : 0, c, uint32_t(k / wa), uint32_t(k % wa));
        else if (fillOn(mode))
          want(n, c, 0, w) = fillRaw & maskOf(t);
      }
  EXPECT_TRUE(sameAs(m, want));
}

TEST(FuncSg, PeGatherD1HzdAndMulti) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(604);
  for (unsigned eu : {5u, 13u, 7u})
    for (unsigned str : {0u, 4u})
      for (Prec t : kDataTypes)
        for (Prec ip : kIndexTypes)
          for (Mode mode : kGatherModes)
            for (unsigned lane : kStartLanes)
              runPeGather(m, rng, eu, str, t, ip, mode, lane);
}

/// eu 6, 14: out[n][c][k / W][k % W] = T[0][c][0][i], k = B[n][c][0][i];
/// eu 10 writes the position i itself (it reads no opd0).
void runPeScatter(MachineState &m, std::mt19937 &rng, unsigned eu, unsigned str,
                  Prec t, Prec ip, Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(eu, t, ip, mode, lane, str));
  const uint32_t N = 2, C = 5, S = 8, H = 2, W = 6;
  bool positions = eu == 10;
  HT a(tableRef(str, laddr(lane, kA), t, C, 1, S));
  if (!positions)
    a.randomize(m, rng);
  HT b(euRef(laddr(lane, kB), ip, N, C, 1, S));
  IndexPicker pick{rng, mode, ip};
  b.forEach([&](uint32_t n, uint32_t c, uint32_t, uint32_t i) {
    b(n, c, 0, i) = pick(H * W, mode == Mode::Reject && c == 3 && i == 2);
  });
  b.store(m);
  HT r(euRef(laddr(lane, kR), t, N, C, H, W));
  r.randomize(m, rng);
  auto g = sgCmd(eu, t, ip, mode, 0);
  g.opd2_const = 0;
  g.opd0_str = positions ? 0 : str;
  setRes0(g, N, C, H, W);
  g.opd0_h = 1;
  g.opd0_w = positions ? 0 : S; // eu 10 has no opd0
  g.opd1_c = C;
  g.opd1_w = S;
  setAddrs(g, a, b, r);
  if (mode == Mode::Reject)
    return expectRejected(g, m, kSgNames[eu], "limit_enable");
  runTiu(g, m);
  HT want = r;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c)
      for (uint32_t i = 0; i < S; ++i) {
        uint64_t k = b(n, c, 0, i);
        if (k < H * W)
          want(n, c, uint32_t(k / W), uint32_t(k % W)) =
              positions ? i : a(0, c, 0, i);
      }
  EXPECT_TRUE(sameAs(m, want));
}

TEST(FuncSg, PeScatterD1HzdAndPositions) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(605);
  for (unsigned eu : {6u, 14u})
    for (unsigned str : {0u, 4u})
      for (Prec t : kDataTypes)
        for (Prec ip : kIndexTypes)
          for (Mode mode : kScatterModes)
            for (unsigned lane : kStartLanes)
              runPeScatter(m, rng, eu, str, t, ip, mode, lane);
  // Positions are integers: int16 / int32 results.
  for (Prec t : {Prec::Int16, Prec::Int32})
    for (Prec ip : kIndexTypes)
      for (Mode mode : kScatterModes)
        for (unsigned lane : kStartLanes)
          runPeScatter(m, rng, 10, 0, t, ip, mode, lane);
}

//===----------------------------------------------------------------------===//
// mask_select / nonzero: packed results and a count in res1
//===----------------------------------------------------------------------===//

/// A random non-zero value of type p (the top bit set half of the time, so
/// a signed reading would be negative), or 0 with probability 1 - pNonzero.
uint64_t maybeNonzero(std::mt19937 &rng, Prec p, unsigned pNonzeroPct) {
  if (rng() % 100 >= pNonzeroPct)
    return 0;
  uint64_t v = uint64_t(rng()) & maskOf(p);
  return v == 0 ? 1 : v;
}

/// eu 8, 15: per (n, c) the table elements T[0][c][0][w] with
/// mask[n][c][0][w] != 0, packed into res0 from w = 0 (at most res0_w),
/// count (all selected) into res1 (n, c, 1, 1) uint16 compact.
void runMaskSelect(MachineState &m, std::mt19937 &rng, unsigned eu,
                   unsigned str, Prec t, Prec ip, unsigned lane,
                   bool limitAndFill) {
  SCOPED_TRACE(trace(eu, t, ip, Mode::InRange, lane, str) +
               (limitAndFill ? " limit+fill set" : ""));
  const uint32_t N = 2, C = 5, wa = 12, W = 8;
  HT a(tableRef(str, laddr(lane, kA), t, C, 1, wa));
  a.randomize(m, rng);
  HT b(euRef(laddr(lane, kB), ip, N, C, 1, wa));
  b.forEach([&](uint32_t n, uint32_t c, uint32_t, uint32_t w) {
    b(n, c, 0, w) = maybeNonzero(rng, ip, 70);
  });
  b.store(m);
  HT r(euRef(laddr(lane, kR), t, N, C, 1, W));
  r.randomize(m, rng);
  HT cnt = randomCount(m, rng, lane, N, C);
  auto g = sgCmd(eu, t, ip, Mode::InRange, 0);
  // limit and fill do not apply to selects: setting them changes nothing.
  g.opd3_const = g.opd2_const = limitAndFill;
  g.opd2_addr = 0x5A5A5A5A;
  g.opd0_str = str;
  setRes0(g, N, C, 1, W);
  g.opd0_h = 1;
  g.opd0_w = wa;
  g.opd1_c = C;
  g.opd1_w = wa;
  setAddrs(g, a, b, r);
  g.res1_addr = cnt.r.addr;
  runTiu(g, m);
  HT want = r, wantCnt = cnt;
  packRef(
      want, wantCnt, wa,
      [&](uint32_t n, uint32_t c, uint32_t w) { return b(n, c, 0, w) != 0; },
      [&](uint32_t, uint32_t c, uint32_t w) { return a(0, c, 0, w); });
  EXPECT_TRUE(sameAs(m, want));
  EXPECT_TRUE(sameAs(m, wantCnt));
}

TEST(FuncSg, MaskSelectCountsIntoRes1) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(606);
  for (unsigned eu : {8u, 15u})
    for (unsigned str : {0u, 4u})
      for (Prec t : kDataTypes)
        for (Prec ip : kIndexTypes)
          for (unsigned lane : kStartLanes)
            runMaskSelect(m, rng, eu, str, t, ip, lane, lane == 0);
}

/// eu 9, 16: per (n, c) the positions w of the non-zero A[n][c][0][w],
/// packed into res0 from w = 0 (at most res0_w), count into res1.
void runNonzero(MachineState &m, std::mt19937 &rng, unsigned eu, Prec dp,
                Prec rp, unsigned lane) {
  SCOPED_TRACE(trace(eu, dp, rp, Mode::InRange, lane));
  const uint32_t N = 2, C = 5, wa = 11, W = 7;
  HT a(euRef(laddr(lane, kA), dp, N, C, 1, wa));
  a.forEach([&](uint32_t n, uint32_t c, uint32_t, uint32_t w) {
    a(n, c, 0, w) = maybeNonzero(rng, dp, 60);
  });
  a.store(m);
  HT r(euRef(laddr(lane, kR), rp, N, C, 1, W));
  r.randomize(m, rng);
  HT cnt = randomCount(m, rng, lane, N, C);
  isa::cmd::SSG g;
  g.cmd_short = 1;
  g.tsk_typ = 6;
  g.tsk_eu_typ = eu;
  g.opd0_prec = uint64_t(dp);
  g.res0_prec = uint64_t(rp);
  setRes0(g, N, C, 1, W);
  g.opd0_h = 1;
  g.opd0_w = wa;
  g.opd0_addr = a.r.addr;
  g.res0_addr = r.r.addr;
  g.res1_addr = cnt.r.addr;
  runTiu(g, m);
  HT want = r, wantCnt = cnt;
  packRef(
      want, wantCnt, wa,
      [&](uint32_t n, uint32_t c, uint32_t w) { return a(n, c, 0, w) != 0; },
      [](uint32_t, uint32_t, uint32_t w) { return uint64_t(w); });
  EXPECT_TRUE(sameAs(m, want));
  EXPECT_TRUE(sameAs(m, wantCnt));
}

TEST(FuncSg, NonzeroCountsIntoRes1) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(607);
  for (unsigned eu : {9u, 16u})
    for (Prec dp : {Prec::Int8, Prec::Int16, Prec::Int32})
      for (Prec rp : {Prec::Int16, Prec::Int32})
        for (unsigned lane : kStartLanes)
          runNonzero(m, rng, eu, dp, rp, lane);
}

//===----------------------------------------------------------------------===//
// SGL: whole lines
//===----------------------------------------------------------------------===//

/// eu 17: out[n][c][h][:] = T[0][c][B[n][c][h]][:]; eu 18: out[n][c][B[n][c]
/// [h]][:] = T[0][c][h][:]; eu 19: the lines h with mask[n][c][h] != 0,
/// packed from line 0 (at most res0_h), count into res1. T is (1, c,
/// opd0_h, w), line-aligned (opd0_str 3) or one per lane (4); out is
/// line-aligned.
void runLines(MachineState &m, std::mt19937 &rng, unsigned eu, unsigned str,
              Prec t, Prec ip, Mode mode, unsigned lane) {
  SCOPED_TRACE(trace(eu, t, ip, mode, lane, str));
  const uint32_t N = 2, C = 5, ha = 5, W = 6;
  uint32_t H = eu == 17 ? 4 : eu == 18 ? 6 : 3;
  uint32_t ih = eu == 17 ? H : ha;
  HT a(str == 3 ? lineRef(laddr(lane, kA), t, 1, C, ha, W)
                : perLaneRef(laddr(lane, kA), t, C, ha, W));
  a.randomize(m, rng);
  HT b(euRef(laddr(lane, kB), ip, N, C, ih, 1));
  IndexPicker pick{rng, mode, ip};
  b.forEach([&](uint32_t n, uint32_t c, uint32_t h, uint32_t) {
    if (eu == 19)
      b(n, c, h, 0) = maybeNonzero(rng, ip, 75);
    else
      b(n, c, h, 0) = pick(eu == 17 ? ha : H,
                           mode == Mode::Reject && n == 0 && c == 4 && h == 1);
  });
  b.store(m);
  HT r(lineRef(laddr(lane, kR), t, N, C, H, W));
  r.randomize(m, rng);
  HT cnt = randomCount(m, rng, lane, N, C);
  uint32_t fillRaw = rng();
  auto g = sglCmd(eu, t, ip, mode, fillRaw);
  if (eu == 18)
    g.opd2_const = 0;
  g.opd0_str = str;
  setRes0(g, N, C, H, W);
  g.opd0_h = ha;
  setAddrs(g, a, b, r);
  g.res1_addr = cnt.r.addr;
  if (mode == Mode::Reject && eu != 19)
    return expectRejected(g, m, kSgNames[eu], "limit_enable");
  runTiu(g, m);
  HT want = r, wantCnt = cnt;
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t c = 0; c < C; ++c) {
      uint32_t k = 0;
      for (uint32_t h = 0; h < ih; ++h) {
        uint64_t v = b(n, c, h, 0);
        for (uint32_t w = 0; w < W; ++w) {
          if (eu == 17) {
            if (v < ha)
              want(n, c, h, w) = a(0, c, uint32_t(v), w);
            else if (fillOn(mode))
              want(n, c, h, w) = fillRaw & maskOf(t);
          } else if (eu == 18) {
            if (v < H)
              want(n, c, uint32_t(v), w) = a(0, c, h, w);
          } else if (v != 0 && k < H) {
            want(n, c, k, w) = a(0, c, h, w);
          }
        }
        if (eu == 19 && v != 0)
          ++k;
      }
      if (eu == 19)
        wantCnt(n, c, 0, 0) = k;
    }
  EXPECT_TRUE(sameAs(m, want));
  EXPECT_TRUE(sameAs(m, wantCnt)); // untouched except by eu 19
}

TEST(FuncSg, GatherScatterSelectLines) {
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(608);
  for (unsigned eu : {17u, 18u, 19u})
    for (unsigned str : {3u, 4u})
      for (Prec t : kDataTypes)
        for (Prec ip : {Prec::Int8, Prec::Int16})
          for (Mode mode : kGatherModes) {
            if (eu == 18 && mode == Mode::LimitFill)
              continue; // no fill for scatters
            for (unsigned lane : kStartLanes)
              runLines(m, rng, eu, str, t, ip, mode, lane);
          }
}

//===----------------------------------------------------------------------===//
// Long form, lane mask, malformed commands
//===----------------------------------------------------------------------===//

TEST(FuncSg, LongFormHonoursLaneMask) {
  // Long pe_s_mask_select with lanes 1 and 3 disabled: their channels keep
  // res0 and res1. Then a long gather_line with opd0_prec left 0, as
  // Sophgo's long-form generator leaves it (SGL moves res0_prec values).
  MachineState m(isa::ChipParams::bm1684x());
  std::mt19937 rng(609);
  const uint32_t N = 1, C = 4, wa = 6;
  HT a(euRef(laddr(0, kA), Prec::Fp16, 1, C, 1, wa));
  a.randomize(m, rng);
  HT b(euRef(laddr(0, kB), Prec::Int8, N, C, 1, wa));
  b.forEach([&](uint32_t n, uint32_t c, uint32_t, uint32_t w) {
    b(n, c, 0, w) = (w + c) % 2;
  });
  b.store(m);
  HT r(euRef(laddr(0, kR), Prec::Fp16, N, C, 1, wa));
  r.randomize(m, rng);
  HT cnt = randomCount(m, rng, 0, N, C);
  isa::cmd::TiuLong g;
  g.tsk_typ = 6;
  g.tsk_eu_typ = 8;
  g.tsk_lane_num = ~uint64_t(0) & ~uint64_t(0b1010);
  g.res0_prec = g.opd0_prec = uint64_t(Prec::Fp16);
  g.opd1_prec = uint64_t(Prec::Int8);
  setRes0(g, N, C, 1, wa);
  g.opd0_h = 1;
  g.opd0_w = wa;
  g.opd1_c = C;
  g.opd1_w = wa;
  setAddrs(g, a, b, r);
  g.res1_addr = cnt.r.addr;
  runTiu(g, m);
  HT want = r, wantCnt = cnt;
  for (uint32_t c : {0u, 2u}) {
    uint32_t k = 0;
    for (uint32_t w = 0; w < wa; ++w)
      if ((w + c) % 2)
        want(0, c, 0, k++) = a(0, c, 0, w);
    wantCnt(0, c, 0, 0) = k;
  }
  EXPECT_TRUE(sameAs(m, want));
  EXPECT_TRUE(sameAs(m, wantCnt));

  HT lines(lineRef(laddr(0, kA), Prec::Fp32, 1, C, 3, 5));
  lines.randomize(m, rng);
  HT idx(euRef(laddr(0, kB), Prec::Int16, 1, C, 2, 1));
  idx.forEach([&](uint32_t, uint32_t c, uint32_t h, uint32_t) {
    idx(0, c, h, 0) = (c + 2 * h) % 3;
  });
  idx.store(m);
  HT out(lineRef(laddr(0, kR), Prec::Fp32, 1, C, 2, 5));
  out.randomize(m, rng);
  isa::cmd::TiuLong l;
  l.tsk_typ = 6;
  l.tsk_eu_typ = 17;
  l.tsk_lane_num = ~uint64_t(0);
  l.res0_prec = uint64_t(Prec::Fp32);
  l.opd0_prec = 0;
  l.opd1_prec = uint64_t(Prec::Int16);
  l.opd0_str = 3;
  setRes0(l, 1, C, 2, 5);
  l.opd0_h = 3;
  l.opd0_addr = lines.r.addr;
  l.opd1_addr = idx.r.addr;
  l.res0_addr = out.r.addr;
  runTiu(l, m);
  HT wantLines = out;
  wantLines.forEach([&](uint32_t, uint32_t c, uint32_t h, uint32_t w) {
    wantLines(0, c, h, w) = lines(0, c, uint32_t(idx(0, c, h, 0)), w);
  });
  EXPECT_TRUE(sameAs(m, wantLines));
}

TEST(FuncSg, MalformedCommandsAreRejected) {
  MachineState m(isa::ChipParams::bm1684x());
  auto base = [](unsigned eu) {
    auto g = sgCmd(eu, Prec::Int16, Prec::Int16, Mode::InRange, 0);
    setRes0(g, 1, 2, 1, 4);
    g.opd0_h = 1;
    g.opd0_w = 4;
    g.opd1_c = 4;
    g.opd1_w = 4;
    g.opd0_addr = laddr(0, kA);
    g.opd1_addr = laddr(0, kB);
    g.res0_addr = laddr(0, kR);
    g.res1_addr = laddr(0, kR1);
    return g;
  };
  // One field of a valid base command of sub-op `eu` set to `value`.
  using SSG = isa::cmd::SSG;
  struct BadField {
    unsigned eu;
    uint64_t SSG::*field;
    uint64_t value;
    const char *name, *what;
  };
  const BadField kBad[] = {
      // Sophgo's own checks reject a fill constant on scatters.
      {3, &SSG::opd2_const, 1, "pl_scatter_d1coor", "opd2_const"},
      // The index count field must match the result width.
      {0, &SSG::opd1_c, 3, "pl_gather_d1coor", "opd1_c"},
      {5, &SSG::opd1_w, 5, "pe_s_gather_d1coor", "opd1_w"},
      // Values move unchanged: opd0 and res0 types must agree.
      {5, &SSG::opd0_prec, uint64_t(Prec::Fp16), "pe_s_gather_d1coor",
       "opd0_prec"},
      // Indices are integers; d2coor pairs exist for 8 and 16-bit
      // coordinates.
      {5, &SSG::opd1_prec, uint64_t(Prec::Fp32), "pe_s_gather_d1coor",
       "opd1_prec"},
      {1, &SSG::opd1_prec, uint64_t(Prec::Int32), "pl_gather_d2coor",
       "opd1_prec"},
      // Table layouts: 0 or 4 for pe_*, 0 for pl_*.
      {5, &SSG::opd0_str, 1, "pe_s_gather_d1coor", "opd0_str"},
      {0, &SSG::opd0_str, 4, "pl_gather_d1coor", "opd0_str"},
      // nonzero reads integers and writes int16 / int32 positions.
      {9, &SSG::opd0_prec, uint64_t(Prec::Fp32), "pe_s_nonzero", "opd0_prec"},
      {9, &SSG::res0_prec, uint64_t(Prec::Int8), "pe_s_nonzero", "res0_prec"},
      // pl_gather_rec needs a window.
      {2, &SSG::opd3_addr, 3 /* kh = 0 */, "pl_gather_rec", "kh"},
      // Zero-sized results.
      {0, &SSG::res0_c, 0, "pl_gather_d1coor", "res0_c is zero"},
  };
  for (const BadField &bad : kBad) {
    SSG g = base(bad.eu);
    g.*bad.field = bad.value;
    expectRejected(g, m, bad.name, bad.what);
  }
  // SGL tables are line-aligned (3) or one per lane (4).
  auto l = sglCmd(17, Prec::Int16, Prec::Int16, Mode::InRange, 0);
  l.res0_n = l.res0_c = l.res0_h = l.res0_w = l.opd0_h = 1;
  l.opd0_str = 0;
  expectRejected(l, m, "pe_s_gather_line", "opd0_str");
  // eu 20..31 do not exist (the field has 5 bits).
  isa::cmd::TiuLong bad;
  bad.tsk_typ = 6;
  bad.tsk_eu_typ = 20;
  expectRejected(bad, m, "SG", "sub-op 20 does not exist");
}

} // namespace
