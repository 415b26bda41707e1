# The kernels of a KV cache split by sequence over context-parallel ranks
# (runtime/src/cpu/cache_context.cpp: braid_k_cache_write_chunk,
# braid_k_cache_attention_chunk, braid_k_cache_attention_merge) against
# braid_ref.ops and against the one-rank cache kernels; the cases and bounds are
# Inputs/cache_context_cases.py (shared with test/Cuda/cudasim-cache-context.py).
#
# RUN: %ctypes_python %S/Inputs/cache_context_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
