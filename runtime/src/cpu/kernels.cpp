//===- kernels.cpp - CPU kernels: elementwise, embedding, transpose -------===//
//
// The CPU reference kernels of braid/runtime.h. The other kernels live next
// to this file: matmul.cpp, attention.cpp, norms.cpp, loss.cpp, mamba.cpp,
// moe.cpp. Semantics: dialects/braid/IR/BraidOps.td.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cstring>

using namespace braid::cpu;

namespace {

template <typename T>
void unaryImpl(int act, const T *x, T *y, int64_t n) {
  using namespace braid;
  switch (act) { // one loop per function so that each inlines
  case BRAID_ACT_SILU: for (int64_t i = 0; i < n; ++i) store(y, i, silu(load(x, i))); break;
  case BRAID_ACT_GELU: for (int64_t i = 0; i < n; ++i) store(y, i, gelu(load(x, i))); break;
  case BRAID_ACT_GELU_TANH:
    for (int64_t i = 0; i < n; ++i) store(y, i, gelu_tanh(load(x, i)));
    break;
  case BRAID_ACT_SIGMOID: for (int64_t i = 0; i < n; ++i) store(y, i, sigmoid(load(x, i))); break;
  case BRAID_ACT_RELU: for (int64_t i = 0; i < n; ++i) store(y, i, relu(load(x, i))); break;
  case BRAID_ACT_EXP: for (int64_t i = 0; i < n; ++i) store(y, i, braid::exp(load(x, i))); break;
  case BRAID_ACT_NEG: for (int64_t i = 0; i < n; ++i) store(y, i, neg(load(x, i))); break;
  }
}

template <typename T>
void gluImpl(int act, const T *gate, const T *up, T *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    braid::store(y, i, braid::activation(act, braid::load(gate, i)) * braid::load(up, i));
}

template <typename E>
void transposeImpl(const E *x, E *y, int32_t rank, const int64_t *shape, const int64_t *perm) {
  // Input strides, then the input stride of each output dimension.
  int64_t inStride[32] = {}, outShape[32] = {}, step[32] = {}, idx[32] = {};
  int64_t s = 1, total = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    inStride[d] = s;
    s *= shape[d];
  }
  for (int32_t d = 0; d < rank; ++d) {
    outShape[d] = shape[perm[d]];
    step[d] = inStride[perm[d]];
    idx[d] = 0;
    total *= outShape[d];
  }
  if (total == 0)
    return;
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  const int32_t last = rank - 1;
  const int64_t inner = outShape[last], innerStep = step[last];
  int64_t src = 0; // input offset of idx (with idx[last] = 0)
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t j = 0; j < inner; ++j)
      y[o + j] = x[src + j * innerStep];
    // Advance the odometer over the outer dimensions.
    for (int32_t d = last - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d]) {
        src += step[d];
        break;
      }
      src -= step[d] * (outShape[d] - 1);
      idx[d] = 0;
    }
  }
}

template <typename T>
void embeddingImpl(braid_dtype index_dt, const void *tokens, const T *table, const T *pos, T *out,
                   int64_t num_tokens, int64_t seq, int64_t vocab, int64_t hidden) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    int64_t tok = loadIndex(tokens, index_dt, t, "embedding");
    if (tok < 0 || tok >= vocab)
      fail("embedding", "token %lld at position %lld is outside [0, %lld)", (long long)tok,
           (long long)t, (long long)vocab);
    const T *row = table + tok * hidden;
    T *dst = out + t * hidden;
    if (pos) {
      const T *p = pos + (t % seq) * hidden;
      for (int64_t h = 0; h < hidden; ++h)
        braid::store(dst, h, braid::load(row, h) + braid::load(p, h));
    } else {
      std::memcpy(static_cast<void *>(dst), static_cast<const void *>(row),
                  size_t(hidden) * sizeof(T));
    }
  }
}

} // namespace

extern "C" {

void braid_k_unary(braid_rt *, braid_dtype dt, braid_act act, const void *x, void *y, int64_t n) {
  checkAct(act, "unary");
  withFloatType(dt, "unary", [&](auto tag) {
    using T = decltype(tag);
    unaryImpl<T>(act, in<T>(x), out<T>(y), n);
  });
}

void braid_k_binary(braid_rt *, braid_dtype dt, braid_binop op, const void *a, const void *b,
                    void *y, int64_t n) {
  if (op != BRAID_BIN_ADD && op != BRAID_BIN_MUL)
    fail("binary", "unknown binary op %d", int(op));
  withFloatType(dt, "binary", [&](auto tag) {
    using T = decltype(tag);
    const T *pa = in<T>(a), *pb = in<T>(b);
    T *py = out<T>(y);
    if (op == BRAID_BIN_ADD)
      for (int64_t i = 0; i < n; ++i)
        braid::store(py, i, braid::load(pa, i) + braid::load(pb, i));
    else
      for (int64_t i = 0; i < n; ++i)
        braid::store(py, i, braid::load(pa, i) * braid::load(pb, i));
  });
}

void braid_k_glu(braid_rt *, braid_dtype dt, braid_act act, const void *gate, const void *up,
                 void *y, int64_t n) {
  checkAct(act, "glu");
  withFloatType(dt, "glu", [&](auto tag) {
    using T = decltype(tag);
    gluImpl<T>(act, in<T>(gate), in<T>(up), out<T>(y), n);
  });
}

void braid_k_transpose(braid_rt *, braid_dtype dt, const void *x, void *y, int32_t rank,
                       const int64_t *shape, const int64_t *perm) {
  if (rank < 0 || rank > 32)
    fail("transpose", "rank %d is outside [0, 32]", int(rank));
  unsigned seen = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || (seen >> perm[d] & 1u))
      fail("transpose", "the permutation is not a permutation of rank %d", int(rank));
    seen |= 1u << perm[d];
  }
  withElementType(dt, "transpose", [&](auto tag) {
    using E = decltype(tag);
    transposeImpl(in<E>(x), out<E>(y), rank, shape, perm);
  });
}

void braid_k_embedding(braid_rt *, braid_dtype dt, braid_dtype index_dt, const void *tokens,
                       const void *table, const void *pos, void *out_, int64_t num_tokens,
                       int64_t seq, int64_t vocab, int64_t hidden) {
  if (pos && seq <= 0)
    fail("embedding", "sequence length %lld must be positive", (long long)seq);
  withFloatType(dt, "embedding", [&](auto tag) {
    using T = decltype(tag);
    embeddingImpl<T>(index_dt, tokens, in<T>(table), pos ? in<T>(pos) : nullptr, out<T>(out_),
                     num_tokens, seq, vocab, hidden);
  });
}

} // extern "C"
