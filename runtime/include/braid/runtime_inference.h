/*===- runtime_inference.h - Braid runtime: KV cache and generation kernels -===*
 *
 * The kernels of prefill and decode programs (issue 42), part of the C ABI of
 * runtime.h, which includes this header at its end. Conventions as there:
 * tensors are row-major, `dt` is the storage type of the float tensors (f32,
 * bf16, f16; arithmetic in f32), positions and indices are int32 (the model's
 * token type) in backend memory, and a bad position or index is a located
 * fatal error (the CPU kernels abort at the call; the CUDA kernels record it
 * on the device and the backend aborts at its next synchronization), never an
 * out-of-bounds access.
 *
 * The KV cache of an attention layer is one state tensor per K and V:
 * k_cache [B, C, Hkv, D], v_cache [B, C, Hkv, Dv] in the model's dtype, with
 * B sequences (batch slots) of C rows (the context). It holds keys AFTER
 * RoPE (rotated at their positions), so that decode rotates only the query.
 * RoPE is the attention kernels' (braid_k_attention): rotate-half, angle
 * p theta^(-2i/D); rope_theta <= 0: none.
 *===----------------------------------------------------------------------===*/

#ifndef BRAID_RUNTIME_INFERENCE_H
#define BRAID_RUNTIME_INFERENCE_H

/* braid_rt, braid_dtype; a no-op when runtime.h includes this header. */
#include "braid/runtime.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--- KV cache and generation ------------------------------------------===*/

/* cache[b, p, h, :] = rotate(rows[b, s, h, :], p) for p = positions[b] + s,
 * s < seq, written in place; rotate is the attention kernels' RoPE at
 * position p (rope_theta <= 0: a copy). cache [batch, cache_len, heads,
 * head_dim], rows [batch, seq, heads, head_dim]. Positions with
 * p >= cache_len or p < 0 are a fatal error naming the sequence. */
void braid_k_cache_write(braid_rt *rt, braid_dtype dt, void *cache, const void *rows,
                         const int32_t *positions, int64_t batch, int64_t cache_len,
                         int64_t seq, int64_t heads, int64_t head_dim, double rope_theta);

/* Attention of `seq` new query rows per sequence over its cache: query s of
 * sequence b is at position p = positions[b] + s, rotated to p (RoPE as the
 * attention kernels), and attends to the cache rows t <= p:
 *   out[b,s,h,:] = sum_{t<=p} softmax_t(scale * q'[b,s,h,:] . k_cache[b,t,h/g,:])
 *                  v_cache[b,t,h/g,:]
 * with g = heads / kv_heads (grouped-query attention). q [batch, seq, heads,
 * head_dim], out [batch, seq, heads, v_head_dim]. Softmax in f32, out in dt.
 * p >= cache_len or p < 0 is a fatal error naming the sequence. With
 * positions 0 and seq = S, braid_k_cache_write of k followed by this equals
 * braid_k_attention (causal) of the same q, k, v up to the order of f32 sums
 * (and, below f32, the rounding of the stored rotated keys). */
typedef struct braid_cache_attention_shape {
  int64_t batch, seq, cache_len, heads, kv_heads, head_dim, v_head_dim;
  double scale, rope_theta;
} braid_cache_attention_shape;
void braid_k_cache_attention(braid_rt *rt, braid_dtype dt, const void *q, const void *k_cache,
                             const void *v_cache, const int32_t *positions, void *out,
                             const braid_cache_attention_shape *shape);

/* out[b, :] = x[b, index[b], :]: x [batch, seq, hidden] -> out [batch, hidden]
 * (a sequence's last prompt row); index -1 gives a row of zeros (an idle
 * sequence of a serving program); any other index outside [0, seq) is a fatal
 * error naming the sequence. */
void braid_k_take_rows(braid_rt *rt, braid_dtype dt, const void *x, const int32_t *index,
                       void *out, int64_t batch, int64_t seq, int64_t hidden);

/* out[b, s, :] = x[b, s, :] + table[positions[b] + s, :] (learned position
 * embeddings at a sequence's own offset, GPT's at decode); x, out [batch,
 * seq, hidden], table [table_rows, hidden]; positions[b] + s outside
 * [0, table_rows) is a fatal error naming the sequence. out may equal x. The
 * sum is one f32 addition rounded to dt, what braid_k_embedding with a
 * position table computes. */
void braid_k_add_positions(braid_rt *rt, braid_dtype dt, const void *x, const void *table,
                           const int32_t *positions, void *out, int64_t batch, int64_t seq,
                           int64_t table_rows, int64_t hidden);

/*===--- A paged KV cache (serving) ---------------------------------------===*
 * A pool of `pages` pages of `page_size` rows holds every sequence's cache:
 * pool [pages, page_size, heads, head_dim] (keys rotated as in the cache
 * above). Sequence b's position t lives in page page_table[b * pages_per_seq
 * + t / page_size], row t % page_size (page_table [batch, pages_per_seq]).
 * last_rows [batch] is each sequence's last real new row of this call: -1 is
 * an idle sequence (nothing written, outputs zero), rows s > last_rows[b] are
 * padding (never written, outputs zero). Fatal errors naming the sequence:
 * last_rows[b] < -1 or >= seq, a position of a real row outside [0,
 * pages_per_seq * page_size), a page outside [0, pages) that a real row
 * writes or reads. With page_size = cache_len, pages = batch,
 * page_table[b] = {b} and last_rows = seq - 1 these are braid_k_cache_write
 * and braid_k_cache_attention. */

/* pool[page_table[b, p / P], p % P, h, :] = rotate(rows[b, s, h, :], p) for
 * s <= last_rows[b], p = positions[b] + s, in place; rows [batch, seq, heads,
 * head_dim]. */
void braid_k_paged_cache_write(braid_rt *rt, braid_dtype dt, void *pool, const void *rows,
                               const int32_t *positions, const int32_t *page_table,
                               const int32_t *last_rows, int64_t batch, int64_t seq,
                               int64_t pages, int64_t page_size, int64_t pages_per_seq,
                               int64_t heads, int64_t head_dim, double rope_theta);

/* braid_k_cache_attention of the real rows over the pages: query s <=
 * last_rows[b] at p = positions[b] + s attends to the positions t <= p, key
 * and value rows at k_pool / v_pool [page_table[b, t / P], t % P, h / g, :];
 * out [batch, seq, heads, v_head_dim], zeros at padding rows and idle
 * sequences. */
typedef struct braid_paged_cache_attention_shape {
  int64_t batch, seq, pages, page_size, pages_per_seq, heads, kv_heads, head_dim, v_head_dim;
  double scale, rope_theta;
} braid_paged_cache_attention_shape;
void braid_k_paged_cache_attention(braid_rt *rt, braid_dtype dt, const void *q,
                                   const void *k_pool, const void *v_pool,
                                   const int32_t *positions, const int32_t *page_table,
                                   const int32_t *last_rows, void *out,
                                   const braid_paged_cache_attention_shape *shape);

/*===--- Mamba state ------------------------------------------------------===*
 * A Mamba layer carries two states per sequence between calls: conv_state
 * [batch, kernel-1, channels] (dt), the K-1 inputs of its causal convolution
 * before the sequence's next row, and the scan's h, ssm_state [batch,
 * channels, state] (f32). Both kernels run over `seq` new rows per sequence
 * (a prompt, or 1 at decode) and update the state in place. A sequence whose
 * position is 0 starts fresh (zero padding, h = 0) whatever its state holds.
 * last_rows [batch] (NULL: seq - 1 for every sequence) is each sequence's last
 * real row: the state is taken there, not after a shorter prompt's padding.
 * A last row of -1 marks the sequence idle: its output rows are zeros and its
 * state is untouched; any other outside [0, seq) is a fatal error naming the
 * sequence. The state holds state_slots slots (its leading dimension) and
 * sequence b reads and writes slot slots[b] (slots [batch]; NULL: slot b,
 * which must be < state_slots); the non-idle sequences' slots must lie in
 * [0, state_slots) and be distinct (a fatal error naming the sequence
 * otherwise); the other slots are untouched. For tests only:
 * BRAID_TEST_FORGET_MAMBA_STATE=conv|ssm|both makes the named kernels start
 * every sequence fresh (a state not carried, which --verify must see). */

/* With s = slots[b] (NULL: b) for each sequence b that is not idle,
 * xe[b] = concat(positions[b] == 0 ? 0 : conv_state[s], x[b]) [K-1+seq, C]:
 *   y[b,t,c] = sum_{j<K} w[c,j] xe[b,t+j,c] (+ bias[c])   (braid_k_conv1d's sums)
 *   conv_state[s,i,c] = xe[b, last_rows[b] + 1 + i, c], i < K-1.
 * conv_state [state_slots, kernel-1, channels], x, y [batch, seq, channels],
 * w [channels, kernel], bias [channels] or NULL. */
void braid_k_conv_step(braid_rt *rt, braid_dtype dt, void *conv_state, const void *x,
                       const void *w, const void *bias, const int32_t *positions,
                       const int32_t *last_rows, const int32_t *slots, void *y, int64_t batch,
                       int64_t state_slots, int64_t seq, int64_t channels, int64_t kernel);

/* With s = slots[b] (NULL: b) for each sequence b that is not idle,
 * h[b] = positions[b] == 0 ? 0 : ssm_state[s], then braid_k_selective_scan's
 * recurrence over the seq rows (p as there) into y; ssm_state[s] = h after
 * row last_rows[b]. ssm_state [state_slots, channels, state]. */
void braid_k_scan_step(braid_rt *rt, braid_dtype dt, float *ssm_state, const void *x,
                       const void *delta, const void *A, const void *Bm, const void *Cm,
                       const void *D, const int32_t *positions, const int32_t *last_rows,
                       const int32_t *slots, void *y, int64_t state_slots,
                       const braid_scan_params *p);

/*===--- A prefill's Mamba steps over cp chunks of the prompt --------------===*/

/* Each context-parallel rank holds the prompt rows [first_row, first_row +
 * seq) of every sequence's prompt_len rows; last_rows [batch] is required and
 * each sequence's last row must lie in [0, prompt_len) (else a fatal error:
 * no idle sequences, and no slots: the states are by sequence).
 * The states are only read: chunk_state [batch, ...] receives, for a sequence
 * whose last row falls in the chunk, the state taken there, and zeros for the
 * others; braid_k_take_chunk_state then copies each sequence's from the chunk
 * holding its last row. BRAID_TEST_FORGET_MAMBA_STATE applies to the state a
 * sequence starts from, as in the kernels above. */

/* braid_k_conv_step of the chunk with xe[b] = concat(first_row > 0 ? halo[b]
 * : positions[b] == 0 ? 0 : conv_state[b], x[b]) (halo [batch, kernel-1,
 * channels]: the K-1 inputs before the chunk). */
void braid_k_conv_step_chunk(braid_rt *rt, braid_dtype dt, const void *conv_state,
                             const void *halo, const void *x, const void *w, const void *bias,
                             const int32_t *positions, const int32_t *last_rows, void *y,
                             void *chunk_state, int64_t batch, int64_t seq, int64_t channels,
                             int64_t kernel, int64_t first_row, int64_t prompt_len);

/* braid_k_scan_step of chunk c = first_row / seq from H_{c-1}: H_{-1} =
 * positions[b] == 0 ? 0 : ssm_state[b], H_j = decay_all[j] H_{j-1} +
 * hend_all[j] (in double; decay_all and hend_all [chunks * batch, channels,
 * state], every chunk's zero-start decay and final state). */
void braid_k_scan_step_chunk(braid_rt *rt, braid_dtype dt, const float *ssm_state,
                             const float *decay_all, const float *hend_all, const void *x,
                             const void *delta, const void *A, const void *Bm, const void *Cm,
                             const void *D, const int32_t *positions, const int32_t *last_rows,
                             void *y, float *chunk_state, const braid_scan_params *p,
                             int64_t first_row, int64_t prompt_len);

/* state[b] = chunk_states[(last_rows[b] / chunk_rows) * batch + b], each
 * sequence_bytes long (chunk_states [chunks * batch, ...]). */
void braid_k_take_chunk_state(braid_rt *rt, void *state, const void *chunk_states,
                              const int32_t *last_rows, int64_t batch, int64_t chunks,
                              int64_t chunk_rows, int64_t sequence_bytes);

/*===--- A KV cache split by sequence (context parallelism) ---------------===*/

/* Each context-parallel rank holds the rows [first_row, first_row + chunk_len)
 * of every sequence's context_len cache rows (cache [batch, chunk_len, heads,
 * head_dim]). braid_k_cache_write_chunk is braid_k_cache_write of the rows
 * whose position p falls in the chunk, written at p - first_row; the others
 * are skipped. Every position outside [0, context_len) is a fatal error naming
 * the sequence. */
void braid_k_cache_write_chunk(braid_rt *rt, braid_dtype dt, void *cache, const void *rows,
                               const int32_t *positions, int64_t batch, int64_t chunk_len,
                               int64_t seq, int64_t heads, int64_t head_dim, double rope_theta,
                               int64_t first_row, int64_t context_len);

/* braid_k_cache_attention over one rank's chunk (shape->cache_len = its rows,
 * local row t at position first_row + t, visible to a query at p iff
 * first_row + t <= p): out [batch, seq, heads, v_head_dim] the softmax-weighted
 * sum of the visible values and lse [batch, seq, heads] the log-sum-exp of
 * their scores, both f32 (a row that sees no key: 0 and -inf). */
void braid_k_cache_attention_chunk(braid_rt *rt, braid_dtype dt, const void *q,
                                   const void *k_cache, const void *v_cache,
                                   const int32_t *positions, float *out, float *lse,
                                   const braid_cache_attention_shape *shape, int64_t first_row,
                                   int64_t context_len);

/* The chunks' results merged: outs [parts, rows, v_head_dim], lses [parts,
 * rows] (chunk j's at j rows..); per row, m = max_j lse_j and
 * result = sum_j e^(lse_j - m) out_j / sum_j e^(lse_j - m) in double, summed
 * in chunk order, rounded to dt (zeros where every lse is -inf). */
void braid_k_cache_attention_merge(braid_rt *rt, braid_dtype dt, const float *outs,
                                   const float *lses, void *result, int64_t parts,
                                   int64_t rows, int64_t v_head_dim);

/*===--- Sampling (braid.sample) -------------------------------------------===*
 * The arithmetic is runtime/src/sampling_rows.h's (BraidSampleOps.td states
 * it): per row, greedy (temperature <= 0), or a draw among integer weights
 * keyed by (seeds[r], steps[r]) with top_k (i32) and top_p. logits [rows,
 * columns] in dt, read as f32; temperature and top_p f32, read as double.
 * mode: 0 greedy, 1 sample, 2 nucleus (BraidSampleOps.td); a row that the
 * mode cannot draw, or whose top_k exceeds top_k_cap, is a fatal error
 * naming it. */

/* ids[r] for each row, sampling its first `vocab` columns whole. */
void braid_k_sample(braid_rt *rt, braid_dtype dt, const void *logits, const int64_t *seeds,
                    const int64_t *steps, const float *temperature, const int32_t *top_k,
                    const float *top_p, int32_t *ids, int64_t rows, int64_t columns,
                    int64_t vocab, int64_t mode, int64_t top_k_cap);

/* A vocabulary split over `ranks` ranks, this rank holding the columns
 * [offset, offset + columns) (those at or past vocab: padding). words [rows,
 * W]: this rank's words of `phase` (sampling_rows.h's Phase and wordsOf);
 * state [rows, 10 + 3 ranks] (NULL for phase 0) as every rank holds it. */
void braid_k_sample_local(braid_rt *rt, braid_dtype dt, const void *logits,
                          const int64_t *state, const float *temperature,
                          const int32_t *top_k, const float *top_p, int64_t *words,
                          int64_t rows, int64_t columns, int64_t offset, int64_t vocab,
                          int64_t phase, int64_t top_k_cap, int64_t ranks);

/* result [rows, 10 + 3 ranks]: `state` (NULL for phase 0) with every rank's
 * words of `phase` folded in (gathered [ranks * rows, W], rank k's rows at k
 * rows). */
void braid_k_sample_merge(braid_rt *rt, const int64_t *gathered, const int64_t *state,
                          const float *temperature, const int32_t *top_k, const float *top_p,
                          const int64_t *seeds, const int64_t *steps, int64_t *result,
                          int64_t rows, int64_t ranks, int64_t vocab, int64_t phase,
                          int64_t top_k_cap);

/* ids[r]: the token of row r's state; a row not decided is a fatal error. */
void braid_k_sample_ids(braid_rt *rt, const int64_t *state, int32_t *ids, int64_t rows,
                        int64_t ranks);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BRAID_RUNTIME_INFERENCE_H */
