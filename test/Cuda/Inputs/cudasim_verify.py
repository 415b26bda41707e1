"""GPU ranks on cudasim, judged by braid-run --verify: the shared body of
cudasim-ranks.py and cudasim-pipeline-context.py. Each case is (model path,
flags); it runs `braid-run MODEL --backend cudasim FLAGS --steps 2 --verify`,
passes when the verdict is PASS and the program ran the cuda backend, and
prints one line per case with its worst gradient."""
import subprocess
import sys


def run(cases):
    failed = []
    for model, flags in cases:
        r = subprocess.run(["braid-run", model, "--backend", "cudasim", *flags, "--steps", "2",
                            "--verify"], capture_output=True, text=True, timeout=900)
        out = r.stdout + r.stderr
        ok = r.returncode == 0 and "verify: PASS" in out and "on cuda" in out
        worst = [line for line in out.splitlines() if line.startswith("verify: gradients")]
        print(f"cudasim {model.rsplit('/', 1)[-1]} {' '.join(flags)}:", "PASS" if ok else "FAILED",
              worst[0] if worst else "")
        if not ok:
            failed.append(f"{model} {flags}: exit {r.returncode}\n{out[-3000:]}")
    if failed:
        print("\n".join(failed))
        sys.exit(1)
