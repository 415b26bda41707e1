# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate --gather-logits=false (issue 42; generation's default,
# the training pipeline's is true): the inference
# programs return each tp rank's block of the vocabulary-parallel logits (the
# output marked split in its descriptor) instead of all-gathering them in the
# program, and --verify still finds one rank's ids and logits: llama-tiny on
# dp=2 x tp=2 with top-p sampling, against the same run with the gather
# (--gather-logits=true),
# which sends more all-gathered bytes per step; and GPT (a vocabulary of 97,
# tied embeddings) on tp=2, whose vocabulary is then split with padding
# (with gathered logits its table stays whole).
import os
import re
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
prompts = os.path.join(work, "prompts.txt")
with open(prompts, "w") as f:
    f.write("1 2 3 4 5 6\n9 8 7\n5\n42 17 3 3 3\n")
env = dict(os.environ)
env["BRAID_RUN_CACHE"] = os.path.join(work, "cache")


def run(*args, model="llama-tiny.mlir", grid="dp=2,tp=2"):
    return subprocess.run(["braid-run", os.path.join(src, "examples", model),
                           "--quiet", "--generate", "4", "--prompts", prompts, "--grid", grid,
                           "--verify", "--temperature", "1.0", "--top-p", "0.9", "--seed", "5",
                           *args], capture_output=True, text=True, env=env)


def gathered(r):
    m = re.search(r"^collective all_gather: \d+ per step, (\d+) bytes sent per rank$", r.stdout,
                  re.M)
    return int(m.group(1)) if m else None


r, whole = run("--gather-logits=false"), run("--gather-logits=true")
failures = []
if whole.returncode != 0 or gathered(whole) is None or gathered(r) is None or \
        gathered(r) >= gathered(whole):
    failures.append(f"all-gathered bytes per step: {gathered(r)} split, {gathered(whole)} whole")
if r.returncode != 0 or not re.search(
        r"^verify: grid dp=2,tp=2 against 1 rank: ok \(ids identical for 4 requests", r.stdout,
        re.M):
    failures.append("--gather-logits=false did not verify")
if len(re.findall(r"^request \d+: (\d+ ){3}\d+$", r.stdout, re.M)) != 4:
    failures.append("expected 4 requests of 4 ids")
gpt = run("--gather-logits=false", "--batch", "2", "--context", "16", model="gpt-tiny.mlir",
          grid="tp=2")
if gpt.returncode != 0 or not re.search(
        r"^verify: grid tp=2 against 1 rank: ok \(ids identical for 4 requests", gpt.stdout, re.M):
    failures.append(f"GPT's padded vocabulary did not verify\n--- stdout\n{gpt.stdout}"
                    f"--- stderr\n{gpt.stderr[-3000:]}")
if failures:
    print("\n".join(failures) + f"\n--- stdout\n{r.stdout}--- stderr\n{r.stderr[-3000:]}")
    sys.exit(1)
print(f"gather-logits=false on dp=2,tp=2: {gathered(r)} bytes all-gathered per step "
      f"({gathered(whole)} with the gather); "
      + re.search(r"^verify: grid .*$", r.stdout, re.M).group(0))
