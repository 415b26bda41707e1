"""Shared harness of the CPU kernel tests (test/Kernels/cpu-*.py).

Each test compiles the kernels of runtime/src/cpu into a shared library in its
RUN lines and passes its path as argv[1]; this module loads it with ctypes
(the C ABI of every braid_k_* kernel in SIGS), converts between numpy arrays
and the storage types (f32, bf16, f16), measures errors, runs the unittest
classes and prints the largest errors seen. test/Kernels/Inputs is excluded
from lit discovery.
"""

import ctypes
import os
import subprocess
import sys
import unittest

import numpy as np

F32, BF16, F16, I32, I64 = 0, 1, 2, 3, 4
DTYPES = (F32, BF16, F16)
DTN = {F32: "f32", BF16: "bf16", F16: "f16"}
TOL = {F32: 1e-5, BF16: 2.0 ** -8, F16: 2.0 ** -10}
MAX_ERR = {}  # (kernel, dtype) -> largest relative error seen, printed at the end
FD_ERR = {}   # op -> largest finite-difference discrepancy of a numpy VJP

# --- the kernel library --------------------------------------------------------

P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double


class AttentionParams(ctypes.Structure):
    """braid_attention_params (runtime.h): the sizes and options of an attention call."""
    _fields_ = [("batch", I), ("seq", I), ("seq_kv", I), ("heads", I), ("kv_heads", I),
                ("head_dim", I), ("v_head_dim", I), ("causal", I4), ("scale", D),
                ("rope_theta", D), ("q_offset", I)]


AP = ctypes.POINTER(AttentionParams)


class ScanParams(ctypes.Structure):
    """braid_scan_params (runtime.h): the sizes and options of a selective scan."""
    _fields_ = [("batch", I), ("seq", I), ("channels", I), ("state", I),
                ("delta_softplus", I4)]


SP = ctypes.POINTER(ScanParams)


def attn(batch, seq, seq_kv, heads, kv_heads, head_dim, v_head_dim, causal, scale, rope_theta,
         q_offset=0):
    """The attention kernels' last argument: a braid_attention_params by reference."""
    return ctypes.byref(AttentionParams(batch, seq, seq_kv, heads, kv_heads, head_dim,
                                        v_head_dim, int(causal), scale, rope_theta, q_offset))


class AdamWParams(ctypes.Structure):
    """braid_adamw_params (runtime.h): AdamW's hyperparameters."""
    _fields_ = [("lr", D), ("beta1", D), ("beta2", D), ("eps", D), ("weight_decay", D)]


def adamw(lr, beta1, beta2, eps, weight_decay):
    """braid_k_adamw_update's params: a braid_adamw_params by reference."""
    return ctypes.byref(AdamWParams(lr, beta1, beta2, eps, weight_decay))


def scan(batch, seq, channels, state, delta_softplus):
    """The selective scan kernels' params: a braid_scan_params by reference."""
    return ctypes.byref(ScanParams(batch, seq, channels, state, int(delta_softplus)))


SIGS = {
    # forward
    "braid_k_embedding": [P, I4, I4, P, P, P, P, I, I, I, I],
    "braid_k_linear": [P, I4, P, P, P, P, I, I, I, I4],
    "braid_k_batch_matmul": [P, I4, P, P, P, I, I, I, I, I4, I4],
    "braid_k_attention": [P, I4, P, P, P, P, AP],
    "braid_k_rms_norm": [P, I4, P, P, P, I, I, D],
    "braid_k_layer_norm": [P, I4, P, P, P, P, I, I, D],
    "braid_k_softmax": [P, I4, P, P, I, I],
    "braid_k_softmax_grad": [P, I4, P, P, P, I, I],
    "braid_k_unary": [P, I4, I4, P, P, I],
    "braid_k_binary": [P, I4, I4, P, P, P, I],
    "braid_k_glu": [P, I4, I4, P, P, P, I],
    "braid_k_transpose": [P, I4, P, P, I4, P, P],
    "braid_k_cross_entropy": [P, I4, I4, P, P, P, I, I],
    "braid_k_conv1d": [P, I4, P, P, P, P, I, I, I, I],
    "braid_k_selective_scan": [P, I4, P, P, P, P, P, P, P, SP],
    "braid_k_router": [P, I4, P, P, P, I, I, I, I4],
    "braid_k_dispatch": [P, I4, P, P, P, I, I, I, I, I, I],
    "braid_k_combine": [P, I4, P, P, P, P, I, I, I, I, I, I],
    # context parallelism of the Mamba ops (mamba.cpp, grad_mamba.cpp)
    "braid_k_conv1d_halo": [P, I4, P, P, P, P, P, I, I, I, I],
    "braid_k_conv1d_halo_grad": [P, I4, P, P, P, P, P, P, P, P, I, I, I, I],
    "braid_k_conv1d_halo_accumulate": [P, I4, P, P, I, I, I, I],
    "braid_k_selective_scan_chunk": [P, I4, P, P, P, P, P, P, P, P, P, P, SP],
    "braid_k_scan_carry": [P, P, P, P, I, I, I],
    "braid_k_selective_scan_chunk_grad": [P, I4] + [P] * 17 + [SP, I4],
    "braid_k_scan_carry_grad": [P, P, P, P, P, P, I, I, I],
    # backward
    "braid_k_sum_rows": [P, I4, P, P, I, I],
    "braid_k_activation_grad": [P, I4, I4, P, P, P, I],
    "braid_k_attention_grad": [P, I4, P, P, P, P, P, P, P, AP],
    "braid_k_rms_norm_grad": [P, I4, P, P, P, P, P, I, I, D],
    "braid_k_layer_norm_grad": [P, I4, P, P, P, P, P, P, I, I, D],
    "braid_k_embedding_grad": [P, I4, I4, P, P, P, I, I, I],
    "braid_k_position_grad": [P, I4, P, P, I, I, I, I],
    "braid_k_cross_entropy_grad": [P, I4, I4, P, P, P, P, I, I],
    "braid_k_conv1d_grad": [P, I4, P, P, P, P, P, P, I, I, I, I],
    "braid_k_selective_scan_grad": [P, I4] + [P] * 13 + [SP],
    "braid_k_router_grad": [P, I4, P, P, P, P, I, I, I, I4],
    "braid_k_dispatch_grad": [P, I4, P, P, P, I, I, I, I, I, I],
    "braid_k_combine_grad": [P, I4, P, P, P, P, P, P, I, I, I, I, I, I],
    # optimizer
    "braid_k_sum_squares": [P, I4, P, P, I],
    "braid_k_clip_coefficient": [P, P, P, D],
    "braid_k_sgd_update": [P, I4, P, P, P, I, D, D],
    "braid_k_adamw_update": [P, I4, P, P, P, P, P, P, I, ctypes.POINTER(AdamWParams)],
    "braid_k_increment": [P, P],
    "braid_k_convert": [P, I4, I4, P, P, I],
    "braid_k_zero": [P, I4, P, I],
}

LIB_PATH = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
LIB = ctypes.CDLL(LIB_PATH) if LIB_PATH else None


def declare(names, extra=None):
    """Sets the ctypes signatures of the kernels `names` (from SIGS) and of the
    `extra` {name: argtypes} functions the test library defines."""
    if LIB is None:
        return
    sigs = {name: SIGS[name] for name in names}
    sigs.update(extra or {})
    for name, args in sigs.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None


def call(name, *args):
    """Calls kernel `name` with a null runtime context; arrays by address."""
    conv = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
    getattr(LIB, name)(None, *conv)


# --- storage types (independent of runtime/include/braid/numeric.h) ----------

def to_bf16(x):
    """f32 -> bf16 bits, round to nearest even, NaN -> quiet NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def from_bf16(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def store(x32, dt):
    """(array passed to the kernel, the f32 values it holds)."""
    x32 = np.ascontiguousarray(x32, dtype=np.float32)
    if dt == F32:
        return x32, x32
    if dt == BF16:
        b = to_bf16(x32)
        return b, from_bf16(b)
    h = x32.astype(np.float16)
    return h, h.astype(np.float32)


def values(stored, dt):
    """The f32 values of a stored array."""
    if dt == F32:
        return stored
    if dt == BF16:
        return from_bf16(stored)
    return stored.astype(np.float32)


def store64(x, dt):
    """(array passed to the kernel, its values as float64)."""
    s, v = store(x, dt)
    return s, v.astype(np.float64)


def values64(stored, dt):
    return values(stored, dt).astype(np.float64)


def empty(shape, dt):
    """A zero-filled output array."""
    return np.zeros(shape, dtype={F32: np.float32, BF16: np.uint16, F16: np.float16}[dt])


def poisoned(shape, dt):
    """An output array filled with NaN: elements a kernel leaves unwritten show."""
    return np.full(shape, np.nan if dt != BF16 else 0x7FC0,
                   dtype={F32: np.float32, BF16: np.uint16, F16: np.float16}[dt])


def rel(a, b, floor=1e-30):
    """max|a - b| / max|b|; `floor` bounds the denominator below (for outputs that
    are exactly 0 in theory, where the float64 reference holds rounding noise)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), floor))


# --- test cases ------------------------------------------------------------------

class Case(unittest.TestCase):
    """Set `rng` (a numpy Generator) in the test module's subclass."""
    rng = None

    def close(self, kernel, dt, got_stored, ref, what="", tol=None, floor=1e-30):
        got = values(got_stored, dt)
        self.assertFalse(np.isnan(got).any(), f"{kernel}{what}: NaN in the output")
        err = rel(got, ref, floor)
        key = (kernel, DTN[dt])
        MAX_ERR[key] = max(MAX_ERR.get(key, 0.0), err)
        self.assertLessEqual(err, TOL[dt] if tol is None else tol,
                             f"{kernel} {key[1]}{what}: rel error {err:.3g}")

    def fwd_close(self, kernel, got, ref, what=""):
        """The numpy forward of a gradient test against the forward kernel (f32)."""
        err = rel(np.asarray(got, dtype=np.float64), ref)
        self.assertLessEqual(err, 1e-5, f"forward {kernel}{what}: the numpy forward differs "
                             f"from the kernel (rel {err:.3g})")

    def randn(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def check_aborts(self, script, cases):
        """Runs `script` (argv: the library, a case name) per (case, message):
        it must fail without printing "returned", with the message on stderr."""
        for which, msg in cases:
            r = subprocess.run([sys.executable, "-c", script, LIB_PATH, which],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0, which)
            self.assertNotIn("returned", r.stdout)
            self.assertIn(msg, r.stderr)

    def check_abort_cases(self, path, messages, device):
        """check_aborts for the case file `path` run again as `path LIB abort
        CASE [--device]`: each (case, message) of `messages`."""
        me = os.path.abspath(path)
        script = (f"import runpy, sys; sys.argv = [{me!r}, sys.argv[1]] + sys.argv[2].split(); "
                  f"runpy.run_path({me!r}, run_name='__main__')")
        self.check_aborts(script, [(f"abort {which}" + (" --device" if device else ""), msg)
                                   for which, msg in messages.items()])


def fd_check(test, op, fwd, args, wrt, vjps, u, eps=1e-5, tol=1e-7):
    """<u, J v> by central differences against sum_i <vjp_i, v_i>."""
    dirs = [test.rng.standard_normal(np.shape(args[i])) for i in wrt]

    def at(sign):
        a = list(args)
        for i, v in zip(wrt, dirs):
            a[i] = args[i] + sign * eps * v
        return fwd(*a)

    fd = float(np.sum(u * (at(1.0) - at(-1.0)) / (2.0 * eps)))
    an = float(sum(np.sum(g * v) for g, v in zip(vjps, dirs)))
    err = abs(fd - an) / max(abs(an), 1.0)
    FD_ERR[op] = max(FD_ERR.get(op, 0.0), err)
    test.assertLessEqual(err, tol, f"{op}: finite differences {fd} vs VJP {an}")


def case_main(script, width, abort_case, commands=None):
    """The entry of a case file run as a child: `abort WHICH` runs one call
    that must stop (abort_case(WHICH)), each of `commands` (a word -> a
    function) runs that function; otherwise the test classes run (main),
    without the `--device` flag the file reads at import."""
    if "abort" in sys.argv:
        return abort_case(sys.argv[sys.argv.index("abort") + 1])
    for word, fn in (commands or {}).items():
        if word in sys.argv:
            return fn()
    if "--device" in sys.argv:
        sys.argv.remove("--device")
    main(script, width)


def main(script, width=24):
    """Runs the test classes of __main__ and prints the largest errors."""
    if LIB is None:
        sys.exit(f"usage: {script} KERNELS.so")
    prog = unittest.main(argv=sys.argv[:1], exit=False, verbosity=1)
    for (kernel, dt), err in sorted(MAX_ERR.items()):
        print(f"max rel error {kernel:{width}s} {dt:5s} {err:.3e}")
    for op, err in sorted(FD_ERR.items()):
        print(f"numpy VJP vs finite differences {op:16s} {err:.3e}")
    sys.exit(0 if prog.result.wasSuccessful() else 1)
