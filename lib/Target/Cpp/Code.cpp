//===- Code.cpp - emitted C++ as text and literal slots -------------------===//

#include "Code.h"

#include "Emitter.h"

#include "llvm/ADT/StringExtras.h"

namespace braid::cpp {

/// Integers of more digits are text: a table column holds them as int64_t
/// and a loop steps through them without overflow.
constexpr int64_t kSlotLimit = 1'000'000'000'000'000'000;

Code Code::integer(int64_t value) {
  Code code;
  if (value <= -kSlotLimit || value >= kSlotLimit)
    return code << std::to_string(value);
  if (value < 0) {
    code << "-";
    value = -value;
  }
  code.pieces.push_back({Kind::Integer, std::to_string(value), value});
  return code;
}

Code Code::string(StringRef text) {
  Code code;
  code.pieces.push_back({Kind::String, quoted(text), 0});
  return code;
}

Code Code::real(double value) {
  std::string text = literal(value);
  StringRef magnitude = text;
  bool negative = magnitude.consume_front("-");
  int64_t integer;
  // `%.17g` prints an integral value below 1e17 as its decimal digits.
  if (magnitude.size() > 18 || !llvm::all_of(magnitude, llvm::isDigit) ||
      magnitude.getAsInteger(10, integer))
    return Code(text);
  Code code(negative ? "-" : "");
  return code << integer;
}

Code &Code::appendText(StringRef text) {
  if (text.empty())
    return *this;
  if (!pieces.empty() && pieces.back().kind == Kind::Text)
    pieces.back().text += text;
  else
    pieces.push_back({Kind::Text, text.str(), 0});
  return *this;
}

Code &Code::operator<<(const Code &code) {
  for (const Piece &piece : code.pieces) {
    if (piece.kind == Kind::Text)
      appendText(piece.text);
    else
      pieces.push_back(piece);
  }
  return *this;
}

unsigned Code::countLines() const {
  unsigned lines = 0;
  for (const Piece &piece : pieces)
    if (piece.kind == Kind::Text)
      lines += llvm::count(piece.text, '\n');
  return lines;
}

void Code::print(std::string &out, StringRef indent) const {
  out += indent;
  for (auto [i, piece] : llvm::enumerate(pieces)) {
    if (piece.kind != Kind::Text || indent.empty()) {
      out += piece.text;
      continue;
    }
    // Every line the code starts is indented; the end of its last is not
    // the start of one.
    bool last = i + 1 == pieces.size();
    for (auto [k, c] : llvm::enumerate(piece.text)) {
      out += c;
      if (c == '\n' && !(last && k + 1 == piece.text.size()))
        out += indent;
    }
  }
}

std::string Code::str() const {
  std::string out;
  print(out);
  return out;
}

Code Code::join(ArrayRef<Code> codes, StringRef separator) {
  Code joined;
  for (auto [i, code] : llvm::enumerate(codes)) {
    if (i)
      joined << separator;
    joined << code;
  }
  return joined;
}

} // namespace braid::cpp
