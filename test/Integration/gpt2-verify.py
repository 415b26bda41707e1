# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
# UNSUPPORTED: sanitize
#
# A real-size model in the differential matrix: GPT-2 small (124M
# parameters: 12 layers, hidden 768, 12 heads, vocabulary 50257, learned
# positions, tied embedding), its sequence cut to 128 tokens to keep the
# suite's time, on tp=2 (Megatron's column- and row-parallel MLP and
# attention, the vocabulary-parallel embedding and loss): 2 AdamW steps at
# braid-run's defaults, checked by --verify against the same program on one
# rank (step 1's gradients and updates and every step's loss, within the
# bounds of include/braid/Driver/Verify.h). The toy presets cover the plans'
# variety; this covers sizes where sums run over 768 and 3072 terms and the
# vocabulary over 25k-entry shards. (Not in the sanitized build: minutes
# there, and the same code paths run in the tiny presets' matrix.)
import os
import subprocess
import sys

work = sys.argv[1]
model = os.path.join(work, "gpt2-small-s128.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "gpt2-small", "--seq", "128", "-o", model],
               check=True)
r = subprocess.run(["braid-run", model, "--grid", "tp=2", "--steps", "2", "--verify"],
                   capture_output=True, text=True)
print(r.stdout[-3000:], r.stderr[-3000:])
if r.returncode or "verify: PASS" not in r.stdout:
    print(f"GPT-2 small on tp=2: --verify did not pass ({r.returncode})")
    sys.exit(1)
