# REQUIRES: cudasim
# braid.sample's CUDA kernels (runtime/src/cuda/sample.cu) under cudasim,
# against braid_ref.ops_inference.sample: the cases of test/Kernels/cpu-sample.py
# (Inputs/sample_cases.py) with every operand in device memory, and the fatal
# errors through the device error record.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include/cudasim -I%braid_src/runtime/include %S/Inputs/device_shim.cpp -Wl,--whole-archive %braid_obj/lib/libbraid_kernels_cudasim.a -Wl,--no-whole-archive %braid_obj/lib/libbraid_cudasim.a -lpthread -o %t.so
# RUN: %ctypes_python %braid_src/test/Kernels/Inputs/sample_cases.py %t.so --device
