# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --serve (issue 43; runtime/src/driver_serve.cpp, serve_scheduler.h,
# lib/Driver/Serve.cpp): continuous batching with chunked prefill over a paged
# KV cache. --verify generates every request alone on one rank with the static
# programs (--generate, one sequence per call) and requires identical ids and
# logits within 1e-5, whatever the request was batched with, however its
# prompt was chunked, whether it was preempted or shared pages. Cases:
# - llama-tiny, 8 requests of mixed prompt lengths (three share an 8-token
#   head) with greedy, temperature/top-k and top-p requests, 3 decode rows,
#   chunks of 4 tokens, pages of 4: verified, pages shared (prefix sharing),
#   --output's JSON lines, --trace's lane of iterations; with a pool of 5 pages: preempted and verified;
# - hybrid-tiny (Mamba and attention) with the small pool: verified, and no
#   page shared (a shared page does not hold the Mamba states of its prefix);
# - llama-tiny on tp=2 with the small pool; hybrid-tiny on dp=2,tp=2 (two
#   replicas, each its own pool and scheduler; --output written by both);
#   mamba-tiny, gpt-tiny, moe-tiny;
# - mixed iterations (--token-budget 8: decode rows and prompt chunks in one
#   call): preempted, tp=2, gpt-tiny with two chunks per iteration (refusals:
#   test/Tools/braid-run-serve-errors.test);
# - static batching (--static-batching, bench/serving's baseline: waves of 3
#   that start when the last has ended): verified, in more iterations;
# - disaggregated prefill and decode groups: llama-tiny on 1 + 1 ranks
#   (preempted, pages shared), hybrid-tiny prefilled on tp=2 and decoded on
#   one rank (the blocks' intersections moved);
# - the negative tests: a page table entry pointing at another
#   sequence's page, a chunk boundary off by one, a cache transfer missing
#   one layer (BRAID_TEST_SERVE_FAULT): each FAILS --verify;
# - bad requests refused with their line and reason, the others served (exit
#   2), every one in --output; --end-token ends a request at that token.
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from generate_test import GenerateTest, ids  # noqa: E402

test = GenerateTest()
expect = test.expect

SERVE_OK = re.compile(r"^verify: serving against each request alone on 1 rank: ok \(ids "
                      r"identical for (\d+) requests, worst logit difference (\S+) at", re.M)
SUMMARY = re.compile(r"^serve: (\d+) requests \((\d+) refused\), .* pages peak (\d+) of (\d+)(?: \([^)]*\))?, "
                     r"preemptions (\d+), shared pages (\d+), iterations (\d+)$", re.M)


def requests_file(name, vocab=97, count=8, seed=5):
    """COUNT requests: prompts of 1-8 tokens, three of them an 8-token head
    and a tail; every third samples with temperature and top-k, every fourth
    with top-p; 6 tokens each."""
    r = random.Random(seed)
    head = [r.randrange(vocab) for _ in range(8)]
    lines = []
    for i in range(count):
        prompt = head + [r.randrange(vocab) for _ in range(i % 3)] if i in (1, 4, 6) else \
            [r.randrange(vocab) for _ in range(r.randrange(1, 9))]
        line = {"prompt": prompt, "max_new_tokens": 6}
        if i % 3 == 1:
            line.update(temperature=0.9, top_k=20)
        if i % 4 == 3:
            line.update(temperature=0.7, top_p=0.8)
        lines.append(json.dumps(line))
    path = os.path.join(test.work, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


REQUESTS = requests_file("requests.jsonl")
SERVE = ("--serve", REQUESTS, "--batch", "3", "--prefill-chunk", "4", "--page-size", "4")


def served(model, *extra, env=None, what=None):
    """--serve --verify: verified for all 8 requests; the summary's figures."""
    what = what or f"{model} {' '.join(extra)}"
    r = test.run(model, *SERVE, "--verify", *extra, env=env)
    m, s = SERVE_OK.search(r.stdout), SUMMARY.search(r.stdout)
    expect(r.returncode == 0 and m and m.group(1) == "8" and float(m.group(2)) <= 1e-5 and s,
           f"{what}: serving does not generate what each request alone does", r)
    if m and s:
        print(f"{what}: worst logit difference {m.group(2)}, pages peak {s.group(3)} of "
              f"{s.group(4)}, preemptions {s.group(5)}, shared pages {s.group(6)}, "
              f"iterations {s.group(7)}")
    return s


output = os.path.join(test.work, "out.jsonl")
trace = os.path.join(test.work, "trace.json")
# Prefill and decode calls apart (--token-budget 0; the default runs mixed calls).
s = continuous = served("llama-tiny.mlir", "--token-budget", "0", "--output", output, "--trace",
                        trace)
expect(s and int(s.group(6)) > 0, "llama-tiny: no page shared between the prompts of one head")
# --trace: the lane "serve" holds every iteration, its calls inside it.
with open(trace) as f:
    events = json.load(f)["traceEvents"]
lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
spans = [e for e in events if e.get("cat") == "span" and lanes.get(e["tid"]) == "serve"]
rounds = [e for e in spans if e["name"].startswith("iteration ")]
calls = [e for e in spans if e["name"] in ("prefill", "decode")]
expect(s and len(rounds) == int(s.group(7)) and calls
       and all(any(r["ts"] <= c["ts"] and c["ts"] + c["dur"] <= r["ts"] + r["dur"] + 1e-3
                   for r in rounds) for c in calls)
       and any("(last)" in c["args"]["detail"] for c in calls if c["name"] == "prefill"),
       f"--trace: not one 'serve' span per iteration holding its calls: {spans[:4]}")
with open(output) as f:
    lines = [json.loads(line) for line in f]
expect(sorted(line["request"] for line in lines) == list(range(8))
       and all(len(line["ids"]) == 6 and line["finish"] == "length" and line["ttft_ms"] >= 0
               for line in lines), f"--output: not one line of 6 ids per request: {lines}")

# --kv-memory: 4 pages of 4 positions of 2 layers' keys and values (2 kv heads
# of 16, f32: 2048 bytes a page), as many as the longest request needs.
r = test.run("llama-tiny.mlir", *SERVE, "--kv-memory", "8KiB")
m = SUMMARY.search(r.stdout)
expect(r.returncode == 0 and m and m.group(4) == "4", "--kv-memory 8KiB: not a pool of 4 pages", r)
s = served("llama-tiny.mlir", "--kv-pages", "5")
expect(s and int(s.group(5)) > 0 and int(s.group(3)) <= 5,
       "llama-tiny, 5 pages: no preemption, or more pages than the pool")
s = served("hybrid-tiny.mlir", "--kv-pages", "5")
expect(s and int(s.group(5)) > 0 and s.group(6) == "0",
       "hybrid-tiny, 5 pages: no preemption, or pages shared by a model with Mamba states")
served("llama-tiny.mlir", "--kv-pages", "5", "--grid", "tp=2")
# Two replicas (dp) of tp=2, each with its own pool of 5 pages and scheduler.
s = served("hybrid-tiny.mlir", "--kv-pages", "5", "--grid", "dp=2,tp=2", "--output", output)
with open(output) as f:
    lines = [json.loads(line) for line in f]
expect(sorted(line["request"] for line in lines) == list(range(8)),
       f"dp=2,tp=2: --output does not have one line per request from both replicas: {lines}")
for model in ("mamba-tiny.mlir", "gpt-tiny.mlir", "moe-tiny.mlir"):
    served(model)
s = served("llama-tiny.mlir", "--static-batching")
expect(s and continuous and int(s.group(7)) > int(continuous.group(7)),
       "llama-tiny, static batching: no more iterations than continuous batching")

# Mixed iterations (--token-budget 8): an iteration's decode rows and prompt
# chunks run as rows of one call (a chunk's tokens attend to each other
# through the pages the call writes first), preempted, on tp=2, and with
# learned positions and two chunks per iteration.
s = served("llama-tiny.mlir", "--token-budget", "8", "--kv-pages", "5", "--trace", trace)
with open(trace) as f:
    events = json.load(f)["traceEvents"]
names = [e["name"] for e in events if e.get("cat") == "span"]
expect(s and int(s.group(5)) > 0 and "mixed" in names and "prefill" not in names,
       f"--token-budget: no preemption, or prompt chunks not in mixed calls: {set(names)}")
served("llama-tiny.mlir", "--token-budget", "8", "--grid", "tp=2")
served("gpt-tiny.mlir", "--token-budget", "10", "--prefill-batch", "2")

# Disaggregated: a prefill group and a decode group (each of --grid's
# ranks), the prefilled rows and Mamba states moved between them.
s = served("llama-tiny.mlir", "--kv-pages", "6", "--disaggregate", "--output", output)
expect(s and int(s.group(5)) > 0 and int(s.group(6)) > 0,
       "llama-tiny disaggregated: no preemption or no shared page")
with open(output) as f:
    lines = [json.loads(line) for line in f]
expect(sorted(line["request"] for line in lines) == list(range(8)),
       f"disaggregated: --output does not have one line per request: {lines}")
# An --output that cannot be made: both groups refuse, none waits for the other.
r = test.run("llama-tiny.mlir", *SERVE, "--disaggregate", "--output",
             os.path.join(test.work, "missing", "out.jsonl"))
expect(r.returncode == 2 and "--output: cannot write" in r.stderr,
       "disaggregated, an --output that cannot be made: not refused", r)
# Different layouts: prefill on tp=2, decode on one rank (each pool's heads
# and each Mamba state's channels moved by the intersection of the blocks).
served("hybrid-tiny.mlir", "--kv-pages", "6", "--disaggregate", "--prefill-grid", "tp=2")

# The negative tests: each FAILS --verify.
for fault, what, extra in (
        ("page", "a page table entry pointing at another sequence's page", ()),
        ("chunk", "a chunk boundary off by one", ()),
        ("page", "a page table entry pointing at another sequence's page (calls apart)",
         ("--token-budget", "0")),
        ("chunk", "a chunk boundary off by one (calls apart)", ("--token-budget", "0")),
        ("transfer", "a cache transfer missing one layer", ("--disaggregate",))):
    r = test.run("llama-tiny.mlir", *SERVE, "--verify", *extra,
                 env={"BRAID_TEST_SERVE_FAULT": fault})
    m = re.search(r"^verify: FAIL serving against each request alone on 1 rank: request \d+ "
                  r"step \d+: logit difference (\S+) > ", r.stdout, re.M)
    expect(r.returncode == 1 and m and "alone on 1 rank: ok" not in r.stdout,
           f"{what} did not fail --verify", r)
    print(f"{what}: logit difference {m.group(1) if m else '?'}")

# Bad requests: each refused with its line and reason, the others served.
bad = os.path.join(test.work, "bad.jsonl")
with open(bad, "w") as f:
    f.write('{"prompt": [1, 2, 3], "max_new_tokens": 4}\n'
            'not json\n'
            '{"prompt": [1, 2], "max_new_tokens": 2, "colour": "red"}\n'
            '{"prompt": [5, 300], "max_new_tokens": 2}\n'
            '{"prompt": [], "max_new_tokens": 2}\n'
            '{"prompt_len": 14, "max_new_tokens": 4}\n'
            '{"prompt": [4, 4], "max_new_tokens": 3}\n')
r = test.run("llama-tiny.mlir", "--serve", bad, "--batch", "2", "--prefill-chunk", "4",
             "--page-size", "4", "--output", output)
got = ids(r)
expect(r.returncode == 2 and not got[0].startswith("refused") and not got[6].startswith("refused")
       and all(got[i].startswith(f"refused: line {i + 1}: ") for i in (1, 2, 3, 4, 5)),
       "bad requests: not refused by line with the others served (exit 2)", r)
for i, reason in ((2, "colour"), (3, "300"), (4, "empty"), (5, "context")):
    expect(reason in got.get(i, ""), f"bad request {i}: the reason does not name {reason!r}", r)
with open(output) as f:
    lines = {line["request"]: line for line in map(json.loads, f)}
expect(sorted(lines) == list(range(7)) and "refused" in lines[1] and "ids" in lines[6],
       f"bad requests: --output does not have every request: {lines}")

# --end-token: the request ends at the first drawn end token.
first = lines[0]["ids"]
r = test.run("llama-tiny.mlir", "--serve", bad, "--batch", "2", "--prefill-chunk", "4",
             "--page-size", "4", "--end-token", str(first[1]), "--output", output)
with open(output) as f:
    lines = {line["request"]: line for line in map(json.loads, f)}
expect(lines.get(0, {}).get("ids") == first[:2] and lines[0].get("finish") == "end_token",
       f"--end-token {first[1]}: request 0 did not end at it: {lines.get(0)}", r)

test.finish("serve")
