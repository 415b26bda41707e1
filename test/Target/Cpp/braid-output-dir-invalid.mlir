// RUN: rm -rf %t.file && touch %t.file
// RUN: braid-translate --braid-to-cpp --braid-output-dir=%t.file/programs %s -verify-diagnostics
// RUN: not braid-translate --braid-to-cpp --braid-output-dir=%t.file/programs %s 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// RUN: rm -rf %t.dir && not braid-translate --braid-to-cpp --braid-output-dir=%t.dir --braid-program=forward %s 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: rm -rf %t.none && echo 'module {}' | not braid-translate --braid-to-cpp --braid-output-dir=%t.none 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: rm -rf %t.slash && sed 's/@forward/@"fwd\/0"/' %s | not braid-translate --braid-to-cpp --braid-output-dir=%t.slash 2>&1 | FileCheck %s --check-prefix=SLASH

// --braid-output-dir writes each program to <dir>/<program>.cpp: a
// directory that cannot be made, a second choice of program, a module with
// no program and a program whose name is no file name are errors at the
// module, which is not printed with them.

// UNWRITABLE: error: cannot write the programs to '{{.*}}.file/programs': Not a directory
// UNWRITABLE-NOT: see current operation
// BOTH: error: --braid-program names one program to emit to the output; --braid-output-dir emits them all: give one of them
// NONE: error: no program to emit: no entry point (a public func.func with a body marked braid.entry)
// NONE-NOT: see current operation
// SLASH: error: program @fwd/0 has no file name of its own in '{{.*}}.slash'

// expected-error @+1 {{cannot write the programs to}}
module attributes {braid.model = {name = "fwd", family = "gpt", vocab = 10 : i64}} {
  braid.param @wte normal(0.02) : tensor<10x8xf32>
  func.func @forward(%tok: tensor<2x4xi32>) -> tensor<2x4x10xf32> attributes {braid.entry = "forward"} {
    %wte = braid.get_param @wte : tensor<10x8xf32>
    %h = braid.embedding %tok, %wte : tensor<2x4xi32>, tensor<10x8xf32> -> tensor<2x4x8xf32>
    %logits = braid.linear %h, %wte transpose_weight : tensor<2x4x8xf32>, tensor<10x8xf32> -> tensor<2x4x10xf32>
    return %logits : tensor<2x4x10xf32>
  }
}
