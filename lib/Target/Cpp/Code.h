//===- Code.h - emitted C++ as text and literal slots -----------*- C++ -*-===//
//
// The function emitter builds every statement as data: pieces of text and
// the literals between them (integers, C strings) as slots. The roller
// (EmitRoll.cpp) compares statements by their shape, the text with the slots
// left open, and collects the slots' values into tables, without reading
// printed text back.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_TARGET_CPP_CODE_H
#define BRAID_LIB_TARGET_CPP_CODE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <type_traits>

namespace braid::cpp {
using mlir::ArrayRef;
using mlir::SmallVector;
using mlir::StringRef;

/// A fragment of emitted C++: text, and the literals in it as slots.
/// Adjacent text is kept as one piece, so that two fragments printing the
/// same text with slots at the same places have the same pieces.
class Code {
public:
  enum class Kind : uint8_t { Text, Integer, String };
  struct Piece {
    Kind kind;
    /// The text, or the literal as printed (a string's quoted form).
    std::string text;
    /// An integer slot's value (never negative).
    int64_t value = 0;
  };

  Code() = default;
  Code(StringRef text) { appendText(text); }
  Code(const char *text) : Code(StringRef(text)) {}
  Code(const std::string &text) : Code(StringRef(text)) {}

  /// A decimal integer literal. A negative one is a minus sign before the
  /// slot of its magnitude, so that a slot's values step by a sign-free
  /// difference; one of 19 digits or more is text.
  static Code integer(int64_t value);
  /// The C string literal of `text`.
  static Code string(StringRef text);
  /// `codes` in order, `separator` between them.
  static Code join(ArrayRef<Code> codes, StringRef separator);
  /// A double literal that reads back exactly (`%.17g`). One that prints as
  /// a decimal integer is an integer slot, so that it rolls like one.
  static Code real(double value);

  Code &operator<<(const Code &code);
  Code &operator<<(StringRef text) { return appendText(text); }
  Code &operator<<(const char *text) { return appendText(text); }
  Code &operator<<(const std::string &text) { return appendText(text); }
  /// Integers are slots: what varies between repeated statements.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                 !std::is_same_v<T, char>,
                             int> = 0>
  Code &operator<<(T value) {
    return *this << integer(static_cast<int64_t>(value));
  }

  ArrayRef<Piece> getPieces() const { return pieces; }
  bool empty() const { return pieces.empty(); }
  /// The newlines in its text: the lines a statement spans.
  unsigned countLines() const;
  /// Appends the code to `out`, `indent` before each of its lines.
  void print(std::string &out, StringRef indent = "") const;
  std::string str() const;

private:
  Code &appendText(StringRef text);
  SmallVector<Piece, 4> pieces;
};

inline Code operator+(Code lhs, const Code &rhs) { return std::move(lhs << rhs); }

/// Prints a function body's statements. With `roll`, each run of statement
/// groups that repeat with different literals is one loop over a table of
/// them (EmitRoll.cpp), whose definitions go to `tables`.
std::string printStatements(ArrayRef<Code> statements, bool roll,
                            std::string &tables, unsigned &nextTable);

} // namespace braid::cpp

#endif // BRAID_LIB_TARGET_CPP_CODE_H
