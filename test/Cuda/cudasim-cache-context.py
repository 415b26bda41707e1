# REQUIRES: cudasim
# The kernels of a KV cache split by sequence over context-parallel ranks in
# runtime/src/cuda (cache_context.cu: braid_k_cache_write_chunk,
# braid_k_cache_attention_chunk, braid_k_cache_attention_merge) on the CUDA
# emulation (runtime/cudasim), against braid_ref.ops_inference and the one-rank cache
# kernels: the cases and bounds of test/Kernels/cpu-cache-context.py
# (Inputs/cache_context_cases.py there), every operand in device memory through
# Inputs/device_shim.cpp, fatal errors through the device error record.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include/cudasim -I%braid_src/runtime/include %S/Inputs/device_shim.cpp -Wl,--whole-archive %braid_obj/lib/libbraid_kernels_cudasim.a -Wl,--no-whole-archive %braid_obj/lib/libbraid_cudasim.a -lpthread -o %t.so
# RUN: %ctypes_python %braid_src/test/Kernels/Inputs/cache_context_cases.py %t.so --device
# RUN: %if !sanitize %{ env BRAID_CUDASIM_ORDER=reverse %ctypes_python %braid_src/test/Kernels/Inputs/cache_context_cases.py %t.so --device %}
