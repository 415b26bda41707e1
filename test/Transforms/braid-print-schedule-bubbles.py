# Simulated bubble fractions of --braid-print-schedule against the textbook
# values, with equal chunks (uniform=true: F = B = W = 1) and no
# communication time.
#
# bubble_fraction is idle time over the makespan: 1 - busy / (p * makespan).
# - GPipe and 1F1B: (p-1)/(m+p-1).
# - Interleaved 1F1B (Narayanan et al. 2021): the bubble is (p-1)/(v m) of
#   the ideal time m(tf+tb), so over the makespan (p-1)/(v m + p-1).
# - ZB-H1 (Qi et al. 2023): bubble (p-1)(tf+tb-tw) per rank against
#   m(tf+tb+tw) of work, i.e. (p-1)/(3m+p-1) for equal F, B, W, and m >= p;
#   strictly below 1F1B's.
# Compared as exact fractions from the printed integer makespan and busy time.
#
# RUN: %python %s braid-opt

import subprocess
import sys
from fractions import Fraction

BRAID_OPT = sys.argv[1]


def model(layers):
    # Identical layers; uniform=true makes the embedding and head irrelevant.
    return subprocess.run(
        [sys.executable, "-m", "braid.models", "gpt-tiny", "--layers", str(layers)],
        check=True, capture_output=True, text=True).stdout


def run(text, options):
    out = subprocess.run(
        [BRAID_OPT, "--braid-print-schedule=" + options, "-o", "/dev/null"],
        input=text, check=True, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        values[key] = value
    return values


def bubble(values, p):
    makespan = Fraction(values["makespan"])
    busy = Fraction(values["busy_time"])
    return 1 - busy / (p * makespan)


failures = []
checked = 0
models = {}
for p in (2, 4, 8):
    for m in (4, 8, 16):
        for v in (1, 2, 3):
            layers = p * v
            text = models.setdefault(layers, model(layers))
            base = "pp=%d microbatches=%d uniform=true" % (p, m)
            if v == 1:
                expected = Fraction(p - 1, m + p - 1)
                results = {}
                for kind in ("gpipe", "1f1b", "zb-h1"):
                    values = run(text, base + " schedule=" + kind)
                    results[kind] = bubble(values, p)
                    if abs(float(values["bubble_fraction"]) - float(results[kind])) > 1e-6:
                        failures.append("p=%d m=%d %s: printed %s, computed %s" % (
                            p, m, kind, values["bubble_fraction"], float(results[kind])))
                for kind in ("gpipe", "1f1b"):
                    if results[kind] != expected:
                        failures.append("p=%d m=%d %s: %s != %s" % (p, m, kind, results[kind], expected))
                if not results["zb-h1"] < results["1f1b"]:
                    failures.append("p=%d m=%d: zb-h1 %s not below 1f1b %s" % (
                        p, m, results["zb-h1"], results["1f1b"]))
                if m >= p and results["zb-h1"] != Fraction(p - 1, 3 * m + p - 1):
                    failures.append("p=%d m=%d zb-h1: %s != %s" % (
                        p, m, results["zb-h1"], Fraction(p - 1, 3 * m + p - 1)))
                checked += 4
            elif m % p == 0:
                values = run(text, base + " schedule=interleaved virtual-stages=%d" % v)
                got = bubble(values, p)
                # Megatron's (p-1)/(v m) relative to the ideal time ...
                relative_to_ideal = Fraction(p - 1, v * m)
                # ... is b/(1-b) of the fraction of the makespan.
                if got / (1 - got) != relative_to_ideal or got != Fraction(p - 1, v * m + p - 1):
                    failures.append("p=%d m=%d v=%d interleaved: %s, expected %s" % (
                        p, m, v, got, Fraction(p - 1, v * m + p - 1)))
                checked += 1

for failure in failures:
    print("FAIL:", failure)
print("checked %d schedules" % checked)
sys.exit(1 if failures else 0)
