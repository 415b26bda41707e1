//===- json.cpp - the JSON the runtime reads and writes -------------------===//
//
// nlohmann-json (Debian's nlohmann-json3-dev, header-only) reads and checks
// the text: RFC 8259, UTF-8 validated, \uXXXX escapes and surrogate pairs
// decoded. Its SAX interface builds the runtime's own Value here rather than
// an nlohmann::json, so that the readers (checkpoints, requests, plans) keep
// their member order and the literal of each number, and so that no
// exception crosses the runtime: a syntax error arrives as a callback.
//
//===----------------------------------------------------------------------===//

#include "json.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>

namespace braid::rt::json {

const Value *Value::get(const std::string &key) const {
  if (kind != Object)
    return nullptr;
  for (const auto &[name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

bool Value::asInt(int64_t *out) const {
  if (kind != Number || text.find_first_of(".eE") != std::string::npos)
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || !end || *end)
    return false;
  *out = v;
  return true;
}

namespace {

using Json = nlohmann::json;

/// Builds a Value from nlohmann's SAX events. Nesting is bounded: Value's
/// destructor recurses, so a corrupt file must not nest without end.
class Builder {
public:
  explicit Builder(Value *root) : root_(root) {}

  bool null() { return add(Value()); }
  bool boolean(bool b) {
    Value v;
    v.kind = Value::Bool;
    v.boolean = b;
    return add(std::move(v));
  }
  bool number_integer(Json::number_integer_t n) { return integer(std::to_string(n), double(n)); }
  bool number_unsigned(Json::number_unsigned_t n) {
    return integer(std::to_string(n), double(n));
  }
  bool number_float(Json::number_float_t n, const std::string &literal) {
    Value v;
    v.kind = Value::Number;
    v.number = n;
    v.text = literal;
    return add(std::move(v));
  }
  bool string(std::string &s) {
    Value v;
    v.kind = Value::String;
    v.text = std::move(s);
    return add(std::move(v));
  }
  bool binary(Json::binary_t &) { return fail("binary data"); }
  bool start_object(std::size_t) { return open(Value::Object); }
  bool key(std::string &name) {
    stack_.back()->members.emplace_back(std::move(name), Value());
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Value::Array); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &error) {
    // "[json.exception.parse_error.101] parse error at line 1, column 17:
    // syntax error while parsing array - unexpected end of input; expected
    // ']'": the reason, and the byte where reading stopped.
    std::string what = error.what(), context;
    if (size_t colon = what.find(": "); colon != std::string::npos)
      what = what.substr(colon + 2);
    if (what.rfind("syntax error while parsing ", 0) == 0) {
      size_t dash = what.find(" - ");
      if (dash != std::string::npos) {
        context = what.substr(27, dash - 27);
        what = what.substr(dash + 3);
      }
    }
    const std::string byte = "byte " + std::to_string(position > 0 ? position - 1 : 0);
    message_ = what + (context.empty() ? " at " + byte : " (in " + context + ", at " + byte + ")");
    return false;
  }

  const std::string &message() const { return message_; }

private:
  static constexpr size_t kMaxDepth = 64;

  bool fail(const char *what) {
    message_ = what;
    return false;
  }

  bool integer(std::string literal, double n) {
    Value v;
    v.kind = Value::Number;
    v.number = n;
    v.text = std::move(literal);
    return add(std::move(v));
  }

  /// Where the next value goes: the root, the open array's next item or the
  /// open object's last key.
  Value *slot() {
    if (stack_.empty())
      return root_;
    Value *open = stack_.back();
    if (open->kind == Value::Array) {
      open->items.emplace_back();
      return &open->items.back();
    }
    return &open->members.back().second;
  }

  bool add(Value v) {
    *slot() = std::move(v);
    return true;
  }

  // A container is filled in place; its parent gets no other child while it
  // is open, so the pointers on the stack stay valid.
  bool open(Value::Kind kind) {
    if (stack_.size() >= kMaxDepth)
      return fail("nesting too deep");
    Value *v = slot();
    v->kind = kind;
    stack_.push_back(v);
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  Value *root_;
  std::vector<Value *> stack_;
  std::string message_;
};

} // namespace

const Value *Fields::field(const char *name, Value::Kind kind) {
  const Value *v = object_.get(name);
  if (v && v->kind == kind)
    return v;
  const char *what = kind == Value::String   ? "string"
                     : kind == Value::Number ? "number"
                     : kind == Value::Array  ? "array"
                     : kind == Value::Bool   ? "boolean"
                                             : "value";
  fail(std::string("no ") + what + " '" + name + "'");
  return nullptr;
}

void Fields::string(const char *name, std::string *out) {
  if (const Value *v = field(name, Value::String))
    *out = v->text;
}

void Fields::integer(const char *name, int64_t *out) {
  const Value *v = field(name, Value::Number);
  if (v && !v->asInt(out))
    fail(std::string("'") + name + "' is not an integer");
}

void Fields::boolean(const char *name, bool *out) {
  if (const Value *v = field(name, Value::Bool))
    *out = v->boolean;
}

void Fields::shape(const char *name, std::vector<int64_t> *out) {
  const Value *v = field(name, Value::Array);
  if (!v)
    return;
  out->clear();
  for (const Value &item : v->items) {
    int64_t n;
    if (!item.asInt(&n) || n < 0)
      return fail(std::string("'") + name + "' is not a list of sizes");
    out->push_back(n);
  }
}

void Fields::fail(const std::string &message) {
  if (error_.empty())
    error_ = where_ + ": " + message;
}

bool Fields::ok(std::string *error) const {
  if (error_.empty())
    return true;
  *error = error_;
  return false;
}

bool parse(const std::string &text, Value *out, std::string *error) {
  *out = Value();
  Builder builder(out);
  if (Json::sax_parse(text, &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                      /*ignore_comments=*/false))
    return true;
  *out = Value();
  *error = builder.message().empty() ? "malformed JSON" : builder.message();
  return false;
}

std::string quote(const std::string &s) {
  // Bytes that are not UTF-8 become U+FFFD rather than an invalid document.
  return Json(s).dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

} // namespace braid::rt::json
