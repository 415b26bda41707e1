//===- kernel_grad_test.cu - device self-test of the backward CUDA kernels -===//
//
// Runs every backward and optimizer kernel of runtime.h on small f32 inputs
// with a null runtime context. Prints the relative error per kernel; exit 1
// if any exceeds its bound. The forward kernels: kernel_test.cu.
//
// Build: nvcc -O2 -std=c++17 -ccbin g++-12 -gencode arch=compute_90,code=sm_90 \
//   -I runtime/include -I runtime/src -DBRAID_RUNTIME_CUDA bench/gpu/kernel_grad_test.cu \
//   runtime/src/cuda/*.cu -lcublasLt -o kernel_grad_test
//
//===----------------------------------------------------------------------===//

#include "kernel_test_common.cuh"

#include <string>

namespace {

//===--- Backward and optimizer kernels -----------------------------------===//
//
// Gradients of the composite ops are checked by directional derivatives: for a
// random direction u of each operand, <grad, u> from the device must match the
// central difference of L(x) = <dy, f(x)> with f a f64 host forward written
// from BraidOps.td (error relative to sum |grad_i u_i|). Simple kernels are
// compared elementwise with f64 host loops.

using DV = std::vector<double>;
DV toD(const V &v) { return DV(v.begin(), v.end()); }

// <got, u> vs (L(x + eps u) - L(x - eps u)) / 2 eps.
template <typename F>
void checkDir(const char *name, const V &got, const V &x, F loss, double tol = 2e-4) {
  V u = randv(x.size());
  DV xp = toD(x), xm = toD(x);
  const double eps = 1e-5;
  for (size_t i = 0; i < x.size(); ++i) {
    xp[i] += eps * u[i];
    xm[i] -= eps * u[i];
  }
  double ref = (loss(xp) - loss(xm)) / (2 * eps), dot = 0, mag = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    dot += (double)got[i] * u[i];
    mag += std::fabs((double)got[i] * u[i]);
  }
  double rel = std::fabs(dot - ref) / (mag > 0 ? mag : 1);
  bool ok = rel <= tol && !std::isnan(dot);
  allOk &= ok;
  std::printf("  %-34s dir-deriv rel err %.2e %s\n", name, rel, ok ? "ok" : "FAIL");
}

double dotD(const DV &a, const V &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

DV hostAttention(const DV &q, const DV &k, const DV &v, int B, int S, int Skv, int H, int Hkv,
                 int D, int Dv, int causal, double scale, double theta) {
  auto rope = [&](const double *x, int pos, DV &o) { ropeRef(x, pos, D, theta, o); };
  DV out((size_t)B * S * H * Dv, 0.0), qr, kr;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < S; ++s) {
        int hk = h / (H / Hkv);
        rope(&q[(((size_t)b * S + s) * H + h) * D], s, qr);
        DV sc(Skv, -INFINITY);
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
        for (int t = 0; t < Skv; ++t)
          if (sc[t] != -INFINITY)
            for (int e = 0; e < Dv; ++e)
              out[(((size_t)b * S + s) * H + h) * Dv + e] +=
                  std::exp(sc[t] - mx) / sum * v[(((size_t)b * Skv + t) * Hkv + hk) * Dv + e];
      }
  return out;
}

/// dq, dk, dv against the directional derivatives of loss(q, k, v).
template <typename F>
void checkQkvGrads(const char *name, const V &gq, const V &gk, const V &gv, const V &q,
                   const V &k, const V &v, F loss) {
  DV qd = toD(q), kd = toD(k), vd = toD(v);
  std::string base(name);
  checkDir((base + " dq").c_str(), gq, q, [&](const DV &x) { return loss(x, kd, vd); });
  checkDir((base + " dk").c_str(), gk, k, [&](const DV &x) { return loss(qd, x, vd); });
  checkDir((base + " dv").c_str(), gv, v, [&](const DV &x) { return loss(qd, kd, x); });
}

void testAttentionGrad(int B, int S, int Skv, int H, int Hkv, int D, int Dv, int causal,
                       double theta) {
  V q = randv((size_t)B * S * H * D), k = randv((size_t)B * Skv * Hkv * D),
    v = randv((size_t)B * Skv * Hkv * Dv), g = randv((size_t)B * S * H * Dv);
  double scale = 1.0 / std::sqrt((double)D);
  float *pq = dev(q), *pk = dev(k), *pv = dev(v), *pg = dev(g);
  float *dq = devz<float>(q.size()), *dk = devz<float>(k.size()), *dv = devz<float>(v.size());
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
  braid_k_attention_grad(nullptr, BRAID_F32, pq, pk, pv, pg, dq, dk, dv, &p);
  V gq = host(dq, q.size()), gk = host(dk, k.size()), gv = host(dv, v.size());
  auto f = [&](const DV &a, const DV &b, const DV &c) {
    return dotD(hostAttention(a, b, c, B, S, Skv, H, Hkv, D, Dv, causal, scale, theta), g);
  };
  char name[96];
  std::snprintf(name, sizeof name, "attn_grad S%d/%d H%d/%d D%d/%d c%d r%d", S, Skv, H, Hkv, D,
                Dv, causal, theta > 0);
  checkQkvGrads(name, gq, gk, gv, q, k, v, f);
}

/// Context parallelism's backward by key blocks: the forward by blocks
/// (attention_block, attention_merge) gives the final lse, attention_delta
/// the rows' dout.out, and attention_block_grad accumulates each key block's
/// share of dq, dk, dv; together they are the gradient of attention over the
/// whole sequence (positions in order: block j holds keys j*Skv/blocks..).
void testAttentionBlockGrad(int B, int S, int blocks, int H, int Hkv, int D, int Dv,
                            int causal, double theta) {
  const int Sb = S / blocks;
  V q = randv((size_t)B * S * H * D), k = randv((size_t)B * S * Hkv * D),
    v = randv((size_t)B * S * Hkv * Dv), g = randv((size_t)B * S * H * Dv);
  double scale = 1.0 / std::sqrt((double)D);
  int64_t *pos = devz<int64_t>(S);
  braid_k_sequence_positions(nullptr, pos, S, 0, S, 0);
  // Key block j of a [B, S, Hkv, E] array: rows j*Sb.. of every batch.
  auto block = [&](const V &x, int E, int j) {
    V out((size_t)B * Sb * Hkv * E);
    for (int b = 0; b < B; ++b)
      std::copy_n(&x[((size_t)b * S + (size_t)j * Sb) * Hkv * E], (size_t)Sb * Hkv * E,
                  &out[(size_t)b * Sb * Hkv * E]);
    return out;
  };
  const size_t rows = (size_t)B * S * H;
  float *pq = dev(q), *pg = dev(g);
  float *out = devz<float>(rows * Dv), *lse = devz<float>(rows);
  float *bOut = devz<float>(rows * Dv), *bLse = devz<float>(rows), *delta = devz<float>(rows);
  std::vector<float *> pk(blocks), pv(blocks);
  const braid_attention_params p = {.batch = B,
                                    .seq = S,
                                    .seq_kv = Sb,
                                    .heads = H,
                                    .kv_heads = Hkv,
                                    .head_dim = D,
                                    .v_head_dim = Dv,
                                    .causal = causal,
                                    .scale = scale,
                                    .rope_theta = theta,
                                    .q_offset = 0};
  for (int j = 0; j < blocks; ++j) {
    pk[j] = dev(block(k, D, j));
    pv[j] = dev(block(v, Dv, j));
    braid_k_attention_block(nullptr, BRAID_F32, pq, pk[j], pv[j], pos, pos + (size_t)j * Sb,
                            j == 0 ? out : bOut, j == 0 ? lse : bLse, &p);
    if (j > 0)
      braid_k_attention_merge(nullptr, out, lse, bOut, bLse, (int64_t)rows, Dv);
  }
  braid_k_attention_delta(nullptr, BRAID_F32, pg, out, delta, (int64_t)rows, Dv);
  float *dq = devz<float>(q.size());
  BRAID_CUDA_CHECK(cudaMemset(dq, 0, sizeof(float) * q.size()));
  V gk(k.size()), gv(v.size());
  for (int j = 0; j < blocks; ++j) {
    size_t nk = (size_t)B * Sb * Hkv * D, nv = (size_t)B * Sb * Hkv * Dv;
    float *dk = devz<float>(nk), *dv = devz<float>(nv);
    BRAID_CUDA_CHECK(cudaMemset(dk, 0, sizeof(float) * nk));
    BRAID_CUDA_CHECK(cudaMemset(dv, 0, sizeof(float) * nv));
    braid_k_attention_block_grad(nullptr, BRAID_F32, pq, pk[j], pv[j], pg, pos,
                                 pos + (size_t)j * Sb, lse, delta, dq, dk, dv, &p);
    V hk = host(dk, nk), hv = host(dv, nv);
    for (int b = 0; b < B; ++b) {
      std::copy_n(&hk[(size_t)b * Sb * Hkv * D], (size_t)Sb * Hkv * D,
                  &gk[((size_t)b * S + (size_t)j * Sb) * Hkv * D]);
      std::copy_n(&hv[(size_t)b * Sb * Hkv * Dv], (size_t)Sb * Hkv * Dv,
                  &gv[((size_t)b * S + (size_t)j * Sb) * Hkv * Dv]);
    }
    cudaFree(dk);
    cudaFree(dv);
  }
  V gq = host(dq, q.size());
  auto f = [&](const DV &a, const DV &b, const DV &c) {
    return dotD(hostAttention(a, b, c, B, S, S, H, Hkv, D, Dv, causal, scale, theta), g);
  };
  char name[96];
  std::snprintf(name, sizeof name, "attn_block_grad %d blocks H%d/%d D%d c%d", blocks, H, Hkv, D,
                causal);
  checkQkvGrads(name, gq, gk, gv, q, k, v, f);
  for (int j = 0; j < blocks; ++j) {
    cudaFree(pk[j]);
    cudaFree(pv[j]);
  }
  for (float *p : {pq, pg, out, lse, bOut, bLse, delta, dq})
    cudaFree(p);
  cudaFree(pos);
}

void testNormGrads() {
  int rows = 150, H = 300; // 3 row chunks
  V x = randv((size_t)rows * H, 3.0f), gm = randv(H), bt = randv(H), g = randv((size_t)rows * H);
  float *px = dev(x), *pgm = dev(gm), *pg = dev(g);
  float *dx = devz<float>(x.size()), *dgm = devz<float>(H), *dbt = devz<float>(H);
  auto rms = [&](const DV &xx, const DV &gg) {
    double L = 0;
    for (int r = 0; r < rows; ++r) {
      double ms = 0;
      for (int i = 0; i < H; ++i)
        ms += xx[r * H + i] * xx[r * H + i];
      double inv = 1 / std::sqrt(ms / H + 1e-5);
      for (int i = 0; i < H; ++i)
        L += xx[r * H + i] * inv * gg[i] * g[r * H + i];
    }
    return L;
  };
  braid_k_rms_norm_grad(nullptr, BRAID_F32, px, pgm, pg, dx, dgm, rows, H, 1e-5);
  DV gmd = toD(gm), xd = toD(x), btd = toD(bt);
  checkDir("rms_norm_grad dx", host(dx, x.size()), x, [&](const DV &a) { return rms(a, gmd); });
  checkDir("rms_norm_grad dgamma", host(dgm, H), gm, [&](const DV &a) { return rms(xd, a); });
  auto ln = [&](const DV &xx, const DV &gg, const DV &bb) {
    double L = 0;
    for (int r = 0; r < rows; ++r) {
      double m = 0, var = 0;
      for (int i = 0; i < H; ++i)
        m += xx[r * H + i];
      m /= H;
      for (int i = 0; i < H; ++i)
        var += (xx[r * H + i] - m) * (xx[r * H + i] - m);
      double inv = 1 / std::sqrt(var / H + 1e-5);
      for (int i = 0; i < H; ++i)
        L += ((xx[r * H + i] - m) * inv * gg[i] + bb[i]) * g[r * H + i];
    }
    return L;
  };
  braid_k_layer_norm_grad(nullptr, BRAID_F32, px, pgm, pg, dx, dgm, dbt, rows, H, 1e-5);
  checkDir("layer_norm_grad dx", host(dx, x.size()), x,
           [&](const DV &a) { return ln(a, gmd, btd); });
  checkDir("layer_norm_grad dgamma", host(dgm, H), gm,
           [&](const DV &a) { return ln(xd, a, btd); });
  checkDir("layer_norm_grad dbeta", host(dbt, H), bt,
           [&](const DV &a) { return ln(xd, gmd, a); });
}

void testLossEmbeddingGrads() {
  int rows = 45, vocab = 1000;
  V x = randv((size_t)rows * vocab, 5.0f);
  std::vector<int32_t> lab(rows);
  for (int r = 0; r < rows; ++r)
    lab[r] = (r * 7919) % vocab;
  float *px = dev(x), *pdl = dev(V{2.5f}), *pdx = devz<float>(x.size());
  int32_t *plab = dev(lab);
  braid_k_cross_entropy_grad(nullptr, BRAID_F32, BRAID_I32, px, plab, pdl, pdx, rows, vocab);
  V got = host(pdx, x.size());
  std::vector<double> ref(x.size());
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int i = 0; i < vocab; ++i)
      m = std::max(m, (double)x[r * vocab + i]);
    for (int i = 0; i < vocab; ++i)
      s += std::exp(x[r * vocab + i] - m);
    for (int i = 0; i < vocab; ++i)
      ref[r * vocab + i] = 2.5 / rows * (std::exp(x[r * vocab + i] - m) / s - (i == lab[r]));
  }
  report("cross_entropy_grad", got, ref, 1e-5);

  int T = 300, Vv = 37, Hd = 20, Sq = 7, P = 9; // many repeats per token
  std::vector<long long> tok(T);
  for (int t = 0; t < T; ++t)
    tok[t] = (t * t + 3 * t) % Vv;
  V g = randv((size_t)T * Hd);
  long long *ptok = dev(tok);
  float *pg = dev(g), *ptab = devz<float>((size_t)Vv * Hd), *ppos = devz<float>((size_t)P * Hd);
  braid_k_embedding_grad(nullptr, BRAID_F32, BRAID_I64, ptok, pg, ptab, T, Vv, Hd);
  got = host(ptab, (size_t)Vv * Hd);
  ref.assign((size_t)Vv * Hd, 0.0);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Hd; ++h)
      ref[tok[t] * Hd + h] += g[t * Hd + h];
  report("embedding_grad (i64 tokens)", got, ref, 1e-6);
  braid_k_position_grad(nullptr, BRAID_F32, pg, ppos, T, Sq, P, Hd);
  got = host(ppos, (size_t)P * Hd);
  ref.assign((size_t)P * Hd, 0.0);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Hd; ++h)
      ref[(t % Sq) * Hd + h] += g[t * Hd + h];
  report("position_grad", got, ref, 1e-6);
}

void testMambaGrads() {
  int B = 2, S = 150, Dm = 70, Kc = 4; // S > 64: several checkpoint chunks
  V x = randv((size_t)B * S * Dm), w = randv((size_t)Dm * Kc), g = randv((size_t)B * S * Dm);
  float *px = dev(x), *pw = dev(w), *pg = dev(g);
  float *dx = devz<float>(x.size()), *dw = devz<float>(w.size()), *db = devz<float>(Dm);
  braid_k_conv1d_grad(nullptr, BRAID_F32, px, pw, pg, dx, dw, db, B, S, Dm, Kc);
  auto conv = [&](const DV &xx, const DV &ww) {
    double L = 0;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < S; ++t)
        for (int c = 0; c < Dm; ++c) {
          double acc = 0;
          for (int j = 0; j < Kc; ++j) {
            int src = t - (Kc - 1) + j;
            if (src >= 0)
              acc += ww[c * Kc + j] * xx[((size_t)b * S + src) * Dm + c];
          }
          L += acc * g[((size_t)b * S + t) * Dm + c];
        }
    return L;
  };
  DV xd = toD(x), wd = toD(w);
  checkDir("conv1d_grad dx", host(dx, x.size()), x, [&](const DV &a) { return conv(a, wd); });
  checkDir("conv1d_grad dw", host(dw, w.size()), w, [&](const DV &a) { return conv(xd, a); });
  V gotb = host(db, Dm);
  std::vector<double> refb(Dm, 0.0);
  for (size_t i = 0; i < g.size(); ++i)
    refb[i % Dm] += g[i];
  report("conv1d_grad db", gotb, refb, 1e-5);

  for (int N : {16, 40}) {
    V delta = randv((size_t)B * S * Dm), A = randv((size_t)Dm * N), Bm = randv((size_t)B * S * N),
      Cm = randv((size_t)B * S * N), Dd = randv(Dm);
    for (float &a : A)
      a = -std::fabs(a) - 0.1f;
    float *pd = dev(delta), *pA = dev(A), *pB = dev(Bm), *pC = dev(Cm), *pD = dev(Dd);
    float *gx = devz<float>(x.size()), *gd = devz<float>(x.size()), *gA = devz<float>(A.size()),
          *gB = devz<float>(Bm.size()), *gC = devz<float>(Cm.size()), *gD = devz<float>(Dm);
    const braid_scan_params p = {
        .batch = B, .seq = S, .channels = Dm, .state = N, .delta_softplus = 1};
    braid_k_selective_scan_grad(nullptr, BRAID_F32, px, pd, pA, pB, pC, pD, pg, gx, gd, gA, gB,
                                gC, gD, &p);
    std::vector<DV> ops = {toD(x), toD(delta), toD(A), toD(Bm), toD(Cm), toD(Dd)};
    auto scan = [&](int which, const DV &val) {
      const DV &xx = which == 0 ? val : ops[0], &dl = which == 1 ? val : ops[1],
               &AA = which == 2 ? val : ops[2], &BB = which == 3 ? val : ops[3],
               &CC = which == 4 ? val : ops[4], &DD = which == 5 ? val : ops[5];
      double L = 0;
      for (int b = 0; b < B; ++b)
        for (int d = 0; d < Dm; ++d) {
          DV h(N, 0.0);
          for (int t = 0; t < S; ++t) {
            size_t xi = ((size_t)b * S + t) * Dm + d;
            double dt = std::max(dl[xi], 0.0) + std::log1p(std::exp(-std::fabs(dl[xi])));
            double out = 0;
            for (int n = 0; n < N; ++n) {
              h[n] = std::exp(dt * AA[d * N + n]) * h[n] + dt * BB[((size_t)b * S + t) * N + n] * xx[xi];
              out += CC[((size_t)b * S + t) * N + n] * h[n];
            }
            L += (out + DD[d] * xx[xi]) * g[xi];
          }
        }
      return L;
    };
    const char *names[6] = {"dx", "ddelta", "dA", "dB", "dC", "dD"};
    V gots[6] = {host(gx, x.size()), host(gd, x.size()), host(gA, A.size()),
                 host(gB, Bm.size()), host(gC, Cm.size()), host(gD, Dm)};
    const V *vals[6] = {&x, &delta, &A, &Bm, &Cm, &Dd};
    for (int i = 0; i < 6; ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "selective_scan_grad N=%d %s", N, names[i]);
      checkDir(name, gots[i], *vals[i], [&](const DV &a) { return scan(i, a); }, 1e-3);
    }
  }
}

void testMoeGrads() {
  int T = 50, E = 6, K = 2, H = 24, C = 12;
  V logits = randv((size_t)T * E, 2.0f);
  float *plog = dev(logits), *pw = devz<float>((size_t)T * K);
  int32_t *pidx = devz<int32_t>((size_t)T * K);
  for (int normalize = 0; normalize < 2; ++normalize) {
    braid_k_router(nullptr, BRAID_F32, plog, pw, pidx, T, E, K, normalize);
    std::vector<int32_t> idx = host(pidx, (size_t)T * K);
    V gw = randv((size_t)T * K);
    float *pgw = dev(gw), *pdl = devz<float>(logits.size());
    braid_k_router_grad(nullptr, BRAID_F32, plog, pidx, pgw, pdl, T, E, K, normalize);
    checkDir(normalize ? "router_grad (normalize)" : "router_grad", host(pdl, logits.size()),
             logits, [&](const DV &lg) {
               double L = 0;
               for (int t = 0; t < T; ++t) {
                 double m = -INFINITY, s = 0, picked = 0;
                 for (int e = 0; e < E; ++e)
                   m = std::max(m, lg[t * E + e]);
                 for (int e = 0; e < E; ++e)
                   s += std::exp(lg[t * E + e] - m);
                 for (int j = 0; j < K; ++j)
                   picked += std::exp(lg[t * E + idx[t * K + j]] - m) / s;
                 for (int j = 0; j < K; ++j)
                   L += std::exp(lg[t * E + idx[t * K + j]] - m) / s / (normalize ? picked : 1.0) *
                        gw[t * K + j];
               }
               return L;
             });
  }
  std::vector<int32_t> idx = host(pidx, (size_t)T * K);
  V w = host(pw, (size_t)T * K);
  std::vector<int> slot((size_t)T * K, -1), fill(E, 0);
  for (int j = 0; j < K; ++j)
    for (int t = 0; t < T; ++t) {
      int e = idx[t * K + j];
      if (fill[e] < C)
        slot[t * K + j] = fill[e]++;
    }
  V dd = randv((size_t)E * C * H);
  float *pdd = dev(dd), *pdx = devz<float>((size_t)T * H);
  braid_k_dispatch_grad(nullptr, BRAID_F32, pdd, pidx, pdx, T, H, K, E, C, 1);
  V got = host(pdx, (size_t)T * H);
  std::vector<double> ref((size_t)T * H, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j)
      if (slot[t * K + j] >= 0)
        for (int h = 0; h < H; ++h)
          ref[t * H + h] += dd[((size_t)idx[t * K + j] * C + slot[t * K + j]) * H + h];
  report("dispatch_grad", got, ref, 1e-6);
  V eo = randv((size_t)E * C * H), gy = randv((size_t)T * H);
  float *peo = dev(eo), *pgy = dev(gy), *pde = devz<float>(eo.size()),
        *pdw = devz<float>((size_t)T * K);
  braid_k_combine_grad(nullptr, BRAID_F32, peo, pw, pidx, pgy, pde, pdw, T, H, K, E, C, 1);
  got = host(pde, eo.size());
  ref.assign(eo.size(), 0.0);
  std::vector<double> refw((size_t)T * K, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j)
      if (slot[t * K + j] >= 0)
        for (int h = 0; h < H; ++h) {
          size_t e = ((size_t)idx[t * K + j] * C + slot[t * K + j]) * H + h;
          ref[e] = (double)w[t * K + j] * gy[t * H + h];
          refw[t * K + j] += (double)gy[t * H + h] * eo[e];
        }
  report("combine_grad dexpert_out", got, ref, 1e-6);
  report("combine_grad dweights", host(pdw, (size_t)T * K), refw, 1e-5);
}

void testOptimizerAndMisc() {
  int rows = 200, n = 77;
  V x = randv((size_t)rows * n);
  float *px = dev(x), *py = devz<float>(n);
  braid_k_sum_rows(nullptr, BRAID_F32, px, py, rows, n);
  std::vector<double> ref(n, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)
      ref[c] += x[r * n + c];
  report("sum_rows", host(py, n), ref, 1e-5);

  const braid_act acts[] = {BRAID_ACT_SILU, BRAID_ACT_GELU, BRAID_ACT_GELU_TANH,
                            BRAID_ACT_SIGMOID, BRAID_ACT_RELU};
  const char *actNames[] = {"silu", "gelu", "gelu_tanh", "sigmoid", "relu"};
  V a = randv(1000, 4.0f), g = randv(1000);
  float *pa = dev(a), *pg = dev(g), *pd = devz<float>(1000);
  for (int k = 0; k < 5; ++k) {
    braid_k_activation_grad(nullptr, BRAID_F32, acts[k], pa, pg, pd, 1000);
    V got = host(pd, 1000);
    std::vector<double> r(1000);
    for (int i = 0; i < 1000; ++i) {
      double xv = a[i], h = 1e-6, d;
      auto f = [&](double z) {
        switch (k) {
        case 0: return z / (1 + std::exp(-z));
        case 1: return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
        case 2: return 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
        case 3: return 1 / (1 + std::exp(-z));
        default: return z > 0 ? z : 0.0;
        }
      };
      d = k == 4 ? (xv > 0 ? 1.0 : 0.0) : (f(xv + h) - f(xv - h)) / (2 * h);
      r[i] = g[i] * d;
    }
    char name[64];
    std::snprintf(name, sizeof name, "activation_grad %s", actNames[k]);
    report(name, got, r, 1e-5);
  }

  // sum_squares accumulates; clip; sgd; adamw (two steps); increment; convert; zero.
  int m = 5000;
  V p = randv(m), gr = randv(m, 3.0f);
  float *pp = dev(p), *pgr = dev(gr), *pss = dev(V{1.5f}), *pcoef = devz<float>(1),
        *pstep = dev(V{0.0f}), *pm = dev(V(m, 0.0f)), *pv = dev(V(m, 0.0f));
  braid_k_sum_squares(nullptr, BRAID_F32, pgr, pss, m);
  double ss = 1.5;
  for (float v : gr)
    ss += (double)v * v;
  report("sum_squares (+= 1.5)", host(pss, 1), {ss}, 1e-6);
  braid_k_clip_coefficient(nullptr, pss, pcoef, 10.0);
  double coef = std::min(1.0, 10.0 / (std::sqrt(ss) + 1e-6));
  report("clip_coefficient", host(pcoef, 1), {coef}, 1e-6);
  std::vector<double> pr(p.begin(), p.end()), mr(m, 0.0), vr(m, 0.0);
  for (int step = 1; step <= 2; ++step) {
    braid_k_increment(nullptr, pstep);
    const braid_adamw_params hyper = {
        .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
    braid_k_adamw_update(nullptr, BRAID_F32, pp, pgr, pm, pv, pcoef, pstep, m, &hyper);
    for (int i = 0; i < m; ++i) {
      double gg = coef * gr[i];
      mr[i] = 0.9 * mr[i] + 0.1 * gg;
      vr[i] = 0.95 * vr[i] + 0.05 * gg * gg;
      pr[i] -= 1e-2 * (mr[i] / (1 - std::pow(0.9, step)) /
                           (std::sqrt(vr[i] / (1 - std::pow(0.95, step))) + 1e-8) +
                       0.1 * pr[i]);
    }
  }
  report("increment", host(pstep, 1), {2.0}, 0);
  report("adamw_update (2 steps) p", host(pp, m), pr, 1e-5);
  report("adamw_update m", host(pm, m), mr, 1e-5);
  report("adamw_update v", host(pv, m), vr, 1e-5);
  braid_k_sgd_update(nullptr, BRAID_F32, pp, pgr, nullptr, m, 0.1, 0.01);
  for (int i = 0; i < m; ++i)
    pr[i] -= 0.1 * (gr[i] + 0.01 * pr[i]);
  report("sgd_update (no coef)", host(pp, m), pr, 1e-5);
  __nv_bfloat16 *pb = devz<__nv_bfloat16>(m);
  float *pback = devz<float>(m);
  braid_k_convert(nullptr, BRAID_F32, BRAID_BF16, pgr, pb, m);
  braid_k_convert(nullptr, BRAID_BF16, BRAID_F32, pb, pback, m);
  report("convert f32 -> bf16 -> f32", host(pback, m), toD(gr), 1.0 / 256);
  braid_k_zero(nullptr, BRAID_F32, pback, m);
  report("zero", host(pback, m), std::vector<double>(m, 0.0), 0);
}
} // namespace

int main() {
  std::printf("backward and optimizer kernels (f32, null context):\n");
  testAttentionGrad(2, 70, 70, 4, 2, 16, 16, 1, 10000.0);
  testAttentionGrad(2, 19, 45, 4, 1, 64, 32, 0, 0.0);
  testAttentionBlockGrad(2, 64, 2, 4, 2, 16, 16, 1, 10000.0);
  testAttentionBlockGrad(1, 48, 3, 2, 1, 32, 16, 0, 0.0);
  testAttentionGrad(1, 40, 40, 2, 2, 128, 96, 1, 500000.0);
  testNormGrads();
  testLossEmbeddingGrads();
  testMambaGrads();
  testMoeGrads();
  testOptimizerAndMisc();
  std::printf("kernel grad self-test: %s\n", allOk ? "PASS" : "FAIL");
  return allOk ? 0 : 1;
}
