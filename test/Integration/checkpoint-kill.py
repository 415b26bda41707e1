# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A rank killed while a checkpoint is being written leaves the previous one
# valid (runtime/src/checkpoint.h: the files go to D/step-K.tmp, which is
# renamed and named by D/latest only once every rank's files are on disk).
# A Llama of 5.3M parameters (63 MB of checkpoint: parameters and AdamW's
# moments) trains on dp=2 with ZeRO-3, a checkpoint after every step; as soon
# as rank 1 has begun writing its file of step 2's checkpoint, the test kills
# it (SIGKILL). Then:
# - the run ends (Open MPI's launcher ends the other rank) with a failure;
# - D/latest still names step-1, D/step-2 does not exist, and the interrupted
#   D/step-2.tmp is left as it was;
# - resuming from D (and writing into it again) continues from step 1 and
#   gives the uninterrupted run's losses and final state bit for bit; it
#   removes the interrupted step-2.tmp, writes step-2 and step-3, and D/latest
#   names step-3.
# Every wait has a time limit: a run that hangs fails the test.
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import checkpoint_run as cr  # noqa: E402

work = sys.argv[1]
failures = []
FLAGS = ["--grid", "dp=2", "--zero", "3"]


def expect(cond, message):
    if not cond:
        failures.append(message)


model = os.path.join(work, "llama-5m.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--vocab",
                            "8000", "--hidden", "256", "--ffn", "512"], check=True,
                           capture_output=True, text=True).stdout)
full = cr.braid_run([model, *FLAGS, "--steps", 3, "--quiet", "--dump",
                     os.path.join(work, "full")])
expect(full.returncode == 0, f"the uninterrupted run failed:\n{full.stderr}")


def ranks_of(tag):
    """{MPI rank: pid} of the processes started with `tag` in their
    environment (the launcher passes it to the ranks)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if f"BRAID_CHECKPOINT_KILL_TEST={tag}".encode() not in env:
            continue
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(var.split(b"=")[1])] = int(pid)
    return found


ckpt = os.path.join(work, "ckpt")
tag = uuid.uuid4().hex
run = subprocess.Popen(["braid-run", model, *FLAGS, "--steps", "3", "--quiet",
                        "--checkpoint-dir", ckpt, "--checkpoint-every", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, BRAID_CHECKPOINT_KILL_TEST=tag),
                       start_new_session=True)
writing = os.path.join(ckpt, "step-2.tmp", "rank00001.safetensors")
deadline = time.monotonic() + 300
killed = None
while time.monotonic() < deadline and run.poll() is None:
    ranks = ranks_of(tag) if killed is None else {}
    if 1 in ranks:
        # Rank 1 is known: wait for its file of step 2, then kill it at once.
        while time.monotonic() < deadline and run.poll() is None and \
                not os.path.exists(writing):
            time.sleep(0.001)
        if os.path.exists(writing):
            written = os.path.getsize(writing)
            published = os.path.exists(os.path.join(ckpt, "step-2"))
            os.kill(ranks[1], signal.SIGKILL)
            killed = (written, published)
        break
    time.sleep(0.01)
try:
    out, err = run.communicate(timeout=120)
except subprocess.TimeoutExpired:
    os.killpg(run.pid, signal.SIGKILL)
    out, err = run.communicate()
    failures.append("the run did not end after its rank was killed")
expect(killed is not None, f"rank 1 was not caught writing step 2's checkpoint:\n{out}{err}")
if killed:
    print(f"killed rank 1 with {killed[0]} bytes of {writing} written "
          f"(step-2 published before the kill: {killed[1]}); the run exited {run.returncode}")
    expect(not killed[1], "step 2's checkpoint was already published when the rank was killed")
expect(run.returncode != 0, "the run with a killed rank succeeded")

latest = open(os.path.join(ckpt, "latest")).read().strip()
left = sorted(os.listdir(ckpt))
print(f"after the kill: latest names {latest}; {ckpt} holds {left}")
expect(latest == "step-1", f"latest names {latest}, not step-1")
expect("step-2" not in left and "step-2.tmp" in left, f"unexpected checkpoint entries {left}")

resumed = cr.braid_run([model, *FLAGS, "--steps", 3, "--quiet", "--resume", ckpt,
                        "--checkpoint-dir", ckpt, "--checkpoint-every", 1, "--dump",
                        os.path.join(work, "resumed")])
differ, count = cr.differing_dumps(os.path.join(work, "full"), os.path.join(work, "resumed"))
same = cr.loss_lines(resumed.stdout) == cr.loss_lines(full.stdout)[1:]
print(f"resumed from step 1: losses {'identical' if same else 'DIFFER'} to the uninterrupted "
      f"run, {count - len(differ)} of {count} updated tensors identical")
expect(resumed.returncode == 0 and same and count and not differ,
       f"the resumed run differs (exit {resumed.returncode}): {differ[:5]}\n"
       f"{resumed.stdout}{resumed.stderr}")
latest = open(os.path.join(ckpt, "latest")).read().strip()
left = sorted(os.listdir(ckpt))
print(f"after resuming: latest names {latest}; {ckpt} holds {left}")
expect(latest == "step-3" and left == ["latest", "step-1", "step-2", "step-3"],
       f"after resuming: latest {latest}, entries {left}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
