//===- persistent.h - the tensors a program owns: layout and init --*- C++ -*-===//
//
// Parameters, optimizer state and inputs (braid_tensor_desc): their sizes,
// where a sharded one's local buffer lies in the global tensor, and their
// deterministic initialization (rng.h), each rank generating exactly its
// slice. Used by main() (main.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_PERSISTENT_H
#define BRAID_RUNTIME_PERSISTENT_H

#include "boxes.h"
#include "rt_impl.h"

#include <string>
#include <vector>

namespace braid::rt {

struct Persistent {
  const braid_tensor_desc *desc;
  int64_t numel, bytes;
  std::vector<int64_t> shape;
  bool param = false; ///< a parameter or state (dumped again as updated.<name>)
  ShardLayout layout; ///< where the local buffer lies in the global tensor
  /// For a ZeRO range of a sharded block (braid_tensor_desc::zero_axes): the
  /// group holding the block's ranges and where the block lies.
  std::string zeroAxes;
  ShardLayout zeroBlock;
};

/// Dumps `p`'s local buffer `data` as DIR/<file>.npy: through its ZeRO
/// block when it has one, else as its layout says.
void dumpPersistent(braid_rt *rt, const std::string &file, const void *data,
                    const Persistent &p);

/// The tensor's sizes and, for a sharded one, its layout on `grid`; false
/// with a message in `error` when the sharding does not fit the grid.
bool describe(const braid_tensor_desc &desc, const char *kind, const Grid &grid,
              Persistent *out, std::string *error);

/// Fills the tensor's local buffer in the arena from the rng under `seed`:
/// the whole tensor, or this rank's shard of it (padding zero).
void initialize(braid_rt *rt, const Persistent &p, uint64_t seed);

/// Where a rank's local buffer of a tensor lies in the global tensor: a
/// flat range from `base` of its block (the tensor's layout, or its ZeRO
/// block), cut into boxes of the global tensor (checkpoints).
struct LocalSlice {
  const ShardLayout *block = nullptr;
  int64_t base = 0; ///< the linear index in the block of the buffer's first element
  std::vector<Placed> boxes;
};

/// The global shape `p` has in this program: its layout's, or for a ZeRO
/// range its block's (a flat moment of an unsharded weight: [N]).
const std::vector<int64_t> &globalShape(const Persistent &p);

/// The slice of `p` that the rank at rt->coords holds.
LocalSlice localSlice(const braid_rt *rt, const Persistent &p);

/// Whether the rank at rt->coords holds the copy of its slice of `p` that
/// is kept: coordinate 0 on every grid axis that neither splits the tensor
/// nor holds its ZeRO ranges nor is the pipeline's stage axis (the others
/// along those axes hold the same data).
bool keepsSlice(const braid_rt *rt, const Persistent &p);

} // namespace braid::rt

#endif // BRAID_RUNTIME_PERSISTENT_H
