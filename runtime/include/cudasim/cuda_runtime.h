// cudasim: cuda_runtime.h is the emulation of the CUDA subset Braid uses.
#include "cudasim/cudasim.h"
