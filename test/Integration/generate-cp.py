# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate --verify under context parallelism (issue 42): the KV
# cache split by sequence over cp in contiguous chunks, prefill's prompt split
# as training's sequence, each rank attending over its chunk and the partials
# merged by log-sum-exp (PartitionCacheContext.cpp, BraidToDist's
# CacheContext.cpp). --verify checks teacher forcing on the grid and that the
# grid generates what one rank generates (identical ids, logits within 1e-5).
# Prompts of different lengths (two waves), the longest a multiple of cp (the
# prompt length prefill is compiled for), decode crossing from one rank's
# chunk into the next:
# - llama-tiny: cp=2, cp=4 (chunks of 4 rows), cp=2 x tp=2;
# - gpt-tiny (learned positions at each sequence's offset): cp=2;
# - hybrid-tiny (attention and Mamba layers) on cp=2 x tp=2: the Mamba
#   steps' prefill runs on each rank's chunk with the state carried from
#   rank to rank (more in generate-cp-mamba.py), the attention layers'
#   caches by chunks;
# - llama-tiny cp=2 with a longest prompt of 7 rows, which cp does not
#   divide: prefill runs whole on every rank, its cache split;
# - the negative test: a wrong cp merge (--inject-fault wrong-cp-merge: equal
#   weights instead of the log-sum-exps) makes --verify FAIL with status 1.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest  # noqa: E402

test = GenerateTest()

prompts = test.prompts("prompts.txt", ["1 2 3 4 5 6 7 8", "9 8 7", "5", "42 17 3 3 3"])
odd = test.prompts("odd.txt", ["1 2 3 4 5 6 7", "9 8 7", "5", "42 17 3 3 3"])
cases = [
    ("llama-tiny.mlir", "cp=2", []),
    ("llama-tiny.mlir", "cp=4", []),
    ("llama-tiny.mlir", "cp=2,tp=2", []),
    ("gpt-tiny.mlir", "cp=2", ["--batch", "2", "--context", "16"]),
    ("hybrid-tiny.mlir", "cp=2,tp=2", []),
    ("llama-tiny.mlir", "cp=2", ["--prompts", odd]),
]
for model, grid, extra in cases:
    test.check_grid(model, grid, prompts, *extra)

# A wrong cp merge: the ranks' partial attention averaged, not weighted by
# their log-sum-exps.
r = test.run("llama-tiny.mlir", "--generate", "3", "--verify", "--grid", "cp=2", "--prompts",
             prompts, "--inject-fault", "wrong-cp-merge")
test.expect_grid_fails(r, "cp=2", "a wrong cp merge")

test.finish("generate-cp")
