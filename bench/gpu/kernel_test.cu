//===- kernel_test.cu - device self-test of the non-GEMM CUDA kernels -----===//
//
// Runs attention (causal GQA + RoPE, and non-causal Skv != S), rms/layer norm,
// cross_entropy, router/dispatch/combine, conv1d, selective_scan, transpose,
// embedding and glu on small f32 inputs with a null runtime context, and
// compares with straightforward f64 host loops written from BraidOps.td.
// Prints max relative error per kernel; exit 1 if any exceeds 1e-5 (1e-4 for
// attention and the scan, whose f32 exp/sin differ more). The backward and
// optimizer kernels: kernel_grad_test.cu.
//
// Build: nvcc -O2 -std=c++17 -ccbin g++-12 -gencode arch=compute_90,code=sm_90 \
//   -I runtime/include -I runtime/src -DBRAID_RUNTIME_CUDA bench/gpu/kernel_test.cu \
//   runtime/src/cuda/*.cu -lcublasLt -o kernel_test
//
//===----------------------------------------------------------------------===//

#include "kernel_test_common.cuh"

namespace {

void testAttention(int B, int S, int Skv, int H, int Hkv, int D, int Dv, int causal, double theta) {
  V q = randv((size_t)B * S * H * D), k = randv((size_t)B * Skv * Hkv * D),
    v = randv((size_t)B * Skv * Hkv * Dv);
  float *dq = dev(q), *dk = dev(k), *dv = dev(v), *dout = devz<float>((size_t)B * S * H * Dv);
  double scale = 1.0 / std::sqrt((double)D);
  const braid_attention_params p = {.batch = B,
                                    .seq = S,
                                    .seq_kv = Skv,
                                    .heads = H,
                                    .kv_heads = Hkv,
                                    .head_dim = D,
                                    .v_head_dim = Dv,
                                    .causal = causal,
                                    .scale = scale,
                                    .rope_theta = theta,
                                    .q_offset = 0};
  braid_k_attention(nullptr, BRAID_F32, dq, dk, dv, dout, &p);
  V got = host(dout, (size_t)B * S * H * Dv);
  auto rope = [&](const float *x, int pos, std::vector<double> &o) {
    ropeRef(x, pos, D, theta, o);
  };
  std::vector<double> ref((size_t)B * S * H * Dv), qr, kr;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < S; ++s) {
        int hk = h / (H / Hkv);
        rope(&q[(((size_t)b * S + s) * H + h) * D], s, qr);
        std::vector<double> sc(Skv, -INFINITY);
        double mx = -INFINITY;
        for (int t = 0; t < Skv; ++t) {
          if (causal && t > s)
            continue;
          rope(&k[(((size_t)b * Skv + t) * Hkv + hk) * D], t, kr);
          double acc = 0;
          for (int d = 0; d < D; ++d)
            acc += qr[d] * kr[d];
          sc[t] = scale * acc;
          mx = std::max(mx, sc[t]);
        }
        double sum = 0;
        for (int t = 0; t < Skv; ++t)
          sum += sc[t] == -INFINITY ? 0 : std::exp(sc[t] - mx);
        for (int e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int t = 0; t < Skv; ++t)
            if (sc[t] != -INFINITY)
              acc += std::exp(sc[t] - mx) / sum * v[(((size_t)b * Skv + t) * Hkv + hk) * Dv + e];
          ref[(((size_t)b * S + s) * H + h) * Dv + e] = acc;
        }
      }
  char name[96];
  std::snprintf(name, sizeof name, "attention S%d Skv%d H%d/%d D%d/%d c%d r%d", S, Skv, H, Hkv,
                D, Dv, causal, theta > 0);
  report(name, got, ref, 1e-4);
}

/// Context parallelism's attention by key blocks: the query rows of one rank
/// (zigzag positions over `ranks`) against the key blocks of every rank, each
/// block's (out, lse) merged into the running one, equal to attention over the
/// whole sequence at those positions; each block's lse checked on its own.
void testAttentionBlocks(int B, int seq, int ranks, int H, int Hkv, int D, int Dv, int causal,
                         double theta, int rank) {
  const int S = seq / ranks; // rows per rank
  V q = randv((size_t)B * S * H * D), k = randv((size_t)B * seq * Hkv * D),
    v = randv((size_t)B * seq * Hkv * Dv);
  double scale = 1.0 / std::sqrt((double)D);
  // Positions of every rank's rows (zigzag; the kernel's, checked here).
  std::vector<int64_t> pos(seq);
  int64_t *dpos = devz<int64_t>(seq);
  braid_k_sequence_positions(nullptr, dpos, seq, 0, seq, ranks);
  std::vector<int64_t> gotPos = host(dpos, seq);
  const int c = seq / (2 * ranks);
  bool posOk = true;
  for (int row = 0; row < seq; ++row) {
    int j = row / (2 * c), w = row % (2 * c);
    pos[row] = w < c ? j * c + w : (2 * ranks - 1 - j) * c + (w - c);
    posOk &= gotPos[row] == pos[row];
  }
  allOk &= posOk;
  std::printf("  %-34s %s\n", "sequence_positions zigzag", posOk ? "ok" : "FAIL");

  auto rope = [&](const float *x, int64_t p, std::vector<double> &o) {
    ropeRef(x, p, D, theta, o);
  };
  // Reference over keys [t0, t1) of the stored sequence: out and lse.
  const int64_t *qPos = pos.data() + (size_t)rank * S;
  auto reference = [&](int t0, int t1, std::vector<double> &out, std::vector<double> &lse) {
    out.assign((size_t)B * S * H * Dv, 0.0);
    lse.assign((size_t)B * S * H, -INFINITY);
    std::vector<double> qr, kr;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int s = 0; s < S; ++s) {
          int hk = h / (H / Hkv);
          rope(&q[(((size_t)b * S + s) * H + h) * D], qPos[s], qr);
          std::vector<double> sc;
          std::vector<int> keys;
          double mx = -INFINITY;
          for (int t = t0; t < t1; ++t) {
            if (causal && pos[t] > qPos[s])
              continue;
            rope(&k[(((size_t)b * seq + t) * Hkv + hk) * D], pos[t], kr);
            double acc = 0;
            for (int d = 0; d < D; ++d)
              acc += qr[d] * kr[d];
            sc.push_back(scale * acc);
            keys.push_back(t);
            mx = std::max(mx, sc.back());
          }
          if (keys.empty())
            continue;
          double sum = 0;
          for (double x : sc)
            sum += std::exp(x - mx);
          size_t row = ((size_t)b * S + s) * H + h;
          lse[row] = mx + std::log(sum);
          for (int e = 0; e < Dv; ++e) {
            double acc = 0;
            for (size_t i = 0; i < keys.size(); ++i)
              acc += std::exp(sc[i] - mx) / sum *
                     v[(((size_t)b * seq + keys[i]) * Hkv + hk) * Dv + e];
            out[row * Dv + e] = acc;
          }
        }
  };
  // Each rank's block of keys (rows r*S.. of k and v, stored per block).
  float *dq = dev(q);
  int64_t *dqPos = dpos + (size_t)rank * S;
  const size_t rows = (size_t)B * S * H;
  float *runOut = devz<float>(rows * Dv), *runLse = devz<float>(rows);
  float *blkOut = devz<float>(rows * Dv), *blkLse = devz<float>(rows);
  char name[96];
  for (int r = 0; r < ranks; ++r) {
    int blk = (rank + r) % ranks; // the ring's order: own block first
    V kb((size_t)B * S * Hkv * D), vb((size_t)B * S * Hkv * Dv);
    for (int b = 0; b < B; ++b) {
      std::copy_n(&k[((size_t)b * seq + (size_t)blk * S) * Hkv * D], (size_t)S * Hkv * D,
                  &kb[(size_t)b * S * Hkv * D]);
      std::copy_n(&v[((size_t)b * seq + (size_t)blk * S) * Hkv * Dv], (size_t)S * Hkv * Dv,
                  &vb[(size_t)b * S * Hkv * Dv]);
    }
    float *dk = dev(kb), *dv = dev(vb);
    const braid_attention_params p = {.batch = B,
                                      .seq = S,
                                      .seq_kv = S,
                                      .heads = H,
                                      .kv_heads = Hkv,
                                      .head_dim = D,
                                      .v_head_dim = Dv,
                                      .causal = causal,
                                      .scale = scale,
                                      .rope_theta = theta,
                                      .q_offset = 0};
    braid_k_attention_block(nullptr, BRAID_F32, dq, dk, dv, dqPos, dpos + (size_t)blk * S,
                            r == 0 ? runOut : blkOut, r == 0 ? runLse : blkLse, &p);
    if (r > 0) {
      // The batch-major key block of the reference: rows blk*S.. of every
      // batch, so the reference runs per batch over the stored rows.
      std::vector<double> refOut, refLse;
      reference(blk * S, (blk + 1) * S, refOut, refLse);
      V gotLse = host(blkLse, rows);
      bool lseOk = true;
      for (size_t i = 0; i < rows; ++i)
        lseOk &= std::isinf(refLse[i]) ? std::isinf(gotLse[i]) && gotLse[i] < 0
                                       : std::fabs(gotLse[i] - refLse[i]) <= 1e-4;
      allOk &= lseOk;
      std::snprintf(name, sizeof name, "attention_block lse r%d of %d", r, ranks);
      std::printf("  %-34s %s\n", name, lseOk ? "ok" : "FAIL");
      std::snprintf(name, sizeof name, "attention_block out r%d of %d", r, ranks);
      report(name, host(blkOut, rows * Dv), refOut, 1e-4);
      braid_k_attention_merge(nullptr, runOut, runLse, blkOut, blkLse, (int64_t)rows, Dv);
    }
    BRAID_CUDA_CHECK(cudaDeviceSynchronize());
    cudaFree(dk);
    cudaFree(dv);
  }
  std::vector<double> refOut, refLse;
  reference(0, seq, refOut, refLse);
  std::snprintf(name, sizeof name, "attention_block+merge n%d q%d H%d/%d D%d c%d", ranks, rank, H,
                Hkv, D, causal);
  report(name, host(runOut, rows * Dv), refOut, 1e-4);
  V gotLse = host(runLse, rows);
  std::vector<double> finite(rows);
  V gotFinite(rows);
  for (size_t i = 0; i < rows; ++i) {
    finite[i] = std::isinf(refLse[i]) ? 0 : refLse[i];
    gotFinite[i] = std::isinf(gotLse[i]) && std::isinf(refLse[i]) ? 0 : gotLse[i];
  }
  std::snprintf(name, sizeof name, "  merged lse");
  report(name, gotFinite, finite, 1e-5);
  cudaFree(dq);
  cudaFree(dpos);
  cudaFree(runOut);
  cudaFree(runLse);
  cudaFree(blkOut);
  cudaFree(blkLse);
}

void testNorms() {
  int rows = 37, H = 300;
  V x = randv((size_t)rows * H, 3.0f), g = randv(H), bta = randv(H);
  float *dx = dev(x), *dg = dev(g), *db = dev(bta), *dy = devz<float>((size_t)rows * H);
  braid_k_rms_norm(nullptr, BRAID_F32, dx, dg, dy, rows, H, 1e-5);
  V got = host(dy, (size_t)rows * H);
  std::vector<double> ref((size_t)rows * H);
  for (int r = 0; r < rows; ++r) {
    double ms = 0;
    for (int i = 0; i < H; ++i)
      ms += (double)x[r * H + i] * x[r * H + i];
    ms /= H;
    for (int i = 0; i < H; ++i)
      ref[r * H + i] = x[r * H + i] / std::sqrt(ms + 1e-5) * g[i];
  }
  report("rms_norm", got, ref, 1e-5);
  braid_k_layer_norm(nullptr, BRAID_F32, dx, dg, db, dy, rows, H, 1e-5);
  got = host(dy, (size_t)rows * H);
  for (int r = 0; r < rows; ++r) {
    double m = 0, var = 0;
    for (int i = 0; i < H; ++i)
      m += x[r * H + i];
    m /= H;
    for (int i = 0; i < H; ++i)
      var += (x[r * H + i] - m) * (x[r * H + i] - m);
    var /= H;
    for (int i = 0; i < H; ++i)
      ref[r * H + i] = (x[r * H + i] - m) / std::sqrt(var + 1e-5) * g[i] + bta[i];
  }
  report("layer_norm", got, ref, 1e-5);
}

void testSoftmax() {
  int rows = 37, n = 1000;
  V x = randv((size_t)rows * n, 5.0f), g = randv((size_t)rows * n);
  for (int r = 0; r < rows; ++r)
    x[(size_t)r * n + 3] = -INFINITY; // a masked entry: 0 out
  float *dx = dev(x), *dg = dev(g), *dy = devz<float>((size_t)rows * n),
        *dd = devz<float>((size_t)rows * n);
  braid_k_softmax(nullptr, BRAID_F32, dx, dy, rows, n);
  V got = host(dy, (size_t)rows * n);
  std::vector<double> ref((size_t)rows * n), refGrad((size_t)rows * n);
  for (int r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0, dot = 0;
    for (int i = 0; i < n; ++i)
      mx = std::max(mx, (double)x[(size_t)r * n + i]);
    for (int i = 0; i < n; ++i)
      sum += std::exp(x[(size_t)r * n + i] - mx);
    for (int i = 0; i < n; ++i)
      ref[(size_t)r * n + i] = std::exp(x[(size_t)r * n + i] - mx) / sum;
    // The gradient from the kernel's own y (what it reads).
    for (int i = 0; i < n; ++i)
      dot += (double)g[(size_t)r * n + i] * got[(size_t)r * n + i];
    for (int i = 0; i < n; ++i)
      refGrad[(size_t)r * n + i] = got[(size_t)r * n + i] * (g[(size_t)r * n + i] - dot);
  }
  report("softmax", got, ref, 1e-5);
  braid_k_softmax_grad(nullptr, BRAID_F32, dy, dg, dd, rows, n);
  report("softmax_grad", host(dd, (size_t)rows * n), refGrad, 1e-5);
}

void testCrossEntropy() {
  int rows = 45, vocab = 1000;
  V x = randv((size_t)rows * vocab, 5.0f);
  std::vector<long long> lab(rows);
  for (int r = 0; r < rows; ++r)
    lab[r] = (r * 7919) % vocab;
  float *dx = dev(x), *dl = devz<float>(1);
  long long *dlab = dev(lab);
  braid_k_cross_entropy(nullptr, BRAID_F32, BRAID_I64, dx, dlab, dl, rows, vocab);
  V got = host(dl, 1);
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int i = 0; i < vocab; ++i)
      m = std::max(m, (double)x[r * vocab + i]);
    for (int i = 0; i < vocab; ++i)
      s += std::exp(x[r * vocab + i] - m);
    total += m + std::log(s) - x[r * vocab + lab[r]];
  }
  report("cross_entropy (i64 labels)", got, {total / rows}, 1e-5);
}

void testMoe() {
  int T = 50, E = 6, K = 2, H = 24, C = 12;
  V logits = randv((size_t)T * E, 2.0f);
  for (int e = 0; e < E; ++e) // ties: token 0 has equal logits
    logits[e] = 0.5f;
  float *dlog = dev(logits), *dw = devz<float>((size_t)T * K);
  int32_t *didx = devz<int32_t>((size_t)T * K);
  for (int normalize = 0; normalize < 2; ++normalize) {
    braid_k_router(nullptr, BRAID_F32, dlog, dw, didx, T, E, K, normalize);
    V w = host(dw, (size_t)T * K);
    std::vector<int32_t> idx = host(didx, (size_t)T * K);
    std::vector<double> ref((size_t)T * K);
    bool idxOk = true;
    for (int t = 0; t < T; ++t) {
      std::vector<double> p(E);
      double m = -INFINITY, s = 0;
      for (int e = 0; e < E; ++e)
        m = std::max(m, (double)logits[t * E + e]);
      for (int e = 0; e < E; ++e)
        s += p[e] = std::exp(logits[t * E + e] - m);
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
      double picked = 0;
      for (int j = 0; j < K; ++j)
        picked += p[order[j]] / s;
      for (int j = 0; j < K; ++j) {
        idxOk &= idx[t * K + j] == order[j];
        ref[t * K + j] = p[order[j]] / s / (normalize ? picked : 1.0);
      }
    }
    allOk &= idxOk;
    std::printf("  %-34s %s\n", normalize ? "router indices (normalize)" : "router indices",
                idxOk ? "ok" : "FAIL");
    report(normalize ? "router weights (normalize)" : "router weights", w, ref, 1e-5);
  }
  // dispatch / combine with the router's indices (capacity drops some).
  std::vector<int32_t> idx = host(didx, (size_t)T * K);
  V w = host(dw, (size_t)T * K);
  V x = randv((size_t)T * H);
  float *dx = dev(x), *dd = devz<float>((size_t)E * C * H);
  braid_k_dispatch(nullptr, BRAID_F32, dx, didx, dd, T, H, K, E, C, 1);
  V got = host(dd, (size_t)E * C * H);
  std::vector<int> slot((size_t)T * K, -1), fill(E, 0);
  for (int j = 0; j < K; ++j)
    for (int t = 0; t < T; ++t) {
      int e = idx[t * K + j];
      if (fill[e] < C)
        slot[t * K + j] = fill[e]++;
    }
  std::vector<double> ref((size_t)E * C * H, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j)
      if (slot[t * K + j] >= 0)
        for (int h = 0; h < H; ++h)
          ref[((size_t)idx[t * K + j] * C + slot[t * K + j]) * H + h] = x[t * H + h];
  report("dispatch", got, ref, 0);
  V eo = randv((size_t)E * C * H);
  float *deo = dev(eo), *dc = devz<float>((size_t)T * H);
  braid_k_combine(nullptr, BRAID_F32, deo, dw, didx, dc, T, H, K, E, C, 1);
  got = host(dc, (size_t)T * H);
  ref.assign((size_t)T * H, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j)
      if (slot[t * K + j] >= 0)
        for (int h = 0; h < H; ++h)
          ref[t * H + h] +=
              (double)w[t * K + j] * eo[((size_t)idx[t * K + j] * C + slot[t * K + j]) * H + h];
  report("combine", got, ref, 1e-6);
}

void testMamba() {
  int B = 2, S = 33, Dm = 70, N = 16, Kc = 4;
  V x = randv((size_t)B * S * Dm), w = randv((size_t)Dm * Kc), bias = randv(Dm);
  float *dx = dev(x), *dw = dev(w), *db = dev(bias), *dy = devz<float>((size_t)B * S * Dm);
  braid_k_conv1d(nullptr, BRAID_F32, dx, dw, db, dy, B, S, Dm, Kc);
  V got = host(dy, (size_t)B * S * Dm);
  std::vector<double> ref((size_t)B * S * Dm);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < S; ++t)
      for (int c = 0; c < Dm; ++c) {
        double acc = bias[c];
        for (int j = 0; j < Kc; ++j) {
          int src = t - (Kc - 1) + j;
          if (src >= 0)
            acc += (double)w[c * Kc + j] * x[((size_t)b * S + src) * Dm + c];
        }
        ref[((size_t)b * S + t) * Dm + c] = acc;
      }
  report("conv1d", got, ref, 1e-5);
  for (int n : {16, 40}) {
    N = n;
    V delta = randv((size_t)B * S * Dm), A = randv((size_t)Dm * N), Bm = randv((size_t)B * S * N),
      Cm = randv((size_t)B * S * N), Dd = randv(Dm);
    for (float &a : A)
      a = -std::fabs(a) - 0.1f;
    float *ddel = dev(delta), *dA = dev(A), *dB = dev(Bm), *dC = dev(Cm), *dD = dev(Dd);
    const braid_scan_params p = {
        .batch = B, .seq = S, .channels = Dm, .state = N, .delta_softplus = 1};
    braid_k_selective_scan(nullptr, BRAID_F32, dx, ddel, dA, dB, dC, dD, dy, &p);
    got = host(dy, (size_t)B * S * Dm);
    for (int b = 0; b < B; ++b)
      for (int d = 0; d < Dm; ++d) {
        std::vector<double> h(N, 0.0);
        for (int t = 0; t < S; ++t) {
          size_t xi = ((size_t)b * S + t) * Dm + d;
          double dt = std::max((double)delta[xi], 0.0) + std::log1p(std::exp(-std::fabs((double)delta[xi])));
          double out = 0;
          for (int k = 0; k < N; ++k) {
            h[k] = std::exp(dt * A[d * N + k]) * h[k] + dt * Bm[((size_t)b * S + t) * N + k] * x[xi];
            out += Cm[((size_t)b * S + t) * N + k] * h[k];
          }
          ref[xi] = out + Dd[d] * x[xi];
        }
      }
    report(N == 16 ? "selective_scan N=16" : "selective_scan N=40", got, ref, 1e-4);
  }
}

void testLayout() {
  int64_t shape[4] = {3, 5, 4, 7}, perm[4] = {0, 2, 1, 3};
  int64_t n = 3 * 5 * 4 * 7;
  V x = randv(n);
  float *dx = dev(x), *dy = devz<float>(n);
  braid_k_transpose(nullptr, BRAID_F32, dx, dy, 4, shape, perm);
  V got = host(dy, n);
  std::vector<double> ref(n);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 4; ++c)
        for (int d = 0; d < 7; ++d)
          ref[((a * 4 + c) * 5 + b) * 7 + d] = x[((a * 5 + b) * 4 + c) * 7 + d];
  report("transpose [0,2,1,3]", got, ref, 0);
  int64_t shape2[3] = {6, 9, 10}, perm2[3] = {2, 0, 1};
  V x2 = randv(540);
  float *dx2 = dev(x2), *dy2 = devz<float>(540);
  braid_k_transpose(nullptr, BRAID_F32, dx2, dy2, 3, shape2, perm2);
  got = host(dy2, 540);
  std::vector<double> ref2(540);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 9; ++j)
      for (int k = 0; k < 10; ++k)
        ref2[(k * 6 + i) * 9 + j] = x2[(i * 9 + j) * 10 + k];
  report("transpose [2,0,1]", got, ref2, 0);

  int T = 10, Sq = 5, Vv = 13, H = 8;
  std::vector<int32_t> tok(T);
  for (int t = 0; t < T; ++t)
    tok[t] = (t * 5) % Vv;
  V table = randv((size_t)Vv * H), pos = randv((size_t)Sq * H);
  int32_t *dtok = dev(tok);
  float *dtab = dev(table), *dpos = dev(pos), *dout = devz<float>((size_t)T * H);
  braid_k_embedding(nullptr, BRAID_F32, BRAID_I32, dtok, dtab, dpos, dout, T, Sq, Vv, H);
  got = host(dout, (size_t)T * H);
  std::vector<double> ref3((size_t)T * H);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      ref3[t * H + h] = (double)table[tok[t] * H + h] + pos[(t % Sq) * H + h];
  report("embedding + positions", got, ref3, 1e-6);

  V g = randv(1000, 4.0f), u = randv(1000);
  float *dg = dev(g), *du = dev(u), *dglu = devz<float>(1000);
  braid_k_glu(nullptr, BRAID_F32, BRAID_ACT_SILU, dg, du, dglu, 1000);
  got = host(dglu, 1000);
  std::vector<double> ref4(1000);
  for (int i = 0; i < 1000; ++i)
    ref4[i] = g[i] / (1.0 + std::exp(-(double)g[i])) * u[i];
  report("glu silu", got, ref4, 1e-6);
  braid_k_unary(nullptr, BRAID_F32, BRAID_ACT_GELU, dg, dglu, 1000);
  got = host(dglu, 1000);
  for (int i = 0; i < 1000; ++i)
    ref4[i] = 0.5 * g[i] * (1.0 + std::erf(g[i] / std::sqrt(2.0)));
  report("unary gelu", got, ref4, 1e-6);
}

} // namespace

int main() {
  std::printf("kernel self-test (f32, null context):\n");
  testAttention(2, 70, 70, 4, 2, 16, 16, 1, 10000.0);
  testAttention(1, 100, 100, 8, 8, 128, 128, 1, 500000.0);
  testAttention(2, 19, 45, 4, 1, 64, 32, 0, 0.0);
  testAttention(1, 40, 40, 2, 2, 256, 256, 1, 10000.0);
  testAttentionBlocks(2, 16, 2, 4, 2, 16, 16, 1, 10000.0, 0);
  testAttentionBlocks(2, 16, 2, 4, 2, 16, 16, 1, 10000.0, 1);
  testAttentionBlocks(1, 96, 3, 2, 1, 64, 32, 1, 500000.0, 2);
  testAttentionBlocks(2, 80, 2, 2, 2, 8, 8, 0, 0.0, 1);
  testNorms();
  testSoftmax();
  testCrossEntropy();
  testMoe();
  testMamba();
  testLayout();
  std::printf("kernel self-test: %s\n", allOk ? "PASS" : "FAIL");
  return allOk ? 0 : 1;
}
