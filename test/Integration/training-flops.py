# RUN: %python %s %braid_src
#
# --braid-model-stats predicts the training FLOPs of a model; the training
# step --braid-autodiff and --braid-optimizer generate, counted op by op by
# the same analysis, must do exactly that many: 3x the forward without
# recompute, plus the layers' attention products with selective recompute,
# plus the layers' whole forward with full recompute.
import os
import re
import subprocess
import sys

src = sys.argv[1]
failures = []


def stats(text, *passes):
    out = subprocess.run(["braid-opt", "-", *passes, "--braid-model-stats", "-o", "/dev/null"],
                         input=text, capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"^(\S+): (\S+)$", out, re.M))


models = [(name, open(os.path.join(src, "examples", name + ".mlir")).read())
          for name in ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]]
models.append(("llama3-8b (2 layers, seq 256)", subprocess.run(
    [sys.executable, "-m", "braid.models", "llama3-8b", "--layers", "2", "--seq", "256"],
    capture_output=True, text=True, check=True).stdout))
for name, text in models:
    predicted = stats(text)
    for policy, key in [("none", "training_flops_per_token"),
                        ("selective", "training_flops_per_token_selective_recompute"),
                        ("full", "training_flops_per_token_full_recompute")]:
        generated = stats(text, "--braid-expand-expert-ffn",
                          f"--braid-autodiff=recompute={policy}", "--braid-optimizer")
        if generated["forward_flops_per_token"] != predicted[key]:
            failures.append(f"{name}, recompute={policy}: the generated step does "
                            f"{generated['forward_flops_per_token']} FLOPs per token, "
                            f"--braid-model-stats predicts {predicted[key]}")
    print(f"{name}: training FLOPs per token {predicted['training_flops_per_token']} "
          f"(selective {predicted['training_flops_per_token_selective_recompute']}, full "
          f"{predicted['training_flops_per_token_full_recompute']}) = generated step")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
