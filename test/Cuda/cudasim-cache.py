# REQUIRES: cudasim
# The KV cache and generation kernels of runtime/src/cuda (cache.cu:
# braid_k_cache_write, braid_k_cache_attention, braid_k_take_rows,
# braid_k_add_positions) on the CUDA emulation (runtime/cudasim), against
# braid_ref.ops_inference: the cases and bounds of test/Kernels/cpu-cache.py
# (Inputs/cache_cases.py there), with every operand in device memory through
# Inputs/device_shim.cpp, fatal errors through the device error record. Threads
# and blocks run in both orders (a missing barrier changes the result in one
# of them; the reverse order is left out of the sanitized build, where fibers
# under AddressSanitizer are slow).
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include/cudasim -I%braid_src/runtime/include %S/Inputs/device_shim.cpp -Wl,--whole-archive %braid_obj/lib/libbraid_kernels_cudasim.a -Wl,--no-whole-archive %braid_obj/lib/libbraid_cudasim.a -lpthread -o %t.so
# RUN: %ctypes_python %braid_src/test/Kernels/Inputs/cache_cases.py %t.so --device
# RUN: %if !sanitize %{ env BRAID_CUDASIM_ORDER=reverse %ctypes_python %braid_src/test/Kernels/Inputs/cache_cases.py %t.so --device %}
