"""The planner's memory per GPU against published peaks.

The only published per-GPU memory of training runs whose layout the planner
models is torchtitan's (bench/planner/published.json, rows with
`memory_gb`): the CUDA caching allocator's peak of reserved bytes, which
torchtitan 9dec370 logs as "memory" (train.py: get_peak_stats().
max_reserved_gib). For each row whose runtime braid-plan models
(`--runtime torchtitan`: eager FSDP2 Llama training, see Runtime::
fsdpStreamPools), runs `braid-plan --evaluate` on the published layout and
prints the predicted bytes the allocator holds (memory_bytes less the
`reserved` term, which stands for the CUDA context and NCCL's own buffers,
memory the caching allocator does not count) against the published figure,
with the error and the predicted parts. Nothing is fitted: every term is
counted from the model's shapes and the runtime's documented behaviour.

The rows the runtime does not describe are listed with the reason.

usage: python3 bench/planner/memory.py [--bin build/bin]
"""
import argparse
import json
import os
import statistics
import subprocess

import validate  # the published rows' model keys, as the step-time comparison reads them

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "bench", "planner", "published.json")
CLUSTER = os.path.join(ROOT, "bench", "planner", "hardware", "grand-teton-h100-96gb.json")

# torchtitan's vocabulary: its tiktoken tokenizer's 128,000 words and 256
# reserved special tokens (torchtitan/datasets/tokenizer/tiktoken.py at
# 9dec370, num_reserved_special_tokens = 256; train.py sets the model's
# vocab_size to tokenizer.n_words). The data's 128,000 is the paper's round
# figure; the logits, the embedding and the head have 128,256 rows.
VOCAB = 128256

# Modelled: eager FSDP2 (no torch.compile, no Float8) with op-level
# selective checkpointing, and the full-checkpointing rows of Table 2.
# There every block keeps only its input, so what torch.compile and Float8
# change inside a block (fusions, fp8 casts) is recomputed rather than kept;
# the loss is not compiled (train.py: "compiling loss function causes CUDA
# errors, turning off for now") and the root (embedding, final norm, head) is
# outside the compiled blocks.
MODELLED = [
    "tt2412-llama31-8b-8gpu-fsdp-bf16",
    "tt2412-llama31-8b-128gpu-fsdp-bf16",
    "tt2412-llama31-8b-8gpu-fsdp8-cp1-seq32k",
    "tt2412-llama31-8b-8gpu-fsdp4-cp2-seq64k",
    "tt2412-llama31-8b-8gpu-fsdp2-cp4-seq128k",
    "tt2412-llama31-8b-8gpu-fsdp1-cp8-seq256k",
]

NOT_MODELLED = {
    "compile": "torch.compile with op-level selective checkpointing: Inductor's partitioner "
               "chooses what a compiled block keeps, which the runtime does not describe",
    "float8": "Float8 linears with selective checkpointing: what torchao keeps of its fp8 casts",
    "tp": "tensor parallelism through DTensor with loss parallelism: the vocabulary-parallel "
          "loss's buffers, Float8 and AsyncTP are not described",
}


def not_modelled_reason(row):
    if row["tp"] > 1 or row["pp"] > 1:
        return NOT_MODELLED["tp"]
    if "compile" in row["dtype"]:
        return NOT_MODELLED["compile"]
    return NOT_MODELLED["float8"]


def evaluate(bin_dir, row):
    dp, cp, lb = row["dp"], row["cp"], row["local_batch"]
    recompute = "full" if row["recompute"].startswith("full") else "selective"
    spec = f"dp={dp},cp={cp},mbs={lb},zero=3,recompute={recompute}"
    spec_row = dict(row, model=dict(row["model"], vocab=VOCAB))
    cmd = [os.path.join(bin_dir, "braid-plan"), "--model", validate.model_spec(spec_row), "--gpus",
           str(row["gpus"]), "--hardware", CLUSTER, "--global-batch", str(dp * lb),
           "--runtime", "torchtitan", "--format", "json", "--evaluate", spec,
           # H100's compute rates (the step time is not what is compared).
           "--calibration", "h100-sxm"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{row['id']}: {out.stderr.strip()}")
    plan = json.loads(out.stdout)["plans"][0]
    if "invalid" in plan:
        raise RuntimeError(f"{row['id']}: {plan['invalid']}")
    return spec, plan


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    args = ap.parse_args()
    rows = [r for r in json.load(open(DATA))["rows"] if "memory_gb" in r["measured"]]
    gib = 2.0**30
    print(f"{'row':42s} {'plan':34s} {'published':>9s} {'predicted':>9s} {'error':>7s}  "
          "parts (GiB)")
    errors = []
    for row in rows:
        if row["id"] not in MODELLED:
            continue
        spec, p = evaluate(args.bin, row)
        mem = p["memory"]
        predicted = (p["memory_bytes"] - mem["reserved"]) / gib
        published = row["measured"]["memory_gb"]
        err = predicted / published - 1
        errors.append(err)
        parts = ", ".join(f"{k} {mem[k] / gib:.2f}" for k in
                          ("weights", "gradients", "optimizer", "activations", "logits",
                           "communication"))
        print(f"{row['id'][:42]:42s} {spec[:34]:34s} {published:8.1f}  {predicted:8.2f}  "
              f"{100 * err:+6.1f}%  {parts}")
    missing = [i for i in MODELLED if i not in {r["id"] for r in rows}]
    if missing:
        raise SystemExit(f"rows not in {DATA}: {', '.join(missing)}")
    a = [abs(e) for e in errors]
    print(f"modelled: {len(a)} rows, median |error| {100 * statistics.median(a):.1f}%, "
          f"max {100 * max(a):.1f}%, within 5%: {sum(x <= 0.05 for x in a)}/{len(a)}")
    print("not modelled:")
    for row in rows:
        if row["id"] not in MODELLED:
            print(f"  {row['id']} ({row['measured']['memory_gb']} GiB): "
                  f"{not_modelled_reason(row)}")


if __name__ == "__main__":
    main()
