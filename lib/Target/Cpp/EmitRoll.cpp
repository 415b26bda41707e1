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
/// as a loop whose body is the first repetition, each of its slots resolved
/// across the repetitions.
class LoopPrinter {
public:
  LoopPrinter(ArrayRef<Code> statements, size_t first, size_t period,
              size_t reps, unsigned id)
      : statements(statements), first(first), period(period), reps(reps),
        intTable("kRoll" + std::to_string(id)),
        stringTable("kRollNames" + std::to_string(id)), intRows(reps),
        stringRows(reps) {}

  /// Appends the loop to `out` and its tables to `tables`.
  void print(std::string &tables, std::string &out) {
    std::string body;
    for (size_t j = 0; j < period; ++j) {
      Code rolled;
      for (auto [index, piece] : llvm::enumerate(at(0, j)))
        rolled << (piece.kind == Code::Kind::Text ? piece.text
                                                  : rollSlot(j, index));
      // One level deeper inside the loop.
      rolled.print(body, "  ");
    }
    printTable("int64_t", intTable, intRows, tables);
    printTable("char *const", stringTable, stringRows, tables);
    out += "  for (int64_t rep = 0; rep < " + std::to_string(reps) +
           "; ++rep) {\n" + body + "  }\n";
  }

private:
  using Rows = SmallVector<SmallVector<std::string>>;

  /// The pieces of statement `j` of repetition `t`, which have the shape of
  /// the first repetition's: the same pieces.
  ArrayRef<Piece> at(size_t t, size_t j) const {
    return statements[first + t * period + j].getPieces();
  }

  /// The slot `index` of statement `j` as one expression of `rep`: its
  /// literal when every repetition has the same, `(first + step * rep)`
  /// when it steps evenly, else a table column.
  std::string rollSlot(size_t j, size_t index) {
    auto slot = [&](size_t t) -> const Piece & { return at(t, j)[index]; };
    const Piece &p0 = slot(0);
    bool constant = true;
    for (size_t t = 1; t < reps && constant; ++t)
      constant = slot(t).text == p0.text;
    if (constant)
      return p0.text;
    if (p0.kind == Code::Kind::String)
      return stringTable + "[rep][" + column(stringRows, stringColumns, slot) +
             "]";
    // Differences that overflow are left to the table.
    int64_t step = 0;
    bool even = !llvm::SubOverflow(slot(1).value, p0.value, step);
    for (size_t t = 2; t < reps && even; ++t) {
      int64_t d;
      even = !llvm::SubOverflow(slot(t).value, slot(t - 1).value, d) &&
             d == step;
    }
    if (!even)
      return intTable + "[rep][" + column(intRows, intColumns, slot) + "]";
    // Slots are not negative, so -step cannot overflow.
    return "(" + p0.text + (step < 0 ? " - " : " + ") +
           (std::abs(step) == 1 ? "" : std::to_string(std::abs(step)) + " * ") +
           "rep)";
  }

  /// The column of `rows` holding the slot's values. Slots that change
  /// alike (a buffer's offset at its allocation, its uses and its free)
  /// share one.
  template <typename SlotFn>
  std::string column(Rows &rows, llvm::StringMap<unsigned> &columns,
                     SlotFn slot) {
    std::string key;
    for (size_t t = 0; t < reps; ++t)
      key += slot(t).text + ",";
    auto [it, inserted] = columns.try_emplace(key, rows[0].size());
    if (inserted)
      for (size_t t = 0; t < reps; ++t)
        rows[t].push_back(slot(t).text);
    return std::to_string(it->second);
  }

  void printTable(StringRef type, StringRef name, const Rows &rows,
                  std::string &tables) {
    if (rows[0].empty())
      return;
    tables += "  static const " + type.str() + " " + name.str() + "[" +
              std::to_string(reps) + "][" + std::to_string(rows[0].size()) +
              "] = {\n";
    for (const SmallVector<std::string> &row : rows)
      tables += "    {" + llvm::join(row, ", ") + "},\n";
    tables += "  };\n";
  }

  ArrayRef<Code> statements;
  size_t first, period, reps;
  std::string intTable, stringTable;
  /// A row per repetition, a column per slot that varies in its own way.
  Rows intRows, stringRows;
  llvm::StringMap<unsigned> intColumns, stringColumns;
};

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
      LoopPrinter(statements, i, run.period, run.reps, nextTable++)
          .print(tables, out);
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
