"""Runs a libFuzzer target over a seed corpus for a bounded time (the test
suite's short run of each target; the closing note's long runs use the same
command with a larger -runs)."""
import os
import subprocess
import sys


def _env():
    # The targets' ASan sees LLVM's allocators poison their slabs in the
    # instrumented code and not in Debian's libMLIR.so, which share them:
    # manual poisoning off (as the sanitized build's lit config does).
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS", ""),
                                                "allow_user_poisoning=0") if o)
    return env


def each_seed_reaches(target, corpus, reached, what):
    """Runs `target` once on each seed of `corpus` with BRAID_FUZZ_VERBOSE
    and exits non-zero unless, for every seed, a line the target printed
    satisfies `reached` (a harness that stopped short of what it is to fuzz
    would still report no crash); prints "<n> seeds, each <what>"."""
    seeds = sorted(os.listdir(corpus))
    env = dict(_env(), BRAID_FUZZ_VERBOSE="1")
    r = subprocess.run([target, *seeds], cwd=corpus, env=env, capture_output=True, text=True)
    # libFuzzer prints "Running: <file>" before each input.
    done, current = set(), None
    for line in r.stderr.splitlines():
        if line.startswith("Running: "):
            current = line.split(" ", 1)[1]
        elif current and reached(line):
            done.add(current)
    missing = [s for s in seeds if s not in done]
    if r.returncode != 0 or missing:
        sys.stderr.write(r.stderr[-20000:])
        sys.exit(f"seeds not {what}: {missing} (exit {r.returncode})")
    print(f"{len(seeds)} seeds, each {what}")


def run(target, corpus, runs, seconds, extra=()):
    """Runs `target` over `corpus` (a directory of seeds, which the run grows)
    for `runs` inputs or `seconds`, whichever ends first; exits non-zero with
    libFuzzer's report when an input crashes (the crashing input is left in
    the working directory as crash-*)."""
    # A fixed seed: the suite's run is the same inputs every time (a finding
    # reproduces); longer runs with other seeds are the campaign's.
    cmd = [target, corpus, "-seed=1", f"-runs={runs}", f"-max_total_time={seconds}",
           "-rss_limit_mb=4096", "-timeout=60", "-print_final_stats=1", *extra]
    env = _env()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(corpus),
                       env=env)
    stats = [l for l in r.stderr.splitlines() if l.startswith("stat::number_of_executed_units")]
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-20000:])
        sys.exit(f"{os.path.basename(target)}: an input failed (status {r.returncode})")
    print(f"{os.path.basename(target)}: {stats[0].split(':')[-1].strip() if stats else '?'} "
          "inputs, no crash")
