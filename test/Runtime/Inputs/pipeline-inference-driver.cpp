// test/Runtime/pipeline-inference.py's driver: runs the prefill program and
// three decode steps of a binary holding one pipeline stage's inference
// programs (or one rank's) on fixed inputs, and the last rank prints the
// logits. Inputs are whole (grids without dp) and so are the logits (they
// are gathered at the return). Mirrors runtime/src/main.cpp's start and
// driver_generate.cpp's calls, with no sampling: the tokens are fixed, so
// every stage knows them without the logits.
#include "braid/runtime.h"
#include "driver.h"
#include "rt_impl.h"

#include <cstdio>
#include <cstring>
#include <vector>

extern "C" const braid_program *braid_program_get_prefill(void);
extern "C" const braid_program *braid_program_get_decode(void);
extern "C" const braid_program *braid_program_get_forward(void);

using namespace braid::rt::driver;

static int64_t numel(const braid_tensor_desc &d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d.rank; ++i) n *= d.shape[i];
  return n;
}

static void call(Session &s, const braid_program &p, const char *what, int64_t L, int64_t step) {
  braid_rt *rt = s.rt.get();
  for (int32_t i = 0; i < p.num_inputs; ++i) {
    const braid_tensor_desc &d = p.inputs[i];
    std::vector<int32_t> v(size_t(numel(d)));
    int64_t B = d.shape[0];
    for (size_t k = 0; k < v.size(); ++k) {
      int64_t b = int64_t(k) / (int64_t(v.size()) / B);
      if (!strcmp(d.name, "tokens")) v[k] = int32_t((k * 7 + 3 * step + b) % 97);
      else if (!strcmp(d.name, "positions")) v[k] = int32_t(step == 0 ? 0 : L + step - 1);
      else v[k] = int32_t(L - 1 - b % 3); // last rows
    }
    braid_rt_alloc(rt, d.offset, int64_t(v.size()) * 4, d.name);
    rt->backend->copyToDevice(rt->arena + d.offset, v.data(), int64_t(v.size()) * 4);
  }
  int64_t outBytes = p.num_outputs ? numel(p.outputs[0]) * 4 : 0;
  if (outBytes) braid_rt_alloc(rt, p.outputs[0].offset, outBytes, "logits");
  p.step(rt, rt->arena);
  rt->backend->synchronize();
  if (outBytes) {
    std::vector<float> out(size_t(outBytes / 4));
    rt->backend->copyToHost(out.data(), rt->arena + p.outputs[0].offset, outBytes);
    if (s.ranks.rank == s.ranks.size - 1) {
      std::printf("%s %lld:", what, (long long)step);
      for (float x : out) std::printf(" %.9g", x);
      std::printf("\n");
    }
    braid_rt_free(rt, p.outputs[0].offset, outBytes);
  }
  for (int32_t i = 0; i < p.num_inputs; ++i)
    braid_rt_free(rt, p.inputs[i].offset, numel(p.inputs[i]) * 4);
}

int main(int argc, char **argv) {
  Session s;
  s.args = parseArgs(argc, argv);
  s.ranks = startRanks(&argc, &argv);
  s.argv0 = argv[0];
  InferencePrograms programs;
  programs.prefill = braid_program_get_prefill();
  programs.decode = braid_program_get_decode();
  programs.forward = braid_program_get_forward();
  braid_program merged = mergedProgram(programs);
  s.program = &merged;
  s.programName = "harness";
  if (int status = place(s)) return status;
  startRuntime(s);
  if (!initializeState(s)) return s.stop(2);
  int64_t L = programs.prefill->inputs[0].rank == 2 && !strcmp(programs.prefill->inputs[0].name, "tokens")
                  ? programs.prefill->inputs[0].shape[1] : 8;
  if (const char *l = std::getenv("PIPELINE_TEST_PROMPT_LEN")) L = std::atoll(l);
  call(s, *programs.prefill, "prefill", L, 0);
  for (int64_t k = 1; k <= 3; ++k) call(s, *programs.decode, "decode", L, k);
  return s.stop(0);
}
