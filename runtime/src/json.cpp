//===- json.cpp - the JSON the runtime reads and writes -------------------===//

#include "json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

/// A recursive-descent reader; nesting is bounded so that a corrupt file
/// cannot exhaust the stack.
class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  bool document(Value *out, std::string *error) {
    if (!value(out, 0) || (skip(), pos_ != text_.size())) {
      if (message_.empty())
        message_ = "unexpected text";
      *error = message_ + " at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

private:
  static constexpr int kMaxDepth = 64;

  void skip() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) && text_[pos_])
      ++pos_;
  }

  /// Steps over `c` when it comes next.
  bool consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c)
      return false;
    ++pos_;
    return true;
  }

  bool fail(const char *message) {
    message_ = message;
    return false;
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return fail("unexpected text");
    pos_ += n;
    return true;
  }

  bool value(Value *out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting too deep");
    skip();
    if (pos_ >= text_.size())
      return fail("unexpected end");
    char c = text_[pos_];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out->kind = Value::String;
      return string(&out->text);
    }
    if (c == 't' || c == 'f') {
      out->kind = Value::Bool;
      out->boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out->kind = Value::Null;
      return literal("null");
    }
    return number(out);
  }

  bool number(Value *out) {
    size_t begin = pos_;
    consume('-');
    while (pos_ < text_.size() && std::strchr("0123456789.eE+-", text_[pos_]) && text_[pos_])
      ++pos_;
    out->kind = Value::Number;
    out->text = text_.substr(begin, pos_ - begin);
    char *end = nullptr;
    out->number = std::strtod(out->text.c_str(), &end);
    if (out->text.empty() || !end || *end)
      return fail("malformed number");
    return true;
  }

  static void appendUtf8(std::string *s, uint32_t code) {
    if (code < 0x80) {
      *s += char(code);
    } else if (code < 0x800) {
      *s += char(0xC0 | (code >> 6));
      *s += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *s += char(0xE0 | (code >> 12));
      *s += char(0x80 | ((code >> 6) & 0x3F));
      *s += char(0x80 | (code & 0x3F));
    } else {
      *s += char(0xF0 | (code >> 18));
      *s += char(0x80 | ((code >> 12) & 0x3F));
      *s += char(0x80 | ((code >> 6) & 0x3F));
      *s += char(0x80 | (code & 0x3F));
    }
  }

  bool hex4(uint32_t *code) {
    if (pos_ + 4 > text_.size())
      return fail("unexpected end");
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0)
        return fail("malformed \\u escape");
      *code = *code * 16 + uint32_t(digit);
    }
    return true;
  }

  bool string(std::string *out) {
    ++pos_; // the opening quote
    out->clear();
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        *out += e;
        break;
      case 'b':
        *out += '\b';
        break;
      case 'f':
        *out += '\f';
        break;
      case 'n':
        *out += '\n';
        break;
      case 'r':
        *out += '\r';
        break;
      case 't':
        *out += '\t';
        break;
      case 'u': {
        uint32_t code;
        if (!hex4(&code))
          return false;
        // A surrogate pair encodes a code point past the BMP.
        if (code >= 0xD800 && code < 0xDC00 && text_.compare(pos_, 2, "\\u") == 0) {
          pos_ += 2;
          uint32_t low;
          if (!hex4(&low))
            return false;
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return fail("unknown escape in a string");
      }
    }
    return fail("unterminated string");
  }

  bool array(Value *out, int depth) {
    out->kind = Value::Array;
    ++pos_;
    skip();
    if (consume(']'))
      return true;
    while (true) {
      out->items.emplace_back();
      if (!value(&out->items.back(), depth + 1))
        return false;
      skip();
      if (consume(','))
        continue;
      if (consume(']'))
        return true;
      return fail("expected ',' or ']'");
    }
  }

  bool object(Value *out, int depth) {
    out->kind = Value::Object;
    ++pos_;
    skip();
    if (consume('}'))
      return true;
    while (true) {
      skip();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail("expected a member name");
      std::string key;
      if (!string(&key))
        return false;
      skip();
      if (!consume(':'))
        return fail("expected ':'");
      out->members.emplace_back(std::move(key), Value());
      if (!value(&out->members.back().second, depth + 1))
        return false;
      skip();
      if (consume(','))
        continue;
      if (consume('}'))
        return true;
      return fail("expected ',' or '}'");
    }
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string message_;
};

} // namespace

bool parse(const std::string &text, Value *out, std::string *error) {
  *out = Value();
  return Parser(text).document(out, error);
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

} // namespace braid::rt::json
