//===- InitAllDialects.cpp - dialects registered by braid tools -----------===//

#include "braid/InitAllDialects.h"

#include "dialects/braid/IR/BraidDialect.h"
#include "dialects/braid/Transforms/ShardingInterfaceImpl.h"
#include "dialects/braid/Transforms/VJPRules.h"
#include "dialects/dist/IR/DistDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

void braid::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::braid::BraidDialect, mlir::dist::DistDialect,
                  mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::shard::ShardDialect,
                  mlir::tensor::TensorDialect>();
  // Sharding models of the upstream and braid ops, for the upstream
  // propagation and partition passes.
  mlir::arith::registerShardingInterfaceExternalModels(registry);
  mlir::linalg::registerShardingInterfaceExternalModels(registry);
  mlir::tensor::registerShardingInterfaceExternalModels(registry);
  mlir::braid::registerShardingInterfaceExternalModels(registry);
  // Vector-Jacobian products of the shard collectives, for autodiff.
  mlir::braid::registerCollectiveVJPExternalModels(registry);
}
