//===- MatMulTest.cpp - matmul on the simulator ---------------------------===//
//
// Reference: the product of the rounded operands accumulated in double, plus
// the fp32 bias, then one rounding to the output precision. Tolerance: one
// output rounding plus fp32 accumulation error (2^-22 of the sum of
// |products|).
//
//===----------------------------------------------------------------------===//

#include "BackendTestUtil.h"

#include <random>

using namespace tpu;
using namespace tpu::backend;
using namespace tpu::backend::test;

namespace {

struct MMCase {
  std::vector<int64_t> left, right, out;
  bool transposed = false;
  bool bias = false;
  bool relu = false;
  Prec prec = Prec::Fp32;
  uint64_t lmemBytes = 0;
};

StreamStats runMM(const MMCase &c) {
  KernelRun r;
  if (c.lmemBytes)
    r.chip.lmemBytes = c.lmemBytes;
  GlobalAlloc ga(r.chip);
  GTensor l = ga.tensor(c.prec, c.left), rt = ga.tensor(c.prec, c.right),
          o = ga.tensor(c.prec, c.out);
  int64_t m = c.left[c.left.size() - 2], k = c.left.back();
  int64_t n = c.out.back();
  auto lv = randomValues(size_t(l.numElements()), 3);
  auto rv = randomValues(size_t(rt.numElements()), 4);
  auto bv = randomValues(size_t(n), 5);
  for (float &v : lv)
    v = roundTo(v, c.prec);
  for (float &v : rv)
    v = roundTo(v, c.prec);
  uint64_t bAddr = ga.alloc(size_t(n) * 4);
  // Batch index of an operand for output batch b (numpy broadcasting).
  std::vector<int64_t> ob(c.out.begin(), c.out.end() - 2);
  auto offsetOf = [&](const std::vector<int64_t> &shape, int64_t b) {
    std::vector<int64_t> sb(shape.begin(), shape.end() - 2);
    sb.insert(sb.begin(), ob.size() - sb.size(), 1);
    int64_t off = 0, rem = b, mul = 1;
    std::vector<int64_t> idx(ob.size());
    for (size_t i = ob.size(); i-- > 0;) {
      idx[i] = rem % ob[i];
      rem /= ob[i];
    }
    for (size_t i = ob.size(); i-- > 0;) {
      if (sb[i] != 1)
        off += idx[i] * mul;
      mul *= sb[i];
    }
    return off;
  };
  int64_t batches = o.numElements() / (m * n);
  std::vector<float> want(size_t(o.numElements())), mag(want.size());
  for (int64_t b = 0; b < batches; ++b) {
    int64_t lo = offsetOf(c.left, b) * m * k, ro = offsetOf(c.right, b) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = c.bias ? bv[size_t(j)] : 0.0, mg = std::fabs(acc);
        for (int64_t kk = 0; kk < k; ++kk) {
          double rvv = c.transposed ? rv[size_t(ro + j * k + kk)]
                                    : rv[size_t(ro + kk * n + j)];
          double p = double(lv[size_t(lo + i * k + kk)]) * rvv;
          acc += p;
          mg += std::fabs(p);
        }
        if (c.relu)
          acc = std::max(acc, 0.0);
        size_t at = size_t((b * m + i) * n + j);
        want[at] = roundTo(float(acc), c.prec);
        mag[at] = float(mg);
      }
  }
  r.emit = [&](CmdEmitter &em) {
    MatMulParams p;
    p.name = "mm";
    p.left = l;
    p.right = rt;
    p.output = o;
    p.rightTransposed = c.transposed;
    if (c.bias)
      p.biasAddr = bAddr;
    if (c.relu)
      p.act = {UnaryKind::Relu};
    matmul(em, p);
  };
  r.setup = [&](sim::MachineState &ms) {
    writeTensor(ms, l, lv);
    writeTensor(ms, rt, rv);
    writeBytes(ms, bAddr, encodeAs(bv, Prec::Fp32));
  };
  r.check = [&](const sim::MachineState &ms, const std::string &what) {
    auto got = readTensor(ms, o);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      float tol =
          2 * ulpOf(c.prec) * std::fabs(want[i]) + mag[i] * (1.0f / (1 << 22));
      if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                      << ", expected " << want[i];
    }
    EXPECT_EQ(bad, 0u) << what;
  };
  return r.run();
}

} // namespace

TEST(MatMul, F32FullyConnectedWithBias) {
  // N = 1000 does not divide into 64 lanes: the last lane block is partial.
  runMM({{1, 512}, {512, 1000}, {1, 1000}, false, true});
}

TEST(MatMul, F32ManyRowsRelu) {
  runMM({{130, 33}, {33, 7}, {130, 7}, false, true, true});
}

TEST(MatMul, F16Batched) {
  MMCase c{{2, 3, 17, 33}, {2, 3, 33, 19}, {2, 3, 17, 19}};
  c.prec = Prec::Fp16;
  runMM(c);
}

TEST(MatMul, BF16RightTransposed) {
  MMCase c{{5, 40}, {30, 40}, {5, 30}, true};
  c.prec = Prec::Bf16;
  c.bias = true;
  runMM(c);
}

TEST(MatMul, SharedRightFoldsBatches) {
  runMM({{4, 10, 20}, {20, 7}, {4, 10, 7}});
}

TEST(MatMul, BroadcastLeftBatch) {
  runMM({{1, 10, 20}, {3, 20, 7}, {3, 10, 7}});
}

TEST(MatMul, F16BatchedRightTransposed) {
  // Attention's Q K^T: a right matrix of each batch stored [N, K] (mm2.nt
  // in a group of one).
  MMCase c{{2, 3, 17, 33}, {2, 3, 19, 33}, {2, 3, 17, 19}, true};
  c.prec = Prec::Fp16;
  runMM(c);
}

TEST(MatMul, RightSharedInnerBatchesOnly) {
  // The right operand broadcast along the inner batch dim but not the
  // outer one: one group per outer batch, its right matrix shared.
  runMM({{2, 3, 10, 20}, {2, 1, 20, 7}, {2, 3, 10, 7}});
  MMCase t{{2, 3, 10, 20}, {2, 1, 7, 20}, {2, 3, 10, 7}, true};
  t.prec = Prec::Bf16;
  runMM(t);
}

TEST(MatMul, BroadcastsBiasReluAndRanks) {
  // The left operand broadcast along an outer batch dim with an inner run;
  // a bias and a relu on a matrix of each batch; rank 2 by rank 4 and
  // rank 4 by rank 2; a transposed right matrix of each of several groups
  // of one matrix (held (1, N, 1, K), mm2.nt).
  runMM({{1, 3, 10, 20}, {2, 3, 20, 7}, {2, 3, 10, 7}, false, true, true});
  runMM({{10, 20}, {2, 3, 20, 7}, {2, 3, 10, 7}});
  runMM({{2, 3, 10, 20}, {20, 7}, {2, 3, 10, 7}, false, true});
  MMCase t{{17, 33}, {2, 3, 19, 33}, {2, 3, 17, 19}, true};
  t.prec = Prec::Fp16;
  runMM(t);
}

TEST(MatMul, LeftBroadcastInnerBatch) {
  // The left operand broadcast along the inner batch dim: one group per
  // output batch.
  runMM({{2, 1, 10, 20}, {2, 3, 20, 7}, {2, 3, 10, 7}});
}

TEST(MatMul, RandomBroadcastPatterns) {
  // Batch dims of rank 0 to 3 on either side, each 1 (broadcast) or the
  // output's, the right operand plain or transposed: every pattern the
  // batch split meets, against the reference (fixed seed; 60 cases).
  std::mt19937 rng(20261206);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int t = 0; t < 60; ++t) {
    int64_t m = pick(1, 20), k = pick(1, 40), n = pick(1, 30);
    size_t rank = size_t(pick(0, 3));
    std::vector<int64_t> ob;
    for (size_t i = 0; i < rank; ++i)
      ob.push_back(pick(2, 3));
    auto side = [&](int64_t a, int64_t b) {
      std::vector<int64_t> s;
      size_t r = size_t(pick(0, int64_t(rank)));
      for (size_t i = rank - r; i < rank; ++i)
        s.push_back(pick(0, 1) ? ob[i] : 1);
      s.push_back(a);
      s.push_back(b);
      return s;
    };
    MMCase c;
    c.transposed = pick(0, 1);
    c.left = side(m, k);
    c.right = c.transposed ? side(n, k) : side(k, n);
    // The output's batch dims are those the operands broadcast to.
    std::vector<int64_t> lb(c.left.begin(), c.left.end() - 2),
        rb(c.right.begin(), c.right.end() - 2);
    size_t r = std::max(lb.size(), rb.size());
    lb.insert(lb.begin(), r - lb.size(), 1);
    rb.insert(rb.begin(), r - rb.size(), 1);
    for (size_t i = 0; i < r; ++i)
      c.out.push_back(std::max(lb[i], rb[i]));
    c.out.push_back(m);
    c.out.push_back(n);
    c.bias = pick(0, 1);
    c.prec = pick(0, 1) ? Prec::Fp16 : Prec::Fp32;
    SCOPED_TRACE("case " + std::to_string(t));
    runMM(c);
  }
}

TEST(MatMul, SplitsColumnsAndRowsWithSmallLocalMemory) {
  // In 4 KiB a lane, 100 result rows of 300 fp32 columns fit no slicing
  // of the group of one: it runs as groups of one per column chunk.
  MMCase c{{100, 64}, {64, 300}, {100, 300}, false, true};
  c.lmemBytes = 4 * 1024;
  StreamStats st = runMM(c);
  EXPECT_GT(st.tiu, 4u);
  // The same transposed, with a relu, in F16.
  c.right = {300, 64};
  c.transposed = true;
  c.relu = true;
  c.prec = Prec::Fp16;
  runMM(c);
}

TEST(MatMul, SplitsKWithSmallLocalMemoryF16) {
  // K = 3000 rows of the right matrix do not fit 4 KiB per lane even one
  // lane block wide: reduced-axis slices, their partial products
  // accumulating in fp32 (LayerGroup.MatMulReducedAxisSlicesPlans).
  MMCase c{{3, 3000}, {3000, 20}, {3, 20}, false, true};
  c.prec = Prec::Fp16;
  c.lmemBytes = 4 * 1024;
  runMM(c);
  // Batched, the right matrix one per batch and stored transposed.
  runMM({{2, 3, 3000},
         {2, 20, 3000},
         {2, 3, 20},
         true,
         true,
         false,
         Prec::Fp16,
         4 * 1024});
}

TEST(MatMul, KPastSixteenBits) {
  // K = 70000 past the commands' 16 bits: reduced-axis slices of at most
  // 65535 (the old kernel's K split), a weight plain and transposed.
  for (const MMCase &c :
       {MMCase{{2, 70000}, {70000, 8}, {2, 8}, false, true, false, Prec::Fp16},
        MMCase{
            {2, 70000}, {8, 70000}, {2, 8}, true, false, true, Prec::Fp32}}) {
    // The shares the interpreter follows (k_shares): 2 or more of at most
    // 65535, from 0 to K.
    std::vector<ReducedShares> shares = runMM(c).reducedShares;
    ASSERT_EQ(shares.size(), 1u);
    const std::vector<int64_t> &b = shares[0].bounds;
    ASSERT_GE(b.size(), 3u);
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), 70000);
    for (size_t i = 1; i < b.size(); ++i)
      EXPECT_LE(b[i] - b[i - 1], 65535);
  }
}

TEST(MatMul, ColumnsPastSixteenBits) {
  // N = 70000 columns exceed the commands' 16-bit sizes: two column
  // chunks of 35000, each with its share of the weight and of the bias.
  runMM({{2, 8}, {8, 70000}, {2, 70000}, false, true, true, Prec::Fp16});
  runMM({{2, 8}, {70000, 8}, {2, 70000}, true, true, false, Prec::Fp32});
}

TEST(MatMul, MismatchedInnerDimsIsAnError) {
  CmdEmitter em;
  GlobalAlloc ga(em.chip());
  MatMulParams p;
  p.name = "fc1";
  p.left = ga.tensor(Prec::Fp32, {2, 3});
  p.right = ga.tensor(Prec::Fp32, {4, 5});
  p.output = ga.tensor(Prec::Fp32, {2, 5});
  try {
    matmul(em, p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("matmul 'fc1'"), std::string::npos);
  }
}
