# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# The activation memory the cost model counts per layer for Braid's own
# runtime equals what the compiler keeps: for Llama 3 8B (its full shape,
# bf16, a global batch of 8 in one micro-batch), braid-plan --evaluate's
# layer_activation_bytes against the bytes of the results of the first call
# of the layer's forward in braid-opt's static memory plan
# (--braid-print-memory-plan: what the layer leaves for its backward, which
# the runtime allocates and measures). Exact, on plans without tensor
# parallelism, with it, and with sequence parallelism (where Braid keeps the
# gathered inputs of the column-parallel products, not the norms'
# sequence-sharded outputs, and its attention backward recomputes the
# softmax statistics: no log-sum-exp is kept).
import json
import os
import re
import subprocess
import sys

work = sys.argv[1]
model = os.path.join(work, "llama3-8b.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "llama3-8b", "--batch", "8", "-o", model],
               check=True)
failures = []
# (grid, sequence parallelism, braid-plan spec)
for grid, sp, spec in [("dp=8", False, "dp=8,mbs=1,zero=1"),
                       ("dp=2,tp=4", True, "dp=2,tp=4,mbs=4,zero=1"),
                       ("dp=2,tp=4", False, "dp=2,tp=4,mbs=4,zero=1,sp=0"),
                       ("dp=4,tp=2", True, "dp=4,tp=2,mbs=2,zero=0")]:
    planned = json.loads(subprocess.run(
        ["braid-plan", model, "--gpus", "8", "--global-batch", "8", "--evaluate", spec,
         "--format", "json"], check=True, capture_output=True, text=True).stdout)["plans"][0]
    mem = subprocess.run(
        ["braid-opt", model,
         f"--braid-training-pipeline=grid={grid} sequence-parallel={str(sp).lower()} dtype=bf16",
         "--braid-print-memory-plan", "-o", os.devnull],
        check=True, capture_output=True, text=True).stdout
    step = mem.split("func @step frame_bytes")[1]
    call = re.search(r"call @\S+\.fwd at (\d+)", step)
    kept = sum(int(b) for b in re.findall(rf"buffer #{call.group(1)}\.\d+ offset \d+ bytes (\d+)",
                                          step))
    got = planned["layer_activation_bytes"]
    print(f"{spec}: planner {got}, compiler {kept}")
    if kept == 0 or got != kept:
        failures.append(f"{spec}: the planner counts {got} bytes per layer, the compiler keeps "
                        f"{kept}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
