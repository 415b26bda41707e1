//===- BraidEnums.h - the dialect's enums, and their keyword lists -*- C++ -*-===//
//
// The enums of BraidBase.td (ODS generates symbolize<E>, stringify<E> and
// getMaxEnumValFor<E>) without the ops: the planner and the tools use the
// same choices as the passes. `enumKeywords<E>()` lists an enum's keywords
// for a message ("none, selective or full"), so that an error never lists
// them by hand.
//
// The compiler's choices are also command-line options: Passes.td's enum
// options, the training pipeline's (braid-run's flags) and braid-plan's.
// llvm::cl::parser<E> is specialized for each of them below, so that an
// option of type E knows E's keywords with no `cl::values` list written
// beside it, and a value that is none of them is refused when the option
// is parsed, with the keywords: "for the --recompute option: expected
// none, selective or full, found 'some'". The one default that is no enum,
// the hardware a program is timed on, is here too (kDefaultHardware).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H
#define BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

#include "dialects/braid/IR/BraidEnums.h.inc"

namespace mlir::braid {

/// The built-in hardware description (lib/CostModel/hardware) a program is
/// timed on when none is named: the passes' `hardware` options, the
/// training pipeline's schedule-hardware and braid-plan's --hardware.
inline constexpr char kDefaultHardware[] = "h100-sxm";

/// The keywords of enum `E` (numbered from 0 without gaps), in order:
/// "a, b or c".
template <typename E> std::string enumKeywords() {
  std::string text;
  for (uint32_t i = 0;; ++i) {
    llvm::StringRef word = stringifyEnum(static_cast<E>(i));
    if (word.empty())
      return text;
    if (i) {
      bool last = stringifyEnum(static_cast<E>(i + 1)).empty();
      text += last ? " or " : ", ";
    }
    text += word.str();
  }
}

/// The command-line parser of an option whose values are enum `E`'s
/// keywords: llvm::cl::parser's generic form (which MLIR's pass options
/// print through), its values taken from `E` rather than from `cl::values`,
/// and a refusal that lists them.
template <typename E> class ChoiceParser : public llvm::cl::generic_parser_base {
public:
  using parser_data_type = E;

  struct OptionInfo : public GenericOptionInfo {
    OptionInfo(llvm::StringRef name, E value)
        : GenericOptionInfo(name, /*helpStr=*/""), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  /// The keywords in E's order (named as llvm::cl::parser names them,
  /// which mlir::detail::PassOptions reads).
  llvm::SmallVector<OptionInfo, 4> Values;

  explicit ChoiceParser(llvm::cl::Option &owner) : generic_parser_base(owner) {
    for (uint32_t i = 0;; ++i) {
      llvm::StringRef word = stringifyEnum(static_cast<E>(i));
      if (word.empty())
        break;
      Values.emplace_back(word, static_cast<E>(i));
    }
  }

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override { return Values[n].Name; }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef arg,
             E &value) {
    if (std::optional<E> parsed = symbolizeEnum<E>(arg)) {
      value = *parsed;
      return false;
    }
    return option.error("expected " + enumKeywords<E>() + ", found '" + arg +
                        "'");
  }
};

} // namespace mlir::braid

/// Makes `E` an option type whose keywords are its values (ChoiceParser).
#define BRAID_CHOICE_OPTION(E)                                                 \
  namespace llvm::cl {                                                         \
  template <> class parser<E> : public ::mlir::braid::ChoiceParser<E> {        \
  public:                                                                      \
    explicit parser(Option &owner) : ::mlir::braid::ChoiceParser<E>(owner) {}  \
  };                                                                           \
  }

BRAID_CHOICE_OPTION(::mlir::braid::Recompute)
BRAID_CHOICE_OPTION(::mlir::braid::ScheduleKind)
BRAID_CHOICE_OPTION(::mlir::braid::OptimizerKind)
BRAID_CHOICE_OPTION(::mlir::braid::Precision)
BRAID_CHOICE_OPTION(::mlir::braid::ShardPlan)
BRAID_CHOICE_OPTION(::mlir::braid::CpAttention)
BRAID_CHOICE_OPTION(::mlir::braid::CpLayout)
BRAID_CHOICE_OPTION(::mlir::braid::CollectiveMatmulMode)
BRAID_CHOICE_OPTION(::mlir::braid::SampleMode)

#undef BRAID_CHOICE_OPTION

#endif // BRAID_DIALECT_BRAID_IR_BRAIDENUMS_H
