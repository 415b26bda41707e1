# REQUIRES: cudasim
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# braid-run --serve on the CUDA path (issue 43): hybrid-tiny's paged prefill
# and decode programs (the paged KV cache kernels of runtime/src/cuda/
# paged_cache.cu and the Mamba state kernels with slots and idle rows of
# mamba_step.cu) on the CPU emulation (--backend cudasim): 5 requests on 2
# decode rows, chunks of 4, a pool of 4 pages of 4 (preemptions), verified
# against each request generated alone, and the ids equal the CPU backend's
# serving the same requests (greedy: the logits agree far past the gap
# between the two largest); llama-tiny's mixed calls (decode rows and prompt
# chunks as rows of one call, --token-budget 6) verified the same way.
import json
import os
import re
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(tmp, "cache"))
env.pop("BRAID_TEST_SERVE_FAULT", None)
requests = os.path.join(tmp, "requests.jsonl")
with open(requests, "w") as f:
    for prompt in ([5, 9, 2, 7, 1, 3, 8], [11, 4], [5, 9, 2, 7, 1, 3, 8, 6], [60, 61, 62], [3]):
        f.write(json.dumps({"prompt": prompt, "max_new_tokens": 4}) + "\n")


def serve(*extra, model="hybrid-tiny.mlir"):
    return subprocess.run(["braid-run", os.path.join(src, "examples", model),
                           "--quiet", "--serve", requests, "--batch", "2", "--prefill-chunk", "4",
                           "--page-size", "4", "--kv-pages", "4", *extra],
                          capture_output=True, text=True, env=env)


def ids(r):
    return dict(re.findall(r"^request (\d+): (.*)$", r.stdout, re.M))


failures = []
cuda = serve("--backend", "cudasim", "--verify")
ok = re.search(r"^verify: serving against each request alone on 1 rank: ok \(ids identical "
               r"for 5 requests, worst logit difference (\S+) at", cuda.stdout, re.M)
summary = re.search(r"preemptions (\d+),", cuda.stdout)
if cuda.returncode != 0 or not ok or not summary or summary.group(1) == "0":
    failures.append(f"cudasim: not verified with preemptions:\n{cuda.stdout}{cuda.stderr}")
cpu = serve()
if cpu.returncode != 0 or ids(cpu) != ids(cuda) or len(ids(cpu)) != 5:
    failures.append(f"cudasim ids {ids(cuda)} differ from the CPU backend's {ids(cpu)}")
mixed = serve("--backend", "cudasim", "--verify", "--token-budget", "6", "--trace",
              os.path.join(tmp, "trace.json"), model="llama-tiny.mlir")
with open(os.path.join(tmp, "trace.json")) as f:
    calls = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "span"}
if mixed.returncode != 0 or "alone on 1 rank: ok (ids identical for 5" not in mixed.stdout \
        or "mixed" not in calls:
    failures.append(f"cudasim, mixed calls: not verified:\n{mixed.stdout}{mixed.stderr}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"cudasim-serve: ok (worst logit difference {ok.group(1)}, "
      f"{summary.group(1)} preemptions)")
