// RUN: %python -m braid.models gpt-tiny --batch 8 | braid-opt --braid-training-pipeline="grid=pp=2,dp=2 microbatches=4" --braid-print-plan -o /dev/null | FileCheck %s

// A pipelined module: the plan printer counts each stage's program. GPT-tiny
// (2 layers, hidden 64, 16 positions, vocabulary 97, tied embedding) on
// pp=2 x dp=2 with 4 micro-batches of 8 / (2 x 4) = 1 sequence: stage 0
// sends each micro-batch's activations on ([1, 16, 64] f32, 4096 bytes) and
// stage 1 each one's cotangent back, and the two stages exchange their
// gradient sums of the tied table [97, 64] f32 (24832 bytes): 5 sends of
// 41216 bytes per stage and step.
// CHECK:      plan: grid pp=2,dp=2 (4 ranks), pipeline of 2 stages
// CHECK-NEXT: stage 0: program @step.pp0
// CHECK:      stage 0: collective send over pp: 5 per step, 41216 bytes sent per rank
// CHECK:      stage 0: collective_bytes_per_step:
// CHECK:      stage 0: transfer_time send over pp: {{.*}} (p2p)
// CHECK:      stage 1: program @step.pp1
// CHECK:      stage 1: collective send over pp: 5 per step, 41216 bytes sent per rank
