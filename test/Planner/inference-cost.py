# RUN: %python %s %braid_src
#
# The serving cost model (lib/Planner/InferenceCost.cpp) against figures
# computed here by hand from its formulas, the hardware description and the
# calibration (lib/CostModel): memory per GPU (weights, KV cache, Mamba state,
# the workspace), a decode step at batch 1 (bytes over the bandwidth), at a
# large batch (FLOPs over the peak), with fp8 weights, with tp's one-shot
# all-reduces and pp's hops, an MoE step reading only the experts its tokens
# touch, a prefill's products, continuous batching's largest batch and step.
import json
import os
import subprocess
import sys

src = sys.argv[1]
hw = json.load(open(os.path.join(src, "lib/CostModel/hardware/h100-sxm.json")))
cal = json.load(open(os.path.join(src, "lib/CostModel/calibration/h100-sxm.json")))
GiB = float(1 << 30)
# A decode step reads at serving's decode efficiency (kDecodeMemoryEfficiency
# in InferenceCost.cpp, fitted on bench/planner's calibration rows); a
# prefill at the training calibration's.
BW = hw["hbm_bytes_per_s"] * 0.76
PEAK, EFF, HALF = hw["peak_bf16_flops"], cal["gemm_efficiency"], cal["gemm_half_dim"]
LAUNCH = hw["kernel_launch_s"]
NV = hw["intra_node"]

LLAMA7 = dict(family="llama", hidden=4096, layers=32, seq=4096, heads=32, kv_heads=32,
              ffn=11008, vocab=32000)
LLAMA70 = dict(family="llama", hidden=8192, layers=80, seq=4096, heads=64, kv_heads=8,
               ffn=28672, vocab=32000)
MIXTRAL = dict(family="moe", hidden=4096, layers=32, seq=4096, heads=32, kv_heads=8,
               ffn=14336, vocab=32000, experts=8, top_k=2)
MAMBA = dict(family="mamba", hidden=2560, layers=64, seq=2048, vocab=50280)


def spec(model):
    return ",".join(f"{k}={v}" for k, v in model.items())


def plan(model, layout, gpus, prompt, output, batch, dtype="bf16", batching="static"):
    cmd = ["braid-plan", "--inference", "--model", spec(model), "--gpus", str(gpus),
           "--hardware", "h100-sxm", "--prompt", str(prompt), "--output", str(output),
           "--dtype", dtype, "--batching", batching, "--evaluate", layout, "--format", "json"]
    if batch:
        cmd += ["--batch", str(batch)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)[
        "layouts"][0]


def parameters(model):
    out = subprocess.run(["braid-plan", "--model", spec(model), "--model-stats"], check=True,
                         capture_output=True, text=True).stdout
    return float(out.splitlines()[0].split(": ")[1])


def block(flops, nbytes, kernels, rate):
    """A block's (compute, memory, launch) seconds, as addBlock splits them."""
    c, m = flops / rate, nbytes / BW
    work = max(c, m)
    return (work, 0.0, max(0.0, kernels * LAUNCH - work)) if c > m else \
           (0.0, work, max(0.0, kernels * LAUNCH - work))


def dense_decode(model, b, ctx, tp=1, wb=2.0, peak=PEAK):
    """A dense Llama decode step on one stage: (compute, memory, launch) seconds."""
    h, L = model["hidden"], model["layers"]
    q = model["heads"] * h // model["heads"]
    kv = max(model["kv_heads"] / tp, 1.0) * (h // model["heads"])
    rate = peak * EFF * b / (b + HALF)
    parts = []
    attn = 2 * h * q / tp + 2 * h * kv
    parts.append((block(2 * b * attn, attn * wb + 2 * b * h * 2, 3, rate), L))
    parts.append((block(4 * b * ctx * q / tp, b * ctx * 2 * kv * wb, 1,
                        PEAK * cal["flash_forward_efficiency"]), L))
    mlp = 3 * h * model["ffn"] / tp
    parts.append((block(2 * b * mlp, mlp * wb, 2, rate), L))
    head = model["vocab"] * h / tp
    parts.append((block(2 * b * head, head * wb, 1, rate), 1))
    return tuple(sum(p[i] * n for p, n in parts) for i in range(3))


failures = []


def close(what, got, want, tol=1e-6):
    ok = abs(got - want) <= tol * max(abs(want), 1e-30)
    print(f"{what:58s} model {got:14.6g} hand {want:14.6g} {'ok' if ok else 'DIFFERENT'}")
    if not ok:
        failures.append(what)


# 1. Llama 2 7B on one H100, batch 1: weights and cache, a memory-bound step.
r = plan(LLAMA7, "tp=1", 1, 128, 128, 1)
P = parameters(LLAMA7)
close("7B weights (GiB): parameters x 2 bytes", r["memory"]["weights_gib"], P * 2 / GiB)
kv_token = 32 * 2 * 32 * 128 * 2
close("7B KV cache (GiB): (128 + 128) tokens x 2 L kv d x 2 B", r["memory"]["cache_gib"],
      256 * kv_token / GiB)
close("7B workspace (GiB): the calibration's reserve", r["memory"]["workspace_gib"],
      cal["reserved_bytes"] / GiB)
c, m, l = dense_decode(LLAMA7, 1, 128 + 64)
close("7B decode at batch 1: memory-bound ms", r["decode_step"]["memory_ms"], 1e3 * m)
close("7B decode at batch 1: no compute-bound block", r["decode_step"]["compute_ms"], 1e3 * c)
close("7B decode at batch 1: launches ms", r["decode_step"]["launch_ms"], 1e3 * l)
# The step is close to reading the weights once: what Pope et al. bound it by.
close("7B decode at batch 1 ~ weights / bandwidth (5%)", r["decode_step"]["total_ms"],
      1e3 * (P * 2 + 32 * 192 * 2 * 4096 * 2) / BW, tol=0.05)

# 2. The same at batch 768, fp8 (1 byte weights and cache, twice the peak).
r = plan(LLAMA7, "tp=1", 1, 128, 128, 768, dtype="fp8")
c, m, l = dense_decode(LLAMA7, 768, 192, wb=1.0, peak=1978.9e12)
close("7B fp8 weights (GiB): 1 byte a parameter", r["memory"]["weights_gib"], P / GiB)
close("7B fp8 cache (GiB) at batch 768", r["memory"]["cache_gib"], 768 * 256 * kv_token / 2 / GiB)
close("7B fp8 decode at batch 768: compute ms", r["decode_step"]["compute_ms"], 1e3 * c)
close("7B fp8 decode at batch 768: memory ms", r["decode_step"]["memory_ms"], 1e3 * m)

# 3. Llama 2 70B on tp=4: KV heads split (8 / 4), two one-shot all-reduces
# of batch x hidden per layer within the node.
r = plan(LLAMA70, "tp=4", 4, 2048, 128, 64)
b, h = 64, 8192
one_shot = LAUNCH + NV["step_latency_s"] + 3 * b * h * 2 / NV["bytes_per_s"]
close("70B tp=4 decode: tp all-reduces ms (2 per layer)", r["decode_step"]["tp_ms"],
      1e3 * 2 * 80 * one_shot)
close("70B tp=4 KV cache (GiB): 2 kv heads a GPU", r["memory"]["cache_gib"],
      64 * 2176 * 80 * 2 * 2 * 128 * 2 / GiB)
c, m, l = dense_decode(LLAMA70, 64, 2048 + 64, tp=4)
close("70B tp=4 decode: compute + memory ms", r["decode_step"]["compute_ms"] +
      r["decode_step"]["memory_ms"], 1e3 * (c + m))

# 4. pp=2: the busiest stage's 40 layers, a token through both stages, two
# hops of batch x hidden; each stage runs half the batch at a time.
r = plan(LLAMA70, "pp=2,tp=4", 8, 2048, 128, 64)
hop = hw["collective_latency_s"] + NV["step_latency_s"] + 32 * h * 2 / NV["bytes_per_s"]
close("70B pp=2 decode: hops ms", r["decode_step"]["pp_ms"], 1e3 * 2 * hop)

# 5. A prefill of 2048 tokens on 70B tp=4: the MLP's products at the
# calibrated rate, a factor q(x) = x / (x + half) per dimension.
def q(x):
    return x / (x + HALF)


r = plan(LLAMA70, "tp=4", 4, 2048, 128, 1)
up = 2 * 2048 * (2 * 28672 / 4) * h / (PEAK * EFF * q(2048) * q(2 * 28672 / 4) * q(h))
down = 2 * 2048 * h * (28672 / 4) / (PEAK * EFF * q(2048) * q(h) * q(28672 / 4))
qkv = 2 * 2048 * (8192 / 4 + 2 * 2 * 128) * h / (PEAK * EFF * q(2048) * q(2048 + 512) * q(h))
out = 2 * 2048 * h * 2048 / (PEAK * EFF * q(2048) * q(h) * q(2048))
attn = 2 * 2048 * 2048 * 8192 / 4 / (PEAK * cal["flash_forward_efficiency"]) + LAUNCH
head = 2 * 1 * 8000 * h / (PEAK * EFF * q(1) * q(8000) * q(h))
close("70B tp=4 prefill of 2048: compute ms (products, attention)",
      r["prefill_step"]["compute_ms"], 1e3 * (80 * (up + down + qkv + out + attn)), tol=0.02)

# 6. Mamba 2.8B: a sequence's state per layer, d_inner (d_state x 4 B +
# d_conv x 2 B), no KV cache.
r = plan(MAMBA, "tp=1", 1, 1024, 256, 100)
close("Mamba state (GiB) at batch 100", r["memory"]["state_gib"],
      100 * 64 * 5120 * (16 * 4 + 4 * 2) / GiB)
close("Mamba KV cache (GiB)", r["memory"]["cache_gib"], 0.0)

# 7. Mixtral at batch 1: a token touches 2 of the 8 experts, whose weights
# alone the step reads: the decode is a quarter of the experts' bytes plus
# the rest, not all of them.
r1 = plan(MIXTRAL, "tp=8", 8, 128, 128, 1)
e = 3 * 4096 * 14336
touched = 8 * (1 - (1 - 2 / 8) ** 1)
close("Mixtral batch 1: experts touched", touched, 2.0)
attn = 2 * 4096 * 4096 / 8 + 2 * 4096 * 128
moe = touched * e / 8 + 4096 * 8
rate = PEAK * EFF * 1 / (1 + HALF)
mem = 32 * (block(2 * attn, attn * 2 + 2 * 4096 * 2, 3, rate)[1] +
            block(2 * 2 * e / 8 + 2 * 4096 * 8, moe * 2, 2, rate)[1] +
            block(4 * 192 * 4096 / 8, 192 * 2 * 128 * 2, 1,
                  PEAK * cal["flash_forward_efficiency"])[1]) + \
    block(2 * 32000 * 4096 / 8, 32000 * 4096 / 8 * 2, 1, rate)[1]
close("Mixtral tp=8 batch 1: memory-bound ms", r1["decode_step"]["memory_ms"], 1e3 * mem)

# 8. Continuous batching: the largest batch fills the memory; a step is the
# decode at the mean context plus the prefill chunks of the prompts that
# replace the finished sequences.
r = plan(LLAMA7, "tp=1", 1, 1024, 256, 0, batching="continuous")
mem = r["memory"]
total = sum(mem[k] for k in ("weights_gib", "cache_gib", "state_gib", "activations_gib",
                             "workspace_gib"))
per_seq = (1024 + 256) * kv_token / GiB + 32000 * 4 / GiB
close("7B continuous: the largest batch fills 80 GiB (one sequence)", 80 - total,
      (80 - total) if 0 <= 80 - total < per_seq else -1)
close("7B continuous: max batch is the batch", r["batch"], r["max_batch"])
close("7B continuous: TPOT >= decode step", min(r["tpot_ms"], r["decode_step"]["total_ms"]),
      r["decode_step"]["total_ms"])
close("7B continuous: tokens/s = batch / TPOT", r["tokens_per_s_per_gpu"],
      r["batch"] / (r["tpot_ms"] / 1e3))

if failures:
    sys.exit("FAIL: " + ", ".join(failures))
print("all figures as computed by hand")
