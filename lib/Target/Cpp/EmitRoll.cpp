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
// The emitter builds each statement as data (Code: text and literal slots),
// so every op's printer takes part without knowing of the roller. A
// statement's text with its slots left open is its shape; runs repeat a
// sequence of shapes.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"

namespace braid::cpp {
namespace {

using Piece = Code::Piece;

/// Prints a run of `reps` repetitions of `period` statements from `first`
/// as a loop; its tables go to `tables`.
void printLoop(ArrayRef<Code> statements, size_t first, size_t period,
               size_t reps, std::string &tables, unsigned &nextTable,
               std::string &out) {
  std::string id = std::to_string(nextTable++);
  std::string intTable = "kRoll" + id, stringTable = "kRollNames" + id;
  SmallVector<SmallVector<std::string>> intRows(reps), stringRows(reps);
  llvm::StringMap<unsigned> intColumns, stringColumns;
  std::string body;
  for (size_t j = 0; j < period; ++j) {
    ArrayRef<Piece> lead = statements[first + j].getPieces();
    Code rolled;
    for (auto [index, piece] : llvm::enumerate(lead)) {
      if (piece.kind == Code::Kind::Text) {
        rolled << piece.text;
        continue;
      }
      // Repetitions have the lead's shape: the same pieces.
      auto at = [&, index = index](size_t t) -> const Piece & {
        return statements[first + t * period + j].getPieces()[index];
      };
      const Piece &p0 = at(0);
      bool constant = true;
      for (size_t t = 1; t < reps && constant; ++t)
        constant = at(t).text == p0.text;
      if (constant) {
        rolled << p0.text;
        continue;
      }
      // A column per distinct sequence of literals: slots that change
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
      if (piece.kind == Code::Kind::String) {
        rolled << stringTable + "[rep][" + column(stringRows, stringColumns) +
                      "]";
        continue;
      }
      // An even step becomes `(first + step * rep)`. Differences that
      // overflow are left to the table.
      int64_t step = 0;
      bool even = !llvm::SubOverflow(at(1).value, p0.value, step);
      for (size_t t = 2; t < reps && even; ++t) {
        int64_t d;
        even = !llvm::SubOverflow(at(t).value, at(t - 1).value, d) && d == step;
      }
      if (even) {
        // Slots are not negative, so -step cannot overflow.
        rolled << "(" + p0.text + (step < 0 ? " - " : " + ") +
                      (std::abs(step) == 1
                           ? ""
                           : std::to_string(std::abs(step)) + " * ") +
                      "rep)";
        continue;
      }
      rolled << intTable + "[rep][" + column(intRows, intColumns) + "]";
    }
    // One level deeper inside the loop.
    rolled.print(body, "  ");
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

/// A statement's shape: its text with a marker for each slot.
std::string shapeOf(const Code &statement) {
  std::string shape;
  for (const Piece &piece : statement.getPieces())
    switch (piece.kind) {
    case Code::Kind::Text:
      shape += piece.text;
      break;
    case Code::Kind::Integer:
      shape += '\x01';
      break;
    case Code::Kind::String:
      shape += '\x02';
      break;
    }
  return shape;
}

/// `reps` repetitions of a group of `period` statements.
struct Run {
  size_t period = 0, reps = 0;
};

/// The statements' shapes, and where each shape recurs.
class Roller {
public:
  explicit Roller(ArrayRef<Code> statements) : statements(statements) {
    llvm::StringMap<unsigned> shapeIds;
    for (const Code &s : statements) {
      shapes.push_back(
          shapeIds.try_emplace(shapeOf(s), shapeIds.size()).first->second);
      linesBefore.push_back(linesBefore.back() + s.countLines());
    }
    positions.resize(shapeIds.size());
    for (auto [i, shape] : llvm::enumerate(shapes)) {
      occurrence.push_back(positions[shape].size());
      positions[shape].push_back(i);
    }
  }

  std::string print(std::string &tables, unsigned &nextTable) {
    std::string out;
    for (size_t i = 0, n = statements.size(); i < n;) {
      Run run = bestRun(i);
      if (run.period == 0) {
        statements[i++].print(out);
        continue;
      }
      printLoop(statements, i, run.period, run.reps, tables, nextTable, out);
      i += run.period * run.reps;
    }
    return out;
  }

private:
  /// The best run starting at statement `i`, or a period of 0 when no run
  /// saves lines.
  ///
  /// A run is rolled when the loop (its header, its end and a table row per
  /// repetition) is shorter than the statements it replaces. Of the runs
  /// starting at a statement, the one saving the most lines of code wins,
  /// table rows aside, so that the shortest period covering a run is taken
  /// (a multiple of it has fewer, longer rows) and the code does not change
  /// with the number of repetitions.
  Run bestRun(size_t i) const {
    // The longest period tried bounds the search; a step's layer groups
    // are a few hundred statements.
    constexpr size_t kMaxPeriod = 2048;
    size_t n = statements.size();
    Run best;
    int64_t bestSaving = 0;
    // A period p repeats from i only if statement i + p has i's shape: the
    // periods tried are the distances to the later statements of that
    // shape (ascending), not every p up to the longest.
    ArrayRef<unsigned> later =
        ArrayRef(positions[shapes[i]]).drop_front(occurrence[i] + 1);
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
        best = {p, reps};
      }
    }
    return best;
  }

  ArrayRef<Code> statements;
  /// Each statement's shape, numbered.
  SmallVector<unsigned> shapes;
  /// Lines of each prefix of the statements, for a run's saving.
  SmallVector<size_t> linesBefore = {0};
  /// The statements of each shape, in order, and each statement's place
  /// among those of its shape.
  SmallVector<SmallVector<unsigned>> positions;
  SmallVector<unsigned> occurrence;
};

} // namespace

std::string printStatements(ArrayRef<Code> statements, bool roll,
                            std::string &tables, unsigned &nextTable) {
  if (roll)
    return Roller(statements).print(tables, nextTable);
  std::string out;
  for (const Code &statement : statements)
    statement.print(out);
  return out;
}

} // namespace braid::cpp
