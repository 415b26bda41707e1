//===- comm_self.cpp - the single-rank communicator -----------------------===//

#include "comm.h"

#include "rt_impl.h"

#include <cstring>
#include <vector>

namespace braid::rt {

namespace {

class CompletedEvent final : public Event {
public:
  void wait(Backend &) override {}
};

class SelfCommunicator final : public Communicator {
public:
  explicit SelfCommunicator(std::string axes) : axes_(std::move(axes)) {}
  const char *kind() const override { return "self"; }
  int32_t size() const override { return 1; }
  int32_t rank() const override { return 0; }

  std::unique_ptr<Event> allReduce(Backend &backend, const void *send, void *recv, int64_t count,
                                   braid_dtype dtype, braid_redop op) override {
    checkRedop("braid_all_reduce", op);
    return copy(backend, "braid_all_reduce", send, recv, count, dtype);
  }
  std::unique_ptr<Event> allGather(Backend &backend, const void *send, void *recv,
                                   int64_t countPerRank, braid_dtype dtype) override {
    return copy(backend, "braid_all_gather", send, recv, countPerRank, dtype);
  }
  std::unique_ptr<Event> reduceScatter(Backend &backend, const void *send, void *recv,
                                       int64_t countPerRank, braid_dtype dtype,
                                       braid_redop op) override {
    checkRedop("braid_reduce_scatter", op);
    return copy(backend, "braid_reduce_scatter", send, recv, countPerRank, dtype);
  }
  std::unique_ptr<Event> allToAll(Backend &backend, const void *send, void *recv,
                                  int64_t countPerRank, braid_dtype dtype) override {
    return copy(backend, "braid_all_to_all", send, recv, countPerRank, dtype);
  }
  std::unique_ptr<Event> broadcast(Backend &, void *buffer, int64_t count, braid_dtype dtype,
                                   int32_t root) override {
    checkCount("braid_broadcast", buffer, buffer, count, dtype);
    if (root != 0)
      fatal("braid_broadcast on '%s': root %d is not a rank of a communicator of size 1",
            axes_.c_str(), int(root));
    return makeCompletedEvent();
  }
  std::unique_ptr<Event> send(Backend &, const void *, int64_t, braid_dtype,
                              int32_t peer) override {
    fatal("braid_send on '%s': peer %d: a communicator of size 1 has no other rank "
          "(send to self is not supported)",
          axes_.c_str(), int(peer));
  }
  std::unique_ptr<Event> recv(Backend &, void *, int64_t, braid_dtype, int32_t peer) override {
    fatal("braid_recv on '%s': peer %d: a communicator of size 1 has no other rank "
          "(recv from self is not supported)",
          axes_.c_str(), int(peer));
  }

private:
  void checkRedop(const char *what, braid_redop op) {
    if (op != BRAID_RED_SUM && op != BRAID_RED_MAX && op != BRAID_RED_MIN)
      fatal("%s on '%s': unknown reduction %d", what, axes_.c_str(), int(op));
  }
  void checkCount(const char *what, const void *send, void *recv, int64_t count,
                  braid_dtype dtype) {
    if (count < 0)
      fatal("%s on '%s': negative count %lld", what, axes_.c_str(), (long long)count);
    if (braid_dtype_size(dtype) <= 0)
      fatal("%s on '%s': unknown dtype %d", what, axes_.c_str(), int(dtype));
    if (count > 0 && (!send || !recv))
      fatal("%s on '%s': null buffer", what, axes_.c_str());
  }
  std::unique_ptr<Event> copy(Backend &backend, const char *what, const void *send, void *recv,
                              int64_t count, braid_dtype dtype) {
    checkCount(what, send, recv, count, dtype);
    copyOnDevice(backend, recv, send, count * braid_dtype_size(dtype));
    return makeCompletedEvent();
  }

  std::string axes_;
};

class SelfProvider final : public CommProvider {
public:
  const char *kind() const override { return "self"; }
  int32_t worldSize() const override { return 1; }
  int32_t worldRank() const override { return 0; }
  std::unique_ptr<Communicator> create(const std::string &axes) override {
    return std::make_unique<SelfCommunicator>(axes);
  }
};

} // namespace

std::unique_ptr<CommProvider> makeSelfCommProvider() { return std::make_unique<SelfProvider>(); }

std::unique_ptr<Event> makeCompletedEvent() { return std::make_unique<CompletedEvent>(); }

void copyOnDevice(Backend &backend, void *dst, const void *src, int64_t bytes) {
  if (bytes <= 0 || dst == src)
    return;
  if (std::strcmp(backend.name(), "cpu") == 0) {
    std::memmove(dst, src, size_t(bytes));
    return;
  }
  std::vector<char> staging(static_cast<size_t>(bytes));
  backend.copyToHost(staging.data(), src, bytes);
  backend.copyToDevice(dst, staging.data(), bytes);
}

} // namespace braid::rt
