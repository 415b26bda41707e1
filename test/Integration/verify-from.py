# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-run --verify-from DIR judges runs made elsewhere (bench/gpu/ranks.sh:
# GPU ranks started over NCCL by a launcher, not by braid-run) as --verify
# judges its own: DIR laid out as --verify --dump DIR leaves it (dumps, and
# each run's stdout in stdout.txt). It must give --verify's verdict on the
# same runs, fail what --verify would fail (a gradient, an updated parameter
# or a loss that differs), and refuse a directory that lacks a run.
import glob
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]
failures = []


def braid_run(*args):
    r = subprocess.run(["braid-run", *args, "--quiet"], capture_output=True, text=True)
    return r.returncode, [l for l in r.stdout.splitlines() if l.startswith("verify:")], r


def expect(label, ok, detail=""):
    print(f"{label}: {'ok' if ok else 'FAILED'}")
    if not ok:
        failures.append(f"{label}\n{detail}")


def scale_element(path, index, factor):
    """Multiplies element `index` of an f32 .npy file in place."""
    with open(path, "r+b") as f:
        head = f.read(10)
        hlen = struct.unpack("<H", head[8:10])[0]
        f.seek(10 + hlen + 4 * index)
        (x,) = struct.unpack("<f", f.read(4))
        f.seek(10 + hlen + 4 * index)
        f.write(struct.pack("<f", x * factor if x else 1.0))


def case(label, model, flags):
    """--verify --dump D, then --verify-from D on the same runs, then three
    copies of D each with one thing broken."""
    dump = os.path.join(work, label)
    rc, lines, r = braid_run(model, *flags, "--steps", "2", "--verify", "--dump", dump)
    expect(f"{label}: --verify passes", rc == 0 and "verify: PASS" in lines, r.stdout + r.stderr)
    kept = [os.path.join(dump, "stdout.txt"), os.path.join(dump, "reference", "stdout.txt")]
    expect(f"{label}: each run's stdout kept", all(os.path.isfile(p) for p in kept), str(kept))
    rc2, lines2, r = braid_run(model, *flags, "--steps", "2", "--verify-from", dump)
    expect(f"{label}: --verify-from gives --verify's verdict", rc2 == 0 and lines2 == lines,
           "\n".join(lines) + "\n--- verify-from:\n" + "\n".join(lines2) + r.stderr)
    print("  " + "\n  ".join(lines2))

    def broken(what, edit, expected, culprit):
        """The copy must fail, with `expected`'s line now naming `culprit`
        (the broken tensor, or for the loss a value it did not have)."""
        copy = os.path.join(work, f"{label}-{what}")
        shutil.copytree(dump, copy)
        edit(copy)
        rc, lines, r = braid_run(model, *flags, "--steps", "2", "--verify-from", copy)
        fail = [l for l in lines if l.startswith("verify: FAIL")]
        named = [l for l in lines if l.startswith(expected) and culprit in l and l not in lines2]
        expect(f"{label}: {what} fails ({named[0] if named else '?'})",
               rc == 1 and fail and named, r.stdout + r.stderr)

    # Twice one element: beyond the bounds at bf16 too (gradients 2e-2 there).
    grad = "step1.grad.layers.0.attn.wo"
    broken("a gradient", lambda d: scale_element(os.path.join(d, grad + ".npy"), 5, 2.0),
           "verify: gradients", grad)
    # The replay uses the run's own gradients: an update they do not give.
    upd = "step1.updated.layers.0.mlp.w_up"
    broken("an updated parameter", lambda d: scale_element(os.path.join(d, upd + ".npy"), 3, 1.01),
           "verify: parameters", upd)

    def loss(d):
        path = os.path.join(d, "stdout.txt")
        text = open(path).read().replace("step 2 loss ", "step 2 loss 1", 1)
        open(path, "w").write(text)
    broken("a loss", loss, "verify: loss", "")
    return dump


llama = verify_matrix.build(work, "llama-tiny-b4")
dump = case("dp2-zero1", llama, ["--grid", "dp=2", "--zero", "1"])
case("tp2-bf16", llama, ["--grid", "tp=2", "--sequence-parallel", "--dtype", "bf16"])

# A run missing: a located message and exit 1, nothing judged.
missing = os.path.join(work, "missing")
shutil.copytree(dump, missing)
os.remove(os.path.join(missing, "reference", "stdout.txt"))
rc, lines, r = braid_run(llama, "--grid", "dp=2", "--zero", "1", "--steps", "2",
                         "--verify-from", missing)
expect("a run missing: refused", rc == 1 and not lines and
       "reference/stdout.txt" in r.stderr, r.stdout + r.stderr)
print("  " + r.stderr.strip())

# Without --grid: two 1-rank runs (the same program on two backends, as
# bench/gpu/check.sh compares the CPU and the CUDA backend).
pair = os.path.join(work, "pair")
shutil.copytree(os.path.join(dump, "reference"), pair)
shutil.copytree(os.path.join(dump, "reference"), os.path.join(pair, "reference"))
rc, lines, r = braid_run(llama, "--steps", "2", "--verify-from", pair)
expect("two 1-rank runs judged", rc == 0 and "verify: PASS" in lines and "verify: loss 0" in lines,
       r.stdout + r.stderr)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("PASS")
