// braid-run --plan-file: what is not a plan file, and a plan file with the
// options it sets given again, end in a message and exit 1.
// RUN: %python -m braid.models llama-tiny -o %t.mlir
// RUN: echo '{"grid": "dp=2"}' > %t.bad.json
// RUN: not braid-run %t.mlir --plan-file %t.bad.json 2>&1 | FileCheck %s --check-prefix=NOTPLAN
// NOTPLAN: braid-run: {{.*}}bad.json: not a plan file of braid-plan (no braid_plan key)
// RUN: not braid-run %t.mlir --plan-file %t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: braid-run: cannot read plan file {{.*}}missing.json
// RUN: echo '{"braid_plan": 1, "reduced": {"grid": "dp=2"}}' > %t.partial.json
// RUN: not braid-run %t.mlir --plan-file %t.partial.json 2>&1 | FileCheck %s --check-prefix=PARTIAL
// PARTIAL: braid-run: {{.*}}partial.json: section 'reduced' needs grid, zero, recompute, microbatches, schedule and virtual_stages
// RUN: braid-plan --model family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,vocab=128256 --gpus 64 --global-batch 256 --plan-file %t.plan.json
// RUN: not braid-run %t.mlir --plan-file %t.plan.json --grid dp=2 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: braid-run: --plan-file sets --grid; give one or the other
