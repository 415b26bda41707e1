# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A plan braid-plan chose (or evaluated) runs: braid-plan --plan-file writes
# it with its reduced form (every axis it uses at size 2, a tiny model of the
# family), the model builder builds that model (the file's model_build), and
# braid-run --plan-file runs the reduced plan on CPU ranks with --verify
# against the unpartitioned 1-rank run. Cases: the planner's own first choice
# for Llama 3 8B on 64 H100s; ZeRO-1 with tp; an interleaved pipeline with ZeRO-1 and
# selective recompute; a ZB-H1 pipeline with ZeRO-1; Mixtral's shape with expert parallelism and ZeRO-3;
# Jamba's hybrid shape on a pipeline.
import json
import os
import subprocess
import sys

work = sys.argv[1]
CASES = [
    ("llama3-8b", "family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,"
     "vocab=128256", 64, 256, None),
    ("pipeline", "family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,"
     "vocab=128256", 64, 256, "pp=4,dp=16,vpp=2,mbs=1,zero=1,recompute=selective"),
    ("zero1-tp", "family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,"
     "vocab=128256", 64, 256, "dp=16,tp=4,mbs=2,zero=1"),
    ("zb-h1", "family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,"
     "vocab=128256", 64, 256, "pp=4,dp=16,mbs=1,zero=1,schedule=zb-h1"),
    ("mixtral", "family=moe,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,"
     "vocab=32000,experts=8,top_k=2", 64, 256, "dp=2,ep=4,tp=8,mbs=1,zero=3"),
    ("jamba", "family=hybrid,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,"
     "vocab=65536,experts=16,top_k=2,attn_period=8,attn_offset=4,expert_period=2,"
     "expert_offset=1", 64, 128, "pp=2,dp=4,tp=8,mbs=1,zero=0,recompute=full"),
]
failures = 0
for name, model, gpus, batch, evaluate in CASES:
    plan = os.path.join(work, name + ".json")
    cmd = ["braid-plan", "--model", model, "--gpus", str(gpus), "--hardware", "h100-sxm",
           "--global-batch", str(batch), "--top", "1", "--plan-file", plan]
    if evaluate:
        cmd += ["--evaluate", evaluate]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    reduced = json.load(open(plan))["reduced"]
    mlir = os.path.join(work, name + ".mlir")
    subprocess.run([sys.executable] + reduced["model_build"][1:] + ["-o", mlir], check=True)
    run = subprocess.run(["braid-run", mlir, "--plan-file", plan, "--verify", "--steps", "3"],
                         capture_output=True, text=True)
    verdict = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    ok = run.returncode == 0 and verdict == "verify: PASS"
    failures += not ok
    print(f"{name}: {' '.join(reduced['braid_run_flags'])} on {reduced['preset']} "
          f"{reduced['overrides']}: {verdict or run.stderr.strip()[-300:]}")
sys.exit(1 if failures else 0)
