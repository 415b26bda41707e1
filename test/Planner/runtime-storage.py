# RUN: %python %s
#
# What a runtime stores per parameter and per logit, as the planner counts it,
# for Qwen3-30B-A3B's shape on one 8-GPU node (ep=8, FSDP/ZeRO-3 over the 8,
# 4 sequences of 4096 tokens per micro-batch: NeMo AutoModel's benchmark
# layout):
#   megatron-core   bf16 weights, f32 main gradients, f32 master weights and
#                   Adam moments (12 bytes per parameter of optimizer state),
#                   the loss on an f32 copy of the logits;
#   nemo-automodel  FSDP2 over weights built in bf16 and torch.optim.Adam's
#                   moments in bf16 (4 bytes of optimizer state), the loss on
#                   bf16 logits (MaskedCrossEntropy, fp32_upcast: false).
# Optimizer state: bytes x parameters / 8 exactly; logits and their gradient:
# 2 x bytes x tokens x vocabulary exactly. With Megatron-Core's storage the
# layout does not fit in 80 GB, with AutoModel's it does (it ran there). And
# the experts as one grouped GEMM call per projection take no more compute
# than one call per local expert.
import json
import subprocess
import sys

MODEL = ("family=moe,hidden=2048,layers=48,seq=4096,heads=32,vocab=151936,kv_heads=4,"
         "ffn=768,experts=128,top_k=8,head_dim=128")
PARAMS, TOKENS, VOCAB = 30532110336, 4 * 4096, 151936


def plan(runtime):
    out = subprocess.run(
        ["braid-plan", "--model", MODEL, "--gpus", "8", "--hardware", "h100-sxm",
         "--global-batch", "512", "--runtime", runtime, "--format", "json", "--evaluate",
         "ep=8,mbs=4,zero=3,recompute=full"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["plans"][0]


failures = []
results = {}
for runtime, optimizer_bytes, logit_bytes, fits in [("megatron-core", 12, 4, False),
                                                    ("nemo-automodel", 4, 2, True)]:
    p = results[runtime] = plan(runtime)
    mem = p["memory"]
    expected = {"optimizer": optimizer_bytes * PARAMS // 8,
                "logits": 2 * logit_bytes * TOKENS * VOCAB}
    for key, value in expected.items():
        if mem[key] != value:
            failures.append(f"{runtime}: {key} {mem[key]}, expected {value}")
    if p["fits"] != fits:
        failures.append(f"{runtime}: fits {p['fits']} ({p['memory_bytes'] / 2**30:.1f} GiB), "
                        f"expected {fits}")
    print(f"{runtime}: {p['memory_bytes'] / 2**30:.1f} GiB per GPU, step {p['step_s']:.2f} s")
if results["nemo-automodel"]["compute_s"] > results["megatron-core"]["compute_s"]:
    failures.append("grouped expert calls take more compute than a call per expert")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("PASS")
