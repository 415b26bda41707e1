# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate --verify on a grid (issue 42; lib/Driver/Generate.cpp,
# GenerateVerify.cpp, runtime/src/driver_generate.cpp): the inference
# programs partitioned for the grid run on CPU ranks under MPI, and --verify
# checks both that every decode step's logits equal the forward program's at
# that row (teacher forcing, on the grid) and that the grid generates what one
# rank generates: identical ids, logits within 1e-5 relative. Each launch
# covers one plan with prompts of different lengths (two waves):
# - llama-tiny (4 heads, 2 kv heads): tp=2, tp=4 (kv heads below tp: the
#   cache whole on each rank, Megatron's replication), dp=2, dp=2 x tp=2,
#   and seeded sampling (temperature, top-k, top-p) on tp=2;
# - gpt-tiny (learned positions): tp=2;
# - moe-tiny: ep=2 (each rank its experts, the decode step's tokens sent by
#   all-to-all, no token dropped), and dp=2 x ep=2 with a batch of 4;
# - mamba-tiny on tp=2 (conv and SSM states split on the channels), and the
#   hybrid (Mamba, attention and MoE layers) on cp=2 x tp=2: prefill's
#   prompts split over cp with the Mamba state carried between the chunks,
#   the KV cache split by sequence, the Mamba states per sequence;
# - pipelines (one binary per stage, launched together; each stage holds its
#   layers' cache, the batch flows through the stages in micro-batches and
#   the last stage's logits reach every rank): llama-tiny on pp=2 with two
#   micro-batches and on tp=2 x pp=2, a 4-layer Llama on pp=4 with four
#   micro-batches and on pp=2 x dp=2;
# - without --verify, the vocabulary-parallel sampler (logits never
#   gathered) draws the ids drawn from whole rows (sampled on tp=2, greedy
#   on tp x pp and tp=4);
# - bad requests on tp x pp refused by name (once, by rank 0) while the
#   others generate one rank's ids;
# - a grid the batch cannot be split on (dp=4, batch 2) is a located error;
# - the negative test: a dropped TP all-reduce (--inject-fault) makes the
#   comparison with one rank FAIL with status 1.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest, ids  # noqa: E402

test = GenerateTest()
run, expect = test.run, test.expect


# A Llama of 4 layers and a batch of 4 for four pipeline stages.
llama_l4 = os.path.join(test.work, "llama-l4-b4.mlir")
with open(llama_l4, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--layers", "4",
                            "--batch", "4"], check=True, capture_output=True, text=True).stdout)

prompts = test.prompts("prompts.txt", ["1 2 3 4 5 6", "9 8 7", "5", "42 17 3 3 3"])

sampling = ["--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "3"]
cases = [
    ("llama-tiny.mlir", "tp=2", []),
    ("llama-tiny.mlir", "tp=4", []),
    ("llama-tiny.mlir", "dp=2", []),
    ("llama-tiny.mlir", "dp=2,tp=2", []),
    ("llama-tiny.mlir", "tp=2", sampling),
    ("gpt-tiny.mlir", "tp=2", ["--batch", "2", "--context", "16"]),
    ("moe-tiny.mlir", "ep=2", []),
    ("moe-tiny.mlir", "dp=2,ep=2", ["--batch", "4"]),
    ("mamba-tiny.mlir", "tp=2", []),
    ("hybrid-tiny.mlir", "cp=2,tp=2", []),
    ("llama-tiny.mlir", "pp=2", ["--microbatches", "2"]),
    ("llama-tiny.mlir", "tp=2,pp=2", []),
    (llama_l4, "pp=4", ["--microbatches", "4"]),
    (llama_l4, "pp=2,dp=2", ["--microbatches", "2"]),
]
runs = {(model, grid, tuple(extra)): test.check_grid(model, grid, prompts, *extra)
        for model, grid, extra in cases}

# Without --verify nothing reads the whole logits: each rank keeps its block
# of the vocabulary and the vocabulary-parallel sampler draws the ids, which
# must be those drawn from the whole rows (the verified runs above).
for grid, extra in (("tp=2", sampling), ("tp=2,pp=2", []), ("tp=4", [])):
    verified = runs[("llama-tiny.mlir", grid, tuple(extra))]
    fast = run("llama-tiny.mlir", "--generate", "5", "--grid", grid, "--prompts", prompts, *extra)
    expect(fast.returncode == 0 and ids(fast) == ids(verified) and len(ids(fast)) == 4,
           f"--grid {grid} {' '.join(extra)}: the parallel sampler's ids differ", fast)

# A dropped TP all-reduce: the partial sums reach the logits.
r = run("llama-tiny.mlir", "--generate", "3", "--verify", "--grid", "tp=2", "--prompts", prompts,
        "--inject-fault", "drop-all-reduce")
test.expect_grid_fails(r, "tp=2", "a dropped TP all-reduce")

# Bad requests on a grid (tp=2 x pp=2) are refused by name, every rank
# alike, and the others generate one rank's ids (status 2).
bad = test.prompts("bad.txt", ["1 2 3", "1 two 3", "", "7 256", "5 5 5 5 5 5 5 5 5 5 5 5 5", "9 9"])
on_grid = run("llama-tiny.mlir", "--generate", "5", "--grid", "tp=2,pp=2", "--prompts", bad,
              "--prompt-len", "13")
alone = run("llama-tiny.mlir", "--generate", "5", "--prompts", bad, "--prompt-len", "13")
got = ids(on_grid)
expect(on_grid.returncode == 2 and got == ids(alone)
       and all(why in got.get(k, "") for k, why in
               ((1, "malformed line"), (2, "empty prompt"), (3, "outside the vocabulary"),
                (4, "exceeds the context")))
       and all(len(got.get(k, "").split()) == 5 for k in (0, 5))
       and on_grid.stderr.count("request 2 refused: empty prompt") == 1
       and "SIGTERM" not in on_grid.stderr,
       "bad requests on tp=2 x pp=2 were not refused by name as on one rank", on_grid)

# A grid the programs cannot be split on is a located error before anything runs.
r = run("llama-tiny.mlir", "--generate", "2", "--grid", "dp=4")
expect(r.returncode != 0 and re.search(r"llama-tiny.mlir:\d+:\d+: error: cannot split dimension 0 "
                                        r".* over dp \(4 ranks\)", r.stderr)
       and "request 0" not in r.stdout, "a batch of 2 over dp=4 was not a located error", r)

test.finish("generate-ranks")
