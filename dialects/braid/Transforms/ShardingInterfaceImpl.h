//===- ShardingInterfaceImpl.h - upstream models of braid ops --*- C++ -*-===//
//
// Attaches upstream `shard::ShardingInterface` to the braid ops that have a
// factor rule (ShardingRules.cpp), so that `--sharding-propagation` handles
// shard-annotated braid IR from other front ends.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_TRANSFORMS_SHARDINGINTERFACEIMPL_H
#define BRAID_DIALECT_BRAID_TRANSFORMS_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace braid {
/// Registers the ShardingInterface models of the braid ops with a factor
/// rule, and of braid.get_param.
void registerShardingInterfaceExternalModels(DialectRegistry &registry);
} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECT_BRAID_TRANSFORMS_SHARDINGINTERFACEIMPL_H
