//===- driver_state.cpp - the persistent state, and calling the program ---===//
//
// The persistent tensors (parameters, optimizer state, inputs) are live for
// the whole run. Each is filled from the deterministic rng (rng.h: element i
// of NAME under SEED, generated on the host and copied to the arena), each
// rank generating exactly its slice of a sharded one: the rng value at the
// element's global index (so that N ranks start from the state of one), zero
// in padding. --resume D then loads a checkpoint's parameters and state over
// them (checkpoint.h); the inputs are drawn from the checkpoint's seed.
// --init-from MAP loads another model's weights over the parameters
// (weights_map.h): the optimizer's state stays the rng's, as at step 0.
//
// With --dump DIR the initial state is written as DIR/<name>.npy: a sharded
// tensor is gathered (persistent.h, rt_impl.h's dumpSharded) and written as
// the global tensor by rank 0 (a stage's leader); a pipeline mirror
// (braid_tensor_desc.mirror) is left to the stage that owns it.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "weights_map.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace braid::rt::driver {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

/// Opens the checkpoint --resume names and takes its seed (collective); false,
/// the message printed, when the run cannot resume from it.
bool openResumed(Session &s) {
  braid_rt *rt = s.rt.get();
  if (!openCheckpoint(rt, s.checkpointRun(), s.args.resume, &s.resumed))
    return false;
  std::string error;
  if (s.args.seedGiven && s.args.seed != s.resumed.seed)
    error = "--seed " + std::to_string(s.args.seed) + " differs from the seed " +
            std::to_string(s.resumed.seed) + " of checkpoint " + s.resumed.path;
  if (!agreeOnError(rt, error))
    return false;
  s.args.seed = s.resumed.seed;
  return true;
}

/// Fills the persistent tensors from the rng (a resumed run: the inputs
/// alone; a run from a weights map: all but the weights). With --progress it says what it does and, every 5 s, how far it
/// is (a real-size model's parameters take seconds to generate).
void generate(Session &s) {
  const bool progress = s.args.progress && s.talks;
  const char *prefix = s.prefix.c_str();
  double totalMb = 0, doneMb = 0;
  for (const Persistent &p : s.persistent)
    totalMb += double(p.bytes) / 1e6;
  if (progress)
    std::fprintf(stderr, "%sbraid: initializing %zu tensors (%.1f MB)...\n", prefix,
                 s.persistent.size(), totalMb);
  double reported = 0;
  for (size_t i = 0; i < s.persistent.size(); ++i) {
    const Persistent &p = s.persistent[i];
    // What a checkpoint or a weights map fills is not drawn: they write
    // every byte of the buffer, padding included.
    const bool loaded = p.param && (s.resuming || (!s.args.initFrom.empty() &&
                                                   !weights::isState(p.desc->name)));
    if (!loaded)
      initialize(s.rt.get(), p, s.args.seed);
    doneMb += double(p.bytes) / 1e6;
    if (progress && secondsSince(s.initStart) - reported >= 5) {
      reported = secondsSince(s.initStart);
      std::fprintf(stderr, "%sbraid: initializing: %zu of %zu tensors, %.0f of %.0f MB (%.0f s)\n",
                   prefix, i + 1, s.persistent.size(), doneMb, totalMb, reported);
    }
  }
}

} // namespace

bool initializeState(Session &s) {
  braid_rt *rt = s.rt.get();
  // A checkpoint to resume from is read and checked before anything is
  // written; it sets the seed the inputs are drawn from.
  s.resuming = !s.args.resume.empty();
  if (s.resuming && !openResumed(s))
    return false;
  weights::Map weights;
  if (!s.args.initFrom.empty() &&
      !weights::openWeights(rt, s.checkpointRun(), s.args.initFrom, &weights))
    return false;
  s.firstStep = s.resumed.step + 1;
  rt->options.firstStep = s.firstStep;

  // Persistent tensors and the entry's results: live for the whole run.
  s.initStart = std::chrono::steady_clock::now();
  for (const Persistent &p : s.persistent)
    braid_rt_alloc(rt, p.desc->offset, p.bytes, p.desc->name);
  for (const Session::Result &r : s.results)
    braid_rt_alloc(rt, r.offset, r.bytes, r.name);
  s.persistentLive = rt->live.size();
  generate(s);
  if (!s.args.initFrom.empty())
    return weights::loadWeights(rt, s.checkpointRun(), weights);
  return !s.resuming || loadCheckpoint(rt, s.checkpointRun(), s.resumed);
}

void dumpInitialState(Session &s) {
  braid_rt *rt = s.rt.get();
  const Args &args = s.args;
  if (s.resuming && !args.quiet)
    std::fprintf(stderr, "%sbraid: resumed from %s (step %lld, seed %llu, written on %s)\n",
                 s.prefix.c_str(), s.resumed.path.c_str(), (long long)s.resumed.step,
                 (unsigned long long)s.resumed.seed, s.resumed.manifest->grid.c_str());
  if (!args.dumpDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.dumpDir, ec);
    if (ec && !std::filesystem::is_directory(args.dumpDir)) // ranks may race to create it
      fatal("cannot create dump directory %s: %s", args.dumpDir.c_str(), ec.message().c_str());
  }
  for (const Persistent &p : s.persistent)
    if (!p.desc->mirror) {
      dumpPersistent(rt, p.desc->name, rt->arena + p.desc->offset, p);
      // Under a name no value of a step can overwrite: what the first step
      // starts from.
      if (args.dumpFirstStep && p.param)
        dumpPersistent(rt, "step" + std::to_string(s.firstStep - 1) + "." + p.desc->name,
                       rt->arena + p.desc->offset, p);
    }
  rt->backend->synchronize();
  if (!args.quiet)
    std::fprintf(stderr, "%sbraid: initialized %zu tensors in %.3f s\n", s.prefix.c_str(),
                 s.persistent.size(), secondsSince(s.initStart));
}

void checkReturned(Session &s, const char *what, int64_t k) {
  braid_rt *rt = s.rt.get();
  if (!rt->scopes.empty())
    fatal("%s %lld returned inside scope '%s'", what, (long long)k, currentScope(rt).c_str());
  if (rt->trace.openCount())
    fatal("%s %lld returned with %lld unclosed braid_rt_op_begin", what, (long long)k,
          (long long)rt->trace.openCount());
  if (rt->live.size() == s.persistentLive)
    return;
  for (const auto &[offset, buffer] : rt->live) {
    bool isPersistent = false;
    for (const Session::Result &r : s.results)
      isPersistent |= offset == r.offset && buffer.end == r.offset + r.bytes;
    for (const Persistent &p : s.persistent)
      isPersistent |= p.desc->offset == offset && p.desc->offset + p.bytes == buffer.end;
    if (!isPersistent)
      fatal("%s %lld returned with buffer %s [%lld, %lld) still live", what, (long long)k,
            buffer.name.c_str(), (long long)offset, (long long)buffer.end);
  }
  fatal("%s %lld freed a persistent tensor", what, (long long)k);
}

void finishStep(Session &s, int64_t k) {
  if (!s.program->finish)
    return;
  s.rt->step = 0;
  s.program->finish(s.rt.get(), s.rt->arena);
  checkReturned(s, "finish after step", k);
}

void dumpParameters(Session &s, const std::string &prefix) {
  braid_rt *rt = s.rt.get();
  for (const Persistent &p : s.persistent)
    if (p.param && (!p.desc->mirror || rt->options.checkReplicas))
      dumpPersistent(rt, (p.desc->mirror ? "mirror." : "") + prefix + p.desc->name,
                     rt->arena + p.desc->offset, p);
}

} // namespace braid::rt::driver
