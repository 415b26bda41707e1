// RUN: braid-opt --raise-linalg-to-braid --split-input-file --verify-diagnostics %s

func.func @softmax_f64(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %e = tensor.empty() : tensor<4x8xf64>
  // expected-error @below {{'linalg.softmax' op cannot be raised to braid.softmax: type 'tensor<4x8xf64>' is not a static tensor of f32, bf16 or f16}}
  %y = linalg.softmax dimension(1) ins(%x : tensor<4x8xf64>) outs(%e : tensor<4x8xf64>) -> tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}

// -----

func.func @softmax_buffers(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  // expected-error @below {{'linalg.softmax' op cannot be raised to braid.softmax: it works on buffers, not tensors}}
  linalg.softmax dimension(1) ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>)
  return
}

// -----

func.func @accumulate(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'linalg.matmul' op cannot be raised to a braid product: it accumulates into a tensor that is not zero}}
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @below {{'linalg.exp' op cannot be raised to a braid op: operand type 'tensor<?x8xf32>' is not a static tensor of f32, bf16 or f16}}
  %y = linalg.exp ins(%x : tensor<?x8xf32>) outs(%x : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{'linalg.generic' op cannot be raised to braid's elementwise ops: 'math.tanh' has no braid equivalent}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{'linalg.generic' op cannot be raised to braid's elementwise ops: a constant operand (braid's elementwise ops take tensors)}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %t = arith.mulf %a, %half : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @accumulating_body(%x: tensor<4x8xf32>, %acc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'linalg.generic' op cannot be raised to braid's elementwise ops: the body reads the output (an accumulation)}}
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %t = arith.addf %a, %c : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_sum(%x: tensor<4x8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'linalg.reduce' op cannot be raised to a braid op: a reduction that is not a matrix product}}
  %y = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
  return %y : tensor<4xf32>
}

// -----

func.func @slice(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @below {{'tensor.extract_slice' op cannot be raised to a braid op: braid has no equivalent}}
  %y = tensor.extract_slice %x[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @tensor_arith(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'arith.addf' op cannot be raised to a braid op: elementwise arithmetic on whole tensors}}
  %y = arith.addf %x, %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @integers(%x: tensor<4x8xi32>, %w: tensor<8x8xi32>) -> tensor<4x8xi32> {
  %z = arith.constant dense<0> : tensor<4x8xi32>
  // expected-error @below {{'linalg.matmul' op cannot be raised to a braid op: operand type 'tensor<4x8xi32>' is not a static tensor of f32, bf16 or f16}}
  %y = linalg.matmul ins(%x, %w : tensor<4x8xi32>, tensor<8x8xi32>) outs(%z : tensor<4x8xi32>) -> tensor<4x8xi32>
  return %y : tensor<4x8xi32>
}
