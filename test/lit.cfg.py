# Lit configuration of Braid's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Braid"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".py", ".c", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.braid_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%braid_src", config.braid_src_root))
# Where the build puts libraries and plugins (test/lib/Plugin).
config.substitutions.append(("%braid_lib", os.path.join(config.braid_obj_root, "lib")))
# The build tree (cmake --install reads it) and its compilers.
config.substitutions.append(("%braid_obj", config.braid_obj_root))
config.substitutions.append(("%cc", config.host_cc))
config.substitutions.append(("%cxx", config.host_cxx))

# The model builder is pure Python and is used from the source tree.
config.environment["PYTHONPATH"] = os.path.join(config.braid_src_root, "python")

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.braid_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["braid-opt"], [config.braid_tools_dir])

# Features. `nvcc`: the CUDA compiler (CUDA sources compile here without a
# GPU); `cuda-gpu`: a GPU to run on. Tests that need them say
# `REQUIRES: nvcc` and are reported UNSUPPORTED where it is missing.
import shutil  # noqa: E402

# A sanitized build (BRAID_SANITIZE) is CPU-only: no `nvcc` there. Its
# binaries and the programs braid-run builds stop at the first ASan or UBSan
# report (status 1 and the report on stderr, which fails the test). Leaks:
# MPI, Python and the MLIR context keep memory to the end by design, so
# LeakSanitizer is off; the runtime's own buffers are checked by ASan. Manual
# poisoning is off too: LLVM's allocators poison their slabs in instrumented
# code (ours) and not in Debian's uninstrumented libMLIR.so, which share them,
# so a value libMLIR allocates would read as poisoned in ours. ASan's
# per-thread alternate signal stack is off: libLLVM installs its own (malloc'd)
# one on the first thread that registers its signal handlers (a temporary
# file, a tool output file), and ASan, at that thread's exit, unmaps it as its
# own and dies ("failed to deallocate", CAPI/run.c).
_sanitize = getattr(config, "braid_sanitize", False)
#
# Programs and libraries a test compiles link the instrumented runtime: %cc,
# %cxx and mpicxx (OMPI_CC, OMPI_CXX) are then the build's compilers with its
# sanitizer flags (test/CMakeLists.txt writes them). Python is not
# instrumented: a test that loads an instrumented library through ctypes
# runs %ctypes_python, Python with the shared ASan runtime preloaded (for
# those tests only: braid-opt and the programs braid-run builds link the
# static one, which refuses to start beside it), and builds the library
# with %ctypes_cxx.
_ctypes_cxx, _ctypes_python = "c++", config.python_executable
if _sanitize:
    config.available_features.add("sanitize")
    config.environment["BRAID_TEST_SANITIZED"] = "1"
    config.environment["ASAN_OPTIONS"] = "detect_leaks=0:allow_user_poisoning=0:use_sigaltstack=0:abort_on_error=0:exitcode=1"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    _wrappers = os.path.join(config.braid_obj_root, "test")
    config.braid_sanitize_cc = os.path.join(_wrappers, "sanitize-c")
    config.braid_sanitize_cxx = os.path.join(_wrappers, "sanitize-c++")
    config.environment["OMPI_CC"] = config.braid_sanitize_cc
    config.environment["OMPI_CXX"] = config.braid_sanitize_cxx
    config.substitutions = [
        (k, {"%cc": config.braid_sanitize_cc, "%cxx": config.braid_sanitize_cxx}.get(k, v))
        for k, v in config.substitutions]
    _ctypes_cxx = config.braid_sanitize_cxx
    _ctypes_python = "env LD_PRELOAD=%s %s" % (config.braid_asan_runtime,
                                                config.python_executable)
config.substitutions.append(("%ctypes_cxx", _ctypes_cxx))
config.substitutions.append(("%ctypes_python", _ctypes_python))
_nvcc = os.environ.get("BRAID_NVCC") or "/usr/local/cuda/bin/nvcc"
if not _sanitize and (os.path.exists(_nvcc) or shutil.which("nvcc")):
    config.available_features.add("nvcc")
# `libfuzzer`: the fuzz targets were built (fuzz/CMakeLists.txt).
if os.path.exists(os.path.join(config.braid_tools_dir, "braid-fuzz-parse")):
    config.available_features.add("libfuzzer")
# `cmake`: the installed package can be built against.
# `cudasim`: the CUDA backend on the CPU emulation was built (runtime/cudasim;
# a sanitized CI build leaves it out, BRAID_RUNTIME_ENABLE_CUDASIM=OFF).
if os.path.exists(os.path.join(config.braid_obj_root, "lib", "libbraid_kernels_cudasim.a")):
    config.available_features.add("cudasim")
if shutil.which("cmake"):
    config.available_features.add("cmake")
# `python-bindings`: the build made braid._braid (where nanobind was
# importable; not in a sanitized build).
import glob  # noqa: E402
if glob.glob(os.path.join(config.braid_obj_root, "python", "braid", "_braid*.so")):
    config.available_features.add("python-bindings")
    # `python-wheel`: `pip install ./python` can build the wheel here, without
    # fetching its build requirements.
    import subprocess  # noqa: E402
    if subprocess.run([config.python_executable, "-c", "import scikit_build_core, nanobind"],
                      capture_output=True).returncode == 0:
        config.available_features.add("python-wheel")
# `tokenizers`: the PyPI package braid.data tokenizes text with.
import subprocess  # noqa: E402
if subprocess.run([config.python_executable, "-c", "import tokenizers"],
                  capture_output=True).returncode == 0:
    config.available_features.add("tokenizers")
# `mpirun`: several CPU ranks can run.
if shutil.which("mpirun") or shutil.which("mpiexec"):
    config.available_features.add("mpirun")
if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidiactl"):
    config.available_features.add("cuda-gpu")
