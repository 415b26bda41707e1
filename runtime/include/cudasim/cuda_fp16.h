// cudasim: cuda_fp16.h is the emulation of the CUDA subset Braid uses.
#include "cudasim/cudasim.h"
