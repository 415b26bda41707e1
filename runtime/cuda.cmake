# cuda.cmake - the CUDA kernels and device backend of the Braid runtime.
#
# Defines the static library `braid_kernels_cuda` from runtime/src/cuda/*.cu:
# the CUDA backend (braid::rt::makeCudaBackend) and every braid_k_* kernel of
# runtime/include/braid/runtime.h for the device. It does not define
# braid::rt::backendOf or braid_dtype_size: those come from the runtime core,
# which links this library.
#
# How the parent (runtime/CMakeLists.txt) must include it, when CUDA is found
# (BRAID_HAVE_CUDA); the host compiler must be chosen BEFORE enable_language:
#
#   if(BRAID_HAVE_CUDA)
#     if(NOT CMAKE_CUDA_HOST_COMPILER)
#       set(CMAKE_CUDA_HOST_COMPILER g++-12)   # CUDA 13's nvcc rejects newer g++
#     endif()
#     if(NOT CMAKE_CUDA_COMPILER)
#       set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)  # if not on PATH
#     endif()
#     enable_language(CUDA)
#     include(${CMAKE_CURRENT_SOURCE_DIR}/cuda.cmake)
#     target_link_libraries(braid_runtime PUBLIC braid_kernels_cuda)  # (its name)
#   endif()
#
# (enable_language(CUDA) is global to the project and must be called from a
# directory scope, not inside a function; CMake >= 3.18.) Compiling needs no
# GPU: the code is built for sm_90 (H100/H200) only.
#
# Usage requirements it exports: include dirs runtime/include and runtime/src,
# the definition BRAID_RUNTIME_CUDA (so backend.h declares makeCudaBackend),
# CUDA::cudart and CUDA::cublasLt.

if(NOT CMAKE_CUDA_COMPILER_LOADED)
  message(FATAL_ERROR "cuda.cmake: call enable_language(CUDA) before include(cuda.cmake)")
endif()
find_package(CUDAToolkit REQUIRED)

set(BRAID_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB BRAID_CUDA_SOURCES CONFIGURE_DEPENDS ${BRAID_RUNTIME_DIR}/src/cuda/*.cu)

add_library(braid_kernels_cuda STATIC ${BRAID_CUDA_SOURCES})
set_target_properties(braid_kernels_cuda PROPERTIES
  CUDA_ARCHITECTURES 90
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_SEPARABLE_COMPILATION OFF
  POSITION_INDEPENDENT_CODE ON)
target_include_directories(braid_kernels_cuda PUBLIC
  ${BRAID_RUNTIME_DIR}/include
  ${BRAID_RUNTIME_DIR}/src)
target_compile_definitions(braid_kernels_cuda PUBLIC BRAID_RUNTIME_CUDA)
# Errors with line info; warnings of the LLVM-style C++ flags do not apply to nvcc.
target_compile_options(braid_kernels_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
target_link_libraries(braid_kernels_cuda PUBLIC CUDA::cudart CUDA::cublasLt)
