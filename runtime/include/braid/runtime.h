/*===- runtime.h - Braid runtime: the C ABI of generated programs ---------===*
 *
 * The compiler emits one C++ source per program; it includes this header and
 * calls only what it declares. The same generated text compiles with the host
 * C++ compiler (CPU backend, reference kernels) and with nvcc (CUDA backend:
 * cuBLASLt GEMMs, CUDA kernels, work on streams). Nothing here depends on
 * MLIR.
 *
 * Memory: a program works in one arena whose layout the compiler planned
 * statically (parameters, inputs, activations at fixed byte offsets). The
 * generated code announces every buffer's lifetime with braid_rt_alloc /
 * braid_rt_free; the runtime checks that live buffers never overlap and
 * measures the peak, which must equal the planned arena size.
 *
 * Pointers passed to kernels are device pointers on the CUDA backend and host
 * pointers on the CPU backend. Floating-point tensors are stored as f32, bf16
 * or f16 (braid_dtype); kernels accumulate in f32.
 *===----------------------------------------------------------------------===*/

#ifndef BRAID_RUNTIME_H
#define BRAID_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Types ------------------------------------------------------------===*/

typedef enum braid_dtype {
  BRAID_F32 = 0,
  BRAID_BF16 = 1,
  BRAID_F16 = 2,
  BRAID_I32 = 3,
  BRAID_I64 = 4,
} braid_dtype;

/* Bytes of one element. */
int64_t braid_dtype_size(braid_dtype dtype);

typedef enum braid_init {
  BRAID_INIT_NORMAL = 0, /* std * N(0, 1), counter-based (see rng spec) */
  BRAID_INIT_ZEROS = 1,
  BRAID_INIT_ONES = 2,
  BRAID_INIT_TOKENS = 3, /* integers uniform in [0, bound) */
} braid_init;

/* Pointwise functions; the numbering is shared with the compiler. */
typedef enum braid_act {
  BRAID_ACT_SILU = 0,
  BRAID_ACT_GELU = 1,      /* 0.5 x (1 + erf(x / sqrt 2)) */
  BRAID_ACT_GELU_TANH = 2, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  BRAID_ACT_SIGMOID = 3,
  BRAID_ACT_RELU = 4,
  BRAID_ACT_EXP = 5,
  BRAID_ACT_NEG = 6,
} braid_act;

typedef enum braid_binop {
  BRAID_BIN_ADD = 0,
  BRAID_BIN_MUL = 1,
} braid_binop;

typedef enum braid_redop {
  BRAID_RED_SUM = 0,
  BRAID_RED_MAX = 1,
  BRAID_RED_MIN = 2,
} braid_redop;

/* A tensor the program owns at a fixed arena offset: parameters and inputs.
 * `init` says how the runtime fills it before the first step; `bound` is the
 * exclusive upper bound of BRAID_INIT_TOKENS draws. */
typedef struct braid_tensor_desc {
  const char *name;
  braid_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  braid_init init;
  double std;
  int64_t bound;
  int64_t offset; /* bytes from the arena base */
} braid_tensor_desc;

typedef struct braid_rt braid_rt; /* opaque: backend, stream, arena, trace */

/* What a generated program exports (braid_program_get). */
typedef struct braid_program {
  const char *name;
  int64_t arena_bytes; /* planned peak: persistent tensors + activations */
  int32_t num_params;
  const braid_tensor_desc *params;
  int32_t num_inputs;
  const braid_tensor_desc *inputs;
  int64_t loss_offset; /* a 0-d f32 in the arena, written by each step */
  void (*step)(braid_rt *rt, char *arena);
} braid_program;

const braid_program *braid_program_get(void);

/*===--- Arena lifetime checks, tracing, dumps ----------------------------===*/

/* A buffer [offset, offset + bytes) becomes live / dead. Aborts with a
 * message naming both buffers if a live buffer overlaps another. */
void braid_rt_alloc(braid_rt *rt, int64_t offset, int64_t bytes, const char *name);
void braid_rt_free(braid_rt *rt, int64_t offset, int64_t bytes);

/* Brackets one kernel (or generated fused kernel) for the trace. `op` is the
 * op name (e.g. "linear"), `label` the value's name (may be empty). */
void braid_rt_op_begin(braid_rt *rt, const char *op, const char *label);
void braid_rt_op_end(braid_rt *rt);
/* Matrix-product FLOPs of the innermost open op (2 x multiply-accumulates),
 * recorded in its trace event so that tools report achieved FLOP/s. */
void braid_rt_op_flops(braid_rt *rt, double flops);

/* Announces a named value after it is computed; the runtime dumps it as
 * NAME.npy when dumping is on. `scope` is the call path ("layers.3"). */
void braid_rt_value(braid_rt *rt, const char *scope, const char *name, const void *data,
                    braid_dtype dtype, int32_t rank, const int64_t *shape);

/* Scope of the calls in flight, for value names: push on call, pop on return. */
void braid_rt_push_scope(braid_rt *rt, const char *scope);
void braid_rt_pop_scope(braid_rt *rt);

/*===--- Communication ----------------------------------------------------===*
 * A communicator per grid-axis group ("world" for all ranks). Collectives are
 * issued on the runtime's communication stream (GPU) or thread (CPU) and
 * complete through an event; braid_event_wait orders the compute stream after
 * them. NCCL on GPUs, MPI on CPU ranks; a single rank uses the self backend.
 */

typedef struct braid_comm braid_comm;
typedef struct braid_event braid_event;

braid_comm *braid_rt_comm(braid_rt *rt, const char *axes); /* e.g. "world", "tp", "dp,tp" */
int32_t braid_comm_size(const braid_comm *comm);
int32_t braid_comm_rank(const braid_comm *comm);

braid_event *braid_all_reduce(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count, braid_dtype dtype, braid_redop op);
braid_event *braid_all_gather(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype);
braid_event *braid_reduce_scatter(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                                  int64_t count_per_rank, braid_dtype dtype, braid_redop op);
braid_event *braid_all_to_all(braid_rt *rt, braid_comm *comm, const void *send, void *recv,
                              int64_t count_per_rank, braid_dtype dtype);
braid_event *braid_broadcast(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                             braid_dtype dtype, int32_t root);
braid_event *braid_send(braid_rt *rt, braid_comm *comm, const void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer);
braid_event *braid_recv(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer);
/* Makes later compute wait for the collective, then releases the event. */
void braid_event_wait(braid_rt *rt, braid_event *event);

/*===--- Kernels ----------------------------------------------------------===*
 * Shapes are given flattened as the op semantics need them (see BraidOps.td);
 * optional operands are NULL when absent. No kernel allocates memory.
 */

/* out[t, :] = table[tokens[t], :] (+ pos[t % seq, :] when pos != NULL). */
void braid_k_embedding(braid_rt *rt, braid_dtype dt, braid_dtype index_dt, const void *tokens,
                       const void *table, const void *pos, void *out, int64_t num_tokens,
                       int64_t seq, int64_t vocab, int64_t hidden);
/* y[rows, n] = x[rows, k] W (+ b), W = w[k, n] or w[n, k]^T. */
void braid_k_linear(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t rows, int64_t k, int64_t n, int32_t transpose_w);
/* c[batch, m, n] = A[batch] B[batch], A = a[m, k] or a[k, m]^T, B = b[k, n] or b[n, k]^T. */
void braid_k_batch_matmul(braid_rt *rt, braid_dtype dt, const void *a, const void *b, void *c,
                          int64_t batch, int64_t m, int64_t k, int64_t n, int32_t transpose_a,
                          int32_t transpose_b);
/* q [B, S, Hq, D], k [B, Skv, Hkv, D], v [B, Skv, Hkv, Dv] -> out [B, S, Hq, Dv];
 * rope_theta <= 0 means no rotary embedding. */
void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k, const void *v,
                       void *out, int64_t batch, int64_t seq, int64_t seq_kv, int64_t heads,
                       int64_t kv_heads, int64_t head_dim, int64_t v_head_dim, int32_t causal,
                       double scale, double rope_theta);
void braid_k_rms_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma, void *y,
                      int64_t rows, int64_t hidden, double epsilon);
void braid_k_layer_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t hidden, double epsilon);
void braid_k_unary(braid_rt *rt, braid_dtype dt, braid_act act, const void *x, void *y, int64_t n);
void braid_k_binary(braid_rt *rt, braid_dtype dt, braid_binop op, const void *a, const void *b,
                    void *y, int64_t n);
/* y = act(gate) * up */
void braid_k_glu(braid_rt *rt, braid_dtype dt, braid_act act, const void *gate, const void *up,
                 void *y, int64_t n);
/* y = x with dimensions permuted: y.shape[i] = shape[perm[i]]. */
void braid_k_transpose(braid_rt *rt, braid_dtype dt, const void *x, void *y, int32_t rank,
                       const int64_t *shape, const int64_t *perm);
/* loss (0-d f32) = mean over rows of logsumexp(logits[r]) - logits[r, labels[r]]. */
void braid_k_cross_entropy(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                           const void *logits, const void *labels, float *loss, int64_t rows,
                           int64_t vocab);
/* x [B, S, C], w [C, K], b [C] -> y [B, S, C], causal depthwise. */
void braid_k_conv1d(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t batch, int64_t seq, int64_t channels, int64_t kernel);
/* x, delta [B, S, Di], A [Di, N], Bm, Cm [B, S, N], D [Di] -> y [B, S, Di]. */
void braid_k_selective_scan(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            int64_t batch, int64_t seq, int64_t channels, int64_t state,
                            int32_t delta_softplus);
/* logits [T, E] -> weights [T, k] (dt), indices [T, k] (i32). */
void braid_k_router(braid_rt *rt, braid_dtype dt, const void *logits, void *weights,
                    int32_t *indices, int64_t tokens, int64_t experts, int64_t top_k,
                    int32_t normalize);
/* x [T, H], indices [T, k] -> out [E, C, H] (slot order: j-major, then t). */
void braid_k_dispatch(braid_rt *rt, braid_dtype dt, const void *x, const int32_t *indices,
                      void *out, int64_t tokens, int64_t hidden, int64_t top_k, int64_t experts,
                      int64_t capacity);
/* expert_out [E, C, H], weights [T, k], indices [T, k] -> out [T, H]. */
void braid_k_combine(braid_rt *rt, braid_dtype dt, const void *expert_out, const void *weights,
                     const int32_t *indices, void *out, int64_t tokens, int64_t hidden,
                     int64_t top_k, int64_t experts, int64_t capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BRAID_RUNTIME_H */
