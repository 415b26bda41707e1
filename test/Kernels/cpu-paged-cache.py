# The paged KV cache kernels of runtime/src/cpu (braid_k_paged_cache_write,
# braid_k_paged_cache_attention: runtime_inference.h; braid_k_take_rows' -1)
# against braid_ref.ops_inference and against the unpaged cache kernels; the
# cases and their bounds are Inputs/paged_cache_cases.py (shared with
# test/Cuda/cudasim-paged-cache.py). Twice, as cpu-cache.py: the reference
# kernels compiled here without BLAS, and the runtime's CPU kernel library as
# CMake builds it (with OpenBLAS: the blocked GEMM form, read a page at a time).
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %S/Inputs/paged_cache_cases.py %t.so
# RUN: %ctypes_python %S/Inputs/paged_cache_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
