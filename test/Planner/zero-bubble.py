# RUN: %python %s
#
# ZB-H1 (Qi et al. 2023) in the planner: the same plan as 1F1B, with the
# backward split into the input's gradient (B) and the weight's (W), which
# fills the fill and drain. Its bubble is smaller, its memory the same (ZB-H1
# holds 1F1B's micro-batches), its step shorter (both re-timed by the
# schedule simulator). The search offers it: on GPT-3 175B over 1024 A100s,
# ZB-H1 plans are among the first 40.
import json
import subprocess
import sys

MODEL = "family=gpt,hidden=12288,layers=96,seq=2048,heads=96,vocab=51200"
BASE = ["braid-plan", "--model", MODEL, "--gpus", "1024", "--hardware", "a100-sxm",
        "--global-batch", "1536", "--format", "json"]


def plans(*args):
    out = subprocess.run(BASE + list(args), check=True, capture_output=True, text=True).stdout
    return json.loads(out)["plans"]


failures = []
plain, zb = plans("--evaluate", "pp=8,dp=16,tp=8,mbs=2,zero=1;"
                  "pp=8,dp=16,tp=8,mbs=2,zero=1,schedule=zb-h1")
if (plain["schedule"], zb["schedule"]) != ("1f1b", "zb-h1"):
    failures.append(f"schedules: {plain['schedule']}, {zb['schedule']}")
if not zb["bubble_s"] < 0.6 * plain["bubble_s"]:
    failures.append(f"ZB-H1 bubble {zb['bubble_s']} s not well under 1F1B's {plain['bubble_s']} s")
if zb["memory_bytes"] != plain["memory_bytes"]:
    failures.append(f"memory differs: {zb['memory_bytes']} vs {plain['memory_bytes']}")
if not zb["step_s"] < plain["step_s"]:
    failures.append(f"ZB-H1 step {zb['step_s']} s not under 1F1B's {plain['step_s']} s")
print(f"1F1B: step {plain['step_s']:.3f} s, bubble {plain['bubble_s']:.3f} s; "
      f"ZB-H1: step {zb['step_s']:.3f} s, bubble {zb['bubble_s']:.3f} s")
searched = plans("--top", "40")
if not any(p.get("schedule") == "zb-h1" for p in searched):
    failures.append("no ZB-H1 plan among the search's first 40: " +
                    ", ".join(f"{p['grid']} {p.get('schedule')}" for p in searched[:5]))
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
