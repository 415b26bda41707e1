//===- cache_common.h - what the CPU cache attentions share -----*- C++ -*-===//
//
// cache_attention.cpp (one rank's cache) and cache_context.cpp (a cache
// split by sequence over context-parallel ranks) share the checks of an
// attention's shape.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CPU_CACHE_COMMON_H
#define BRAID_RUNTIME_CPU_CACHE_COMMON_H

#include "attention_ref.h"
#include "common.h"

namespace braid::cpu {

/// The checks of an attention over a cache, named `kernel` in the messages;
/// false: nothing to do.
inline bool checkCacheShape(const char *kernel, const braid_cache_attention_shape &sh) {
  if (sh.batch < 0 || sh.seq < 0 || sh.cache_len < 0 || sh.heads < 0)
    fail(kernel, "negative size (batch %lld, seq %lld, cache_len %lld, heads %lld)",
         (long long)sh.batch, (long long)sh.seq, (long long)sh.cache_len, (long long)sh.heads);
  if (sh.batch == 0 || sh.seq == 0 || sh.heads == 0)
    return false;
  checkHeads(kernel, sh.heads, sh.kv_heads, sh.head_dim, sh.v_head_dim);
  checkRope(kernel, sh.rope_theta, sh.head_dim);
  return true;
}

} // namespace braid::cpu

#endif // BRAID_RUNTIME_CPU_CACHE_COMMON_H
