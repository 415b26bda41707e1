# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# Sampling in the program (braid.sample, issue 42) on a vocabulary split over
# tp ranks equals sampleToken on the whole row: --verify checks every token the
# program drew against sampleToken on the gathered logits ("the program drew X,
# sampleToken Y" fails it), besides the grid against one rank. GPT's 97 words
# split with padding (tp=2: blocks of 49; tp=4: blocks of 25), four requests in
# two waves, in each schedule: top-k with top-p (3 all-gathers), top-p alone
# (the search's 12) on tp=2; greedy (1) and temperature with top-p on tp=4;
# and a token judged one id off (BRAID_TEST_SAMPLE_FAULT) failing --verify.
import os
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
prompts = os.path.join(work, "prompts.txt")
with open(prompts, "w") as f:
    f.write("1 2 3 4 5 6\n9 8 7\n5\n42 17 3 3 3\n")
env = dict(os.environ)
env["BRAID_RUN_CACHE"] = os.path.join(work, "cache")

CASES = [
    ("tp=2", ["--temperature", "0.9", "--top-k", "7", "--top-p", "0.9"]),
    ("tp=2", ["--temperature", "1.0", "--top-p", "0.8"]),
    ("tp=4", []),
    ("tp=4", ["--temperature", "1.3", "--top-p", "0.95"]),
]
failed = False
for grid, options in CASES:
    r = subprocess.run(["braid-run", os.path.join(src, "examples", "gpt-tiny.mlir"), "--quiet",
                        "--generate", "5", "--prompts", prompts, "--grid", grid, "--seed", "11",
                        "--verify", *options], capture_output=True, text=True, env=env)
    lines = r.stdout.splitlines()
    ok = (r.returncode == 0 and "verify: ok" in r.stdout and
          any(line.startswith(f"verify: grid {grid} against 1 rank: ok") for line in lines) and
          "FAIL" not in r.stdout and
          sum(line.startswith("request ") for line in lines) == 4)
    print(f"{grid} {' '.join(options) or 'greedy'}: {'ok' if ok else 'FAILED'}")
    if not ok:
        print(r.stdout, r.stderr)
        failed = True

# The check is not vacuous: a token judged one id off (the test hook
# BRAID_TEST_SAMPLE_FAULT="R:T") fails --verify, naming request and step.
r = subprocess.run(["braid-run", os.path.join(src, "examples", "gpt-tiny.mlir"), "--quiet",
                    "--generate", "3", "--prompts", prompts, "--grid", "tp=2", "--verify",
                    "--temperature", "0.9", "--top-k", "7"], capture_output=True, text=True,
                   env=dict(env, BRAID_TEST_SAMPLE_FAULT="2:1"))
ok = r.returncode != 0 and "verify: FAIL request 2 step 1: the program drew" in r.stdout
print(f"a sampler fault: {'caught' if ok else 'NOT caught'}")
if not ok:
    print(r.stdout, r.stderr)
    failed = True
sys.exit(1 if failed else 0)
