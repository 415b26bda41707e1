// A dialect loaded from a plugin: braid-opt does not register index itself.
// RUN: braid-opt %s --load-dialect-plugin=%braid_lib/BraidTestPlugin.so | FileCheck %s
// RUN: not braid-opt %s 2>&1 | FileCheck %s --check-prefix=WITHOUT

// CHECK-LABEL: func.func @f
// CHECK: index.constant 3
// WITHOUT: Dialect `index' not found for custom op 'index.constant'
func.func @f() -> index {
  %c = index.constant 3
  return %c : index
}
