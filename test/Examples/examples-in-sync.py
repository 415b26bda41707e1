# RUN: %python %s %braid_src
#
# examples/*.mlir are what a user starts from: each must be exactly what the
# builder prints for its preset today, and must parse and verify in braid-opt.
import pathlib
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
examples = sorted((root / "examples").glob("*.mlir"))
assert examples, "no examples found"
failures = []
for path in examples:
    preset = path.stem
    built = subprocess.run(
        [sys.executable, "-m", "braid.models", preset],
        check=True, capture_output=True, text=True).stdout
    if built != path.read_text():
        failures.append(f"{path.name}: differs from `python3 -m braid.models {preset}`; "
                        f"regenerate it")
    verified = subprocess.run(["braid-opt", str(path), "-o", "/dev/null"],
                              capture_output=True, text=True)
    if verified.returncode != 0:
        failures.append(f"{path.name}: braid-opt rejects it:\n{verified.stderr}")
for failure in failures:
    print(failure)
sys.exit(1 if failures else 0)
