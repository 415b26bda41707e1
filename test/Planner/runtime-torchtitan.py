# RUN: %python %s
#
# What `--runtime torchtitan` counts per GPU, term by term, for Llama 3.1 8B
# (torchtitan's shapes, vocabulary 128,256), recomputed here from the shapes
# and the runtime's documented behaviour (lib/Planner/PlanCost.h,
# Runtime::fsdpStreamPools, opSelectiveCheckpoint, normKeepsUpcast):
#   weights        f32 shards, 4 bytes / N per parameter, and the bf16
#                  gathered copies: the root's (embedding, final norm, head)
#                  and one layer's; with a pipeline every layer's of the stage
#   gradients      f32 shards, 4 / N
#   optimizer      AdamW's two f32 moments, 8 / N
#   logits         three f32 copies of the tokens x vocabulary logits
#   communication  the all-gather pool (root and a layer in bf16) and the
#                  reduce-scatter pool (a layer's and the root's f32 inputs)
#   activations    per layer: the block's input, q, v, w1 and w2's outputs,
#                  attention's output and log-sum-exp, with sequence
#                  parallelism the two reduce-scatters' outputs; the final
#                  norm's f32 input, normalized value and output
# Every term must be equal to its formula (to rounding).
import json
import subprocess
import sys

H, L, HEADS, KV, D, F, V, S = 4096, 32, 32, 8, 128, 14336, 128256, 8192
MODEL = (f"family=llama,hidden={H},layers={L},seq={S},heads={HEADS},kv_heads={KV},ffn={F},"
         f"vocab={V}")
LAYER = H * (HEADS * D + 2 * KV * D) + HEADS * D * H + 3 * H * F + 2 * H
EMBED, HEAD = V * H, V * H + H  # the head holds the final norm
PARAMS = L * LAYER + EMBED + HEAD

failures = []


def plan(spec, gpus, batch=16):
    out = subprocess.run(
        ["braid-plan", "--model", MODEL, "--gpus", str(gpus), "--hardware", "h100-sxm",
         "--global-batch", str(batch), "--runtime", "torchtitan", "--format", "json", "--evaluate",
         spec], check=True, capture_output=True, text=True).stdout
    p = json.loads(out)["plans"][0]
    if "invalid" in p:
        sys.exit(f"FAIL: {spec}: {p['invalid']}")
    return p


def expect(what, got, want):
    ok = abs(got - want) <= 1e-9 * max(1.0, abs(want))
    print(f"{what}: {got:.6g} (expected {want:.6g}){'' if ok else '  MISMATCH'}")
    if not ok:
        failures.append(what)


def layer_saved(T, tp=1, sp=False):
    ql, kvl, f = HEADS / tp, max(1, KV / tp), F / tp
    Te = T / tp if sp else T
    saved = Te * H * 2 + T * ql * D * 2 + T * ql * 4  # input, attention out and lse
    saved += (T * ql * D + T * kvl * D + T * f + T * H) * 2  # q, v, w1, w2
    if sp:
        saved += 2 * Te * H * 2
    return saved


# FSDP over 8, two sequences a rank (one micro-batch: torchtitan of December
# 2024 has no gradient accumulation), op-level selective checkpointing.
N, T = 8, 2 * S
p = plan("dp=8,mbs=2,zero=3,recompute=selective", 8)
m = p["memory"]
root = EMBED + HEAD
expect("dp8 weights", m["weights"], 4 * PARAMS / N + 2 * (root + LAYER))
expect("dp8 gradients", m["gradients"], 4 * PARAMS / N)
expect("dp8 optimizer", m["optimizer"], 8 * PARAMS / N)
expect("dp8 logits", m["logits"], 3 * 4 * T * V)
expect("dp8 communication", m["communication"], 2 * (root + LAYER) + 4 * (root + LAYER))
expect("dp8 layer activations", p["layer_activation_bytes"], layer_saved(T))
expect("dp8 activations", m["activations"], L * layer_saved(T) + T * H * 8)

# Full checkpointing: a block keeps its input only.
p = plan("dp=8,mbs=2,zero=3,recompute=full", 8)
expect("dp8 full activations", p["memory"]["activations"], L * T * H * 2 + T * H * 8)

# tp=2 with sequence parallelism: the reduce-scatters' outputs are kept too.
p = plan("dp=4,tp=2,mbs=2,zero=3,recompute=selective,sp=1", 8)
expect("dp4 x tp2 layer activations", p["layer_activation_bytes"], layer_saved(T, 2, True))

# A pipeline: no layer is resharded after its forward, so the stage's whole
# bf16 copy is held.
p = plan("dp=4,pp=2,mbs=2,zero=3,recompute=full", 8, batch=64)
layout = p["layout"]
stage_params = [layout[0] * LAYER + EMBED, layout[1] * LAYER + HEAD]
weights = [4 * s / 4 + 2 * s for s in stage_params]
if not any(abs(p["memory"]["weights"] - w) <= 1e-9 * w for w in weights):
    failures.append("pp2 weights")
print(f"pp2 weights: {p['memory']['weights']:.6g} (expected one of "
      f"{', '.join(f'{w:.6g}' for w in weights)})")

if failures:
    sys.exit("FAIL: " + ", ".join(failures))
print("PASS")
