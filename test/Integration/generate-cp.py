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
#   steps' prefill runs on the whole prompt (gathered), the attention
#   layers' caches by chunks;
# - llama-tiny cp=2 with a longest prompt of 7 rows, which cp does not
#   divide: prefill runs whole on every rank, its cache split;
# - the negative test: a wrong cp merge (--inject-fault wrong-cp-merge: equal
#   weights instead of the log-sum-exps) makes --verify FAIL with status 1.
import os
import re
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
examples = os.path.join(src, "examples")
failures = []


def run(model, *args):
    env = dict(os.environ)
    env["BRAID_RUN_CACHE"] = os.path.join(work, "cache")
    env.pop("BRAID_TEST_PERTURB_LOGITS", None)
    return subprocess.run(["braid-run", os.path.join(examples, model), "--quiet", *args],
                          capture_output=True, text=True, env=env)


def expect(cond, what, r=None):
    if not cond:
        failures.append(what + (f"\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}" if r else ""))


def ids(r):
    return {int(m.group(1)): m.group(2).strip()
            for m in re.finditer(r"^request (\d+): (.*)$", r.stdout, re.M)}


prompts = os.path.join(work, "prompts.txt")
with open(prompts, "w") as f:
    f.write("1 2 3 4 5 6 7 8\n9 8 7\n5\n42 17 3 3 3\n")
odd = os.path.join(work, "odd.txt")
with open(odd, "w") as f:
    f.write("1 2 3 4 5 6 7\n9 8 7\n5\n42 17 3 3 3\n")

OK = re.compile(r"^verify: grid (\S+) against 1 rank: ok \(ids identical for 4 requests, "
                r"worst logit difference (\S+) at request \d+ step \d+\)$", re.M)
cases = [
    ("llama-tiny.mlir", "cp=2", []),
    ("llama-tiny.mlir", "cp=4", []),
    ("llama-tiny.mlir", "cp=2,tp=2", []),
    ("gpt-tiny.mlir", "cp=2", ["--batch", "2", "--context", "16"]),
    ("hybrid-tiny.mlir", "cp=2,tp=2", []),
    ("llama-tiny.mlir", "cp=2", ["--prompts", odd]),
]
for model, grid, extra in cases:
    what = f"{model} --grid {grid} {' '.join(extra)}"
    given = [] if "--prompts" in extra else ["--prompts", prompts]
    r = run(model, "--generate", "5", "--verify", "--grid", grid, *given, *extra)
    m = OK.search(r.stdout)
    expect(r.returncode == 0 and m and m.group(1) == grid and float(m.group(2)) <= 1e-5,
           f"{what}: the grid does not generate what one rank does", r)
    expect(re.search(r"^verify: ok \(worst difference \S+ at", r.stdout, re.M),
           f"{what}: teacher forcing did not pass on the grid", r)
    got = ids(r)
    expect(sorted(got) == [0, 1, 2, 3] and all(len(v.split()) == 5 for v in got.values()),
           f"{what}: expected 4 requests of 5 ids", r)
    print(f"{what}: worst logit difference {m.group(2) if m else '?'}")

# A wrong cp merge: the ranks' partial attention averaged, not weighted by
# their log-sum-exps.
r = run("llama-tiny.mlir", "--generate", "3", "--verify", "--grid", "cp=2", "--prompts", prompts,
        "--inject-fault", "wrong-cp-merge")
m = re.search(r"^verify: FAIL grid cp=2 against 1 rank: request \d+ step \d+: logit difference "
              r"(\S+) > ", r.stdout, re.M)
expect(r.returncode == 1 and m and "against 1 rank: ok" not in r.stdout,
       "a wrong cp merge did not fail --verify", r)
print(f"wrong-cp-merge: logit difference {m.group(1) if m else '?'}")

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("generate-cp: ok")
