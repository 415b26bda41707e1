# The CPU optimizer kernels of runtime/src/cpu (optimizer.cpp: sum_squares,
# clip_coefficient, sgd_update, adamw_update, increment, zero, convert) against
# float64 updates written here with numpy. optimizer.cpp is compiled here with
# the host compiler, so the test does not depend on the CMake wiring; the
# harness (library loading, storage types, errors) is Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/optimizer.cpp %braid_src/runtime/src/cpu/blas.cpp %braid_src/runtime/src/cpu/thread_pool.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Bounds: rel(a, b) = max|a - b| / max|b| per output tensor, b the float64
# update on the stored inputs; f32 storage 1e-5 (2e-5 relative to the update
# itself, see update_close), bf16 2^-8, f16 2^-10 (the rounding of the stored
# result); the moments m, v (f32) 1e-6. Conversions and zeroing: bit-exact.

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import (BF16, DTN, DTYPES, F16, F32, I32, I64, MAX_ERR, adamw,  # noqa: E402
                            call, declare, main, rel, to_bf16)
from kernel_harness import poisoned as empty, store64 as store, values64 as values  # noqa: E402

RNG = np.random.default_rng(7351)

declare(["braid_k_sum_squares", "braid_k_clip_coefficient", "braid_k_sgd_update",
         "braid_k_adamw_update", "braid_k_increment", "braid_k_convert", "braid_k_zero"])


class Case(kernel_harness.Case):
    rng = RNG


# --- optimizer -------------------------------------------------------------------------------

class Optimizer(Case):
    def update_close(self, kernel, dt, before, got_stored, ref):
        """f32: the error relative to the largest update ref - before (~lr; the f32
        rounding of p ~ 1 is 6e-8, ~1e-5 of an update of 1e-2: bound 2e-5);
        bf16 / f16: the storage rounding of p, relative to max|p| as elsewhere."""
        if dt == F32:
            err = rel(values(got_stored, dt) - before, ref - before)
            MAX_ERR[(kernel, "f32")] = max(MAX_ERR.get((kernel, "f32"), 0.0), err)
            self.assertLessEqual(err, 2e-5, kernel)
        else:
            self.close(kernel, dt, got_stored, ref)

    def test_sum_squares_and_clip(self):
        for dt in DTYPES:
            xs, x = store(self.randn(1001, scale=3.0), dt)
            acc = np.array(2.5, dtype=np.float32)
            call("braid_k_sum_squares", dt, xs, acc, x.size)
            self.close("sum_squares", F32, acc, 2.5 + np.sum(x * x))
        for sumsq, max_norm in ((100.0, 1.0), (0.25, 1.0), (0.0, 1.0), (4.0, 0.0), (4.0, -1.0),
                                (1e6, 3.0)):
            coef = np.zeros((), np.float32)
            call("braid_k_clip_coefficient", np.array(sumsq, np.float32), coef, max_norm)
            ref = 1.0 if max_norm <= 0 else min(1.0, max_norm / (math.sqrt(sumsq) + 1e-6))
            self.close("clip_coefficient", F32, coef, ref, f" {sumsq} {max_norm}", tol=1e-7)

    def test_sgd(self):
        for dt in DTYPES:
            for n, coef, lr, wd in ((1, 1.0, 0.1, 0.0), (777, 0.3, 0.01, 0.1)):
                ps, p = store(self.randn(n), dt)
                gs, g = store(self.randn(n), dt)
                call("braid_k_sgd_update", dt, ps, gs, np.array(coef, np.float32), n, lr, wd)
                gg = float(np.float32(coef)) * g
                self.update_close("sgd_update", dt, p, ps, p - lr * (gg + wd * p))

    def test_adamw(self):
        for dt in DTYPES:
            n, lr, b1, b2, eps, wd = 1003, 1e-2, 0.9, 0.95, 1e-8, 0.1
            ps, p = store(self.randn(n), dt)
            m = self.randn(n, scale=0.1)
            v = np.abs(self.randn(n, scale=0.1))
            m0, v0 = m.astype(np.float64), v.astype(np.float64)
            for step, coef in ((1.0, 1.0), (7.0, 0.5)):
                gs, g = store(self.randn(n), dt)
                pv = values(ps, dt)
                mv, vv = m.astype(np.float64), v.astype(np.float64)
                call("braid_k_adamw_update", dt, ps, gs, m, v, np.array(coef, np.float32),
                     np.array(step, np.float32), n, adamw(lr, b1, b2, eps, wd))
                gg = coef * g
                rm = b1 * mv + (1 - b1) * gg
                rv = b2 * vv + (1 - b2) * gg * gg
                rp = pv - lr * (rm / (1 - b1 ** step) / (np.sqrt(rv / (1 - b2 ** step)) + eps)
                                + wd * pv)
                self.close("adamw_update.m", F32, m, rm, tol=1e-6)
                self.close("adamw_update.v", F32, v, rv, tol=1e-6)
                self.update_close("adamw_update.p", dt, pv, ps, rp)
            self.assertFalse(np.array_equal(m, m0) or np.array_equal(v, v0))

    def test_increment_zero_convert(self):
        step = np.array(3.0, np.float32)
        call("braid_k_increment", step)
        call("braid_k_increment", step)
        self.assertEqual(float(step), 5.0)
        for dt, npdt in ((F32, np.float32), (BF16, np.uint16), (F16, np.float16), (I32, np.int32),
                         (I64, np.int64)):
            y = np.full(37, 5, dtype=npdt)
            call("braid_k_zero", dt, y, 37)
            self.assertTrue((y.view(np.uint8) == 0).all())
        x = np.concatenate([self.randn(3000, scale=10.0), self.randn(500, scale=1e-6),
                            np.float32([0.0, -0.0, np.inf, -np.inf, 65520.0, 1.00390625,
                                        3e38])])
        with np.errstate(over="ignore"):
            as_dt = {F32: x, BF16: to_bf16(x), F16: x.astype(np.float16)}
        for src in DTYPES:
            for dst in DTYPES:
                xin = as_dt[src]
                srcv = values(xin, src).astype(np.float32)
                with np.errstate(over="ignore"):
                    expect = {F32: srcv, BF16: to_bf16(srcv), F16: srcv.astype(np.float16)}[dst]
                y = empty(x.size, dst)
                call("braid_k_convert", src, dst, xin, y, x.size)
                np.testing.assert_array_equal(y.view(np.uint8), expect.view(np.uint8),
                                              err_msg=f"convert {DTN[src]} -> {DTN[dst]}")



if __name__ == "__main__":
    main("cpu-optimizer.py", width=32)
