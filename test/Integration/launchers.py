# REQUIRES: mpirun
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# Ranks beyond one mpirun on one machine (issue 47):
# 1. --hostfile: a hostfile of two loopback addresses handed to mpirun, whose
#    rsh agent is a stand-in for ssh that runs each "remote" command here (it
#    logs the host it was asked for); the run's losses equal those of a plain
#    mpirun run, and 127.0.0.2 was reached through the agent.
# 2. --launcher none: braid-run builds the programs and prints the rendezvous
#    server's and each rank's command; the test starts them by hand, each rank
#    its own process (no mpirun), and rank 0 prints the same losses.
# 3. A rank that never joins: the other ends within BRAID_STORE_TIMEOUT with a
#    message naming the store, rather than hanging.
import os
import shlex
import signal
import subprocess
import sys
import time

work, src = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "llama-tiny.mlir")
# Every "machine" is this one: Open MPI's daemons and Braid's ranks talk over
# the loopback interface only.
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(work, "cache"),
           OMPI_MCA_oob_tcp_if_include="lo", OMPI_MCA_btl_tcp_if_include="lo")
train = ["braid-run", model, "--grid", "dp=2", "--steps", "2", "--quiet"]
failures = []


def run(args, **extra):
    return subprocess.run(args, capture_output=True, text=True, timeout=600,
                          env=dict(env, **extra))


def losses(text):
    return [line for line in text.splitlines() if "loss" in line]


baseline = run(train)
if baseline.returncode != 0 or len(losses(baseline.stdout)) != 2:
    sys.exit(f"FAIL: the mpirun run: status {baseline.returncode}\n{baseline.stdout}"
             f"{baseline.stderr}")
expected = losses(baseline.stdout)

# 1. --hostfile.
agent_log = os.path.join(work, "agent.log")
agent = os.path.join(work, "fake-ssh")
with open(agent, "w") as f:
    f.write("#!/bin/sh\n"
            "# mpirun's rsh agent in this test: every host is this machine.\n"
            "while [ $# -gt 0 ]; do case \"$1\" in -*) shift;; *) break;; esac; done\n"
            f"echo \"$1\" >> {shlex.quote(agent_log)}\n"
            "shift\n"
            "exec sh -c \"$*\"\n")
os.chmod(agent, 0o755)
hosts = os.path.join(work, "hosts")
with open(hosts, "w") as f:
    f.write("127.0.0.1 slots=1\n127.0.0.2 slots=1\n")
placed = run(train + ["--hostfile", hosts], OMPI_MCA_plm_rsh_agent=agent)
agent_hosts = open(agent_log).read().split() if os.path.exists(agent_log) else []
if placed.returncode != 0 or losses(placed.stdout) != expected:
    failures.append(f"--hostfile: status {placed.returncode}, losses {losses(placed.stdout)} "
                    f"!= {expected}\n{placed.stderr}")
if "127.0.0.2" not in agent_hosts:
    failures.append(f"--hostfile: mpirun never started a daemon on 127.0.0.2 through its "
                    f"agent (agent log: {agent_hosts})")

# 2. --launcher none, the printed commands started by hand.
store = os.path.join(work, "store")
printed = run(train + ["--launcher", "none", "--store", store])
lines = [l for l in printed.stdout.splitlines() if l and not l.startswith("#")]
server = [l for l in lines if l.startswith("ompi-server")]
ranks = [l for l in lines if "BRAID_RANK=" in l]
if printed.returncode != 0 or len(server) != 1 or len(ranks) != 2:
    sys.exit(f"FAIL: --launcher none printed no rendezvous server and two ranks "
             f"(status {printed.returncode}):\n{printed.stdout}{printed.stderr}")
if "BRAID_MPI_STORE=" + store not in ranks[0] or "BRAID_WORLD_SIZE=2" not in ranks[1]:
    failures.append(f"--launcher none: the rank commands lack the store or the size:\n{ranks}")
rendezvous = subprocess.Popen(shlex.split(server[0].rstrip(" &")), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
try:
    # Started in reverse order: a rank may start before rank 0.
    procs = [subprocess.Popen(["sh", "-c", command], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for command in reversed(ranks)]
    outputs = [p.communicate(timeout=300) for p in procs]
    statuses = [p.returncode for p in procs]
    rank0 = outputs[-1][0]
    if statuses != [0, 0] or losses(rank0) != expected:
        failures.append(f"--launcher none: statuses {statuses}, rank 0's losses "
                        f"{losses(rank0)} != {expected}\n"
                        + "\n".join(out + err for out, err in outputs))

    # 3. Rank 1 alone: rank 0 never comes.
    alone_start = time.monotonic()
    alone = subprocess.run(["sh", "-c", ranks[1]], capture_output=True, text=True, timeout=120,
                           env=dict(env, BRAID_STORE_TIMEOUT="3"))
    took = time.monotonic() - alone_start
    if alone.returncode == 0 or "BRAID_MPI_STORE" not in alone.stderr or took > 60:
        failures.append(f"a rank alone: status {alone.returncode} after {took:.0f} s, "
                        f"expected a failure naming BRAID_MPI_STORE:\n{alone.stderr}")
finally:
    os.killpg(rendezvous.pid, signal.SIGTERM)
    rendezvous.wait(timeout=30)

if failures:
    sys.exit("FAIL: " + "\nFAIL: ".join(failures))
print(f"PASS: --hostfile over two loopback hosts and hand-started ranks (--launcher none) "
      f"give the mpirun run's losses: {expected}")
