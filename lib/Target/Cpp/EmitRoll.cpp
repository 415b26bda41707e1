//===- EmitRoll.cpp - repeated statements printed as loops over tables ----===//
//
// A step repeats itself: a call per layer, an accumulation, a reduction and
// an update per parameter of each layer, a forward and a backward per
// micro-batch in a pipeline's steady state. Printed op by op, the program
// grows with layers and micro-batches, and the host compiler's time with it
// (GPT-3 175B on pp8 x dp8 x tp8 with 64 micro-batches was millions of
// lines). The roller prints a run of op groups that differ only in their
// integer and string literals (arena offsets, sizes, tags, event slots,
// names) as one loop whose body is the group once: a literal that changes
// from one repetition to the next becomes an affine expression of the loop's
// counter when it steps evenly, else a column of a static table, one row per
// repetition. The statements executed, their arguments and their order are
// those of the unrolled program; only the text is shorter.
//
// Literals are found by scanning the printed text, so every op's printer
// takes part without knowing of the roller: an integer is a decimal literal
// standing alone (not a digit of an identifier such as `kA3`, nor part of a
// floating-point literal), a string a C string literal. An op's text, with
// its literals taken out, is its shape; runs repeat a sequence of shapes.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

namespace braid::cpp {
namespace {

/// A literal taken out of a statement's text.
struct Hole {
  bool isString;
  int64_t value; // An integer's.
  std::string text;
};

/// A statement (the whole text of one op) as its shape (the text with
/// every literal replaced by a marker) and its literals in order.
struct Statement {
  std::string shape;
  SmallVector<Hole> holes;
  unsigned lines = 0;
};

constexpr char kIntMark = '\x01';
constexpr char kStringMark = '\x02';

bool isIdentChar(char c) { return llvm::isAlnum(c) || c == '_'; }

Statement split(StringRef text) {
  Statement s;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '\n')
      ++s.lines;
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"')
        j += text[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, n);
      s.holes.push_back({true, 0, text.slice(i, j).str()});
      s.shape += kStringMark;
      i = j;
      continue;
    }
    bool standsAlone = i == 0 || (!isIdentChar(text[i - 1]) && text[i - 1] != '.');
    if (llvm::isDigit(c) && standsAlone) {
      // A preprocessing number: digits, letters, dots and an exponent's sign.
      size_t j = i;
      while (j < n && (isIdentChar(text[j]) || text[j] == '.' ||
                       ((text[j] == '+' || text[j] == '-') &&
                        (text[j - 1] == 'e' || text[j - 1] == 'E'))))
        ++j;
      StringRef number = text.slice(i, j);
      int64_t value;
      // Decimal integers only (no octal, no suffix), small enough to hold.
      if (number.size() <= 18 && llvm::all_of(number, llvm::isDigit) &&
          (number == "0" || number[0] != '0') &&
          !number.getAsInteger(10, value)) {
        s.holes.push_back({false, value, number.str()});
        s.shape += kIntMark;
      } else {
        s.shape += number;
      }
      i = j;
      continue;
    }
    s.shape += c;
    ++i;
  }
  return s;
}

/// Prints a run of `reps` repetitions of `period` statements from `first`
/// as a loop; its tables go to `tables`.
void printLoop(ArrayRef<Statement> statements, size_t first, size_t period,
               size_t reps, std::string &tables, unsigned &nextTable,
               std::string &out) {
  std::string id = std::to_string(nextTable++);
  std::string intTable = "kRoll" + id, stringTable = "kRollNames" + id;
  SmallVector<SmallVector<std::string>> intRows(reps), stringRows(reps);
  llvm::StringMap<unsigned> intColumns, stringColumns;
  std::string body;
  for (size_t j = 0; j < period; ++j) {
    const Statement &lead = statements[first + j];
    size_t hole = 0;
    std::string text;
    for (char c : lead.shape) {
      if (c != kIntMark && c != kStringMark) {
        text += c;
        continue;
      }
      size_t index = hole++;
      auto at = [&](size_t t) -> const Hole & {
        return statements[first + t * period + j].holes[index];
      };
      const Hole &h0 = at(0);
      bool constant = true;
      for (size_t t = 1; t < reps && constant; ++t)
        constant = at(t).text == h0.text;
      if (constant) {
        text += h0.text;
        continue;
      }
      // A column per distinct sequence of literals: holes that change
      // alike (a buffer's offset at its allocation, its uses and its free)
      // share one.
      auto column = [&](SmallVector<SmallVector<std::string>> &rows,
                        llvm::StringMap<unsigned> &columns) {
        std::string key;
        for (size_t t = 0; t < reps; ++t)
          key += at(t).text + ",";
        auto [it, inserted] = columns.try_emplace(key, rows[0].size());
        if (inserted)
          for (size_t t = 0; t < reps; ++t)
            rows[t].push_back(at(t).text);
        return std::to_string(it->second);
      };
      if (c == kStringMark) {
        text += stringTable + "[rep][" + column(stringRows, stringColumns) + "]";
        continue;
      }
      // An even step becomes `(first + step * rep)`. Differences that
      // overflow are left to the table.
      int64_t step = 0;
      bool even = !llvm::SubOverflow(at(1).value, h0.value, step);
      for (size_t t = 2; t < reps && even; ++t) {
        int64_t d;
        even = !llvm::SubOverflow(at(t).value, at(t - 1).value, d) && d == step;
      }
      if (even) {
        // Literals are unsigned, so -step cannot overflow.
        text += "(" + h0.text +
                (step < 0 ? " - " : " + ") +
                (std::abs(step) == 1 ? "" : std::to_string(std::abs(step)) + " * ") +
                "rep)";
        continue;
      }
      text += intTable + "[rep][" + column(intRows, intColumns) + "]";
    }
    // One level deeper inside the loop.
    for (StringRef line : llvm::split(StringRef(text).rtrim('\n'), '\n'))
      body += "  " + line.str() + "\n";
  }
  auto table = [&](StringRef type, StringRef name,
                   ArrayRef<SmallVector<std::string>> rows) {
    if (rows[0].empty())
      return;
    tables += "  static const " + type.str() + " " + name.str() + "[" +
              std::to_string(reps) + "][" + std::to_string(rows[0].size()) +
              "] = {\n";
    for (const SmallVector<std::string> &row : rows)
      tables += "    {" + llvm::join(row, ", ") + "},\n";
    tables += "  };\n";
  };
  table("int64_t", intTable, intRows);
  table("char *const", stringTable, stringRows);
  out += "  for (int64_t rep = 0; rep < " + std::to_string(reps) +
         "; ++rep) {\n" + body + "  }\n";
}

} // namespace

/// The statements of a function body: its lines, a block (a call's
/// `{ ... }`) kept whole. Braces in string literals do not count.
static SmallVector<StringRef> statementsOf(StringRef text) {
  SmallVector<StringRef> units;
  size_t start = 0;
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '{')
      ++depth;
    else if (c == '}')
      --depth;
    else if (c == '\n' && depth == 0) {
      units.push_back(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.size())
    units.push_back(text.substr(start));
  return units;
}

std::string rollRepeats(StringRef text, std::string &tables,
                        unsigned &nextTable) {
  SmallVector<StringRef> texts = statementsOf(text);
  SmallVector<Statement> statements;
  SmallVector<unsigned> shapes;
  llvm::StringMap<unsigned> shapeIds;
  for (StringRef unit : texts) {
    statements.push_back(split(unit));
    shapes.push_back(
        shapeIds.try_emplace(statements.back().shape, shapeIds.size())
            .first->second);
  }
  // Lines of each prefix of the statements, for a run's saving.
  SmallVector<size_t> linesBefore = {0};
  for (const Statement &s : statements)
    linesBefore.push_back(linesBefore.back() + s.lines);

  // A run is rolled when the loop (its header, its end and a table row per
  // repetition) is shorter than the statements it replaces. Of the runs
  // starting at a statement, the one saving the most lines of code wins,
  // table rows aside, so that the shortest period covering a run is taken
  // (a multiple of it has fewer, longer rows) and the code does not change
  // with the number of repetitions. The longest period tried bounds the
  // search; a step's layer groups are a few hundred statements.
  constexpr size_t kMaxPeriod = 2048;
  std::string out;
  size_t n = statements.size();
  // A period p repeats from i only if statement i + p has i's shape: the
  // periods tried are the distances to the later statements of that shape
  // (ascending), not every p up to the longest.
  SmallVector<SmallVector<unsigned>> positions(shapeIds.size());
  SmallVector<unsigned> occurrence(n);
  for (auto [i, shape] : llvm::enumerate(shapes)) {
    occurrence[i] = positions[shape].size();
    positions[shape].push_back(i);
  }
  for (size_t i = 0; i < n;) {
    size_t bestPeriod = 0, bestReps = 0;
    int64_t bestSaving = 0;
    ArrayRef<unsigned> later = ArrayRef(positions[shapes[i]]).drop_front(occurrence[i] + 1);
    for (unsigned next : later) {
      size_t p = next - i;
      if (p > kMaxPeriod || i + 2 * p > n)
        break;
      size_t reps = 1;
      while (i + (reps + 1) * p <= n &&
             std::equal(shapes.begin() + i, shapes.begin() + i + p,
                        shapes.begin() + i + reps * p))
        ++reps;
      if (reps < 2)
        continue;
      int64_t periodLines = linesBefore[i + p] - linesBefore[i];
      int64_t saving = static_cast<int64_t>(reps - 1) * periodLines - 2;
      if (saving - static_cast<int64_t>(reps) > 0 && saving > bestSaving) {
        bestSaving = saving;
        bestPeriod = p;
        bestReps = reps;
      }
    }
    if (bestPeriod == 0) {
      out += texts[i++].str();
      continue;
    }
    printLoop(statements, i, bestPeriod, bestReps, tables, nextTable, out);
    i += bestPeriod * bestReps;
  }
  return out;
}

} // namespace braid::cpp
