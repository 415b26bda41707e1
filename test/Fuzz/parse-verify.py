# REQUIRES: libfuzzer
# RUN: rm -rf %t && mkdir -p %t/corpus
# RUN: %python %s %t/corpus %braid_src | FileCheck %s
#
# The parser and verifier over every .mlir file of the test suite (valid
# models, the expected-error cases) and libFuzzer's mutations of them: no
# input crashes (fuzz/ParseVerify.cpp).
# CHECK: braid-fuzz-parse: {{[0-9]+}} inputs, no crash
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import fuzz_run  # noqa: E402

corpus, src = sys.argv[1], sys.argv[2]
n = 0
for root, _, files in os.walk(os.path.join(src, "test")):
    for f in sorted(files):
        if f.endswith(".mlir"):
            # Split files hold several modules: each part is a seed.
            text = open(os.path.join(root, f), errors="replace").read()
            for part in text.split("// -----"):
                with open(os.path.join(corpus, f"seed-{n}.mlir"), "w") as out:
                    out.write(part)
                n += 1
fuzz_run.run(shutil.which("braid-fuzz-parse"), corpus, runs=4000, seconds=30)
