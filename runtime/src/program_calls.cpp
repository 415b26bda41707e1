//===- program_calls.cpp - one call of an inference program ---------------===//

#include "program_calls.h"

#include "generate_logits.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace braid::rt::driver {

namespace {

int64_t numel(const braid_tensor_desc &desc) {
  int64_t n = 1;
  for (int32_t d = 0; d < desc.rank; ++d)
    n *= desc.shape[d];
  return n;
}

/// The elements of the global tensor `desc` is (a block of).
int64_t globalNumel(const braid_tensor_desc &desc) {
  int64_t n = 1;
  for (int32_t d = 0; d < desc.rank; ++d)
    n *= desc.global_shape ? desc.global_shape[d] : desc.shape[d];
  return n;
}

} // namespace

CallInputs &CallInputs::addSample(const SampleInputs *sample) {
  if (!sample)
    return *this;
  return add("seeds", &sample->seeds)
      .add("steps", &sample->steps)
      .add("temperature", &sample->temperature)
      .add("top_k", &sample->topK)
      .add("top_p", &sample->topP);
}

GlobalInput CallInputs::named(const char *name, const char *what) const {
  std::string input = name ? name : "";
  for (const auto &[given, values] : inputs)
    if (given == input)
      return values;
  fatal("%s: the program takes an input '%s' that this call does not give it", what,
        input.c_str());
}

ProgramCaller::Launched ProgramCaller::launch(const braid_program &program,
                                              const CallInputs &inputs, const char *what) {
  ++calls;
  for (int32_t i = 0; i < program.num_inputs; ++i)
    placeInput(program.inputs[i], inputs.named(program.inputs[i].name, what), what);
  Launched launched;
  if (program.num_outputs >= 1) {
    launched.out = program.outputs[0];
    launched.out.name = "logits";
    launched.logits = placed(launched.out, "output");
    braid_rt_alloc(rt, launched.out.offset, launched.logits->bytes, "logits");
  }
  // braid.sample's ids [B] (i32), after the logits.
  if (program.num_outputs == 2) {
    launched.idsOut = program.outputs[1];
    launched.idsOut.name = "ids";
    launched.ids = placed(launched.idsOut, "output");
    braid_rt_alloc(rt, launched.idsOut.offset, launched.ids->bytes, "ids");
  }
  rt->step = calls;
  setCurrentStep(calls);
  program.step(rt, rt->arena);
  rt->backend->synchronize();
  return launched;
}

void ProgramCaller::release(const braid_program &program, const Launched &launched,
                            const char *what) {
  if (launched.ids)
    braid_rt_free(rt, launched.idsOut.offset, launched.ids->bytes);
  if (launched.logits)
    braid_rt_free(rt, launched.out.offset, launched.logits->bytes);
  for (int32_t i = 0; i < program.num_inputs; ++i)
    braid_rt_free(rt, program.inputs[i].offset,
                  numel(program.inputs[i]) * braid_dtype_size(program.inputs[i].dtype));
  checkReturned(s, what, calls);
}

std::vector<int32_t> ProgramCaller::ids(const Launched &launched) {
  std::vector<char> whole = gatherGlobal(rt, "ids", rt->arena + launched.idsOut.offset,
                                         BRAID_I32, launched.ids->layout);
  std::vector<int32_t> ids(whole.size() / sizeof(int32_t));
  std::memcpy(ids.data(), whole.data(), whole.size());
  return ids;
}

std::vector<float> ProgramCaller::logits(const Launched &launched) {
  const braid_tensor_desc &out = launched.out;
  std::vector<char> whole =
      gatherGlobal(rt, "logits", rt->arena + out.offset, out.dtype, launched.logits->layout);
  return logitsAsF32(whole.data(), int64_t(whole.size()) / braid_dtype_size(out.dtype),
                     out.dtype);
}

Persistent ProgramCaller::placed(const braid_tensor_desc &desc, const char *kind) {
  Persistent p;
  std::string error;
  if (!describe(desc, kind, s.grid, &p, &error))
    fatal("%s", error.c_str());
  return p;
}

/// Writes this rank's block of the global tensor `global` to the input
/// `desc`'s buffer (padding zero).
void ProgramCaller::placeInput(const braid_tensor_desc &desc, const GlobalInput &global,
                               const char *what) {
  if (int64_t(global.count) != globalNumel(desc) ||
      global.elementBytes != braid_dtype_size(desc.dtype))
    fatal("%s: input %s takes %lld elements of %lld bytes, given %zu of %lld", what, desc.name,
          (long long)globalNumel(desc), (long long)braid_dtype_size(desc.dtype), global.count,
          (long long)global.elementBytes);
  Persistent p = placed(desc, "input");
  std::vector<char> local(size_t(p.bytes), 0);
  std::vector<int64_t> globalShape = p.layout.global;
  for (const Placed &box : localSlice(rt, p).boxes)
    copyBox({static_cast<const char *>(global.data), globalShape, box.global.start, 0,
             local.data(), p.shape, box.local, 0, box.global.shape, global.elementBytes});
  braid_rt_alloc(rt, desc.offset, p.bytes, desc.name);
  rt->backend->copyToDevice(rt->arena + desc.offset, local.data(), p.bytes);
}

double percentile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t at = size_t(std::ceil(q * double(values.size()))) - (q > 0 ? 1 : 0);
  return values[std::min(at, values.size() - 1)];
}

} // namespace braid::rt::driver
