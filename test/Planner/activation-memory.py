# RUN: %python %s
#
# The activation memory the cost model counts per layer against the closed
# forms of Korthikanti et al. 2022 ("Reducing Activation Recomputation in
# Large Transformer Models", section 4) for a GPT layer with Megatron's
# unfused attention and dropout, in 16-bit activations:
#   no parallelism             s b h (34 + 5 a s / h)
#   tensor parallel (t)        s b h (10 + 24 / t + 5 a s / (h t))
#   tensor + sequence parallel s b h / t (34 + 5 a s / h)
#   ... + selective recompute  s b h / t * 34
# (GPT-3 175B's shape: s 2048, h 12288, a 96), and with full recompute the
# layer's input alone, 2 s b h / t.
import json
import subprocess
import sys

s, h, a, b = 2048, 12288, 96, 1
MODEL = f"family=gpt,hidden={h},heads={a},layers=96,vocab=51200,seq={s}"


def per_layer(runtime, tp, sp, recompute):
    out = subprocess.run(
        ["braid-plan", "--model", MODEL, "--gpus", str(tp), "--hardware", "a100-sxm",
         "--global-batch", str(b), "--runtime", runtime, "--format", "json", "--evaluate",
         f"tp={tp},mbs={b},sp={int(sp)},recompute={recompute}"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["plans"][0]["layer_activation_bytes"]


CASES = [
    ("megatron-2021", 1, False, "none", s * b * h * (34 + 5 * a * s / h)),
    ("megatron-2021", 8, False, "none", s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8))),
    ("megatron-2021", 8, True, "none", s * b * h / 8 * (34 + 5 * a * s / h)),
    ("megatron-2021", 8, True, "selective", s * b * h / 8 * 34),
    ("megatron-2021", 8, True, "full", 2 * s * b * h / 8),  # the layer's input only
]
failures = 0
for runtime, tp, sp, recompute, expected in CASES:
    got = per_layer(runtime, tp, sp, recompute)
    ok = abs(got - expected) <= 1e-9 * expected
    failures += not ok
    print(f"{runtime} tp={tp} sp={sp} recompute={recompute}: {got / 2**20:.1f} MiB, "
          f"Korthikanti {expected / 2**20:.1f} MiB {'ok' if ok else 'DIFFERENT'}")
sys.exit(1 if failures else 0)
