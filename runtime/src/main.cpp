//===- main.cpp - the main() of every compiled Braid program --------------===//
//
//   PROGRAM [--steps N] [--seed S] [--dump DIR] [--trace FILE]
//           [--backend cpu|cuda] [--quiet]
//           [--grid AXIS=SIZE,...] [--all-ranks] [--dump-all-ranks]
//           [--checkpoint-dir D] [--checkpoint-every K] [--resume D]
//           [--threads N]
//   PROGRAM [--generate N] [--prompts FILE | --prompt-len L] [--seed S]
//           [--temperature T] [--top-k K] [--top-p P] [--verify-forward]
//                                    (a generation binary: driver_generate.cpp)
//
// A small driver over the program's description (braid_program_get): it
// checks the description, picks the run loop of the program's entry kind
// (a train_step entry's: driver_train_step.cpp; another kind is refused by
// name; a binary holding prefill and decode programs (braid_program_get_
// prefill/_decode, weak symbols) runs generation: driver_generate.cpp) and runs the parts of driver.h in order: the command line, the
// ranks and the program's place on the grid, the runtime context with the
// planned arena and its communicators, the persistent state (initialized
// from the deterministic rng, or resumed from a checkpoint), the entry's
// run loop, and the closing report.
//
// A training run prints after each step
//   step K loss X          (K from 1; X = %.9g of the f32 loss)
// then
//   planned_peak_bytes: P
//   measured_peak_bytes: M
//   collective KIND: C per step, B bytes sent per rank   (the last step's,
//   collective_bytes_per_step: T                          ring model; rt_impl.h)
// and exits with status 1 when they differ. Progress and timing lines go to
// stderr unless --quiet; stdout carries only the lines above. A bad command
// line, a grid that does not fit the ranks or the program, or a checkpoint
// that cannot be resumed exits with status 2.
//
// --dump DIR writes DIR/<name>.npy for every parameter and input after init,
// DIR/<scope>.<name>.npy for every braid_rt_value call, and what the entry's
// run loop adds (driver_train_step.cpp). bf16 tensors are dumped as float32
// arrays (numpy has no bfloat16).
//
// Sharded tensors (a partitioned program's descriptors with global_shape /
// split_axes, and braid_rt_value_sharded values). Each rank initializes
// exactly its slice of the global tensor. Dumps hold the global tensor, as a
// 1-rank run of the unpartitioned program writes it: every rank's shard is
// all-gathered over "world" (only when dumping) and rank 0 writes it with the
// padding dropped; with --dump-all-ranks each rank writes its own shard
// (local shape, padding included) as NAME.rank<R>.npy instead. Zigzag order
// (braid_program.zigzag_axis): initialization and the gathered dumps are in
// natural order all the same; a --dump-all-ranks shard is as stored.
//
// --check-replicas (braid-run --verify) checks every rank's copy: each dumped
// tensor is gathered even when whole on every rank, and beside DIR/<name>.npy
// the writer puts DIR/replicas.<name>.npy, rows (rank, max |copy - kept|) for
// every rank whose block replicates the one dumped, and DIR/owners.<name>.npy
// (int32, the tensor's shape), the global rank each element was taken from.
//
// Checkpoints (checkpoint.h). --resume D (D/latest's checkpoint, or D/step-<K>
// itself) loads one written on any grid instead of initializing the
// parameters and generates the inputs from its seed (--seed, when given, must
// be that seed); with --dump-first-step the run's first step is step K+1 (its
// dumps are step<K+1>.*, the state it starts from step<K>.*). A checkpoint
// that cannot be resumed (another model, a corrupt or missing file) ends the
// run with status 2 and a message naming the file before anything is
// written.
//
// With several ranks (driver_placement.cpp, driver_runtime.cpp): only rank 0
// prints (step, peak and progress lines) unless --all-ranks (then lines are
// prefixed "rank R: "); only rank 0 dumps unless --dump-all-ranks (then every
// rank writes NAME.rank<R>.npy); the trace of rank R goes to FILE with
// ".rank<R>" before its extension (trace.h). A pipeline stage's dumps are
// gathered over its stage group and written by the stage leader, into the
// same --dump DIR as the other stages; mirrors (braid_tensor_desc.mirror) are
// left to the stage that owns them and loss.npy to rank 0.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include <algorithm>
#include <utility>

// The programs a binary may hold, resolved at link time: a training binary
// defines braid_program_get, a generation binary (braid-run --generate) the
// inference entry points' own getters (the emitter names them after the
// program), linked from several sources into one binary. An absent one is
// null.
#pragma weak braid_program_get
extern "C" {
const braid_program *braid_program_get_prefill(void) __attribute__((weak));
const braid_program *braid_program_get_decode(void) __attribute__((weak));
const braid_program *braid_program_get_forward(void) __attribute__((weak));
const braid_program *braid_program_get_mixed_0(void) __attribute__((weak));
const braid_program *braid_program_get_mixed_1(void) __attribute__((weak));
const braid_program *braid_program_get_mixed_2(void) __attribute__((weak));
const braid_program *braid_program_get_mixed_3(void) __attribute__((weak));
}

using namespace braid::rt;
using namespace braid::rt::driver;

namespace {

/// The run loop of each entry kind the driver runs. A prefill or decode
/// driver is a run loop beside driver_train_step.cpp and a line here.
struct EntryDriver {
  braid_entry_kind kind;
  int (*run)(Session &);
};
constexpr EntryDriver kEntryDrivers[] = {
    // Training steps and, with no optimizer, their forward pass: one loss
    // per step.
    {BRAID_ENTRY_TRAIN_STEP, runTrainSteps},
};

/// A program's description, its tables checked (a fatal error otherwise).
const braid_program *checkedProgram(const braid_program *program, const char *getter) {
  if (!program || !program->step)
    fatal("%s returned no program", getter);
  const char *name = program->name ? program->name : "?";
  if ((program->num_params && !program->params) || (program->num_inputs && !program->inputs) ||
      program->num_params < 0 || program->num_inputs < 0)
    fatal("program %s: bad parameter/input tables", name);
  if (program->num_comm_groups < 0 || (program->num_comm_groups && !program->comm_groups))
    fatal("program %s: bad communicator group table", name);
  if (program->num_outputs < 0 || (program->num_outputs && !program->outputs))
    fatal("program %s: bad output table", name);
  return program;
}

/// The inference programs the binary holds (prefill and decode, with
/// forward when linked), each checked; none when it holds a training step.
InferencePrograms inferencePrograms() {
  InferencePrograms programs;
  if (!braid_program_get_prefill || !braid_program_get_decode) {
    if (!braid_program_get)
      fatal("this binary holds no program (braid_program_get) and no generation programs "
            "(braid_program_get_prefill and _decode)");
    return programs;
  }
  programs.prefill = checkedProgram(braid_program_get_prefill(), "braid_program_get_prefill");
  programs.decode = checkedProgram(braid_program_get_decode(), "braid_program_get_decode");
  if (braid_program_get_forward)
    programs.forward = checkedProgram(braid_program_get_forward(), "braid_program_get_forward");
  // The mixed programs, smallest first (--braid-derive-inference mixed-rows).
  using Getter = const braid_program *(*)(void);
  const std::pair<Getter, const char *> mixed[] = {
      {braid_program_get_mixed_0, "braid_program_get_mixed_0"},
      {braid_program_get_mixed_1, "braid_program_get_mixed_1"},
      {braid_program_get_mixed_2, "braid_program_get_mixed_2"},
      {braid_program_get_mixed_3, "braid_program_get_mixed_3"}};
  for (auto [getter, name] : mixed)
    if (getter)
      programs.mixed.push_back(checkedProgram(getter(), name));
  if (programs.prefill->entry_kind != BRAID_ENTRY_PREFILL ||
      programs.decode->entry_kind != BRAID_ENTRY_DECODE ||
      std::any_of(programs.mixed.begin(), programs.mixed.end(),
                  [](const braid_program *p) { return p->entry_kind != BRAID_ENTRY_PREFILL; }) ||
      (programs.forward && programs.forward->entry_kind != BRAID_ENTRY_FORWARD))
    fatal("the generation programs' entry kinds are not prefill, decode, forward and (mixed) prefill");
  return programs;
}

/// The run loop of the program's entry kind; another kind is refused by
/// name before anything runs.
const EntryDriver &driverFor(const braid_program &program, const std::string &name) {
  for (const EntryDriver &driver : kEntryDrivers)
    if (driver.kind == program.entry_kind)
      return driver;
  fatal("program %s: its entry point is not a training step (entry kind %d); "
        "braid-run's driver runs training steps only",
        name.c_str(), int(program.entry_kind));
}

} // namespace

int main(int argc, char **argv) {
  Session s;
  s.args = parseArgs(argc, argv);
  s.ranks = startRanks(&argc, &argv, s.args.replicas, s.args.groupSizes);
  s.argv0 = argv[0];
  reportTermination();
  // A generation binary runs prefill and decode (driver_generate.cpp) over
  // one description of their shared state.
  InferencePrograms inference = inferencePrograms();
  braid_program merged{};
  if (inference.prefill) {
    merged = mergedProgram(inference);
    s.program = &merged;
  } else {
    s.program = checkedProgram(braid_program_get(), "braid_program_get");
  }
  s.programName = s.program->name ? s.program->name : "?";
  const EntryDriver *driver = inference.prefill ? nullptr : &driverFor(*s.program, s.programName);
  const bool serving = inference.prefill && (!s.args.serveFile.empty() || s.args.rate > 0);
  if (s.args.replicas > 1 && !serving)
    return s.refuse("--replicas serves requests (--serve, --rate) in independent groups; "
                    "training and --generate run one");
  if (int status = place(s))
    return status;
  startRuntime(s);
  if (driver)
    return driver->run(s);
  return serving ? runServing(s, inference) : runGeneration(s, inference);
}
