// RUN: %python -m braid.models gpt2-small | braid-opt --braid-partition="grid=tp=4" | FileCheck %s

// GPT-2's vocabulary, 50257, over tp=4: padded to 4 x 12565 rows (the last
// rank's 3 padding rows are zero and outside the softmax), never asserted on.

// CHECK: braid.param @tok_embeddings {{.*}}{braid.global_shape = array<i64: 50257, 768>, braid.split = {{\[}}["tp"], []]} : tensor<12565x768xf32>
// CHECK: braid.embedding {{.*}} {vocab_axes = ["tp"]} : tensor<1x1024xi32>, tensor<12565x768xf32> -> tensor<1x1024x768xf32>
// CHECK: braid.linear {{.*}} transpose_weight : tensor<1x1024x768xf32>, tensor<12565x768xf32> -> tensor<1x1024x12565xf32>
// CHECK: braid.cross_entropy {{.*}} {vocab_axes = ["tp"], vocab_size = 50257 : i64} : tensor<1x1024x12565xf32>
