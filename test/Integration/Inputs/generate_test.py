"""The shared body of the braid-run --generate tests (generate*.py): runs
braid-run on a model with a compile cache of the test's own, collects failed
expectations and reports them at the end.

    test = GenerateTest()                 # sys.argv: WORK SRC
    r = test.run("llama-tiny.mlir", "--generate", "5", "--verify")
    test.expect(r.returncode == 0, "greedy --verify failed", r)
    test.finish("generate")               # prints the failures, exits 1 on any
"""

import os
import re
import subprocess
import sys

# The runtime's test hooks: a run sets the one it wants, never inherits one.
TEST_HOOKS = ("BRAID_TEST_PERTURB_LOGITS", "BRAID_TEST_CACHE_FAULT",
              "BRAID_TEST_FORGET_MAMBA_STATE", "BRAID_TEST_SERVE_FAULT")

# The comparison of a grid with one rank (lib/Driver/GenerateVerify.cpp).
GRID_OK = re.compile(r"^verify: grid (\S+) against 1 rank: ok \(ids identical for (\d+) "
                     r"requests, worst logit difference (\S+) at request \d+ step \d+\)$", re.M)


def ids(r):
    """The ids each request generated ("request R: ..."), by request."""
    return {int(m.group(1)): m.group(2).strip()
            for m in re.finditer(r"^request (\d+): (.*)$", r.stdout, re.M)}


class GenerateTest:
    def __init__(self):
        self.work, self.src = sys.argv[1], sys.argv[2]
        self.examples = os.path.join(self.src, "examples")
        self.failures = []

    def run(self, model, *args, env=None):
        """braid-run MODEL --quiet ARGS: MODEL an example's name or a path."""
        full = dict(os.environ)
        full["BRAID_RUN_CACHE"] = os.path.join(self.work, "cache")
        for hook in TEST_HOOKS:
            full.pop(hook, None)
        full.update(env or {})
        return subprocess.run(["braid-run", os.path.join(self.examples, model), "--quiet", *args],
                              capture_output=True, text=True, env=full)

    def expect(self, cond, what, r=None):
        if not cond:
            self.failures.append(
                what + (f"\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}" if r else ""))

    def prompts(self, name, lines):
        """WORK/NAME holding one prompt per line; its path."""
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def check_grid(self, model, grid, prompts, *extra, requests=4, tokens=5):
        """--generate --verify on GRID (over PROMPTS unless EXTRA gives
        --prompts): teacher forcing passes on the grid, and the grid
        generates one rank's ids with logits within 1e-5. Prints the worst
        difference; returns the run."""
        what = f"{os.path.basename(model)} --grid {grid} {' '.join(extra)}"
        given = [] if "--prompts" in extra else ["--prompts", prompts]
        r = self.run(model, "--generate", str(tokens), "--verify", "--grid", grid, *given, *extra)
        m = GRID_OK.search(r.stdout)
        self.expect(r.returncode == 0 and m and m.group(1) == grid
                    and m.group(2) == str(requests) and float(m.group(3)) <= 1e-5,
                    f"{what}: the grid does not generate what one rank does", r)
        self.expect(re.search(r"^verify: ok \(worst difference \S+ at", r.stdout, re.M),
                    f"{what}: teacher forcing did not pass on the grid", r)
        got = ids(r)
        self.expect(sorted(got) == list(range(requests))
                    and all(len(v.split()) == tokens for v in got.values()),
                    f"{what}: expected {requests} requests of {tokens} ids", r)
        print(f"{what}: worst logit difference {m.group(3) if m else '?'}")
        return r

    def expect_grid_fails(self, r, grid, what):
        """R, a --verify run on GRID of a broken plan, FAILS the comparison
        with one rank (status 1); prints the difference."""
        m = re.search(rf"^verify: FAIL grid {re.escape(grid)} against 1 rank: request \d+ "
                      r"step \d+: logit difference (\S+) > ", r.stdout, re.M)
        self.expect(r.returncode == 1 and m and "against 1 rank: ok" not in r.stdout,
                    f"{what} did not fail --verify", r)
        print(f"{what}: logit difference {m.group(1) if m else '?'}")

    def finish(self, name):
        if self.failures:
            print("\n\n".join(self.failures))
            sys.exit(1)
        print(f"{name}: ok")
