// RUN: braid-opt %s -split-input-file -verify-diagnostics
//
// The discardable braid.* attributes (BraidBase.td's discardableAttrs): each
// must hold its kind of value on its kind of op (BraidAttributes.cpp).

// expected-error @+1 {{'braid.axes' must name each axis of a shard.grid with a string}}
shard.grid @grid(shape = 2x2) {braid.axes = ["dp"]}

// -----

// expected-error @+1 {{'braid.axes' must name each axis of a shard.grid with a string}}
func.func @f() attributes {braid.axes = ["dp"]} {
  return
}

// -----

// expected-error @+1 {{'braid.axes' names axis "dp" twice}}
shard.grid @grid(shape = 2x2) {braid.axes = ["dp", "dp"]}

// -----

// expected-error @+1 {{'braid.split' must be an array (one per dimension) of arrays of grid axis names}}
braid.param @w normal(0.02) {braid.split = ["tp", []]} : tensor<4x4xf32>

// -----

// expected-error @+1 {{'braid.global_shape' must be an array<i64>}}
braid.state @m zeros {braid.global_shape = [8, 4]} : tensor<4x4xf32>

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.split' must be on a braid.param or braid.state (or a function argument)}}
  %y = braid.gelu %x {braid.split = [["tp"]]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'braid.global_shape' must be an array<i64>}}
func.func @f(%x: tensor<4xf32> {braid.global_shape = [8]}) {
  return
}

// -----

// expected-error @+1 {{'braid.input' must be a non-empty string on a func.func argument}}
func.func @f(%x: tensor<4xi32> {braid.input = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{'braid.input' must be a non-empty string on a func.func argument}}
func.func @f(%x: tensor<4xi32> {braid.input = ""}) {
  return
}

// -----

// expected-error @+1 {{unknown braid argument attribute 'braid.stage'}}
func.func @f(%x: tensor<4xf32> {braid.stage = 0 : i64}) {
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.partial' is a key of braid.result_layouts' dictionaries, not an attribute of an op}}
  %y = braid.gelu %x {braid.partial = ["tp"]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'braid.zero' must be a ZeRO stage 0-3 on a module}}
module attributes {braid.zero = 4 : i64} {
}

// -----

// expected-error @+1 {{'braid.zero' must be a ZeRO stage 0-3 on a module}}
func.func @f() attributes {braid.zero = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'braid.gradient_copies' must be an i64 array on a func.func}}
module attributes {braid.gradient_copies = array<i64: 1>} {
}

// -----

// expected-error @+1 {{'braid.stage' must be a non-negative i64 on an op of a function}}
braid.param @w normal(0.02) {braid.stage = 0 : i64} : tensor<4xf32>

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.stage' must be a non-negative i64 on an op of a function}}
  %y = braid.gelu %x {braid.stage = -1 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.backward' must be a unit attribute on an op of a function}}
  %y = braid.gelu %x {braid.backward = true} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'braid.microbatches' must be a positive i64 on a func.func}}
func.func @f() attributes {braid.microbatches = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{'braid.pipeline' must be a dictionary on a func.func}}
module attributes {braid.pipeline = {chunks = 2 : i64}} {
}

// -----

// expected-error @+1 {{'braid.pipeline_entries' must be an array of symbol references on a module}}
module attributes {braid.pipeline_entries = ["rank0"]} {
}

// -----

// expected-error @+1 {{'braid.pipeline_entries' names @rank1, which is not a function of the module}}
module attributes {braid.pipeline_entries = [@rank0, @rank1]} {
  func.func @rank0() {
    return
  }
}

// -----

// expected-error @+1 {{'braid.pipeline_rank' must be a non-negative i64 on a func.func}}
func.func @f() attributes {braid.pipeline_rank = "0"} {
  return
}

// -----

// expected-error @+1 {{'braid.peak_live_microbatches' must be a non-negative i64 on a func.func}}
module attributes {braid.peak_live_microbatches = 2 : i64} {
}

// -----

// expected-error @+1 {{'braid.pipeline_chunk' must be a unit attribute on a func.func}}
func.func @f() attributes {braid.pipeline_chunk = 1 : i64} {
  return
}
