# The Mamba state kernels of inference of runtime/src/cpu (braid_k_conv_step,
# braid_k_scan_step: runtime_inference.h) against braid_ref.ops_inference, and prefill
# then decode against the whole-sequence kernels; the cases and their bounds
# are Inputs/mamba_step_cases.py (shared with test/Cuda/cudasim-mamba-step.py).
# Twice: the kernels compiled here, and the runtime's CPU kernel library as
# CMake builds it.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %S/Inputs/mamba_step_cases.py %t.so
# RUN: %ctypes_python %S/Inputs/mamba_step_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
