# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate on one CPU rank (issue 42; runtime/src/driver_generate.cpp):
# - llama-tiny and gpt-tiny: greedy generation with --verify passes teacher
#   forcing (each step's logits against the forward program's at that row,
#   1e-5 relative), one "request R:" line per request and the summary line;
# - the negative test: BRAID_TEST_PERTURB_LOGITS=R:T corrupts one logit of
#   request R at step T before the comparison, and --verify FAILS (status 1)
#   naming that request and step;
# - a cache write broken by the CPU kernel's test hook BRAID_TEST_CACHE_FAULT
#   (rows one position late; two sequences' caches swapped) fails --verify;
# - seeded sampling (temperature, top-k, top-p) is reproducible, changes with
#   the seed, and a request's ids do not change when it shares its wave with
#   other prompts, sits in another slot, or runs on another thread count;
# - each bad request (malformed line, empty prompt, token id >= vocab or < 0,
#   prompt + N - 1 > context) is refused by name while the others complete
#   with the ids they get alone (status 2).
# Several ranks: generate-ranks.py.
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest, ids  # noqa: E402

test = GenerateTest()
run, expect, prompts = test.run, test.expect, test.prompts

SUMMARY = (r"^generate: \d+ requests \(\d+ refused\), \d+ tokens each, prefill \S+ s, decode "
           r"median \S+ ms/token p99 \S+ ms/token, \S+ tokens/s, cache \d+ bytes per rank$")

# Greedy generation with teacher forcing, both families.
for model, extra in (("llama-tiny.mlir", []),
                     ("gpt-tiny.mlir", ["--batch", "2", "--context", "16", "--prompt-len", "6"])):
    r = run(model, "--generate", "5", "--verify", *extra)
    expect(r.returncode == 0 and "verify: ok (worst difference" in r.stdout,
           f"{model}: greedy --verify did not pass", r)
    got = ids(r)
    expect(sorted(got) == [0, 1] and all(len(v.split()) == 5 for v in got.values()),
           f"{model}: expected 2 requests of 5 ids", r)
    expect(re.search(SUMMARY, r.stdout, re.M), f"{model}: no summary line", r)
    m = re.search(r"verify: ok \(worst difference (\S+) at", r.stdout)
    expect(m and float(m.group(1)) <= 1e-5, f"{model}: worst difference past 1e-5", r)

# The negative test: one perturbed logit makes --verify fail by name.
r = run("llama-tiny.mlir", "--generate", "4", "--verify", env={"BRAID_TEST_PERTURB_LOGITS": "1:2"})
expect(r.returncode == 1 and re.search(r"^verify: FAIL request 1 step 2: difference ", r.stdout, re.M)
       and "verify: ok" not in r.stdout, "a perturbed decode logit did not fail --verify", r)
r = run("llama-tiny.mlir", "--generate", "4", "--verify", env={"BRAID_TEST_PERTURB_LOGITS": "0:0"})
expect(r.returncode == 1 and "verify: FAIL request 0 step 0" in r.stdout,
       "a perturbed prefill logit did not fail --verify", r)

# A broken cache write (the test hook BRAID_TEST_CACHE_FAULT of the CPU
# kernel): rows written one position late, or two sequences' caches swapped.
for fault in ("position", "swap"):
    r = run("llama-tiny.mlir", "--generate", "4", "--verify", env={"BRAID_TEST_CACHE_FAULT": fault})
    m = re.search(r"^verify: FAIL request \d+ step \d+: difference (\S+) > ", r.stdout, re.M)
    expect(r.returncode == 1 and m and "verify: ok" not in r.stdout,
           f"a cache write fault ({fault}) did not fail --verify", r)
    print(f"cache fault {fault}: difference {m.group(1) if m else '?'}")

# Seeded sampling: reproducible, seed-dependent, independent of the batch,
# the slot and the thread count.
sampling = ["--temperature", "0.9", "--top-k", "40", "--top-p", "0.95"]
together = prompts("together.txt", ["1 2 3 4", "9 8 7", "5 5 5 5 5", "42"])
shifted = prompts("shifted.txt", ["1 2 x 4", "9 8 7", "5 5 5 5 5", "42"])
for mode in ([], sampling):
    name = "sampling" if mode else "greedy"
    a = run("llama-tiny.mlir", "--generate", "6", "--seed", "7", "--prompts", together, *mode)
    b = run("llama-tiny.mlir", "--generate", "6", "--seed", "7", "--prompts", together, *mode)
    expect(a.returncode == 0 and ids(a) == ids(b) and len(ids(a)) == 4,
           f"{name}: two runs with the same seed differ", a)
    # Request 0 refused: requests 1 and 2 share the first wave in other slots,
    # request 3 runs with 2 instead of 2 with 3.
    c = run("llama-tiny.mlir", "--generate", "6", "--seed", "7", "--prompts", shifted, *mode)
    expect(c.returncode == 2 and all(ids(c).get(k) == ids(a).get(k) for k in (1, 2, 3)),
           f"{name}: a request's ids changed with the batch it shared", c)
    t1 = run("llama-tiny.mlir", "--generate", "6", "--seed", "7", "--prompts", together,
             "--cpu-threads", "1", *mode)
    expect(ids(t1) == ids(a), f"{name}: ids differ between thread counts", t1)
a = run("llama-tiny.mlir", "--generate", "6", "--seed", "7", "--prompts", together, *sampling)
d = run("llama-tiny.mlir", "--generate", "6", "--seed", "8", "--prompts", together, *sampling)
expect(ids(a) != ids(d), "sampling: another seed gave the same ids", d)

# Bad requests are refused by name; the others run as they do alone.
bad = prompts("bad.txt", ["1 2 3", "1 two 3", "", "7 256", "3 -1", "4 4 4 4 4 4 4 4 4 4 4 4 4", "9 9"])
r = run("llama-tiny.mlir", "--generate", "5", "--prompts", bad, "--prompt-len", "13")
reasons = {0: None, 1: "malformed line", 2: "empty prompt", 3: "outside the vocabulary",
           4: "outside the vocabulary", 5: "exceeds the context", 6: None}
got = ids(r)
expect(r.returncode == 2, "a refused request did not give status 2", r)
for k, why in reasons.items():
    if why:
        expect(why in got.get(k, "") and f"request {k} refused: " in r.stderr,
               f"request {k} was not refused for '{why}'", r)
    else:
        expect(len(got.get(k, "").split()) == 5, f"request {k} did not run", r)
alone = run("llama-tiny.mlir", "--generate", "5", "--prompts", prompts("good.txt", ["1 2 3"]),
            "--prompt-len", "13")
expect(ids(alone).get(0) == got.get(0), "request 0 differs from its run alone", alone)

test.finish("generate")
