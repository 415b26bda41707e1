//===- serve_requests.cpp - the requests braid-run --serve reads ----------===//
//
// What serve_requests.h specifies.
//
//===----------------------------------------------------------------------===//

#include "serve_requests.h"

#include "json.h"
#include "rng.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace braid::rt::serve {

namespace {

/// A prompt_len is drawn only up to this when the context is not known.
constexpr int64_t kDrawnPromptBound = int64_t(1) << 24;

/// A value as a refusal quotes it.
std::string describe(const json::Value &v) {
  switch (v.kind) {
  case json::Value::Null:
    return "null";
  case json::Value::Bool:
    return v.boolean ? "true" : "false";
  case json::Value::Number:
    return v.text;
  case json::Value::String:
    return json::quote(v.text);
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "?";
}

std::string mustBe(const std::string &field, const char *what, const json::Value &v) {
  return "field \"" + field + "\" must be " + what + " (got " + describe(v) + ")";
}

/// An integer field in [lo, hi]; a refusal otherwise.
std::string readInt(const json::Value &v, const std::string &field, int64_t lo, int64_t hi,
                    const char *what, int64_t *out) {
  if (!v.asInt(out) || *out < lo || *out > hi)
    return mustBe(field, what, v);
  return "";
}

/// A finite number field in [lo, hi] (lo excluded when `openLow`).
std::string readNumber(const json::Value &v, const std::string &field, double lo, double hi,
                       bool openLow, const char *what, double *out) {
  *out = v.number;
  if (v.kind != json::Value::Number || !std::isfinite(v.number) || v.number < lo ||
      (openLow && v.number == lo) || v.number > hi)
    return mustBe(field, what, v);
  return "";
}

/// The prompt of a "prompt" field: integer ids in [0, vocab).
std::string readPrompt(const json::Value &v, int64_t vocab, std::vector<int32_t> *prompt) {
  if (v.kind != json::Value::Array)
    return mustBe("prompt", "a list of token ids", v);
  for (size_t i = 0; i < v.items.size(); ++i) {
    int64_t id = 0;
    if (!v.items[i].asInt(&id))
      return "prompt[" + std::to_string(i) + "] must be an integer token id (got " +
             describe(v.items[i]) + ")";
    if (id < 0 || id >= vocab || id > std::numeric_limits<int32_t>::max())
      return "token id " + std::to_string(id) + " at prompt[" + std::to_string(i) +
             "] is outside the vocabulary [0, " + std::to_string(vocab) + ")";
    prompt->push_back(int32_t(id));
  }
  return "";
}

/// One field of a request into `r`; a refusal when it is unknown or bad.
std::string readField(const std::string &name, const json::Value &v,
                      const RequestDefaults &defaults, ServeRequest &r, int64_t *promptLen) {
  int64_t i = 0;
  std::string why;
  if (name == "prompt")
    return readPrompt(v, defaults.vocab, &r.prompt);
  if (name == "prompt_len")
    return readInt(v, name, 0, std::numeric_limits<int64_t>::max(), "an integer >= 0", promptLen);
  if (name == "max_new_tokens")
    return readInt(v, name, 1, std::numeric_limits<int32_t>::max(), "an integer >= 1",
                   &r.maxNewTokens);
  if (name == "temperature")
    return readNumber(v, name, 0, HUGE_VAL, false, "a number >= 0", &r.temperature);
  if (name == "top_k")
    return readInt(v, name, 0, std::numeric_limits<int32_t>::max(), "an integer >= 0", &r.topK);
  if (name == "top_p")
    return readNumber(v, name, 0, 1, true, "a number in (0, 1]", &r.topP);
  if (name == "seed") {
    why = readInt(v, name, 0, std::numeric_limits<int64_t>::max(), "an integer >= 0", &i);
    r.seed = uint64_t(i);
    return why;
  }
  if (name == "arrival_ms")
    return readNumber(v, name, 0, HUGE_VAL, false, "a number >= 0", &r.arrivalMs);
  return "unknown field " + json::quote(name);
}

/// prompt_len's prompt: draw j of stream "prompt.<index>" under the run's
/// seed, as --generate draws its prompts (generate_requests.cpp).
std::vector<int32_t> drawnPrompt(uint64_t seed, int64_t index, int64_t length, int64_t vocab) {
  rng::Key key = rng::keyOf(seed, ("prompt." + std::to_string(index)).c_str());
  std::vector<int32_t> prompt;
  prompt.reserve(size_t(length));
  for (int64_t j = 0; j < length; ++j)
    prompt.push_back(int32_t(rng::uniformIntAt(key, uint64_t(j), uint64_t(vocab))));
  return prompt;
}

/// The request of one line's object; its refusal in r.refusal.
std::string readRequest(const json::Value &object, const RequestDefaults &defaults,
                        ServeRequest &r) {
  if (object.kind != json::Value::Object)
    return "malformed line (not a JSON object)";
  for (size_t m = 0; m < object.members.size(); ++m)
    for (size_t k = 0; k < m; ++k)
      if (object.members[k].first == object.members[m].first)
        return "field " + json::quote(object.members[m].first) + " given twice";
  int64_t promptLen = -1;
  for (const auto &[name, value] : object.members)
    if (std::string why = readField(name, value, defaults, r, &promptLen); !why.empty())
      return why;
  bool hasPrompt = object.get("prompt") != nullptr;
  if (hasPrompt == (promptLen >= 0))
    return hasPrompt ? "both prompt and prompt_len given" : "neither prompt nor prompt_len given";
  if (promptLen >= 0) {
    int64_t bound = defaults.context > 0 ? defaults.context : kDrawnPromptBound;
    if (promptLen > bound)
      return "prompt_len " + std::to_string(promptLen) + " is longer than " +
             (defaults.context > 0 ? "the context of " : "the bound of ") + std::to_string(bound);
    if (defaults.vocab < 1)
      return "prompt_len needs a vocabulary to draw from";
    r.prompt = drawnPrompt(defaults.seed, r.index, promptLen, defaults.vocab);
  }
  if (r.prompt.empty())
    return "empty prompt";
  return "";
}

ServeRequest defaultRequest(int64_t index, int64_t line, const RequestDefaults &defaults) {
  ServeRequest r;
  r.index = index;
  r.line = line;
  r.maxNewTokens = defaults.maxNewTokens;
  r.temperature = defaults.temperature;
  r.topK = defaults.topK;
  r.topP = defaults.topP;
  r.seed = defaults.seed + uint64_t(index);
  return r;
}

} // namespace

std::vector<ServeRequest> parseServeRequests(const std::string &text,
                                             const RequestDefaults &defaults) {
  std::vector<ServeRequest> requests;
  std::istringstream in(text);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    ServeRequest r = defaultRequest(int64_t(requests.size()), number, defaults);
    json::Value object;
    std::string error;
    if (!json::parse(line, &object, &error))
      r.refusal = "malformed line (" + error + ")";
    else
      r.refusal = readRequest(object, defaults, r);
    if (!r.refusal.empty())
      r.prompt.clear();
    requests.push_back(std::move(r));
  }
  return requests;
}

bool readServeRequests(const std::string &path, const RequestDefaults &defaults,
                       std::vector<ServeRequest> *requests, std::string *error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  *requests = parseServeRequests(text.str(), defaults);
  return true;
}

std::vector<ServeRequest> poissonRequests(int64_t count, double rate, int64_t minPrompt,
                                          int64_t maxPrompt, int64_t maxNewTokens,
                                          const RequestDefaults &defaults) {
  rng::Key arrival = rng::keyOf(defaults.seed, "arrival");
  rng::Key length = rng::keyOf(defaults.seed, "prompt_len");
  std::vector<ServeRequest> requests;
  double clockMs = 0;
  for (int64_t i = 0; i < count; ++i) {
    ServeRequest r = defaultRequest(i, 0, defaults);
    r.maxNewTokens = maxNewTokens;
    r.arrivalMs = clockMs;
    int64_t span = maxPrompt - minPrompt + 1;
    int64_t len = minPrompt + (span > 1 ? int64_t(rng::uniformIntAt(length, uint64_t(i),
                                                                    uint64_t(span)))
                                        : 0);
    r.prompt = drawnPrompt(defaults.seed, i, len, defaults.vocab);
    requests.push_back(std::move(r));
    // The gap to the next arrival: -ln(u) / rate seconds, u = (x0 + 1) 2^-32
    // in (0, 1] (x0 of draw i of stream "arrival").
    if (rate > 0) {
      double u = (double(rng::bitsAt(arrival, uint64_t(i))[0]) + 1.0) * 0x1p-32;
      clockMs += -std::log(u) / rate * 1000.0;
    }
  }
  return requests;
}

} // namespace braid::rt::serve
