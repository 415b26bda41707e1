// A pass loaded from a plugin runs on braid ops: it resolves their TypeIDs
// and methods in braid-opt, which exports its symbols for plugins.
// RUN: braid-opt %braid_src/examples/gpt-tiny.mlir --load-pass-plugin=%braid_lib/BraidTestPlugin.so \
// RUN:   --pass-pipeline="builtin.module(braid-test-plugin-count-params)" | FileCheck %s
// RUN: not braid-opt %braid_src/examples/gpt-tiny.mlir \
// RUN:   --pass-pipeline="builtin.module(braid-test-plugin-count-params)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WITHOUT

// gpt-tiny: 36 parameters, 107328 elements.
// CHECK: module attributes {braid.model = {{.*}}, plugin.param_elements = 107328 : i64, plugin.params = 36 : i64}
// WITHOUT: 'braid-test-plugin-count-params' does not refer to a registered pass or pass pipeline
