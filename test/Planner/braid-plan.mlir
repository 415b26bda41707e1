// The planner's report: a search over every plan of Llama 3 8B's shape on 64
// H100s, its ranking, one plan's breakdown, the JSON form and --evaluate.
// RUN: braid-plan %s --gpus 64 --hardware h100-sxm --global-batch 256 --top 3 --explain 1 | FileCheck %s
// RUN: braid-plan %s --gpus 64 --hardware h100-sxm --global-batch 256 --top 2 --format json | FileCheck %s --check-prefix=JSON
// RUN: braid-plan %s --gpus 64 --hardware h100-sxm --global-batch 256 --evaluate "pp=2,dp=8,tp=4,vpp=2,mbs=1,zero=1,recompute=selective;dp=64,mbs=4,zero=3" | FileCheck %s --check-prefix=EVAL
// A runtime whose collectives pool their buffers apart (FSDP2's streams)
// reports them as a part of their own.
// RUN: braid-plan %s --gpus 8 --hardware h100-sxm --global-batch 16 --runtime torchtitan --evaluate "dp=8,mbs=2,zero=3,recompute=selective" --explain 1 | FileCheck %s --check-prefix=TITAN

// CHECK: braid-plan: llama3-8b-shape (8.03 B parameters, llama) on 64 x h100-sxm, global batch 256 x 8192 tokens, runtime braid
// CHECK-NEXT: searched {{[0-9]+}} plans (and {{[0-9]+}} groups by memory) in {{.*}} s, {{[0-9]+}} plans/s; {{[0-9]+}} fit in 80 GiB
// CHECK-NEXT: rank grid {{.*}} step (s) {{.*}} mem GiB  exposed comm  bubble
// CHECK-NEXT: 1 {{.*}}%
// CHECK-NEXT: 2 {{.*}}%
// CHECK-NEXT: 3 {{.*}}%
// CHECK-NEXT: plan {{.*}} vpp={{[0-9]+}} mbs={{[0-9]+}} microbatches={{[0-9]+}} zero={{[0-3]}} recompute={{none|selective|full}} sequence-parallel={{true|false}}
// CHECK-NEXT: layers per chunk:{{( [0-9]+)+$}}
// CHECK-NEXT: step
// CHECK-NEXT: compute (slowest stage)
// CHECK-NEXT: recompute
// CHECK-NEXT: pipeline bubble
// CHECK-NEXT: optimizer
// CHECK: exposed dp {{.*}} (of {{.*}} s issued)
// CHECK: MFU {{.*}}%, {{[0-9]+}} tokens/s
// CHECK-NEXT: memory per GPU {{.*}} GiB: weights {{.*}}, gradients {{.*}}, optimizer {{.*}}, activations {{.*}}, logits {{.*}}, reserved 3.00

// JSON: "plans":[{
// JSON-SAME: "fits":true
// JSON-SAME: "step_s"
// JSON: "search":{"evaluated":{{[0-9]+}},"fitting":{{[0-9]+}},"memory_checked":{{[0-9]+}},"seconds":

// EVAL: rank grid
// EVAL-NEXT: 1    pp=2,dp=8,tp=4{{ +}}2    1     32    1 selective
// EVAL-NEXT: 2    dp=64{{ +}}1    4      1    3 none {{.*}}%  does not fit
// EVAL-NEXT: plan pp=2,dp=8,tp=4 vpp=2 mbs=1 microbatches=32 zero=1 recompute=selective sequence-parallel=true
// EVAL-NEXT: layers per chunk: {{[0-9]+ [0-9]+ [0-9]+ [0-9]+}}{{$}}
// EVAL: exposed pp

// TITAN: runtime torchtitan
// TITAN: memory per GPU {{.*}} GiB: weights 6.10, gradients 3.74, optimizer 7.48, activations 31.56, logits 23.48, communication buffers 7.09, reserved 3.00

module attributes {braid.model = {name = "llama3-8b-shape", family = "llama", vocab = 128256 : i64,
    hidden = 4096 : i64, layers = 32 : i64, seq = 8192 : i64, heads = 32 : i64, kv_heads = 8 : i64,
    ffn = 14336 : i64}} {
}
