//===- generate_requests.cpp - generation's requests and sizes ------------===//
//
// What generate_requests.h specifies.
//
//===----------------------------------------------------------------------===//

#include "generate_requests.h"

#include "generate_logits.h"
#include "generate_ranks.h"
#include "rng.h"
#include "serve_requests.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace braid::rt::driver {

int64_t globalDim(const braid_tensor_desc &desc, int32_t d) {
  return desc.global_shape ? desc.global_shape[d] : desc.shape[d];
}

CacheState cacheStateOf(const std::string &name) {
  auto endsWith = [](const std::string &text, const char *tail) {
    size_t n = std::strlen(tail);
    return text.size() >= n && text.compare(text.size() - n, n, tail) == 0;
  };
  // A micro-batch's copy is cache.<...>.k.mb<j>.
  std::string base = name;
  if (size_t dot = base.rfind(".mb"); dot != std::string::npos &&
                                      base.find_first_not_of("0123456789", dot + 3) == std::string::npos)
    base.resize(dot);
  if (base.rfind("cache.", 0) != 0)
    return CacheState::None;
  if (endsWith(base, ".k") || endsWith(base, ".v"))
    return CacheState::KeysValues;
  if (endsWith(base, ".conv") || endsWith(base, ".ssm"))
    return CacheState::Mamba;
  return CacheState::None;
}

const braid_tensor_desc *findInput(const braid_program &program, const char *name) {
  for (int32_t i = 0; i < program.num_inputs; ++i)
    if (program.inputs[i].name && std::strcmp(program.inputs[i].name, name) == 0)
      return &program.inputs[i];
  return nullptr;
}

namespace {

/// What this rank's programs say of the sizes: a pipeline stage knows part
/// of them (the first stage takes the tokens, the last returns the logits),
/// 0 for the rest.
Shapes localShapes(const InferencePrograms &programs) {
  const braid_program &prefill = *programs.prefill;
  Shapes shapes;
  // The programs' global sizes: a partitioned program's tensors are blocks.
  if (const braid_tensor_desc *positions = findInput(prefill, "positions"))
    shapes.batch = globalDim(*positions, 0);
  if (const braid_tensor_desc *tokens = findInput(prefill, "tokens"))
    shapes.promptLen = globalDim(*tokens, 1);
  if (prefill.num_outputs >= 1 && prefill.outputs[0].rank == 2)
    shapes.vocab = globalDim(prefill.outputs[0], 1);
  for (int32_t i = 0; i < prefill.num_params; ++i)
    if (cacheStateOf(prefill.params[i].name) == CacheState::KeysValues &&
        prefill.params[i].rank >= 2)
      shapes.context = globalDim(prefill.params[i], 1);
  if (!shapes.context && programs.forward)
    if (const braid_tensor_desc *tokens = findInput(*programs.forward, "tokens"))
      shapes.context = globalDim(*tokens, 1);
  for (const braid_program *p : {programs.prefill, programs.decode, programs.forward})
    if (p && p->num_outputs > 0 &&
        (p->num_outputs > (p == programs.forward ? 1 : 2) ||
         !isLogitsType(p->outputs[0].dtype) ||
         (p->num_outputs == 2 && (p->outputs[1].dtype != BRAID_I32 || p->outputs[1].rank != 1)) ||
         (prefill.num_outputs >= 1 && p->outputs[0].dtype != prefill.outputs[0].dtype)))
      fatal("generation reads logits of one float type; program %s's are not prefill's",
            p->name ? p->name : "?");
  if (prefill.num_outputs >= 1)
    shapes.logitsDtype = prefill.outputs[0].dtype;
  shapes.layers = cacheLayers(prefill);
  return shapes;
}

/// A line of --prompts: token ids separated by blanks; a refusal otherwise.
Request parsePromptLine(const std::string &line, int64_t index) {
  Request request;
  request.index = index;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    char *end = nullptr;
    errno = 0;
    long long id = std::strtoll(word.c_str(), &end, 10);
    if (errno || *end || word.empty()) {
      request.refusal = "malformed line (token '" + word + "' is not an integer)";
      return request;
    }
    if (id < INT32_MIN || id > INT32_MAX) {
      request.refusal = "token id " + word + " is outside the vocabulary";
      return request;
    }
    request.prompt.push_back(int32_t(id));
  }
  return request;
}

} // namespace

Shapes shapesOf(Session &s, const InferencePrograms &programs) {
  Shapes shapes = localShapes(programs);
  std::vector<int32_t> known = {int32_t(shapes.batch), int32_t(shapes.promptLen),
                                int32_t(shapes.vocab), int32_t(shapes.context),
                                shapes.vocab ? int32_t(shapes.logitsDtype) : -1};
  maxOverRanks(s.rt.get(), known);
  shapes.batch = known[0];
  shapes.promptLen = known[1];
  shapes.vocab = known[2];
  shapes.context = known[3];
  shapes.logitsDtype = braid_dtype(std::max(known[4], 0));
  shapes.layers = sumOverStages(s.rt.get(), shapes.layers);
  if (!shapes.batch || !shapes.promptLen || !shapes.vocab)
    fatal("the generation programs do not take tokens [B, L] and return logits [B, V] "
          "(prefill: batch %lld, prompt length %lld, vocabulary %lld)",
          (long long)shapes.batch, (long long)shapes.promptLen, (long long)shapes.vocab);
  if (!shapes.context)
    fatal("the generation programs have no KV cache (cache.*) to size the context by");
  return shapes;
}

namespace {

/// The run's sampling options as braid.sample reads them (f32).
SamplingOptions runOptions(const Args &args) {
  SamplingOptions options;
  options.temperature = double(float(args.temperature));
  options.topK = args.topK;
  options.topP = double(float(args.topP));
  return options;
}

/// A JSON-lines --prompts file: each line's own output length, sampling and
/// seed (serve_requests.h), so that a request served with others can be
/// generated alone with the same ones.
std::vector<Request> jsonRequests(const Session &s, const Shapes &shapes,
                                  const std::string &text) {
  serve::RequestDefaults defaults = requestDefaultsOf(s.args, shapes.vocab, shapes.context);
  std::vector<Request> requests;
  for (const serve::ServeRequest &line : serve::parseServeRequests(text, defaults)) {
    Request &request = requests.emplace_back();
    request.index = line.index;
    request.line = line.line;
    request.prompt = line.prompt;
    request.refusal = line.refusal;
    request.maxNewTokens = line.maxNewTokens;
    request.sampling = {double(float(line.temperature)), line.topK, double(float(line.topP))};
    request.seed = line.seed;
  }
  return requests;
}

} // namespace

serve::RequestDefaults requestDefaultsOf(const Args &args, int64_t vocab, int64_t context) {
  serve::RequestDefaults defaults;
  defaults.vocab = vocab;
  defaults.context = context;
  defaults.maxNewTokens = args.generate;
  defaults.temperature = args.temperature;
  defaults.topK = args.topK;
  defaults.topP = args.topP;
  defaults.seed = args.seed;
  return defaults;
}

ServeShapes serveShapesOf(const InferencePrograms &programs) {
  const braid_program &prefill = *programs.prefill, &decode = *programs.decode;
  const braid_tensor_desc *prefillTokens = findInput(prefill, "tokens"),
                          *decodeTokens = findInput(decode, "tokens"),
                          *pages = findInput(decode, "pages");
  // A model without attention layers (Mamba) has no pages to address.
  if (!prefillTokens || !decodeTokens || !findInput(decode, "last_rows") ||
      prefill.num_outputs != 2 || decode.num_outputs != 2)
    fatal("--serve needs prefill and decode programs with a paged KV cache and sampling "
          "(braid-run --serve builds them; --braid-derive-inference page-size=P sample=true)");
  ServeShapes shapes;
  shapes.prefillRows = globalDim(*prefillTokens, 0);
  shapes.chunk = globalDim(*prefillTokens, 1);
  shapes.decodeRows = globalDim(*decodeTokens, 0);
  shapes.tableEntries = pages ? globalDim(*pages, 1) : 1;
  shapes.slots = findInput(prefill, "slots") != nullptr;
  shapes.vocab = globalDim(prefill.outputs[0], 1);
  shapes.logitsDtype = prefill.outputs[0].dtype;
  for (int32_t i = 0; i < prefill.num_params; ++i) {
    const braid_tensor_desc &state = prefill.params[i];
    const CacheState kind = cacheStateOf(state.name);
    shapes.mamba |= kind == CacheState::Mamba;
    if (kind == CacheState::KeysValues && state.rank == 4) { // a pool [N, P, Hkv, D]
      shapes.pages = globalDim(state, 0);
      shapes.pageSize = globalDim(state, 1);
    }
  }
  if (!shapes.pages) {
    // No attention layer (Mamba only): the pages are addressed by no one;
    // the context is the forward program's, one page per position.
    const braid_tensor_desc *forwardTokens =
        programs.forward ? findInput(*programs.forward, "tokens") : nullptr;
    if (!forwardTokens)
      fatal("--serve: a model without attention layers needs its forward program to size "
            "the context");
    shapes.pageSize = globalDim(*forwardTokens, 1);
    shapes.pages = shapes.decodeRows * shapes.tableEntries;
  }
  shapes.context = shapes.pageSize * shapes.tableEntries;
  for (const braid_program *mixed : programs.mixed) {
    const braid_tensor_desc *mixedTokens = findInput(*mixed, "tokens"),
                            *logitRows = findInput(*mixed, "logit_rows");
    if (!mixedTokens || !logitRows || !findInput(*mixed, "pages") || mixed->num_outputs != 2)
      fatal("--serve: a mixed program needs tokens, pages and logit_rows and returns logits "
            "and ids (--braid-derive-inference mixed-rows=M)");
    serve::MixedShape m{globalDim(*mixedTokens, 0), globalDim(*logitRows, 0)};
    if (m.groups < shapes.decodeRows + shapes.prefillRows || m.rows % m.groups ||
        m.rows <= shapes.tokenBudget())
      fatal("--serve: a mixed program's %lld rows in %lld groups cannot hold %lld decode rows "
            "and %lld prompt chunks, or the programs are not in increasing size",
            (long long)m.rows, (long long)m.groups, (long long)shapes.decodeRows,
            (long long)shapes.prefillRows);
    shapes.mixed.push_back(m);
  }
  return shapes;
}

std::vector<Request> readRequests(Session &s, const Shapes &shapes) {
  std::vector<Request> requests;
  if (!s.args.promptsFile.empty()) {
    std::ifstream in(s.args.promptsFile);
    if (!in) {
      s.stop(2);
      badArgs(s.argv0, "cannot read --prompts " + s.args.promptsFile);
    }
    std::stringstream text;
    text << in.rdbuf();
    const std::string all = text.str();
    size_t first = all.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && all[first] == '{')
      return jsonRequests(s, shapes, all);
    std::istringstream lines(all);
    std::string line;
    for (int64_t index = 0; std::getline(lines, line); ++index) {
      requests.push_back(parsePromptLine(line, index));
      requests.back().maxNewTokens = s.args.generate;
      requests.back().sampling = runOptions(s.args);
      requests.back().seed = s.args.seed + uint64_t(index);
    }
    return requests;
  }
  // By default as long as prefill takes, leaving room for N - 1 more rows.
  int64_t length = s.args.promptLen
                       ? s.args.promptLen
                       : std::max<int64_t>(1, std::min(shapes.promptLen,
                                                       shapes.context - s.args.generate + 1));
  for (int64_t r = 0; r < shapes.batch; ++r) {
    Request &request = requests.emplace_back();
    request.index = r;
    request.maxNewTokens = s.args.generate;
    request.sampling = runOptions(s.args);
    request.seed = s.args.seed + uint64_t(r);
    rng::Key key = rng::keyOf(s.args.seed, ("prompt." + std::to_string(r)).c_str());
    for (int64_t j = 0; j < length; ++j)
      request.prompt.push_back(int32_t(rng::uniformIntAt(key, uint64_t(j), uint64_t(shapes.vocab))));
  }
  return requests;
}

std::string refusalOf(const Request &request, const Shapes &shapes) {
  const int64_t generate = request.maxNewTokens;
  if (!request.refusal.empty())
    return request.refusal;
  int64_t length = int64_t(request.prompt.size());
  if (length == 0)
    return "empty prompt";
  if (length > shapes.promptLen)
    return "prompt of " + std::to_string(length) + " tokens is longer than the prefill " +
           "program's " + std::to_string(shapes.promptLen);
  for (int32_t id : request.prompt)
    if (id < 0 || id >= shapes.vocab)
      return "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(shapes.vocab) + ")";
  if (length + generate - 1 > shapes.context)
    return "prompt of " + std::to_string(length) + " tokens plus " + std::to_string(generate) +
           " generated exceeds the context of " + std::to_string(shapes.context) +
           " (prompt + N - 1 > context)";
  return "";
}

} // namespace braid::rt::driver
