# REQUIRES: libfuzzer
# RUN: rm -rf %t && mkdir -p %t/corpus
# RUN: %python %s %t/corpus %braid_src | FileCheck %s
#
# braid-plan's model (--model key=value,...), hardware description and
# compute calibration, a cluster size and a global batch, and libFuzzer's
# mutations of them: each goes through the search (and, when nothing fits,
# the smallest cluster), a message or plans, no crash, no sanitizer report
# (fuzz/PlannerInputs.cpp). First each seed once, verbose: every one must
# reach the search.
# CHECK: 18 seeds, each searched
# CHECK: braid-fuzz-plan: {{[0-9]+}} inputs, no crash
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import fuzz_run  # noqa: E402

corpus, src = sys.argv[1], sys.argv[2]
# Published shapes of each family: Llama 3 8B, GPT-3 175B, Mixtral 8x7B,
# Mamba 2.8B, a Jamba-like hybrid by periods and a small one by pattern.
models = [
    "family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,vocab=128256",
    "family=gpt,hidden=12288,heads=96,layers=96,vocab=51200,seq=2048",
    "family=moe,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,vocab=32000,"
    "experts=8,top_k=2",
    "family=mamba,hidden=2560,layers=64,seq=2048,vocab=50280",
    "family=hybrid,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,vocab=65536,"
    "attn_period=8,attn_offset=4,experts=16,top_k=2,expert_period=2,expert_offset=1",
    "family=hybrid,hidden=1024,layers=8,seq=4096,heads=16,ffn=4096,vocab=65536,"
    "pattern=MM*-MM*E,experts=4,top_k=1,mamba_heads=32",
]


def tail(gpus, batch, which, zero=15, recompute=7, vpp=8, mb=16):
    """The option bytes as FuzzedDataProvider reads them from the input's end
    (so written last first): the GPUs (1..4096, two bytes, high first), the
    batch (1..65536, two bytes), which description the JSON is (0 none, 1
    hardware, 2 calibration), the ZeRO stages and recompute policies as bit
    masks (1..15, 1..7), the most virtual stages (1..8) and the largest
    micro-batch (1..16); the defaults are braid-plan's."""
    g, b = gpus - 1, batch - 1
    return bytes([mb - 1, vpp - 1, recompute - 1, zero - 1, which,
                  b & 255, b >> 8, g & 255, g >> 8])


n = 0
for k, model in enumerate(models):
    # The model ends at a backslash followed by another character.
    # braid-plan's whole space; one ZeRO stage and policy on 512 GPUs; a
    # cluster too small for most.
    for which, gpus, batch, zero, recompute in ((0, 64, 256, 15, 7), (1, 512, 1024, 2, 1),
                                                (2, 8, 8, 15, 7)):
        if which == 0:
            json = b""
        else:
            kind = ("hardware", "calibration")[which - 1]
            name = ("a100-sxm", "h100-sxm", "h200-sxm")[k % 3]
            json = open(os.path.join(src, "lib", "CostModel", kind, name + ".json"), "rb").read()
        with open(os.path.join(corpus, f"seed-{n}"), "wb") as out:
            out.write(model.encode() + b"\\;" + json +
                      tail(gpus, batch, which, zero, recompute))
        n += 1

target = shutil.which("braid-fuzz-plan")
# What the search found: "N plans, first GRID" or "no plan fits; ...".
fuzz_run.each_seed_reaches(target, corpus,
                           lambda line: " plans, first " in line or "no plan fits" in line,
                           "searched")
fuzz_run.run(target, corpus, runs=4000, seconds=30)
