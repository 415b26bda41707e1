"""Compile checks shared by the codegen-header tests (host compilers and nvcc)."""
import subprocess
import sys


def compile_ok(cmd):
    """Runs a compiler command; exits the test with its output when it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    print("ok:", " ".join(cmd))
