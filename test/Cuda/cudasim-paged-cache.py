# REQUIRES: cudasim
# The paged KV cache kernels of runtime/src/cuda (paged_cache.cu:
# braid_k_paged_cache_write, braid_k_paged_cache_attention; cache.cu's
# braid_k_take_rows with -1) on the CUDA emulation (runtime/cudasim), against
# braid_ref.ops_inference and the unpaged cache kernels: the cases and bounds
# of test/Kernels/cpu-cache.py (Inputs/paged_cache_cases.py there), every
# operand in device memory through Inputs/device_shim.cpp, fatal errors through
# the device error record. Threads and blocks run in both orders, as
# cudasim-cache.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include/cudasim -I%braid_src/runtime/include %S/Inputs/device_shim.cpp -Wl,--whole-archive %braid_obj/lib/libbraid_kernels_cudasim.a -Wl,--no-whole-archive %braid_obj/lib/libbraid_cudasim.a -lpthread -o %t.so
# RUN: %ctypes_python %braid_src/test/Kernels/Inputs/paged_cache_cases.py %t.so --device
# RUN: %if !sanitize %{ env BRAID_CUDASIM_ORDER=reverse %ctypes_python %braid_src/test/Kernels/Inputs/paged_cache_cases.py %t.so --device %}
