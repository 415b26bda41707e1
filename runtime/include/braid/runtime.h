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
  /* Mamba's state-space inits (exact definitions: braid_ref/rng.py). */
  BRAID_INIT_S4D_REAL = 4, /* log(1 + i mod bound), bound the last dimension */
  BRAID_INIT_MAMBA_DT = 5, /* softplus^-1(dt), dt log-uniform in [1e-3, 0.1] */
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
 * exclusive upper bound of BRAID_INIT_TOKENS draws and the period (the global
 * last dimension) of BRAID_INIT_S4D_REAL. */
typedef struct braid_tensor_desc {
  const char *name;
  braid_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  braid_init init;
  double std;
  int64_t bound;
  int64_t offset; /* bytes from the arena base */
  /* SPMD sharding; NULL when the tensor is whole on every rank. `global_shape`
   * is the tensor's global shape and split_axes[d] the grid axes splitting
   * dimension d, comma-separated, major to minor ("tp", "dp,tp"; NULL or ""
   * when not split). `shape` is then the local shape, ceil(global / n) along
   * a dimension split over n ranks; the rank whose coordinate over the listed
   * axes (linear, major to minor) is c holds the global indices
   * [c * local, (c + 1) * local) of that dimension. Global indices past the
   * global size are padding: zero on every rank whatever `init` says. */
  const int64_t *global_shape;
  const char *const *split_axes;
  /* 1 when another program of the run (a lower pipeline stage) holds the same
   * tensor (a tied embedding, the optimizer's step counter) and dumps it:
   * this program dumps it neither after init nor as updated.NAME. 0 (what
   * programs that omit the field get): the program dumps it. */
  int32_t mirror;
  /* A ZeRO range of a sharded block (a ZeRO-1/2 optimizer moment of a
   * tp-sharded weight): `shape` (rank 1) is this rank's range of the flat
   * block, the ranks of group `zero_axes` holding consecutive ranges in group
   * order, and (global_shape, split_axes) describe the flat block over them;
   * the block itself has local shape block_shape (of rank block_rank) and
   * lies in the global tensor as (block_global_shape, block_split_axes) say.
   * Dumps gather the block over zero_axes, then place it. NULL (what programs
   * that omit the fields get): none. */
  const char *zero_axes;
  int32_t block_rank;
  const int64_t *block_shape;
  const int64_t *block_global_shape;
  const char *const *block_split_axes;
} braid_tensor_desc;

typedef struct braid_rt braid_rt; /* opaque: backend, stream, arena, trace */

/* The kinds of program entry points, numbered as the compiler's EntryKind. */
typedef enum braid_entry_kind {
  BRAID_ENTRY_TRAIN_STEP = 0,
  BRAID_ENTRY_FORWARD = 1,
  BRAID_ENTRY_PREFILL = 2,
  BRAID_ENTRY_DECODE = 3,
} braid_entry_kind;

/* What a generated program exports (braid_program_get). */
typedef struct braid_program {
  const char *name;
  int64_t arena_bytes; /* planned peak: persistent tensors + activations */
  int32_t num_params;
  const braid_tensor_desc *params;
  int32_t num_inputs;
  const braid_tensor_desc *inputs;
  int64_t loss_offset; /* a training step's loss (its output 0, a 0-d f32); -1 otherwise */
  void (*step)(braid_rt *rt, char *arena);
  /* The grid the program was partitioned for ("dp=2,tp=2"); NULL or "" for
   * a single-rank program. */
  const char *grid;
  /* The axis groups whose communicators the program uses ("dp,tp", "pp",
   * "world"), which the runtime creates in this order before initializing
   * anything. Creating a communicator is collective over the world
   * (MPI_Comm_split, ncclCommSplit), and pipeline stages are different
   * programs that ask for their groups at different points of their steps:
   * every program of a run lists the same groups in the same order. */
  int32_t num_comm_groups;
  const char *const *comm_groups;
  /* Pipeline parallelism (MPMD): the grid axis the stages lie along ("pp")
   * and this program's coordinate on it; the program runs on the ranks whose
   * coordinate on `stage_axis` is `stage` (launched together with the other
   * stages' programs, e.g. mpirun -np K stage0 : -np K stage1). Its dumps
   * are gathered over the stage group (every other grid axis) and written by
   * the stage leader (coordinate 0 on those axes). NULL: the program runs on
   * every rank of the grid. */
  const char *stage_axis;
  int32_t stage;
  /* Context parallelism with zigzag load balancing: the grid axis ("cp")
   * whose splits hold a sequence in zigzag order. A dimension whose
   * split_axes list this axis first is stored permuted (global index order
   * of braid_k_sequence_positions over n = the axis size): the rank whose
   * linear coordinate over the listed axes is c holds the stored indices
   * [c * local, (c + 1) * local), i.e. along the axis alone, rank i holds
   * chunks i and 2n-1-i of 2n equal chunks. The dimension's global size must
   * be a multiple of 2n (no padding). Initialization, inputs and dumps use
   * natural (global position) order. NULL: no dimension is permuted. */
  const char *zigzag_axis;
  /* What completes the persistent tensors after a step, or NULL: a step may
   * leave work on them to the next one (ZeRO's all-gathers of the updated
   * parameter ranges, which overlap the next step's forward). The runtime
   * runs it before it reads the parameters (dumps) and at the end of the
   * run; it is idempotent, and a step that follows it is unchanged. */
  void (*finish)(braid_rt *rt, char *arena);
  /* What the program's entry point computes (the compiler's braid.entry).
   * A training step's one output is its loss, also at loss_offset; the
   * driver of this runtime runs training steps and forward passes of the
   * loss. */
  braid_entry_kind entry_kind;
  /* The entry's results in order: tensors of the arena's persistent part
   * (name NULL) that each call of `step` writes. */
  int32_t num_outputs;
  const braid_tensor_desc *outputs;
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

/* braid_rt_value for a sharded value: `shape` is the local shape and
 * (global_shape, split_axes) say where it lies in the global tensor, as in
 * braid_tensor_desc. When dumping, the runtime assembles the global tensor
 * from every rank's shard (dropping padding) and rank 0 writes it (a
 * pipeline stage: gathered over the stage group, written by the stage
 * leader); every rank (of the stage) must make the call. */
void braid_rt_value_sharded(braid_rt *rt, const char *scope, const char *name, const void *data,
                            braid_dtype dtype, int32_t rank, const int64_t *shape,
                            const int64_t *global_shape, const char *const *split_axes);

/* braid_rt_value_sharded for a value each rank of group `partial_axes` holds
 * a term of (a row-parallel product's output before its reduction): when
 * dumping, the terms are summed over that group (an all-reduce of a copy),
 * then the sum is dumped as braid_rt_value_sharded does (`global_shape` and
 * `split_axes` null when it is not split). Every rank must make the call. */
void braid_rt_value_partial(braid_rt *rt, const char *scope, const char *name, const void *data,
                            braid_dtype dtype, int32_t rank, const int64_t *shape,
                            const int64_t *global_shape, const char *const *split_axes,
                            const char *partial_axes);

/* braid_rt_value_sharded for a ZeRO range of a sharded value (a ZeRO-1/2
 * gradient of a tp-sharded weight): `data` holds this rank's `count`
 * elements of its flat local block (of local shape `shape`), the ranks of
 * group `zero_axes` holding its consecutive ranges in group order. When
 * dumping, the block is first gathered over that group, then assembled and
 * written as braid_rt_value_sharded does; every rank must make the call. */
void braid_rt_value_zero_sharded(braid_rt *rt, const char *scope, const char *name,
                                 const void *data, braid_dtype dtype, int64_t count,
                                 const char *zero_axes, int32_t rank, const int64_t *shape,
                                 const int64_t *global_shape, const char *const *split_axes);

/* Scope of the calls in flight, for value names: push on call, pop on return. */
void braid_rt_push_scope(braid_rt *rt, const char *scope);
void braid_rt_pop_scope(braid_rt *rt);

/* Copies `bytes` bytes between two device (arena) buffers, in order with the
 * kernels: a micro-batch's rows of a step input. */
void braid_rt_copy(braid_rt *rt, void *dst, const void *src, int64_t bytes);

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
/* Point to point. On CPU ranks (MPI) a send does not wait for its receive:
 * the runtime copies the data and the returned event is already complete,
 * so the buffer may be reused at once. A receive's event completes when the
 * data is there. Messages from one rank to another on one communicator
 * arrive in the order they were sent. */
braid_event *braid_send(braid_rt *rt, braid_comm *comm, const void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer);
braid_event *braid_recv(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                        braid_dtype dtype, int32_t peer);
/* braid_send / braid_recv with a tag (0 <= tag < 25600): a receive takes the
 * next send of the same tag from its peer, whatever other tags came between
 * (pipeline stages issue their transfers in their own schedules' orders).
 * On NCCL tags are ignored and transfers match in issue order. */
braid_event *braid_send_tagged(braid_rt *rt, braid_comm *comm, const void *buffer,
                               int64_t count, braid_dtype dtype, int32_t peer, int32_t tag);
braid_event *braid_recv_tagged(braid_rt *rt, braid_comm *comm, void *buffer, int64_t count,
                               braid_dtype dtype, int32_t peer, int32_t tag);
/* One step of a ring or a halo exchange: send `send` to rank `dst` and
 * receive into `recv` from rank `src` of the communicator (-1: no send, no
 * receive), issued together (one NCCL group), so that every rank sending and
 * receiving at once cannot deadlock. Untagged: it matches the peers'
 * braid_sendrecv in issue order. */
braid_event *braid_sendrecv(braid_rt *rt, braid_comm *comm, const void *send,
                            int64_t send_count, int32_t dst, void *recv, int64_t recv_count,
                            int32_t src, braid_dtype dtype);
/* Makes later compute wait for the collective, then releases the event. */
void braid_event_wait(braid_rt *rt, braid_event *event);

/*===--- Kernels ----------------------------------------------------------===*
 * Shapes are given flattened as the op semantics need them (see BraidOps.td);
 * optional operands are NULL when absent. No kernel allocates tensor memory;
 * the CPU attention kernels take scratch that grows with the sequence from a
 * per-process arena (runtime/src/cpu/scratch.h), grown on first use and then
 * reused.
 */

/* out[t, :] = table[tokens[t], :] (+ pos[t % seq, :] when pos != NULL). */
void braid_k_embedding(braid_rt *rt, braid_dtype dt, braid_dtype index_dt, const void *tokens,
                       const void *table, const void *pos, void *out, int64_t num_tokens,
                       int64_t seq, int64_t vocab, int64_t hidden);
/* braid_k_linear's flags. TRANSPOSE_W: W = w[n, k]^T. ROWS_APART: each row
 * is a sequence of a decode step; a backend may then compute each row's
 * outputs in a way that does not depend on how many rows come with it (the
 * CPU streams W once per 16 rows instead of packing it for sgemm), so that a
 * request's logits do not depend on the batch it shares. */
enum { BRAID_LINEAR_TRANSPOSE_W = 1, BRAID_LINEAR_ROWS_APART = 2 };
/* y[rows, n] = x[rows, k] W (+ b), W = w[k, n] or (flags & TRANSPOSE_W) w[n, k]^T. */
void braid_k_linear(braid_rt *rt, braid_dtype dt, const void *x, const void *w, const void *b,
                    void *y, int64_t rows, int64_t k, int64_t n, int32_t flags);
/* c[batch, m, n] = A[batch] B[batch], A = a[m, k] or a[k, m]^T, B = b[k, n] or b[n, k]^T. */
void braid_k_batch_matmul(braid_rt *rt, braid_dtype dt, const void *a, const void *b, void *c,
                          int64_t batch, int64_t m, int64_t k, int64_t n, int32_t transpose_a,
                          int32_t transpose_b);
/* The sizes and options of an attention call, passed by const pointer to the
 * attention kernels (the tensors stay explicit arguments, so that a call shows
 * which buffers it reads and writes): q [B, S, Hq, D], k [B, Skv, Hkv, D],
 * v [B, Skv, Hkv, Dv], out [B, S, Hq, Dv]; Hq a multiple of Hkv (GQA);
 * rope_theta <= 0 means no rotary embedding.
 * Query row s sits at global position q_offset + s (context parallelism: a
 * chunk of the queries against all keys) for its RoPE angle and causal
 * horizon (keys t > q_offset + s are masked); keys keep positions 0..Skv-1.
 * q_offset >= 0, and causal needs q_offset + S <= Skv. The key-block kernels
 * take explicit positions per row instead and need q_offset = 0.
 * Growth: fields are only ever added at the end, with zero meaning today's
 * behaviour (callers initialize the struct with designated fields, the rest
 * zero), so attention over a KV cache can add its per-sequence key lengths and
 * query positions (device arrays, NULL: every sequence has Skv keys) without
 * changing the entry points. */
typedef struct braid_attention_params {
  int64_t batch, seq, seq_kv, heads, kv_heads, head_dim, v_head_dim;
  int32_t causal;
  double scale;
  double rope_theta;
  int64_t q_offset;
} braid_attention_params;

/* out = softmax(scale q'k'^T + mask) v, q' and k' rotated by RoPE. */
void braid_k_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k, const void *v,
                       void *out, const braid_attention_params *p);
void braid_k_rms_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma, void *y,
                      int64_t rows, int64_t hidden, double epsilon);
void braid_k_layer_norm(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t hidden, double epsilon);
/* y [rows, n] = softmax of each row of x [rows, n]: exp(x - max) / sum, in f32. */
void braid_k_softmax(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t rows,
                     int64_t n);
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
/* The sizes and options of a selective scan (Mamba), passed by const pointer
 * to the scan kernels, forward and backward (the tensors stay explicit
 * arguments): x, delta [B, S, Di], A [Di, N], Bm, Cm [B, S, N], D [Di], with
 * B = batch, S = seq, Di = channels, N = state; delta_softplus != 0: delta
 * passes through softplus first. Fields are only ever added at the end, zero
 * meaning today's behaviour. */
typedef struct braid_scan_params {
  int64_t batch, seq, channels, state;
  int32_t delta_softplus;
} braid_scan_params;

/* x, delta, A, Bm, Cm, D -> y [B, S, Di]. */
void braid_k_selective_scan(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                            const void *A, const void *Bm, const void *Cm, const void *D, void *y,
                            const braid_scan_params *p);
/* Context parallelism of the Mamba ops (the sequence split into chunks, one
 * per rank). State tensors (h0, h_end, decay and their cotangents) are f32
 * [B, Di, N] whatever dt is. */
/* conv1d of a chunk: halo [B, K-1, C] holds the K-1 inputs preceding x (zeros
 * for the first chunk); y = the rows of braid_k_conv1d(concat(halo, x)) that
 * belong to x. b may be NULL. */
void braid_k_conv1d_halo(braid_rt *rt, braid_dtype dt, const void *x, const void *halo,
                         const void *w, const void *b, void *y, int64_t batch, int64_t seq,
                         int64_t channels, int64_t kernel);
/* selective_scan of a chunk from the state h0 (NULL: zeros): y [B,S,Di]
 * (NULL: skip), the final state h_end (NULL: skip) and decay[b,d,n] =
 * exp(A[d,n] * sum_t delta_t[b,d]) (after softplus when set; NULL: skip), the
 * factor by which the chunk scales a state entering it. */
void braid_k_selective_scan_chunk(braid_rt *rt, braid_dtype dt, const void *x,
                                  const void *delta, const void *A, const void *Bm,
                                  const void *Cm, const void *D, const float *h0, void *y,
                                  float *h_end, float *decay, const braid_scan_params *p);
/* The state entering chunk `chunk` from every chunk's zero-start decay and
 * h_end (decay_all, hend_all [chunks, count], count = B*Di*N): h0 = H_{chunk-1}
 * with H_{-1} = 0, H_j = decay_j H_{j-1} + hend_j. */
void braid_k_scan_carry(braid_rt *rt, const float *decay_all, const float *hend_all, float *h0,
                        int64_t chunks, int64_t chunk, int64_t count);
/* logits [T, E] -> weights [T, k] (dt), indices [T, k] (i32). */
void braid_k_router(braid_rt *rt, braid_dtype dt, const void *logits, void *weights,
                    int32_t *indices, int64_t tokens, int64_t experts, int64_t top_k,
                    int32_t normalize);
/* x [T, H], indices [T, k] -> out [E, G*C, H]: the T tokens form G groups of
 * T/G consecutive tokens, each with C slots per expert (group g's are rows
 * [g*C, (g+1)*C) of an expert); slot order within a group: j-major, then t. */
void braid_k_dispatch(braid_rt *rt, braid_dtype dt, const void *x, const int32_t *indices,
                      void *out, int64_t tokens, int64_t hidden, int64_t top_k, int64_t experts,
                      int64_t capacity, int64_t groups);
/* expert_out [E, G*C, H], weights [T, k], indices [T, k] -> out [T, H]. */
void braid_k_combine(braid_rt *rt, braid_dtype dt, const void *expert_out, const void *weights,
                     const int32_t *indices, void *out, int64_t tokens, int64_t hidden,
                     int64_t top_k, int64_t experts, int64_t capacity, int64_t groups);

/*===--- Backward kernels (vector-Jacobian products) ----------------------===*
 * Each takes the forward operands and the cotangent of the forward result
 * (d*) and writes the cotangents of the operands. Gradients of parameters
 * are written (not accumulated): the compiler sums multiple contributions.
 */

/* dy [rows, n] -> db [n] = sum over rows (bias gradients). */
void braid_k_sum_rows(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t rows,
                      int64_t n);
/* dx = dy * act'(x), elementwise. act: SILU, GELU, GELU_TANH, SIGMOID, RELU. */
void braid_k_activation_grad(braid_rt *rt, braid_dtype dt, braid_act act, const void *x,
                             const void *dy, void *dx, int64_t n);
/* Attention backward (recomputes the softmax; no saved scores): dq [B,S,Hq,D],
 * dk [B,Skv,Hkv,D], dv [B,Skv,Hkv,Dv]; GQA sums over the heads of a group;
 * with RoPE, dq/dk are with respect to the unrotated q/k. With p->q_offset
 * (a chunk of the queries, as braid_k_attention): dq for the chunk's rows; dk,
 * dv are this chunk's contribution only (summed over the chunks by the
 * caller). */
void braid_k_attention_grad(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                            const void *v, const void *dout, void *dq, void *dk, void *dv,
                            const braid_attention_params *p);
/*===--- Attention by key blocks (context parallelism: ring, zigzag) ------===*
 * Query rows and key rows carry explicit global positions (int64 arrays in
 * backend memory, q_pos [seq], k_pos [seq_kv]): the RoPE angle of a row is
 * its position, and with `causal` key t is visible to query s iff
 * k_pos[t] <= q_pos[s]. Statistics are f32, one per query row and head,
 * row-major [batch, seq, heads] like the rows of out [batch, seq, heads, Dv].
 */
/* pos[i] = the global position of row start + i of a sequence of `seq` rows
 * stored in zigzag order over `zigzag_ranks` ranks (0: natural order,
 * pos[i] = start + i). Zigzag over n ranks cuts the sequence into 2n chunks
 * of c = seq / (2n) rows and stores chunks 0, 2n-1, 1, 2n-2, ...: stored row
 * j*2c + w (j < n, w < 2c) is position j*c + w for w < c, else
 * (2n-1-j)*c + (w - c). seq must be a multiple of 2n. */
void braid_k_sequence_positions(braid_rt *rt, int64_t *pos, int64_t count, int64_t start,
                                int64_t seq, int64_t zigzag_ranks);
/* Attention of the query rows over one block of keys: out [B,S,Hq,Dv] f32
 * is the block's normalized output and lse [B,S,Hq] f32 the log of the sum
 * of exp(scale q'.k') over the row's visible keys (-inf and a zero output
 * row when it sees none). */
void braid_k_attention_block(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                             const void *v, const int64_t *q_pos, const int64_t *k_pos,
                             float *out, float *lse, const braid_attention_params *p);
/* The online-softmax merge of a block's (out, lse) into the running (out,
 * lse), rows x Dv: lse' = log(e^lse + e^block_lse), out' = e^(lse - lse') out
 * + e^(block_lse - lse') block_out; two -inf statistics leave (0, -inf). */
void braid_k_attention_merge(braid_rt *rt, float *out, float *lse, const float *block_out,
                             const float *block_lse, int64_t rows, int64_t v_head_dim);
/* delta[r] = sum_e dout[r, e] * out[r, e] over rows x Dv (dout in dt). */
void braid_k_attention_delta(braid_rt *rt, braid_dtype dt, const void *dout, const float *out,
                             float *delta, int64_t rows, int64_t v_head_dim);
/* Adds one key block's share of the attention gradient, given the final
 * lse and delta of every query row: with p = exp(scale q'.k'_t - lse) over
 * visible keys, ds_t = p_t (dout.v_t - delta), dq += scale sum_t ds_t k'_t
 * (rotated back), dk_t += scale ds_t q' (rotated back), dv_t += p_t dout;
 * dq [B,S,Hq,D], dk [B,Skv,Hkv,D], dv [B,Skv,Hkv,Dv] are f32 accumulators. */
void braid_k_attention_block_grad(braid_rt *rt, braid_dtype dt, const void *q, const void *k,
                                  const void *v, const void *dout, const int64_t *q_pos,
                                  const int64_t *k_pos, const float *lse, const float *delta,
                                  float *dq, float *dk, float *dv,
                                  const braid_attention_params *p);
void braid_k_rms_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                           const void *dy, void *dx, void *dgamma, int64_t rows, int64_t hidden,
                           double epsilon);
/* dx = y * (dy - sum over the row of dy * y), per row of [rows, n]; y is
 * softmax's result. */
void braid_k_softmax_grad(braid_rt *rt, braid_dtype dt, const void *y, const void *dy, void *dx,
                          int64_t rows, int64_t n);
void braid_k_layer_norm_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *gamma,
                             const void *dy, void *dx, void *dgamma, void *dbeta, int64_t rows,
                             int64_t hidden, double epsilon);
/* dtable [vocab, hidden] = scatter-add of dy [num_tokens, hidden] rows by token. */
void braid_k_embedding_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                            const void *tokens, const void *dy, void *dtable, int64_t num_tokens,
                            int64_t vocab, int64_t hidden);
/* dpos [positions, hidden]: dpos[s] = sum over t with t % seq == s of dy[t]; rows
 * s >= seq are zero. */
void braid_k_position_grad(braid_rt *rt, braid_dtype dt, const void *dy, void *dpos,
                           int64_t num_tokens, int64_t seq, int64_t positions, int64_t hidden);
/* dlogits = dloss / rows * (softmax(logits) - onehot(labels)); dloss is a 0-d f32. */
void braid_k_cross_entropy_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                const void *logits, const void *labels, const float *dloss,
                                void *dlogits, int64_t rows, int64_t vocab);
/* dx [B,S,C], dw [C,K], db [C] (db may be NULL). */
void braid_k_conv1d_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *w,
                         const void *dy, void *dx, void *dw, void *db, int64_t batch,
                         int64_t seq, int64_t channels, int64_t kernel);
/* Selective scan backward: dx, ddelta [B,S,Di], dA [Di,N], dB, dC [B,S,N], dD [Di]
 * (ddelta with respect to the raw delta, through softplus when set). */
void braid_k_selective_scan_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *delta,
                                 const void *A, const void *Bm, const void *Cm, const void *D,
                                 const void *dy, void *dx, void *ddelta, void *dA, void *dBm,
                                 void *dCm, void *dD, const braid_scan_params *p);
/* VJP of braid_k_conv1d_halo: dx [B,S,C], dw [C,K] (this chunk's
 * contribution), db [C] (may be NULL), dhalo [B,K-1,C]. */
void braid_k_conv1d_halo_grad(braid_rt *rt, braid_dtype dt, const void *x, const void *halo,
                              const void *w, const void *dy, void *dx, void *dw, void *db,
                              void *dhalo, int64_t batch, int64_t seq, int64_t channels,
                              int64_t kernel);
/* dx[b, seq-(K-1)+i, c] += dnext[b, i, c] for i < K-1: the next chunk's dhalo
 * added into this chunk's last K-1 rows (seq >= K-1). */
void braid_k_conv1d_halo_accumulate(braid_rt *rt, braid_dtype dt, void *dx, const void *dnext,
                                    int64_t batch, int64_t seq, int64_t channels,
                                    int64_t kernel);
/* VJP of braid_k_selective_scan_chunk with respect to x, delta (raw), A, Bm,
 * Cm, D and h0, from the cotangents dy (NULL: zero), dh_end and ddecay (f32;
 * NULL: zero); dh0 may be NULL. With accumulate != 0 every result is added
 * into its output instead of written. */
void braid_k_selective_scan_chunk_grad(braid_rt *rt, braid_dtype dt, const void *x,
                                       const void *delta, const void *A, const void *Bm,
                                       const void *Cm, const void *D, const float *h0,
                                       const void *dy, const float *dh_end, const float *ddecay,
                                       void *dx, void *ddelta, void *dA, void *dBm, void *dCm,
                                       void *dD, float *dh0, const braid_scan_params *p,
                                       int32_t accumulate);
/* VJP of braid_k_scan_carry over every chunk's use: from dh0_all [chunks,
 * count] (the cotangent of each chunk's entering state), this chunk's
 * dhend = dH_chunk and ddecay = H_{chunk-1} * dH_chunk, where dH_{chunks-1} = 0
 * and dH_j = dh0_all[j+1] + decay_{j+1} dH_{j+1}. */
void braid_k_scan_carry_grad(braid_rt *rt, const float *decay_all, const float *hend_all,
                             const float *dh0_all, float *ddecay, float *dhend, int64_t chunks,
                             int64_t chunk, int64_t count);
/* dlogits [T, E] from dweights [T, k] through softmax, top-k (indices fixed)
 * and optional renormalization. */
void braid_k_router_grad(braid_rt *rt, braid_dtype dt, const void *logits,
                         const int32_t *indices, const void *dweights, void *dlogits,
                         int64_t tokens, int64_t experts, int64_t top_k, int32_t normalize);
/* dx [T, H] = sum over kept assignments of ddispatched[e, slot]. */
void braid_k_dispatch_grad(braid_rt *rt, braid_dtype dt, const void *ddispatched,
                           const int32_t *indices, void *dx, int64_t tokens, int64_t hidden,
                           int64_t top_k, int64_t experts, int64_t capacity, int64_t groups);
/* dexpert_out [E, G*C, H] (zero in unused slots) and dweights [T, k]
 * (zero for dropped assignments). */
void braid_k_combine_grad(braid_rt *rt, braid_dtype dt, const void *expert_out,
                          const void *weights, const int32_t *indices, const void *dy,
                          void *dexpert_out, void *dweights, int64_t tokens, int64_t hidden,
                          int64_t top_k, int64_t experts, int64_t capacity, int64_t groups);

/*===--- Optimizer kernels ------------------------------------------------===*/

/* sumsq (0-d f32) += sum of squares of x (f32 accumulation); the compiler
 * zeroes it first. */
void braid_k_sum_squares(braid_rt *rt, braid_dtype dt, const void *x, float *sumsq, int64_t n);
/* coef (0-d f32) = min(1, max_norm / (sqrt(sumsq) + 1e-6)); max_norm <= 0: 1. */
void braid_k_clip_coefficient(braid_rt *rt, const float *sumsq, float *coef, double max_norm);
/* In place, with g = coef * grad:
 * SGD:   p -= lr * (g + weight_decay * p)
 * AdamW: m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 *        p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * p)
 * with t = *step (a 0-d f32 counter the program increments before the update).
 * p and grad in `dt` (the master copy when mixed precision keeps f32 ones),
 * m and v in f32. */
void braid_k_sgd_update(braid_rt *rt, braid_dtype dt, void *param, const void *grad,
                        const float *coef, int64_t n, double lr, double weight_decay);
/* AdamW's hyperparameters (the formula above), passed by const pointer.
 * Fields are only ever added at the end, zero meaning today's behaviour. */
typedef struct braid_adamw_params {
  double lr, beta1, beta2, eps, weight_decay;
} braid_adamw_params;
void braid_k_adamw_update(braid_rt *rt, braid_dtype dt, void *param, const void *grad,
                          float *m, float *v, const float *coef, const float *step, int64_t n,
                          const braid_adamw_params *p);
/* step (0-d f32) += 1. */
void braid_k_increment(braid_rt *rt, float *step);
/* y = x converted between float storage types (bf16 compute copies of f32
 * master weights, f32 gradients of bf16 values). */
void braid_k_convert(braid_rt *rt, braid_dtype from, braid_dtype to, const void *x, void *y,
                     int64_t n);
/*===--- SPMD kernels -----------------------------------------------------===*
 * Local pieces of partitioned ops. `offset` is the global index of the first
 * vocabulary row or column this rank holds; global indices >= `valid` are
 * padding.
 */

/* Vocabulary-parallel embedding: out[t] = table[tokens[t] - offset] when
 * offset <= tokens[t] < offset + vocab_local, else 0 (the ranks' outputs sum
 * to the whole lookup). */
void braid_k_embedding_shard(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                             const void *tokens, const void *table, void *out,
                             int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                             int64_t offset);
/* dtable [vocab_local, hidden] = scatter-add of dy rows whose token falls in
 * [offset, offset + vocab_local). */
void braid_k_embedding_grad_shard(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                                  const void *tokens, const void *dy, void *dtable,
                                  int64_t num_tokens, int64_t vocab_local, int64_t hidden,
                                  int64_t offset);
/* y[i] = x[i] + bias[i % n_bias], n a multiple of n_bias. */
void braid_k_bias_add(braid_rt *rt, braid_dtype dt, const void *x, const void *bias, void *y,
                      int64_t n, int64_t n_bias);
/* Cross-entropy over logits [rows, vocab_local] holding global columns
 * [offset, offset + vocab_local) of a vocabulary whose first `valid` columns
 * are real. Three passes with all-reduces between them (done by the caller):
 *   1. row_max[r] = max over real local columns (-inf when none);
 *      -> all-reduce max over the vocabulary's ranks
 *   2. stats[r] = {sum over real local columns of exp(l - row_max[r]),
 *                  l[r, labels[r] - offset] when the label is local, else 0};
 *      -> all-reduce sum
 *   3. loss (0-d f32) = sum over rows of (row_max + log stats[r][0] - stats[r][1])
 *      / denominator.
 * The gradient uses the reduced row_max and stats:
 *   dlogits[r, c] = dloss / denominator * (exp(l - row_max - log stats[r][0])
 *                   - [offset + c == labels[r]]), 0 in padding columns. */
void braid_k_ce_shard_max(braid_rt *rt, braid_dtype dt, const void *logits, float *row_max,
                          int64_t rows, int64_t vocab_local, int64_t offset, int64_t valid);
void braid_k_ce_shard_stats(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                            const void *logits, const void *labels, const float *row_max,
                            float *stats, int64_t rows, int64_t vocab_local, int64_t offset,
                            int64_t valid);
void braid_k_ce_shard_loss(braid_rt *rt, const float *row_max, const float *stats, float *loss,
                           int64_t rows, int64_t denominator);
void braid_k_ce_shard_grad(braid_rt *rt, braid_dtype dt, braid_dtype index_dt,
                           const void *logits, const void *labels, const float *row_max,
                           const float *stats, const float *dloss, void *dlogits, int64_t rows,
                           int64_t vocab_local, int64_t offset, int64_t valid,
                           int64_t denominator);
/* x viewed as [outer, dim, inner] -> y [outer, dim_local, inner]:
 * y[o, i, j] = x[o, start + i, j], zero where start + i >= dim. */
void braid_k_slice(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start);
/* The adjoint: y [outer, dim, inner] = zero except y[o, start + i, j] =
 * x[o, i, j] for start + i < dim. */
void braid_k_unslice(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                     int64_t dim, int64_t dim_local, int64_t inner, int64_t start);

/* Into y [outer, dim, inner], leaving the rest: y[o, start + i, j] =
 * x[o, i, j] for the dim_local rows of x [outer, dim_local, inner]
 * (dist.assemble places each piece so). */
void braid_k_place(braid_rt *rt, braid_dtype dt, const void *x, void *y, int64_t outer,
                   int64_t dim, int64_t dim_local, int64_t inner, int64_t start);

/* y = 0. */
void braid_k_zero(braid_rt *rt, braid_dtype dt, void *y, int64_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The KV cache and generation kernels (prefill and decode programs). */
#include "braid/runtime_inference.h"

#endif /* BRAID_RUNTIME_H */
