//===- driver_train_step.cpp - the run loop of a train_step entry ---------===//
//
// Runs `step` N times (--steps N; with no optimizer a step is the forward
// pass of the loss) and prints after each
//   step K loss X          (K from 1; X = %.9g of the f32 loss)
//
// Dumps. --dump DIR writes DIR/<scope>.<name>.npy for every braid_rt_value
// call (the last step's value when several steps run), and at the end
// DIR/loss.npy (0-d float32) and DIR/updated.<name>.npy for every parameter
// and state (the trained values). With --dump-first-step the run's first
// step K also keeps its dumps as step<K>.* and the state after it as
// step<K>.updated.<name> (--verify compares what one step does before runs
// drift apart).
//
// --check-replicas (braid-run --verify): each rank's loss is compared with
// rank 0's after every step (DIR/replicas.loss.npy, relative, the worst step
// per rank); a pipeline mirror is also dumped by the stage that mirrors it,
// as DIR/mirror.<name>.npy.
//
// Data. --data PATH: each step reads the next global batch of the dataset
// (driver_data.cpp); --eval-data PATH --eval-every K prints
//   step K validation loss X
// after every K-th step.
//
// Checkpoints (checkpoint.h: the format). --checkpoint-dir D writes the
// parameters and optimizer state after every K-th step (--checkpoint-every
// K; 0, the default: none between) and after the last, as D/step-<K>, which
// D/latest names; D must hold no checkpoints unless the run resumed from it.
// A resumed run (--resume) runs steps K+1 to N (--steps N is the last step,
// not a count), printing their numbers.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include <algorithm>
#include <cstdio>

namespace braid::rt::driver {

namespace {

/// The steps of a training run, from the first (after a resumed one) to
/// --steps.
class TrainingRun {
public:
  explicit TrainingRun(Session &s) : s(s), rt(s.rt.get()) {}

  /// Runs the steps; false when a checkpoint could not be written.
  bool runSteps() {
    auto start = std::chrono::steady_clock::now();
    for (int64_t k = s.firstStep; k <= s.args.steps; ++k) {
      runStep(k);
      if (!checkpointAfter(k))
        return false;
      evaluate(s, k);
    }
    rt->backend->synchronize();
    stepSeconds = secondsSince(start) - checkpointSeconds;
    return true;
  }

  /// The end of the run: the parameters completed, the final dumps, the
  /// time the steps took.
  void finish() {
    const int64_t stepsRun = std::max<int64_t>(0, s.args.steps - s.firstStep + 1);
    if (stepsRun > 0)
      finishStep(s, s.args.steps);
    rt->backend->synchronize();
    rt->step = 0;
    if (s.ranks.rank == 0 || s.args.dumpAllRanks) // rank 0's, not every stage leader's
      dumpTensor(rt, "loss", rt->arena + s.program->loss_offset, BRAID_F32, {});
    if (rt->options.checkReplicas)
      writeLossCopies(rt);
    // The trained weights and optimizer state, to compare runs.
    dumpParameters(s, "updated.");
    if (!s.args.quiet && stepsRun > 0)
      std::fprintf(stderr, "%sbraid: %lld steps in %.3f s (%.3f ms/step)\n", s.prefix.c_str(),
                   (long long)stepsRun, stepSeconds, 1e3 * stepSeconds / double(stepsRun));
  }

private:
  /// Step k: the call, its checks, its loss line.
  void runStep(int64_t k) {
    rt->step = k;
    setCurrentStep(k);
    rt->collectives.clear();
    feedStep(s, k);
    s.program->step(rt, rt->arena);
    checkReturned(s, "step", k);
    // The state after the first step, which starts from the same state on
    // any grid: --verify compares what one step does before runs drift apart.
    if (k == s.firstStep && s.args.dumpFirstStep) {
      finishStep(s, k);
      rt->step = 0;
      dumpParameters(s, "step" + std::to_string(k) + ".updated.");
    }
    rt->backend->synchronize();
    float loss = 0;
    rt->backend->copyToHost(&loss, rt->arena + s.program->loss_offset, 4);
    if (rt->options.checkReplicas)
      checkLossCopies(rt, s.program->loss_offset);
    if (s.talks) {
      std::printf("%sstep %lld loss %.9g\n", s.prefix.c_str(), (long long)k, double(loss));
      std::fflush(stdout);
    }
  }

  /// The state after step k, when it is one to keep; false when it could
  /// not be written.
  bool checkpointAfter(int64_t k) {
    const Args &args = s.args;
    if (args.checkpointDir.empty() ||
        (k != args.steps && (args.checkpointEvery == 0 || k % args.checkpointEvery != 0)))
      return true;
    auto start = std::chrono::steady_clock::now();
    finishStep(s, k);
    rt->backend->synchronize();
    if (!saveCheckpoint(rt, s.checkpointRun(), args.checkpointDir, k, args.seed,
                        dataStateAfter(s, k)))
      return false;
    checkpointSeconds += secondsSince(start);
    if (!args.quiet)
      std::fprintf(stderr, "%sbraid: checkpoint %s/step-%lld in %.3f s\n", s.prefix.c_str(),
                   args.checkpointDir.c_str(), (long long)k, secondsSince(start));
    return true;
  }

  Session &s;
  braid_rt *rt;
  double checkpointSeconds = 0, stepSeconds = 0;
};

} // namespace

int runTrainSteps(Session &s) {
  // The step's one output, its loss, is read after every step.
  s.results = {{s.program->loss_offset, 4, "loss"}};
  if (!initializeState(s))
    return s.stop(2);
  if (!s.args.checkpointDir.empty() &&
      !checkCheckpointDir(s.rt.get(), s.args.checkpointDir, s.resuming ? &s.resumed : nullptr))
    return s.stop(2);
  if (!openData(s))
    return s.stop(2);
  // The dumps of the initial state show the first step's batch.
  feedStep(s, s.firstStep);
  dumpInitialState(s);

  TrainingRun run(s);
  if (!run.runSteps())
    return s.stop(1);
  run.finish();
  return tearDown(s, /*peakIsPlanned=*/s.args.steps > 0);
}

} // namespace braid::rt::driver
