"""The shared body of the checkpoint tests (checkpoint-*.py): braid-run with a
time limit, the loss lines a run prints, dumps compared byte for byte, and
snapshots of a directory tree (to show that a refused run wrote nothing).
Models are built as verify_matrix.build builds them ("llama-tiny-b4": batch 4)."""
import glob
import hashlib
import os
import subprocess

import verify_matrix

build = verify_matrix.build


def braid_run(args, timeout=600):
    """braid-run ARGS, output captured; a run past `timeout` seconds is killed
    and reported as exit code 124."""
    try:
        return subprocess.run(["braid-run", *[str(a) for a in args]], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, 124, e.stdout or "", e.stderr or "")


def loss_lines(stdout):
    """The "step K loss X" lines, as printed (%.9g: equal text is equal bits)."""
    return [line for line in stdout.splitlines() if line.startswith("step ")]


def losses(stdout):
    """{K: X} of the loss lines."""
    out = {}
    for line in loss_lines(stdout):
        _, k, _, x = line.split()
        out[int(k)] = float(x)
    return out


def differing_dumps(a, b, pattern="updated.*.npy"):
    """The files matching `pattern` in dump directory `a` that are missing
    from `b` or differ from it in any byte (and the count compared)."""
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a, pattern)))
    differ = []
    for name in names:
        other = os.path.join(b, name)
        if not os.path.exists(other) or open(os.path.join(a, name), "rb").read() != \
                open(other, "rb").read():
            differ.append(name)
    return differ, len(names)


def snapshot(root):
    """{relative path: (size, mtime_ns, sha256)} of every file under root."""
    out = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            st = os.stat(path)
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns, digest)
    return out
