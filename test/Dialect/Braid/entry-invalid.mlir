// RUN: braid-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'braid.entry' must be on a func.func}}
module attributes {braid.entry = "train_step"} {
}

// -----

// expected-error @+1 {{'braid.entry' must be one of "train_step", "forward", "prefill" or "decode", found "step"}}
func.func @step() attributes {braid.entry = "step"} {
  return
}

// -----

// expected-error @+1 {{'braid.entry' must be one of "train_step", "forward", "prefill" or "decode", found 0 : i64}}
func.func @step() attributes {braid.entry = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{'braid.entry' marks a public function with a body}}
func.func private @step() attributes {braid.entry = "train_step"} {
  return
}

// -----

// expected-error @+1 {{'braid.entry' marks a public function with a body}}
func.func @step() attributes {braid.entry = "decode"}

// -----

// expected-error @+1 {{'braid.serves' must be one of "train_step", "forward", "prefill" or "decode", found "step"}}
func.func private @layer() attributes {braid.serves = "step"} {
  return
}

// -----

// expected-error @+1 {{'braid.serves' marks a private function (an entry point is braid.entry)}}
func.func @layer() attributes {braid.serves = "decode"} {
  return
}

// -----

// expected-error @+1 {{'braid.serves' must be on a func.func}}
module attributes {braid.serves = "decode"} {
}
