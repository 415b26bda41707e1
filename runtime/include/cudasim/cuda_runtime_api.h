// cudasim: cuda_runtime_api.h is the emulation of the CUDA subset Braid uses.
#include "cudasim/cudasim.h"
