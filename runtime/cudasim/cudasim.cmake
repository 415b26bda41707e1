# cudasim.cmake - the CUDA kernels and backend of the runtime, built for the
# CPU emulation of runtime/cudasim (see runtime/include/cudasim/cudasim/cudasim.h). Needs no
# CUDA toolkit: the .cu sources go through rewrite_cuda.py and a host C++
# compiler, with cudasim's headers in place of CUDA's.
#
# Defines:
#   braid_cudasim              the emulation (fibers, memory, streams, cuBLASLt)
#   braid_kernels_cudasim      runtime/src/cuda/*.cu but the NCCL communicators
#   braid_runtime_main_cudasim main() with BRAID_RUNTIME_CUDA (--backend cuda)
#   kernel-test-cudasim, kernel-grad-test-cudasim, gemm-bench-cudasim
#                              bench/gpu's kernel self-tests and GEMM self-test
# A program emitted for CUDA links
#   braid_runtime_main_cudasim braid_kernels_cudasim braid_cudasim braid_runtime

find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(BRAID_CUDASIM_DIR ${CMAKE_CURRENT_LIST_DIR})
set(BRAID_CUDASIM_GEN ${CMAKE_CURRENT_BINARY_DIR}/cudasim-src)

# Rewrites each .cu of `sources` to ${BRAID_CUDASIM_GEN}/<prefix><name>.cpp;
# the list of outputs goes to `out`.
function(braid_cudasim_rewrite out prefix)
  set(result "")
  foreach(source ${ARGN})
    get_filename_component(name ${source} NAME)
    string(REGEX REPLACE "\\.cu$" ".cpp" name ${name})
    set(target ${BRAID_CUDASIM_GEN}/${prefix}${name})
    add_custom_command(OUTPUT ${target}
      COMMAND ${Python3_EXECUTABLE} ${BRAID_CUDASIM_DIR}/rewrite_cuda.py ${source} ${target}
      DEPENDS ${source} ${BRAID_CUDASIM_DIR}/rewrite_cuda.py
      COMMENT "cudasim: rewriting ${name}"
      VERBATIM)
    list(APPEND result ${target})
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

add_library(braid_cudasim STATIC
  ${BRAID_CUDASIM_DIR}/src/kernels.cpp
  ${BRAID_CUDASIM_DIR}/src/device.cpp
  ${BRAID_CUDASIM_DIR}/src/memory.cpp
  ${BRAID_CUDASIM_DIR}/src/streams.cpp
  ${BRAID_CUDASIM_DIR}/src/scalars.cpp
  ${BRAID_CUDASIM_DIR}/src/cublaslt.cpp)
braid_runtime_target(braid_cudasim)
# The CUDA headers cudasim stands in for (cuda_runtime.h, cublasLt.h, cub):
# runtime/include/cudasim, installed with the runtime headers.
target_include_directories(braid_cudasim BEFORE PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include/cudasim)
target_link_libraries(braid_cudasim PUBLIC Threads::Threads)

# Every file of src/cuda goes through the rewrite (headers launch kernels
# too) into cudasim-src/cuda, which comes before src in the include path.
file(GLOB BRAID_CUDASIM_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/*.cu)
list(FILTER BRAID_CUDASIM_KERNEL_SOURCES EXCLUDE REGEX "/comm_nccl[^/]*\\.cu$")
file(GLOB BRAID_CUDASIM_KERNEL_HEADERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/*.cuh
     ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/*.h)
braid_cudasim_rewrite(BRAID_CUDASIM_KERNELS cuda/ ${BRAID_CUDASIM_KERNEL_SOURCES})
braid_cudasim_rewrite(BRAID_CUDASIM_HEADERS cuda/ ${BRAID_CUDASIM_KERNEL_HEADERS})
add_library(braid_kernels_cudasim STATIC ${BRAID_CUDASIM_KERNELS} ${BRAID_CUDASIM_HEADERS})
braid_runtime_target(braid_kernels_cudasim)
target_include_directories(braid_kernels_cudasim BEFORE PUBLIC ${BRAID_CUDASIM_GEN})
target_include_directories(braid_kernels_cudasim PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_definitions(braid_kernels_cudasim PUBLIC BRAID_RUNTIME_CUDA)
target_link_libraries(braid_kernels_cudasim PUBLIC braid_cudasim braid_runtime)

add_library(braid_runtime_main_cudasim STATIC src/main.cpp)
braid_runtime_target(braid_runtime_main_cudasim)
target_compile_definitions(braid_runtime_main_cudasim PRIVATE BRAID_RUNTIME_CUDA)
target_link_libraries(braid_runtime_main_cudasim PUBLIC braid_kernels_cudasim braid_runtime)

# bench/gpu's self-tests, as check.sh builds them with nvcc.
set(BRAID_GPU_BENCH_DIR ${CMAKE_CURRENT_SOURCE_DIR}/../bench/gpu)
if(EXISTS ${BRAID_GPU_BENCH_DIR}/kernel_test.cu)
  foreach(test kernel_test kernel_grad_test gemm_bench)
    braid_cudasim_rewrite(generated bench_ ${BRAID_GPU_BENCH_DIR}/${test}.cu)
    string(REPLACE "_" "-" name ${test})
    add_executable(${name}-cudasim ${generated})
    braid_runtime_target(${name}-cudasim)
    # The rewritten headers of src/cuda (they launch kernels) before src.
    target_include_directories(${name}-cudasim BEFORE PRIVATE ${BRAID_CUDASIM_GEN})
    target_include_directories(${name}-cudasim PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
                                                       ${BRAID_GPU_BENCH_DIR})
    target_compile_definitions(${name}-cudasim PRIVATE BRAID_RUNTIME_CUDA)
    target_link_libraries(${name}-cudasim PRIVATE braid_kernels_cudasim)
  endforeach()
  # The self-tests define backendOf and braid_dtype_size themselves: they
  # link the kernels without braid_runtime's copies.
endif()

# Code cudasim must catch, each with a corrected twin (test/Runtime/cudasim-checks.test).
braid_cudasim_rewrite(generated test_ ${BRAID_CUDASIM_DIR}/test/broken_cases.cu)
add_executable(cudasim-broken-cases ${generated})
braid_runtime_target(cudasim-broken-cases)
target_link_libraries(cudasim-broken-cases PRIVATE braid_cudasim)

# GPU ranks under mpirun: NCCL emulated over MPI (include/cudasim/nccl.h),
# the runtime's NCCL communicators (comm_nccl.cu) built against it, and
# main() with CUDA, NCCL and MPI, as braid_runtime_main_cuda_mpi on a GPU.
if(TARGET braid_runtime_mpi)
  add_library(braid_cudasim_nccl STATIC ${BRAID_CUDASIM_DIR}/src/nccl_mpi.cpp)
  braid_runtime_target(braid_cudasim_nccl)
  target_link_libraries(braid_cudasim_nccl PUBLIC braid_cudasim MPI::MPI_C)
  # mpi.h without Open MPI's / MPICH's C++ bindings: with them, a g++ -O3
  # build of a user of mpi.h emits their vtables and needs libmpi_cxx.
  target_compile_definitions(braid_cudasim_nccl PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)

  braid_cudasim_rewrite(generated cuda/ ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/comm_nccl.cu
                        ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/comm_nccl_bootstrap.cu)
  add_library(braid_comm_nccl_cudasim STATIC ${generated} ${BRAID_CUDASIM_HEADERS})
  braid_runtime_target(braid_comm_nccl_cudasim)
  target_link_libraries(braid_comm_nccl_cudasim PUBLIC braid_kernels_cudasim braid_cudasim_nccl
                                                       braid_runtime)

  # NCCL usage the emulation must catch (test/Runtime/cudasim-nccl-checks.py).
  add_executable(cudasim-nccl-cases ${BRAID_CUDASIM_DIR}/test/nccl_cases.cpp)
  braid_runtime_target(cudasim-nccl-cases)
  target_link_libraries(cudasim-nccl-cases PRIVATE braid_cudasim_nccl)

  add_library(braid_runtime_main_cudasim_mpi STATIC src/main.cpp)
  braid_runtime_target(braid_runtime_main_cudasim_mpi)
  target_compile_definitions(braid_runtime_main_cudasim_mpi PRIVATE
    BRAID_RUNTIME_CUDA BRAID_RUNTIME_NCCL BRAID_RUNTIME_MPI)
  target_link_libraries(braid_runtime_main_cudasim_mpi PUBLIC
    braid_comm_nccl_cudasim braid_runtime_mpi braid_kernels_cudasim braid_runtime)
endif()
