// Stage assignment and pipeline schedules of a 5-layer GPT (gpt-tiny: every
// layer 3411968 forward FLOPs per step; the embedding adds 2048 to layer 0,
// the LM head and loss 424064 to layer 4). The IR comes from the Python
// builder, so this file holds only RUN and CHECK lines.

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=4 schedule=1f1b" -o /dev/null | FileCheck %s --check-prefix=1F1B
// Uneven split: 3 + 2 layers (largest 10237952) beats 2 + 3 (largest 10659968).
// 1F1B:      schedule: 1f1b
// 1F1B-NEXT: layers: 5
// 1F1B-NEXT: stage 0: layers 0-2 (cost 10237952)
// 1F1B-NEXT: stage 1: layers 3-4 (cost 7248000)
// 1F1B-NEXT: rank 0: F0 F1 B0 F2 B1 F3 B2 B3
// 1F1B-NEXT: rank 1: F0 B0 F1 B1 F2 B2 F3 B3
// Unequal stages: more bubble than the textbook figure.
// 1F1B-NEXT: makespan: 13.247725
// 1F1B-NEXT: busy_time: 20.495449
// 1F1B-NEXT: bubble_fraction: 0.226454
// 1F1B-NEXT: textbook_bubble_fraction: 0.200000
// 1F1B-NEXT: peak_live_microbatches rank 0: 2
// 1F1B-NEXT: peak_live_microbatches rank 1: 1

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=4 microbatches=4 schedule=1f1b uniform=true" -o /dev/null | FileCheck %s --check-prefix=PP4
// Four stages of five layers: the pair goes where it costs least (1-2, not
// 3-4 with the LM head; 0-1 would carry the embedding too).
// PP4:      stage 0: layers 0-0 (cost 3414016)
// PP4-NEXT: stage 1: layers 1-2 (cost 6823936)
// PP4-NEXT: stage 2: layers 3-3 (cost 3411968)
// PP4-NEXT: stage 3: layers 4-4 (cost 3836032)
// Warm-up of p-1-r forwards on rank r.
// PP4-NEXT: rank 0: F0 F1 F2 F3 B0 B1 B2 B3
// PP4-NEXT: rank 1: F0 F1 F2 B0 F3 B1 B2 B3
// PP4-NEXT: rank 2: F0 F1 B0 F2 B1 F3 B2 B3
// PP4-NEXT: rank 3: F0 B0 F1 B1 F2 B2 F3 B3
// 4 x (1 + 2) busy + 3 x (1 + 2) fill and drain = 21; bubble 3/7.
// PP4-NEXT: makespan: 21
// PP4-NEXT: busy_time: 48
// PP4-NEXT: bubble_fraction: 0.428571
// PP4-NEXT: textbook_bubble_fraction: 0.428571
// PP4-NEXT: peak_live_microbatches rank 0: 4
// PP4-NEXT: peak_live_microbatches rank 1: 3
// PP4-NEXT: peak_live_microbatches rank 2: 2
// PP4-NEXT: peak_live_microbatches rank 3: 1

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=4 schedule=gpipe uniform=true comm-time=1" -o /dev/null | FileCheck %s --check-prefix=GPIPE
// GPIPE:      rank 0: F0 F1 F2 F3 B0 B1 B2 B3
// GPIPE-NEXT: rank 1: F0 F1 F2 F3 B0 B1 B2 B3
// F3 on rank 1 ends at 6, B3 there at 14, B3 on rank 0 runs 15-17.
// GPIPE-NEXT: makespan: 17
// GPIPE-NEXT: busy_time: 24
// GPIPE-NEXT: bubble_fraction: 0.294118
// GPIPE-NEXT: textbook_bubble_fraction: 0.200000
// GPIPE-NEXT: peak_live_microbatches rank 0: 4
// GPIPE-NEXT: peak_live_microbatches rank 1: 4

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=4 schedule=zb-h1 uniform=true" -o /dev/null | FileCheck %s --check-prefix=ZB
// Rank r holds back r weight gradients; they fill the cool-down.
// ZB:      rank 0: F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 B3 W3
// ZB-NEXT: rank 1: F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3
// (p-1)(F+B-W) = 1 of bubble per rank: 12 + 1.
// ZB-NEXT: makespan: 13
// ZB-NEXT: busy_time: 24
// ZB-NEXT: bubble_fraction: 0.076923
// ZB-NEXT: textbook_bubble_fraction: 0.076923

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=4 schedule=interleaved virtual-stages=2 uniform=true" -o /dev/null | FileCheck %s --check-prefix=INTER
// Four chunks; chunk c on rank c mod 2.
// INTER:      stage 0 (rank 0): layers 0-0
// INTER-NEXT: stage 1 (rank 1): layers 1-2
// INTER-NEXT: stage 2 (rank 0): layers 3-3
// INTER-NEXT: stage 3 (rank 1): layers 4-4
// Warm-up 2(p-1-r) + (v-1)p: 4 forwards on rank 0, 2 on rank 1.
// INTER-NEXT: rank 0: F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0
// INTER-NEXT: rank 1: F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 F3c1 B3c1 B2c0 B3c0
// INTER-NEXT: makespan: 27
// INTER-NEXT: busy_time: 48
// INTER-NEXT: bubble_fraction: 0.111111
// INTER-NEXT: textbook_bubble_fraction: 0.111111
// INTER-NEXT: peak_live_microbatches rank 0: 5
// INTER-NEXT: peak_live_microbatches rank 1: 3

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=2 schedule=1f1b layout=1,4" -o /dev/null | FileCheck %s --check-prefix=LAYOUT
// LAYOUT:      stage 0: layers 0-0 (cost 3414016)
// LAYOUT-NEXT: stage 1: layers 1-4 (cost 14071936)

// RUN: %python -m braid.models gpt-tiny --layers 5 | braid-opt --braid-print-schedule="pp=2 microbatches=2 schedule=gpipe uniform=true trace=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE --input-file=%t.json
// RUN: %python -c "import json, sys; json.load(open(sys.argv[1]))" %t.json
// TRACE:      {"traceEvents":[
// TRACE-NEXT: {"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}},
// TRACE-NEXT: {"name":"F0","cat":"pipeline","ph":"X","ts":0.000,"dur":1.000,"pid":0,"tid":0,"args":{"chunk":0,"microbatch":0}},
// TRACE:      {"name":"B1","cat":"pipeline","ph":"X","ts":7.000,"dur":2.000,"pid":0,"tid":0,"args":{"chunk":0,"microbatch":1}},
// TRACE:      {"name":"F0","cat":"pipeline","ph":"X","ts":1.000,"dur":1.000,"pid":0,"tid":1,"args":{"chunk":1,"microbatch":0}},
// TRACE:      ],"displayTimeUnit":"ms"}

// Invalid options: a located error and a non-zero exit.
// RUN: %python -m braid.models gpt-tiny --layers 5 > %t.model.mlir
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-PP
// ERR-PP: model.mlir:{{[0-9]+}}:{{[0-9]+}}: error: pipeline stages (pp) must be at least 1, got 0
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 schedule=pipedream" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-KIND
// ERR-KIND: for the --schedule option: expected gpipe, 1f1b, interleaved or zb-h1, found 'pipedream'
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 microbatches=3 schedule=interleaved virtual-stages=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-DIV
// ERR-DIV: error: the interleaved schedule needs microbatches divisible by pp, got microbatches=3 and pp=2
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 virtual-stages=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-V
// ERR-V: error: virtual-stages=2 needs schedule=interleaved, got schedule=1f1b
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=0 microbatches=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-PP
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="microbatches=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-M
// ERR-M: error: microbatches must be at least 1, got 0
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 layout=2,2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-SUM
// ERR-SUM: error: pipeline layout covers 4 layers but the model has 5
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 layout=5,0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-ZERO
// ERR-ZERO: error: pipeline layout entry 1 is 0; every chunk needs at least one layer
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 layout=1,1,3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-COUNT
// ERR-COUNT: error: pipeline layout has 3 entries but the pipeline has 2 chunks (pp x virtual-stages)
// RUN: not braid-opt %t.model.mlir --braid-print-schedule="pp=2 schedule=interleaved virtual-stages=3 microbatches=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-FEW
// ERR-FEW: error: cannot split 5 layers into 6 pipeline chunks: every chunk needs at least one layer
