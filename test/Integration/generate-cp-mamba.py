# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src %if cudasim %{ --cudasim %}
#
# braid-run --generate --verify with Mamba layers under context parallelism
# (issue 42: "CP for prefill (... the Mamba state carry that training has)"):
# prefill's prompt rows are split over cp and each rank convolves and scans
# its own chunk, the convolution after the previous rank's last K-1 inputs (a
# halo, dist.shift) and the scan from the state the previous chunks leave
# (every chunk's zero-start final state and decay all-gathered and composed
# from the carried state); each sequence's conv and SSM states, taken on the
# rank holding its last row, are all-gathered and written on every cp rank,
# where decode reads them whole (MambaContext.cpp of BraidToDist).
# --verify checks teacher forcing on the grid and that the grid generates
# what one rank generates (identical ids, logits within 1e-5). Prompts of
# lengths 1 to 8 (prefill compiled for 8 rows: chunks of 4 on cp=2, the
# sequences' last rows on either rank):
# - mamba-tiny on cp=2, and on cp=4 with prompts of up to 12 rows (chunks of
#   3 rows, the convolution's whole halo; the state carried through 3 ranks);
# - hybrid-tiny (Mamba, MoE and attention layers) on cp=2 and cp=2 x tp=2;
# - mamba-tiny on cp=2 on the CUDA path under the CPU emulation (--backend
#   cudasim: the chunk kernels of runtime/src/cuda/mamba_step.cu);
# - the negative test: the scan's state not carried across cp ranks
#   (--inject-fault drop-cp-prefill-carry: every rank's chunk starts from the
#   cache's state as if it were the first) makes --verify FAIL with status 1.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest  # noqa: E402

test = GenerateTest()

prompts = test.prompts("prompts.txt", ["1 2 3 4 5 6 7 8", "9 8 7", "5", "42 17 3 3 3"])
longer = test.prompts("longer.txt", ["1 2 3 4 5 6 7 8 9 10 11 12", "9 8 7", "5",
                                     "42 17 3 3 3 4 5 6 7 8"])
cases = [
    ("mamba-tiny.mlir", "cp=2", []),
    ("mamba-tiny.mlir", "cp=4", ["--prompts", longer]),
    ("hybrid-tiny.mlir", "cp=2", []),
    ("hybrid-tiny.mlir", "cp=2,tp=2", []),
]
for model, grid, extra in cases:
    test.check_grid(model, grid, prompts, *extra)
two = test.prompts("two.txt", ["1 2 3 4 5 6 7 8", "17 3"])
if "--cudasim" in sys.argv[3:]:  # lit's `cudasim` feature (the RUN line)
    test.check_grid("mamba-tiny.mlir", "cp=2", two, "--backend", "cudasim", requests=2, tokens=3)

# The SSM state not carried from rank to rank at prefill.
r = test.run("mamba-tiny.mlir", "--generate", "3", "--verify", "--grid", "cp=2", "--prompts",
             prompts, "--inject-fault", "drop-cp-prefill-carry")
test.expect_grid_fails(r, "cp=2", "a Mamba state not carried across cp ranks")

test.finish("generate-cp-mamba")
