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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest, ids  # noqa: E402

test = GenerateTest()
expect = test.expect


def run(*args):
    return test.run("moe-tiny.mlir", *args)


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

path = test.prompts("prompts.txt", ["1 2 3 4 5 6 7 8 9 10 11", " ".join(["50"] * 12), "96",
                                    "3 1 4 1 5 9 2"])
two = run("--generate", "5", "--verify", "--prompts", path)
verified(two, "prompts of different lengths", 4, 5)
four = run("--generate", "5", "--prompts", path, "--batch", "4")
expect(four.returncode == 0 and ids(four) == ids(two),
       "a request's ids changed with the batch it shared", four)

test.finish("generate-moe")
