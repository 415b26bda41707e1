# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run --generate --dtype bf16 on one CPU rank (issue 42): the programs'
# parameters, KV cache and logits are bf16 (--braid-convert-element-type
# converts the cache states with the model), the runtime reads the logits as
# f32, and --verify's teacher forcing judges them against the bound derived
# from bf16 rounding (runtime/src/generate_logits.cpp: 2u(L + 1) + 1e-5 with
# u = 2^-8, L layers):
# - llama-tiny (2 layers): verify passes under 2^-7 * 3 + 1e-5 = 0.0234, the
#   bound is printed with its derivation, and the cache takes half the bytes
#   of f32's (16384);
# - a cache written one position late (BRAID_TEST_CACHE_FAULT=position) fails
#   that bound (status 1), so the bound is not so loose that it hides a
#   wrong cache;
# - hybrid-tiny (Mamba, attention and MoE layers; 4 layers keep state): its
#   conv states are bf16, its SSM states f32 (braid.scan_step carries h in
#   f32), and verify passes under 2^-7 * 5 + 1e-5 = 0.0391.
# Three launches; the first two share one compiled binary.
import os
import re
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "llama-tiny.mlir")
failures = []


def run(env=None, model=model, extra=()):
    full = dict(os.environ)
    full["BRAID_RUN_CACHE"] = os.path.join(work, "cache")
    full.pop("BRAID_TEST_CACHE_FAULT", None)
    full.update(env or {})
    return subprocess.run(["braid-run", model, "--quiet", "--generate", "5", "--verify",
                           "--dtype", "bf16", *extra], capture_output=True, text=True, env=full)


def expect(cond, what, r):
    if not cond:
        failures.append(f"{what}\n--- stdout\n{r.stdout}--- stderr\n{r.stderr}")


BOUND = 2 * 2.0 ** -8 * 3 + 1e-5

r = run()
expect(r.returncode == 0, "bf16 generation with --verify did not pass", r)
ids = re.findall(r"^request (\d+): ((?:\d+ ?)+)$", r.stdout, re.M)
expect([i for i, _ in ids] == ["0", "1"] and all(len(v.split()) == 5 for _, v in ids),
       "expected 2 requests of 5 ids", r)
expect(re.search(r"^verify: bound 0\.0234 at bf16: 2u\(L \+ 1\) \+ 1e-05 with u = 2\^-8, "
                 r"L = 2 layers", r.stdout, re.M), "no derived bound line", r)
m = re.search(r"^verify: ok \(worst difference (\S+) at request \d+ step \d+\)$", r.stdout, re.M)
expect(m and float(m.group(1)) <= BOUND, "worst difference past the bf16 bound", r)
expect(re.search(r", cache 8192 bytes per rank$", r.stdout, re.M),
       "the bf16 cache should take 8192 bytes (f32: 16384)", r)

r = run({"BRAID_TEST_CACHE_FAULT": "position"})
fails = re.findall(r"^verify: FAIL request \d+ step \d+: difference (\S+) > 0\.023$", r.stdout,
                   re.M)
expect(r.returncode == 1 and fails and all(float(d) > BOUND for d in fails)
       and "verify: ok" not in r.stdout,
       "a cache written at the wrong position did not fail the bf16 bound", r)

hybrid = os.path.join(src, "examples", "hybrid-tiny.mlir")
r = run(model=hybrid, extra=("--prompt-len", "8"))
expect(r.returncode == 0 and re.search(r"^verify: bound 0\.0391 at bf16: .* L = 4 layers", r.stdout,
                                       re.M) and "verify: ok (worst difference" in r.stdout,
       "hybrid-tiny at bf16 did not pass teacher forcing", r)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("generate-bf16: ok")
