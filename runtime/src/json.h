//===- json.h - the JSON the runtime reads and writes -----------*- C++ -*-===//
//
// Checkpoints describe themselves in JSON (manifest.json, each rank's index,
// the safetensors headers), and serving reads its requests as JSON lines.
// nlohmann-json reads RFC 8259 JSON (json.cpp) into this Value, which keeps
// members in order and each number's literal, and writes string literals.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_JSON_H
#define BRAID_RUNTIME_JSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace braid::rt::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Null;
  bool boolean = false;
  double number = 0;
  /// A string's text; a number's literal (integers read exactly from it).
  std::string text;
  std::vector<Value> items;                           ///< Array
  std::vector<std::pair<std::string, Value>> members; ///< Object, in order

  /// The member `key` of an object, or null.
  const Value *get(const std::string &key) const;
  /// A number written as an integer that fits int64_t.
  bool asInt(int64_t *out) const;
};

/// Parses a whole document; false with a message (the byte offset of the
/// problem) in `error`.
bool parse(const std::string &text, Value *out, std::string *error);

/// `s` as a JSON string literal, quotes included.
std::string quote(const std::string &s);

} // namespace braid::rt::json

#endif // BRAID_RUNTIME_JSON_H
