// Bad input to braid-plan ends in a message naming what is wrong and exit 1.
// RUN: not braid-plan --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=NOMODEL
// NOMODEL: braid-plan: no model: give a model file or --model key=value,...
// RUN: not braid-plan --model family=rnn,hidden=8,layers=1,seq=8,vocab=8 --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=FAMILY
// FAMILY: braid-plan: unknown model family 'rnn' (known: gpt, llama, mamba, moe, hybrid)
// RUN: not braid-plan --model family=llama,hidden=64,layers=2,seq=16,vocab=256,heads=4 --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: braid-plan: llama: the model gives no 'ffn'
// Sizes beyond any model stop at the description (their products would
// overflow the planner's integers, or its per-layer work would not end).
// RUN: not braid-plan --model family=gpt,hidden=9223372036854775807,heads=1,layers=1,seq=8,vocab=8 --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: braid-plan: gpt: 'hidden' is 9223372036854775807, beyond what the planner models (at most 1048576)
// RUN: not braid-plan --model family=gpt,hidden=64,heads=4,layers=99999999,seq=8,vocab=8 --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=DEEP
// DEEP: braid-plan: gpt: 'layers' is 99999999, beyond what the planner models (at most 16384)
// RUN: not braid-plan --model family=moe,hidden=64,heads=4,layers=2,seq=8,vocab=8,ffn=128,experts=4,top_k=2,capacity_factor=inf --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=CAPACITY
// CAPACITY: braid-plan: moe: 'capacity_factor' is not a number in (0, 4]: inf
// RUN: not braid-plan %s --gpus 0 --global-batch 8 2>&1 | FileCheck %s --check-prefix=GPUS
// GPUS: braid-plan: --gpus must be >= 1
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --evaluate tp=3,dp=1 2>&1 | FileCheck %s --check-prefix=GRID
// GRID: braid-plan: the plan's grid tp=3 has 3 GPUs, not --gpus 8
// RUN: not braid-plan %s --gpus 6 --global-batch 6 --evaluate tp=3,dp=2 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: braid-plan: the plan tp=3,dp=2 cannot run: tp=3 does not divide the 32 heads (or the kv heads)
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --evaluate tp=8,frobnicate=1 2>&1 | FileCheck %s --check-prefix=KEY
// KEY: braid-plan: --evaluate: unknown key 'frobnicate'
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware tpu-v9 2>&1 | FileCheck %s --check-prefix=HW
// HW: braid-plan: no hardware description 'tpu-v9' (known: a100-sxm, h100-sxm, h200-sxm)
// A cluster of one's own needs its compute rates too.
// RUN: sed -e 's/"h100-sxm"/"my-cluster"/' %braid_src/lib/CostModel/hardware/h100-sxm.json > %t.my-cluster.json
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware %t.my-cluster.json 2>&1 | FileCheck %s --check-prefix=CAL
// CAL: braid-plan: no compute calibration 'my-cluster' (known: a100-sxm, h100-sxm, h200-sxm-braid, h200-sxm); a hardware description of one's own needs --calibration FILE
// RUN: sed -e 's/"h100-sxm"/"my-cluster"/' %braid_src/lib/CostModel/calibration/h100-sxm.json > %t.my-cal.json
// RUN: braid-plan --model family=llama,hidden=4096,layers=32,seq=8192,heads=32,kv_heads=8,ffn=14336,vocab=128256 --gpus 8 --global-batch 8 --hardware %t.my-cluster.json --calibration %t.my-cal.json --top 1 | FileCheck %s --check-prefix=OWN
// OWN: on 8 x my-cluster
// Numbers out of a description's bounds, and what the planner needs that
// the compiler's descriptions of CPU ranks may leave out.
// RUN: sed -e 's/"collective_latency_s": 8.4e-6/"collective_latency_s": -1e300/' %t.my-cluster.json > %t.neg-latency.json
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware %t.neg-latency.json --calibration %t.my-cal.json 2>&1 | FileCheck %s --check-prefix=LATENCY
// LATENCY: braid-plan: {{.*}}neg-latency.json: a hardware description needs name, devices_per_node >= 1 and collective_latency_s (seconds, >= 0)
// RUN: sed -e 's/"peak_bf16_flops": 989.4e12/"peak_bf16_flops": 0/' %t.my-cluster.json > %t.no-peak.json
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware %t.no-peak.json --calibration %t.my-cal.json 2>&1 | FileCheck %s --check-prefix=PEAK
// PEAK: braid-plan: {{.*}}no-peak.json: my-cluster: peak_bf16_flops must be a number in [1, 1e21]
// RUN: grep -v '"peak_bf16_flops"\|"hbm_bytes_per_s"' %t.my-cluster.json > %t.cpu-like.json
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware %t.cpu-like.json --calibration %t.my-cal.json 2>&1 | FileCheck %s --check-prefix=NEEDS
// NEEDS: braid-plan: my-cluster: the planner needs peak_bf16_flops, hbm_bytes_per_s in the hardware description
// RUN: sed -e 's/"reserved_bytes": 3221225472/"reserved_bytes": 1e400/' %t.my-cal.json > %t.inf-reserve.json
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --hardware %t.my-cluster.json --calibration %t.inf-reserve.json 2>&1 | FileCheck %s --check-prefix=RESERVE
// RESERVE: braid-plan: {{.*}}inf-reserve.json: my-cluster: reserved_bytes must be a number in [0, 1e21]
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --runtime deepspeed 2>&1 | FileCheck %s --check-prefix=RT
// RT: braid-plan: unknown runtime 'deepspeed' (known: braid, megatron-2021, megatron-deepspeed, megatron-core, nemo-automodel, torchtitan)
// A model that fits nowhere on the cluster: the message names the least
// memory any plan needs there and the smallest cluster that holds it.
// RUN: not braid-plan %s --gpus 8 --hardware h100-sxm --global-batch 64 --seq 8192 2>&1 | FileCheck %s --check-prefix=NOFIT
// NOFIT: braid-plan: no plan of huge fits on 8 x h100-sxm (80 GiB each); the leanest needs {{[0-9]+}} GiB per GPU (tp=8, ZeRO-3, full recompute); the smallest cluster that holds it is {{[0-9]+}} GPUs ({{.*}}, ZeRO-3, full recompute, {{[0-9]+}} GiB per GPU)
// RUN: not braid-plan %t.missing.mlir --gpus 8 --global-batch 8 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: cannot parse {{.*}}missing.mlir
// ZB-H1 needs a pipeline without virtual stages, and a runtime that has it.
// RUN: not braid-plan %s --gpus 1024 --global-batch 1024 --evaluate pp=4,dp=32,tp=8,vpp=2,mbs=1,zero=1,schedule=zb-h1 2>&1 | FileCheck %s --check-prefix=ZBVPP
// ZBVPP: braid-plan: the plan pp=4,dp=32,tp=8,vpp=2,mbs=1,zero=1,schedule=zb-h1 cannot run: ZB-H1 needs a pipeline (pp > 1) without virtual stages
// RUN: not braid-plan %s --gpus 1024 --global-batch 1024 --runtime megatron-core --evaluate pp=4,dp=32,tp=8,mbs=1,zero=1,schedule=zb-h1 2>&1 | FileCheck %s --check-prefix=ZBRT
// ZBRT: braid-plan: the plan pp=4,dp=32,tp=8,mbs=1,zero=1,schedule=zb-h1 cannot run: the runtime megatron-core has no ZB-H1 schedule
// RUN: not braid-plan %s --gpus 8 --global-batch 8 --evaluate pp=8,mbs=1,schedule=zigzag 2>&1 | FileCheck %s --check-prefix=ZBNAME
// ZBNAME: braid-plan: --evaluate: schedule is 1f1b, interleaved (with vpp > 1) or zb-h1
// --compile compiles the model file, whose batch must be the global batch.
// RUN: not braid-plan --model family=llama,hidden=64,layers=2,seq=16,vocab=256,heads=4,ffn=128 --gpus 8 --global-batch 8 --compile 1 2>&1 | FileCheck %s --check-prefix=COMPILEMODEL
// COMPILEMODEL: braid-plan: --compile compiles the plans: give the model file, not --model
// RUN: not braid-plan %s --gpus 1024 --global-batch 1024 --compile 1 2>&1 | FileCheck %s --check-prefix=COMPILEBATCH
// COMPILEBATCH: braid-plan: --compile: the model file's batch (none) is not the global batch 1024: build it with --batch 1024

module attributes {braid.model = {name = "huge", family = "llama", vocab = 128256 : i64,
    hidden = 16384 : i64, layers = 126 : i64, seq = 8192 : i64, heads = 32 : i64, kv_heads = 8 : i64,
    ffn = 53248 : i64}} {
}
