# The KV cache and generation kernels of runtime/src/cpu (braid_k_cache_write,
# braid_k_cache_attention, braid_k_take_rows, braid_k_add_positions:
# runtime_inference.h) against braid_ref.ops_inference; the cases and their bounds are
# Inputs/cache_cases.py (shared with test/Cuda/cudasim-cache.py). Twice: the
# reference kernels compiled here without BLAS (cache attention folds one key
# at a time, as attention.cpp's reference loop), and the runtime's CPU kernel
# library as CMake builds it (with OpenBLAS: the blocked GEMM form).
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %S/Inputs/cache_cases.py %t.so
# RUN: %ctypes_python %S/Inputs/cache_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
#
# The paged KV cache kernels (braid_k_paged_cache_write,
# braid_k_paged_cache_attention; braid_k_take_rows' -1) against
# braid_ref.ops_inference and against the unpaged cache kernels, on the same
# two builds (sharing this test's compile of the reference kernels): the
# cases and bounds of Inputs/paged_cache_cases.py (shared with
# test/Cuda/cudasim-paged-cache.py; with OpenBLAS the blocked GEMM form reads
# a page at a time).
#
# RUN: %ctypes_python %S/Inputs/paged_cache_cases.py %t.so
# RUN: %ctypes_python %S/Inputs/paged_cache_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
