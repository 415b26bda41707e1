//===- generate_ranks.cpp - generation's exchanges between ranks ----------===//
//
// What generate_ranks.h specifies. Communicators work on the backend's
// memory (device memory on GPU ranks): each exchange stages its host values
// through a buffer of the backend.
//
//===----------------------------------------------------------------------===//

#include "generate_ranks.h"

#include "comm.h"

namespace braid::rt {

namespace {

/// Runs `collective` on a backend copy of `count` elements of `dtype` at
/// `host`, then copies the result back.
template <typename Collective>
void throughBackend(braid_rt *rt, void *host, int64_t count, braid_dtype dtype,
                    Collective collective) {
  Backend &backend = *rt->backend;
  const int64_t bytes = count * braid_dtype_size(dtype);
  if (bytes == 0)
    return;
  void *buffer = backend.allocate(bytes);
  backend.copyToDevice(buffer, host, bytes);
  backend.synchronize();
  collective(backend, buffer)->wait(backend);
  backend.synchronize();
  backend.copyToHost(host, buffer, bytes);
  backend.release(buffer);
}

/// The communicator along the stage axis; null when not pipelined.
Communicator *stageAxisComm(braid_rt *rt) {
  if (rt->stageAxis < 0)
    return nullptr;
  return braid_rt_comm(rt, rt->grid.names[size_t(rt->stageAxis)].c_str())->impl.get();
}

} // namespace

void maxOverRanks(braid_rt *rt, std::vector<int32_t> &values) {
  if (rt->grid.ranks() <= 1)
    return;
  Communicator &world = *braid_rt_comm(rt, "world")->impl;
  throughBackend(rt, values.data(), int64_t(values.size()), BRAID_I32,
                 [&](Backend &backend, void *buffer) {
                   return world.allReduce(backend, buffer, buffer, int64_t(values.size()),
                                          BRAID_I32, BRAID_RED_MAX);
                 });
}

int64_t sumOverStages(braid_rt *rt, int64_t value) {
  Communicator *stages = stageAxisComm(rt);
  if (!stages)
    return value;
  throughBackend(rt, &value, 1, BRAID_I64, [&](Backend &backend, void *buffer) {
    return stages->allReduce(backend, buffer, buffer, 1, BRAID_I64, BRAID_RED_SUM);
  });
  return value;
}

namespace {

template <typename T>
void shareFromLast(braid_rt *rt, std::vector<T> &values, int64_t count, braid_dtype dtype) {
  Communicator *stages = stageAxisComm(rt);
  if (!stages)
    return;
  const int32_t last = rt->grid.sizes[size_t(rt->stageAxis)] - 1;
  if (rt->coords[size_t(rt->stageAxis)] == last) {
    if (int64_t(values.size()) != count)
      fatal("generation: the last stage has %zu values, not %lld", values.size(),
            (long long)count);
  } else {
    values.assign(size_t(count), T());
  }
  throughBackend(rt, values.data(), count, dtype, [&](Backend &backend, void *buffer) {
    return stages->broadcast(backend, buffer, count, dtype, last);
  });
}

} // namespace

void shareFromLastStage(braid_rt *rt, std::vector<float> &values, int64_t count) {
  shareFromLast(rt, values, count, BRAID_F32);
}

void shareFromLastStage(braid_rt *rt, std::vector<int32_t> &values, int64_t count) {
  shareFromLast(rt, values, count, BRAID_I32);
}

} // namespace braid::rt
