// cudasim: cuda_bf16.h is the emulation of the CUDA subset Braid uses.
#include "cudasim/cudasim.h"
