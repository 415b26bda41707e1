# REQUIRES: cudasim
# The Mamba state kernels of inference of runtime/src/cuda (mamba_step.cu:
# braid_k_conv_step, braid_k_scan_step) on the CUDA emulation (runtime/cudasim)
# against braid_ref.ops: the cases and bounds of test/Kernels/cpu-mamba-step.py
# (Inputs/mamba_step_cases.py there), every operand in device memory through
# Inputs/device_shim.cpp, fatal errors through the device error record. Threads
# and blocks run in both orders (the reverse left out of the sanitized build).
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include/cudasim -I%braid_src/runtime/include %S/Inputs/device_shim.cpp -Wl,--whole-archive %braid_obj/lib/libbraid_kernels_cudasim.a -Wl,--no-whole-archive %braid_obj/lib/libbraid_cudasim.a -lpthread -o %t.so
# RUN: %ctypes_python %braid_src/test/Kernels/Inputs/mamba_step_cases.py %t.so --device
# RUN: %if !sanitize %{ env BRAID_CUDASIM_ORDER=reverse %ctypes_python %braid_src/test/Kernels/Inputs/mamba_step_cases.py %t.so --device %}
