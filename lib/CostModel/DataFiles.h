//===- DataFiles.h - JSON descriptions built in or read from a file -*- C++ -*-===//
//
// The cost model's data (hardware descriptions, compute calibrations) are
// JSON files built into the library (CMakeLists.txt: braid_embed_json) and
// looked up by name, or a file of one's own when the name ends in ".json".
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_COSTMODEL_DATAFILES_H
#define BRAID_LIB_COSTMODEL_DATAFILES_H

#include "braid/link_model.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <string>
#include <vector>

namespace braid::cost {

/// The bounds of what a description may give, the link model's (BRAID_LINK
/// and link= keep them too): rates (bytes or FLOPs per second) and sizes in
/// bytes from 1 to kMaxRate, times in seconds from 0 to kMaxSeconds.
constexpr double kMaxRate = link::kMaxBytesPerSecond, kMaxSeconds = link::kMaxLatencySeconds;

/// Whether `value` is finite and in [lo, hi] (JSON numbers past a double's
/// range parse as infinities).
inline bool inRange(double value, double lo, double hi) {
  return std::isfinite(value) && value >= lo && value <= hi;
}

/// An error in a description, or in finding one.
inline llvm::Error descriptionError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The JSON object `json` holds, or why it holds none; `what` names the
/// kind of description ("a calibration") in the message.
inline llvm::Expected<llvm::json::Object> parseDescription(llvm::StringRef json,
                                                          llvm::StringRef what) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value)
    return value.takeError();
  llvm::json::Object *object = value->getAsObject();
  if (!object)
    return descriptionError(what + " is a JSON object");
  return std::move(*object);
}

/// The strings of a description's "sources" (what its figures come from:
/// every description must cite some).
inline std::vector<std::string> readSources(const llvm::json::Object &description) {
  std::vector<std::string> sources;
  if (const llvm::json::Array *list = description.getArray("sources"))
    for (const llvm::json::Value &s : *list)
      if (std::optional<llvm::StringRef> text = s.getAsString())
        sources.push_back(text->str());
  return sources;
}

struct Builtin {
  const char *name;
  const char *json;
};

/// Parses the description `name` with `parse` (Expected<T>(StringRef)):
/// the file `name` when it ends in ".json" (its errors prefixed with the
/// file's name), else the built-in of that name; `what` names the kind in
/// the message for an unknown name.
template <typename Parse>
auto parseNamed(llvm::StringRef name, llvm::ArrayRef<Builtin> builtins, llvm::StringRef what,
                Parse parse) -> decltype(parse(llvm::StringRef())) {
  if (name.ends_with(".json")) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(name);
    if (!file)
      return descriptionError("cannot read " + name + ": " + file.getError().message());
    auto parsed = parse((*file)->getBuffer());
    if (!parsed)
      return descriptionError(name + ": " + llvm::toString(parsed.takeError()));
    return parsed;
  }
  for (const Builtin &b : builtins)
    if (name == b.name)
      return parse(b.json);
  std::string known;
  for (const Builtin &b : builtins)
    known += (known.empty() ? "" : ", ") + std::string(b.name);
  return descriptionError("no " + what + " '" + name + "' (known: " + known + ")");
}

} // namespace braid::cost

#endif // BRAID_LIB_COSTMODEL_DATAFILES_H
