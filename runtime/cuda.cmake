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
#
# When NCCL is found (BRAID_NCCL_LIBRARY / BRAID_NCCL_INCLUDE_DIR, found by the
# top level or here) it also defines the static library `braid_comm_nccl` from
# src/cuda/comm_nccl.cu (the NCCL communicators, comm_nccl.h), which links
# libnccl with an rpath to its directory, and sets BRAID_HAVE_NCCL. Without
# NCCL braid_comm_nccl does not exist and braid_kernels_cuda is unchanged.

if(NOT CMAKE_CUDA_COMPILER_LOADED)
  message(FATAL_ERROR "cuda.cmake: call enable_language(CUDA) before include(cuda.cmake)")
endif()
find_package(CUDAToolkit REQUIRED)

set(BRAID_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB BRAID_CUDA_SOURCES CONFIGURE_DEPENDS ${BRAID_RUNTIME_DIR}/src/cuda/*.cu)
# The NCCL communicators are a library of their own (braid_comm_nccl, below):
# programs and kernel tests that do not communicate need no libnccl.
list(FILTER BRAID_CUDA_SOURCES EXCLUDE REGEX "/comm_nccl[^/]*\\.cu$")

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
# BRAID_CUDA_WERROR (tools/braid-dev sets it): nvcc's warnings are errors, so
# the build itself checks that every kernel compiles cleanly for sm_90, and
# test/Cuda/compile.py compiles them again only where it is off.
option(BRAID_CUDA_WERROR "Treat nvcc's warnings as errors" OFF)
set(BRAID_CUDA_FLAGS -lineinfo)
if(BRAID_CUDA_WERROR)
  list(APPEND BRAID_CUDA_FLAGS -Werror all-warnings)
endif()
target_compile_options(braid_kernels_cuda PRIVATE
  "$<$<COMPILE_LANGUAGE:CUDA>:${BRAID_CUDA_FLAGS}>")
target_link_libraries(braid_kernels_cuda PUBLIC CUDA::cudart CUDA::cublasLt)

# NCCL communicators (GPU ranks), when NCCL is installed.
option(BRAID_RUNTIME_ENABLE_NCCL "Build the NCCL communicators when NCCL is found" ON)
if(BRAID_RUNTIME_ENABLE_NCCL)
  find_library(BRAID_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib /usr/local/cuda/lib
          /usr/local/cuda/lib64)
  find_path(BRAID_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
endif()
if(BRAID_RUNTIME_ENABLE_NCCL AND BRAID_NCCL_LIBRARY AND BRAID_NCCL_INCLUDE_DIR)
  set(BRAID_HAVE_NCCL ON)
  get_filename_component(BRAID_NCCL_LIBRARY_DIR ${BRAID_NCCL_LIBRARY} DIRECTORY)
  add_library(braid_comm_nccl STATIC ${BRAID_RUNTIME_DIR}/src/cuda/comm_nccl.cu
                                     ${BRAID_RUNTIME_DIR}/src/cuda/comm_nccl_bootstrap.cu)
  set_target_properties(braid_comm_nccl PROPERTIES
    CUDA_ARCHITECTURES 90
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(braid_comm_nccl PUBLIC
    ${BRAID_RUNTIME_DIR}/include
    ${BRAID_RUNTIME_DIR}/src
    ${BRAID_NCCL_INCLUDE_DIR})
  target_compile_definitions(braid_comm_nccl PUBLIC BRAID_RUNTIME_CUDA)
  target_compile_options(braid_comm_nccl PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${BRAID_CUDA_FLAGS}>")
  # libnccl.so is outside the loader's default paths (/usr/local/cuda/lib):
  # programs linked with this library find it through the rpath.
  target_link_libraries(braid_comm_nccl PUBLIC CUDA::cudart ${BRAID_NCCL_LIBRARY}
    "-Wl,-rpath,${BRAID_NCCL_LIBRARY_DIR}")
  message(STATUS "Braid runtime: NCCL communicators (braid_comm_nccl, ${BRAID_NCCL_LIBRARY})")
else()
  set(BRAID_HAVE_NCCL OFF)
  message(STATUS "Braid runtime: NCCL not found or disabled; GPU ranks over NCCL disabled")
endif()
