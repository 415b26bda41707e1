# braid.sample's CPU kernels (runtime/src/cpu/sample.cpp: braid_k_sample and
# the split pieces) against braid_ref.ops_inference.sample: identical ids in
# every mode, whole rows and 2-4 simulated ranks of a padded vocabulary
# (Inputs/sample_cases.py, shared with test/Cuda/cudasim-sample.py).
#
# RUN: %ctypes_python %S/Inputs/sample_cases.py %braid_obj/lib/libbraid_kernels_cpu.so
