# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate with --microbatches (issue 42; PipelineInference.cpp,
# MicrobatchInference.cpp): the inference programs run their batch of
# sequences as micro-batches in turn, each on a KV cache of its own
# (cache.layers.<n>.k.mb<j>), the logits concatenated back in the batch's
# order. --verify checks teacher forcing, and on a grid that the grid
# generates what one rank without micro-batches does. Cases, prompts of
# different lengths over one wave of 4:
# - one rank, 2 and 4 micro-batches: the ids of the run without them;
# - dp=2 with 2 micro-batches: each rank's micro-batches' logits gathered
#   over dp, put back in the global order (rank, then micro-batch);
# - tp=2 with 2 micro-batches: the cache split by kv head and by micro-batch.
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GRID_OK, GenerateTest, ids  # noqa: E402

test = GenerateTest()
expect = test.expect
prompts = test.prompts("prompts.txt", ["1 2 3 4 5 6", "9 8 7", "5", "42 17 3 3 3"])


def run(*args):
    return test.run("llama-tiny.mlir", "--generate", "5", "--batch", "4", "--prompts", prompts,
                    *args)


TEACHER = re.compile(r"^verify: ok \(worst difference \S+ at", re.M)

whole = run("--verify")
expect(whole.returncode == 0 and TEACHER.search(whole.stdout), "no micro-batches", whole)
reference = ids(whole)
expect(sorted(reference) == [0, 1, 2, 3], "no micro-batches: not 4 requests", whole)

for count in ("2", "4"):
    r = run("--verify", "--microbatches", count)
    expect(r.returncode == 0 and TEACHER.search(r.stdout),
           f"{count} micro-batches: teacher forcing did not pass", r)
    expect(ids(r) == reference, f"{count} micro-batches: other ids than without", r)

for grid in ("dp=2", "tp=2"):
    r = run("--verify", "--microbatches", "2", "--grid", grid)
    m = GRID_OK.search(r.stdout)
    expect(r.returncode == 0 and m and m.group(1) == grid and float(m.group(3)) <= 1e-5,
           f"{grid} with 2 micro-batches: the grid does not generate what one rank does", r)
    expect(TEACHER.search(r.stdout), f"{grid} with 2 micro-batches: teacher forcing", r)
    expect(ids(r) == reference, f"{grid} with 2 micro-batches: other ids than one rank", r)

test.finish("generate-microbatches")
