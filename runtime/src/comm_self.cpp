//===- comm_self.cpp - the single-rank communicator -----------------------===//

#include "comm.h"

#include "braid/link_model.h"

#include "rt_impl.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
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
    checkCollectiveArgs("braid_broadcast", axes_, buffer, buffer, count, dtype);
    if (root != 0)
      fatal("braid_broadcast on '%s': root %d is not a rank of a communicator of size 1",
            axes_.c_str(), int(root));
    return makeCompletedEvent();
  }
  std::unique_ptr<Event> send(Backend &, const void *, int64_t, braid_dtype, int32_t peer,
                              int32_t) override {
    fatal("braid_send on '%s': peer %d: a communicator of size 1 has no other rank "
          "(send to self is not supported)",
          axes_.c_str(), int(peer));
  }
  std::unique_ptr<Event> recv(Backend &, void *, int64_t, braid_dtype, int32_t peer,
                              int32_t) override {
    fatal("braid_recv on '%s': peer %d: a communicator of size 1 has no other rank "
          "(recv from self is not supported)",
          axes_.c_str(), int(peer));
  }

private:
  void checkRedop(const char *what, braid_redop op) {
    if (op != BRAID_RED_SUM && op != BRAID_RED_MAX && op != BRAID_RED_MIN)
      fatal("%s on '%s': unknown reduction %d", what, axes_.c_str(), int(op));
  }
  std::unique_ptr<Event> copy(Backend &backend, const char *what, const void *send, void *recv,
                              int64_t count, braid_dtype dtype) {
    checkCollectiveArgs(what, axes_, send, recv, count, dtype);
    if (send != recv) // in place: nothing to move
      copyOnDevice(backend, recv, send, count * braid_dtype_size(dtype));
    return makeCompletedEvent();
  }

  std::string axes_;
};

class SelfProvider final : public CommProvider {
public:
  SelfProvider() = default;
  explicit SelfProvider(Grid grid) : grid_(std::move(grid)) {}
  const char *kind() const override { return "self"; }
  int32_t worldSize() const override { return 1; }
  int32_t worldRank() const override { return 0; }
  std::unique_ptr<Communicator> create(const std::string &axes) override {
    if (grid_.isExplicit) {
      std::vector<int> indices;
      std::string error;
      if (!groupAxes(grid_, axes, &indices, &error))
        fatal("braid_rt_comm: %s (grid %s)", error.c_str(), grid_.str().c_str());
    }
    return std::make_unique<SelfCommunicator>(axes);
  }

private:
  Grid grid_;
};

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    std::string part = text.substr(begin, comma == std::string::npos ? std::string::npos
                                                                     : comma - begin);
    // Tolerate spaces around names ("dp, tp").
    size_t a = part.find_first_not_of(' '), b = part.find_last_not_of(' ');
    parts.push_back(a == std::string::npos ? std::string() : part.substr(a, b - a + 1));
    if (comma == std::string::npos)
      return parts;
    begin = comma + 1;
  }
}

} // namespace

void checkCollectiveArgs(const char *what, const std::string &axes, const void *send,
                         const void *recv, int64_t count, braid_dtype dtype) {
  if (count < 0)
    fatal("%s on '%s': negative count %lld", what, axes.c_str(), (long long)count);
  if (braid_dtype_size(dtype) <= 0)
    fatal("%s on '%s': unknown dtype %d", what, axes.c_str(), int(dtype));
  if (count > 0 && (!send || !recv))
    fatal("%s on '%s': null buffer", what, axes.c_str());
}

int64_t Grid::ranks() const {
  int64_t n = 1;
  for (int32_t s : sizes)
    n *= s;
  return n;
}

std::string Grid::str() const {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? "," : "") + names[i] + "=" + std::to_string(sizes[i]);
  return out;
}

std::vector<int32_t> Grid::coordinates(int32_t rank) const {
  std::vector<int32_t> coords(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    coords[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return coords;
}

bool parseGrid(const std::string &text, Grid *grid, std::string *error) {
  Grid out;
  out.isExplicit = true;
  for (const std::string &part : splitCommas(text)) {
    size_t eq = part.find('=');
    std::string name = part.substr(0, eq);
    if (eq == std::string::npos || !braid::link::isAxisName(name)) {
      *error = "bad grid '" + text + "': '" + part + "' is not NAME=SIZE";
      return false;
    }
    std::string size = part.substr(eq + 1);
    char *end = nullptr;
    errno = 0;
    long long v = size.empty() || !std::isdigit((unsigned char)size[0])
                      ? 0
                      : std::strtoll(size.c_str(), &end, 10);
    if (v < 1 || errno || (end && *end) || v > (1 << 24)) {
      *error = "bad grid '" + text + "': axis " + name + " needs a positive size, got '" +
               size + "'";
      return false;
    }
    for (const std::string &seen : out.names)
      if (seen == name) {
        *error = "bad grid '" + text + "': axis " + name + " appears twice";
        return false;
      }
    out.names.push_back(name);
    out.sizes.push_back(int32_t(v));
    if (out.ranks() > (int64_t(1) << 24)) {
      *error = "bad grid '" + text + "': too many ranks";
      return false;
    }
  }
  for (const std::string &name : out.names)
    if (name == "world" && out.names.size() > 1) {
      *error = "bad grid '" + text + "': 'world' names all ranks; it can only be the sole axis";
      return false;
    }
  *grid = std::move(out);
  return true;
}

Grid worldGrid(int32_t size) {
  Grid grid;
  grid.names = {"world"};
  grid.sizes = {size};
  return grid;
}

bool groupAxes(const Grid &grid, const std::string &axes, std::vector<int> *out,
               std::string *error) {
  std::vector<bool> in(grid.names.size(), false);
  if (axes == "world") {
    in.assign(grid.names.size(), true);
  } else {
    for (const std::string &name : splitCommas(axes)) {
      size_t i = 0;
      while (i < grid.names.size() && grid.names[i] != name)
        ++i;
      if (name.empty() || i == grid.names.size()) {
        *error = "unknown axis '" + name + "' in '" + axes + "'";
        return false;
      }
      if (in[i]) {
        *error = "axis '" + name + "' appears twice in '" + axes + "'";
        return false;
      }
      in[i] = true;
    }
  }
  out->clear();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i])
      out->push_back(int(i));
  return true;
}

std::unique_ptr<CommProvider> makeSelfCommProvider() { return std::make_unique<SelfProvider>(); }

std::unique_ptr<CommProvider> makeSelfCommProvider(const Grid &grid) {
  if (grid.ranks() != 1)
    fatal("the self communicator runs one rank; grid %s has %lld", grid.str().c_str(),
          (long long)grid.ranks());
  return std::make_unique<SelfProvider>(grid);
}

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

GroupSplit splitForGroup(const Grid &grid, const std::vector<int32_t> &coords,
                         const std::string &axes) {
  std::vector<int> group;
  std::string error;
  if (!groupAxes(grid, axes, &group, &error))
    fatal("braid_rt_comm: %s (grid %s)", error.c_str(), grid.str().c_str());
  GroupSplit split;
  std::vector<bool> in(grid.names.size(), false);
  for (int a : group) {
    in[size_t(a)] = true;
    split.key += (split.key.empty() ? "" : ",") + grid.names[size_t(a)];
  }
  split.world = group.size() == grid.names.size();
  for (size_t a = 0; a < grid.names.size(); ++a) {
    if (in[a])
      split.order = split.order * grid.sizes[a] + coords[a];
    else
      split.color = split.color * grid.sizes[a] + coords[a];
  }
  return split;
}

} // namespace braid::rt
