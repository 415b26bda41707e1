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
// A value that is none of its key's choices is named with them.
// RUN: echo '{"braid_plan": 1, "reduced": {"grid": "dp=2", "zero": 0, "recompute": "some", "microbatches": 1, "schedule": "1f1b", "virtual_stages": 1}}' > %t.choice.json
// RUN: not braid-run %t.mlir --plan-file %t.choice.json 2>&1 | FileCheck %s --check-prefix=CHOICE
// CHOICE: braid-run: {{.*}}choice.json: section 'reduced': recompute must be none, selective or full, found 'some'
// RUN: echo '{"braid_plan": 1, "reduced": {"grid": "pp=2", "zero": 0, "recompute": "none", "microbatches": 4, "schedule": "1f1b", "virtual_stages": 1, "pp_layout": "2,0", "dtype": "f8"}}' > %t.layout.json
// RUN: not braid-run %t.mlir --plan-file %t.layout.json 2>&1 | FileCheck %s --check-prefix=LAYOUT
// LAYOUT: braid-run: {{.*}}layout.json: section 'reduced': pp_layout must list positive layer counts (e.g. 2,3), found '2,0'
// RUN: sed -e 's/"2,0"/"2,2"/' %t.layout.json > %t.dtype.json
// RUN: not braid-run %t.mlir --plan-file %t.dtype.json 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: braid-run: {{.*}}dtype.json: section 'reduced': dtype must be f32, bf16 or f16, found 'f8'
// RUN: braid-plan --model family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,vocab=128256 --gpus 64 --global-batch 256 --plan-file %t.plan.json
// RUN: not braid-run %t.mlir --plan-file %t.plan.json --grid dp=2 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: braid-run: --plan-file sets --grid; give one or the other
