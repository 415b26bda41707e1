# RUN: %python %s
#
# What the expert-parallel dispatch sends, as the planner counts it.
#   alltoall  a copy of a token per chosen expert (top_k, times the capacity
#             factor): the tokens permuted by expert, then an all-to-all;
#   deepep    a copy per rank holding one of its experts (DeepEP's dispatch;
#             the rank copies it to its experts itself).
# How many ranks a token reaches depends on the routing:
#   random      k distinct experts drawn uniformly: ep (1 - C(E - E/ep, k) /
#               C(E, k)) ranks on average (the hypergeometric count, computed
#               here exactly with fractions);
#   contiguous  token i takes experts i k .. i k + k - 1 mod E (NeMo
#               AutoModel's FakeBalancedGate): counted here by enumerating
#               tokens, independently of the planner's period argument.
# Then: the ep time issued follows the copies (alltoall > deepep random >
# deepep contiguous), and an unknown dispatcher or routing is an error.
import json
import subprocess
import sys
from fractions import Fraction
from math import comb

QWEN = ("family=moe,hidden=2048,layers=48,seq=4096,heads=32,vocab=151936,kv_heads=4,"
        "ffn=768,experts=128,top_k=8,head_dim=128")


def plan(model, ep, gpus, *extra, runtime="megatron-core"):
    out = subprocess.run(
        ["braid-plan", "--model", model, "--gpus", str(gpus), "--hardware", "h100-sxm",
         "--global-batch", "512", "--runtime", runtime, "--format", "json", "--evaluate",
         f"ep={ep},dp={gpus // ep},mbs=4,zero=3,recompute=full", *extra],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["plans"][0]


def random_ranks(E, k, ep):
    return ep * (1 - Fraction(comb(E - E // ep, k), comb(E, k)))


def contiguous_ranks(E, k, ep, tokens=4096):
    per_rank = E // ep
    total = sum(len({((i * k + j) % E) // per_rank for j in range(k)}) for i in range(tokens))
    return Fraction(total, tokens)


failures = []


def expect(what, got, want, tol=1e-12):
    ok = abs(got - float(want)) <= tol * max(1.0, abs(float(want)))
    print(f"{what}: {got:.6f} (expected {float(want):.6f}){'' if ok else '  MISMATCH'}")
    if not ok:
        failures.append(what)


# (experts, top_k, ep): Qwen3-30B-A3B (k divides a rank's experts), Nemotron
# 3 Nano's 128 top-6 (a run of 6 crosses a rank boundary on a quarter of the
# tokens, and wraps around 128), one expert per rank, and k = E.
for E, k, ep in [(128, 8, 8), (128, 6, 8), (128, 6, 4), (8, 2, 8), (16, 16, 4), (64, 3, 2)]:
    model = (f"family=moe,hidden=256,layers=2,seq=512,heads=4,vocab=1024,ffn=128,"
             f"experts={E},top_k={k}")
    for routing, want in [("random", random_ranks(E, k, ep)),
                          ("contiguous", contiguous_ranks(E, k, ep))]:
        # The contiguous count over 4096 tokens is exact when the period
        # E / gcd(k, E) divides 4096 (every case here).
        p = plan(model + f",routing={routing}", ep, ep, "--moe-dispatcher", "deepep")
        expect(f"E={E} k={k} ep={ep} {routing}: deepep copies", p["ep_copies_per_token"], want)
    p = plan(model, ep, ep, "--moe-dispatcher", "alltoall")
    expect(f"E={E} k={k} ep={ep}: alltoall copies", p["ep_copies_per_token"], k)

# Qwen3-30B-A3B on 8 GPUs: random routing reaches 5.38 of the 8 ranks.
alltoall = plan(QWEN, 8, 8, "--moe-dispatcher", "alltoall")
deepep = plan(QWEN, 8, 8, "--moe-dispatcher", "deepep")
fake = plan(QWEN + ",routing=contiguous", 8, 8, "--moe-dispatcher", "deepep")
a, d, f = (x["issued_s"]["ep"] for x in (alltoall, deepep, fake))
print(f"Qwen3-30B-A3B ep=8 issued ep seconds: alltoall {a:.3f}, deepep random {d:.3f}, "
      f"deepep contiguous {f:.3f}")
if not a > d > f > 0:
    failures.append("issued ep time does not follow the copies sent")
# The bandwidth term scales with the bytes and the latencies are the same
# number of transfers whatever they carry, so the differences of the times
# are in the ratio of the differences of the copies: (8 - 5.38) / (8 - 1).
ratio = (a - d) / (a - f)
want = (8 - float(random_ranks(128, 8, 8))) / (8 - 1)
expect("Qwen3-30B-A3B: (alltoall - deepep random) / (alltoall - deepep contiguous) time",
       ratio, want, tol=1e-6)
# nemo-automodel's runtime dispatches with DeepEP by default.
auto = plan(QWEN + ",routing=contiguous", 8, 8, runtime="nemo-automodel")
expect("nemo-automodel's default dispatch, contiguous", auto["ep_copies_per_token"], 1)
# Without ep there is no dispatch.
expect("no ep", plan(QWEN, 1, 8)["ep_copies_per_token"], 0)

for args, message in [
        (["--moe-dispatcher", "nccl"], "--moe-dispatcher is alltoall or deepep, not 'nccl'"),
        (["--model", QWEN + ",routing=greedy"],
         "unknown routing 'greedy' (known: random, contiguous)")]:
    cmd = ["braid-plan", "--model", QWEN, "--gpus", "8", "--global-batch", "512"] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode != 1 or message not in r.stderr:
        failures.append(f"{args}: expected exit 1 and '{message}'")

if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("PASS")
