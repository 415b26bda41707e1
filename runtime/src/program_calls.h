//===- program_calls.h - one call of an inference program -------*- C++ -*-===//
//
// Generation (driver_generate.cpp) and serving (driver_serve.cpp) call the
// prefill, decode and forward programs the same way: each input, found by
// the name the program gives it, is cut from its global values into this
// rank's block and placed in the arena; the program runs; its logits and
// the ids its braid.sample drew are read back whole (gathered over the
// ranks that split them); what the call made live is freed.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_PROGRAM_CALLS_H
#define BRAID_RUNTIME_PROGRAM_CALLS_H

#include "driver.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace braid::rt::driver {

/// One input's global values: `count` elements of 4 or 8 bytes.
struct GlobalInput {
  const void *data = nullptr;
  size_t count = 0;
  int64_t elementBytes = 4;
};

/// braid.sample's per-sequence inputs of one call (--braid-derive-inference
/// sample=true): each sequence's stream (its seed), the token's step and the
/// sampling options, rounded to the f32 the op reads.
struct SampleInputs {
  std::vector<int64_t> seeds, steps;
  std::vector<float> temperature, topP;
  std::vector<int32_t> topK;
};

/// The global inputs of a call, by the names the programs give them (a
/// pipeline stage takes some of them). The vectors must outlive the call.
class CallInputs {
public:
  template <typename T> CallInputs &add(const char *name, const std::vector<T> *values) {
    if (values)
      inputs.emplace_back(name, GlobalInput{values->data(), values->size(),
                                            int64_t(sizeof(T))});
    return *this;
  }
  CallInputs &addSample(const SampleInputs *sample);

  /// The input `name`; fatal (naming `what`) when the call has none.
  GlobalInput named(const char *name, const char *what) const;

private:
  std::vector<std::pair<std::string, GlobalInput>> inputs;
};

/// Runs programs on this rank's blocks of their global inputs.
class ProgramCaller {
public:
  explicit ProgramCaller(Session &s) : s(s), rt(s.rt.get()) {}

  /// A call's program run: its inputs placed and, on a stage that returns
  /// them, its logits (and ids) live in their buffers until release().
  struct Launched {
    std::optional<Persistent> logits, ids;
    braid_tensor_desc out{}, idsOut{};
  };

  /// Places the inputs (each of the program's found by name) and runs it.
  Launched launch(const braid_program &program, const CallInputs &inputs, const char *what);
  /// Frees what launch() made live.
  void release(const braid_program &program, const Launched &launched, const char *what);
  /// The ids [B] its braid.sample drew, whole on every rank of its stage.
  std::vector<int32_t> ids(const Launched &launched);
  /// Its logits as f32, whole on every rank of its stage (padding dropped).
  std::vector<float> logits(const Launched &launched);

  /// `desc` placed on the run's grid: its local shape and where its block
  /// lies in the global tensor.
  Persistent placed(const braid_tensor_desc &desc, const char *kind);

  int64_t calls = 0;

private:
  void placeInput(const braid_tensor_desc &desc, const GlobalInput &global, const char *what);

  Session &s;
  braid_rt *rt;
};

/// The value of `q` (in [0, 1]) among `values`: the ceil(q n)-th smallest.
double percentile(std::vector<double> values, double q);

} // namespace braid::rt::driver

#endif // BRAID_RUNTIME_PROGRAM_CALLS_H
