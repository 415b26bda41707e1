# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate on an MoE model (issue 42; DeriveInferenceMoE.cpp): at
# inference every dispatch drops nothing (one capacity group per token, one
# slot per expert), in prefill, decode and the forward program that teacher
# forcing compares with.
# - greedy generation with --verify passes at 1e-5 on moe-tiny's own batch;
# - prompts of different lengths, one of them twelve copies of one token
#   (every row routed to the same two experts: more than the step's 10 slots
#   per group of 16, so a forward pass with the training capacity would drop
#   rows that decode keeps, and --verify would fail), pass --verify over two
#   waves;
# - a request's ids do not depend on the batch it shares (one wave of four
#   against two waves of two): no token takes an expert's slot from another.
import os
import re
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "moe-tiny.mlir")
failures = []


def run(*args):
    env = dict(os.environ)
    env["BRAID_RUN_CACHE"] = os.path.join(work, "cache")
    env.pop("BRAID_TEST_PERTURB_LOGITS", None)
    return subprocess.run(["braid-run", model, "--quiet", *args],
                          capture_output=True, text=True, env=env)


def ids(r):
    return {int(m.group(1)): m.group(2).strip()
            for m in re.finditer(r"^request (\d+): (.*)$", r.stdout, re.M)}


def expect(cond, what, r=None):
    if not cond:
        failures.append(what + (f"\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}" if r else ""))


def verified(r, what, requests, tokens):
    m = re.search(r"^verify: ok \(worst difference (\S+) at", r.stdout, re.M)
    expect(r.returncode == 0 and m and float(m.group(1)) <= 1e-5,
           f"{what}: --verify did not pass within 1e-5", r)
    got = ids(r)
    expect(sorted(got) == list(range(requests))
           and all(len(v.split()) == tokens for v in got.values()),
           f"{what}: expected {requests} requests of {tokens} ids", r)


r = run("--generate", "5", "--verify")
verified(r, "drawn prompts", 2, 5)

path = os.path.join(work, "prompts.txt")
with open(path, "w") as f:
    f.write("1 2 3 4 5 6 7 8 9 10 11\n" + " ".join(["50"] * 12) + "\n96\n3 1 4 1 5 9 2\n")
two = run("--generate", "5", "--verify", "--prompts", path)
verified(two, "prompts of different lengths", 4, 5)
four = run("--generate", "5", "--prompts", path, "--batch", "4")
expect(four.returncode == 0 and ids(four) == ids(two),
       "a request's ids changed with the batch it shared", four)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("generate-moe: ok")
