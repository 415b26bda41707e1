// RUN: braid-opt --braid-derive-inference %S/../../../examples/llama-tiny.mlir -o %t.mlir
// RUN: braid-translate --braid-to-cpp --braid-program=prefill %t.mlir | FileCheck %s --check-prefix=PREFILL
// RUN: braid-translate --braid-to-cpp --braid-program=decode %t.mlir | FileCheck %s --check-prefix=DECODE
// RUN: braid-translate --braid-to-cpp --braid-program=decode %t.mlir | FileCheck %s --check-prefix=ROWS
// RUN: braid-translate --braid-to-cpp --braid-program=prefill %t.mlir | FileCheck %s --check-prefix=PACKED

// Every linear of the decode program, in its layer function (braid.serves =
// "decode") as in the entry, passes BRAID_LINEAR_ROWS_APART (2): its rows
// are the step's sequences. Prefill's pass no flag (the weights are not
// transposed in either).
// ROWS-NOT: braid_k_linear({{.*}}, {{[013]}});
// ROWS-COUNT-5: braid_k_linear({{.*}}, 2);
// ROWS-NOT: braid_k_linear(
// PACKED-NOT: braid_k_linear({{.*}}, {{[123]}});
// PACKED: braid_k_linear({{.*}}, 0);

// Prefill writes each layer's keys (rotated) and values into the caches the
// layer function receives as arguments, in place, and attends over them;
// the last row of each prompt is taken before the final norm.
// PREFILL: braid_k_cache_write(rt, BRAID_F32, args[11], static_cast<const void *>({{.*}}), static_cast<const int32_t *>(args[10]), 2, 16, 16, 2, 16, 10000);
// PREFILL: braid_k_cache_write(rt, BRAID_F32, args[12], static_cast<const void *>({{.*}}), static_cast<const int32_t *>(args[10]), 2, 16, 16, 2, 16, 0);
// PREFILL: braid_k_cache_attention(rt, BRAID_F32, {{.*}}, args[11], args[12], static_cast<const int32_t *>(args[10]), {{.*}}, braid::params(braid_cache_attention_shape{.batch = 2, .seq = 16, .cache_len = 16, .heads = 4, .kv_heads = 2, .head_dim = 16, .v_head_dim = 16, .scale = 0.25, .rope_theta = 10000}));
// PREFILL: braid_k_take_rows(rt, BRAID_F32, {{.*}}, static_cast<const int32_t *>(args[2]), {{.*}}, 2, 16, 64);
// The caches are states of the arena's persistent part, at the same offsets
// in both programs.
// PREFILL: {"cache.layers.0.k", BRAID_F32, 4, {{.*}}, BRAID_INIT_ZEROS, 0, 0, 427264},
// PREFILL: kInputs[] = {
// PREFILL-NEXT: {"tokens", BRAID_I32, 2,
// PREFILL-NEXT: {"positions", BRAID_I32, 1,
// PREFILL-NEXT: {"last_rows", BRAID_I32, 1,
// PREFILL: BRAID_ENTRY_PREFILL, 1, kOutputs};

// DECODE: braid_k_cache_write(rt, BRAID_F32, args[11], static_cast<const void *>({{.*}}), static_cast<const int32_t *>(args[10]), 2, 16, 1, 2, 16, 10000);
// DECODE: braid_k_cache_attention(rt, BRAID_F32, {{.*}}braid_cache_attention_shape{.batch = 2, .seq = 1, .cache_len = 16,
// DECODE: {"cache.layers.0.k", BRAID_F32, 4, {{.*}}, BRAID_INIT_ZEROS, 0, 0, 427264},
// DECODE: kInputs[] = {
// DECODE-NEXT: {"tokens", BRAID_I32, 2,
// DECODE-NEXT: {"positions", BRAID_I32, 1,
// DECODE-NEXT: };
// DECODE: BRAID_ENTRY_DECODE, 1, kOutputs};

// Each inference program exports a getter of its own name: the three are
// linked into one binary (braid-run --generate).
// PREFILL: extern "C" const braid_program *braid_program_get_prefill(void)
// DECODE: extern "C" const braid_program *braid_program_get_decode(void)
