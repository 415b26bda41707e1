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

/// Reads fields of a JSON object, remembering the first that is missing or
/// malformed: "WHERE: no string 'name'", "WHERE: 'step' is not an integer".
class Fields {
public:
  Fields(const Value &object, std::string where) : object_(object), where_(std::move(where)) {}

  /// The member `name` when it is of `kind`; else null, the failure noted.
  const Value *field(const char *name, Value::Kind kind);
  void string(const char *name, std::string *out);
  void integer(const char *name, int64_t *out);
  void boolean(const char *name, bool *out);
  /// A list of non-negative integers (a shape, a start).
  void shape(const char *name, std::vector<int64_t> *out);
  void fail(const std::string &message);
  /// True when nothing failed; else false with the first failure.
  bool ok(std::string *error) const;

private:
  const Value &object_;
  std::string where_;
  std::string error_;
};

/// Parses a whole document; false with a message (the byte offset of the
/// problem) in `error`.
bool parse(const std::string &text, Value *out, std::string *error);

/// `s` as a JSON string literal, quotes included.
std::string quote(const std::string &s);

} // namespace braid::rt::json

#endif // BRAID_RUNTIME_JSON_H
