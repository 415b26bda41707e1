# Published parameter counts through the compiler: braid-opt
# --braid-model-stats counts the parameters of each preset's module, and the
# count must be within 0.5% of the figure the model's authors published
# (for Mixtral also the active parameters per token, top-2 of 8 experts).
# Prints the relative error of each; exits 1 with `FAIL: ...` on a miss.
#
# RUN: %python %s braid-opt | FileCheck %s

# CHECK-NOT: FAIL
# CHECK: gpt2-small parameters 124439808 vs 1.2444e+08 rel_err {{.*}} ok
# CHECK: gpt3-175b parameters 174604259328 vs 1.75e+11 rel_err {{.*}} ok
# CHECK: llama2-7b parameters 6738415616 vs 6.74e+09 rel_err {{.*}} ok
# CHECK: llama3-8b parameters 8030261248 vs 8.03e+09 rel_err {{.*}} ok
# CHECK: llama3-70b parameters 70553706496 vs 7.06e+10 rel_err {{.*}} ok
# CHECK: mixtral-8x7b parameters 46702792704 vs 4.67e+10 rel_err {{.*}} ok
# CHECK: mixtral-8x7b parameters_active 12879925248 vs 1.29e+10 rel_err {{.*}} ok
# CHECK: mamba-2.8b parameters 2768345600 vs 2.77e+09 rel_err {{.*}} ok
# CHECK: checked 8 published counts

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from braid_stats import CheckError, preset_stats, rel_err, run_checks  # noqa: E402

TOLERANCE = 0.005

# (preset, stats key, published count)
PUBLISHED = [
    ("gpt2-small", "parameters", 124.44e6),    # Radford et al. 2019 (124M checkpoint)
    ("gpt3-175b", "parameters", 175.0e9),      # Brown et al. 2020, table 2.1
    ("llama2-7b", "parameters", 6.74e9),       # Touvron et al. 2023 (HF: 6.74B)
    ("llama3-8b", "parameters", 8.03e9),       # Meta 2024 (HF: 8.03B)
    ("llama3-70b", "parameters", 70.6e9),      # Meta 2024 (HF: 70.6B)
    ("mixtral-8x7b", "parameters", 46.7e9),    # Jiang et al. 2024: 46.7B total
    ("mixtral-8x7b", "parameters_active", 12.9e9),  # ... and 12.9B active per token
    ("mamba-2.8b", "parameters", 2.77e9),      # Gu & Dao 2023 (HF: 2.77B)
]


def main(braid_opt):
    stats = {}
    for name, key, want in PUBLISHED:
        if name not in stats:
            stats[name] = preset_stats(braid_opt, [name])
        got = stats[name][key]
        err = rel_err(got, want)
        verdict = "ok" if err <= TOLERANCE else "too far"
        print(f"{name} {key} {got} vs {want:.5g} rel_err {err:.5f} {verdict}")
        if err > TOLERANCE:
            raise CheckError(f"{name}: {key} {got} is {err:.2%} from the published "
                             f"{want:.5g} (tolerance {TOLERANCE:.1%})")
    print(f"checked {len(PUBLISHED)} published counts")


run_checks(lambda: main(sys.argv[1]))
