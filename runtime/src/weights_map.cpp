//===- weights_map.cpp - reading and checking a weights map ---------------===//
//
// The map's JSON (weights_map.h has the format) as data, each piece checked
// against its tensor and its entry's view, so that the loader copies boxes
// that lie inside both.
//
//===----------------------------------------------------------------------===//

#include "weights_map.h"

#include "json.h"
#include "safetensors.h"

#include <algorithm>

namespace braid::rt::weights {

namespace {

using ckpt::shapeText;

/// The most dimensions and elements a map's shapes, starts and extents may
/// have: more is no weight, and products and sums of such sizes cannot
/// overflow int64_t in the checks below.
constexpr size_t kMaxRank = 8;
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Whether `sizes` (a shape, or a start) stays within those bounds.
bool bounded(const std::vector<int64_t> &sizes) {
  if (sizes.size() > kMaxRank)
    return false;
  int64_t n = 1;
  for (int64_t d : sizes)
    if (d > kMaxElements || (n = n * std::max<int64_t>(d, 1)) > kMaxElements)
      return false;
  return true;
}

int64_t numel(const std::vector<int64_t> &shape) { return Box{{}, shape}.numel(); }

/// The view's shape as the piece reads it: its last two axes swapped with
/// `transpose`.
std::vector<int64_t> readShape(const Piece &p) {
  std::vector<int64_t> shape = p.view;
  if (p.transpose)
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
  return shape;
}

/// Why `p` cannot be a piece of `t` ("" when it can).
std::string checkPiece(const Tensor &t, const Piece &p) {
  const std::string what = "piece '" + p.key + "' of tensor '" + t.name + "'";
  const size_t rank = t.shape.size();
  if (p.view.size() != rank || p.from.size() != rank || p.box.start.size() != rank ||
      p.box.shape.size() != rank)
    return what + ": its view, from, to and shape must have the tensor's rank " +
           std::to_string(rank);
  if (numel(p.view) != numel(p.entryShape))
    return what + ": view " + shapeText(p.view) + " does not hold the " +
           std::to_string(numel(p.entryShape)) + " elements of the entry " +
           shapeText(p.entryShape);
  if (p.transpose && rank < 2)
    return what + ": a transposed view needs two dimensions";
  const std::vector<int64_t> read = readShape(p);
  for (size_t d = 0; d < rank; ++d) {
    if (p.from[d] + p.box.shape[d] > read[d])
      return what + ": the box from " + shapeText(p.from) + " of extent " +
             shapeText(p.box.shape) + " lies outside its view " + shapeText(read);
    if (p.box.start[d] + p.box.shape[d] > t.shape[d])
      return what + ": the box at " + shapeText(p.box.start) + " of extent " +
             shapeText(p.box.shape) + " lies outside the tensor " + shapeText(t.shape);
  }
  return "";
}

bool parsePiece(const json::Value &value, const std::string &where, Piece *out,
                std::string *error) {
  json::Fields f(value, where);
  std::string dtype;
  f.string("file", &out->file);
  f.string("key", &out->key);
  f.string("dtype", &dtype);
  f.shape("entry_shape", &out->entryShape);
  f.shape("view", &out->view);
  f.boolean("transpose", &out->transpose);
  f.shape("from", &out->from);
  f.shape("to", &out->box.start);
  f.shape("shape", &out->box.shape);
  if (!f.ok(error))
    return false;
  for (const std::vector<int64_t> *sizes :
       {&out->entryShape, &out->view, &out->from, &out->box.start, &out->box.shape})
    if (!bounded(*sizes)) {
      *error = where + ": a shape, start or extent beyond " + std::to_string(kMaxRank) +
               " dimensions or 2^48 elements";
      return false;
    }
  if (!safetensors::parseDtype(dtype, &out->dtype) ||
      (out->dtype != BRAID_F32 && out->dtype != BRAID_BF16 && out->dtype != BRAID_F16)) {
    *error = where + ": dtype '" + dtype + "' is not a weight's (F32, BF16 or F16)";
    return false;
  }
  return true;
}

bool parseTensor(const json::Value &value, Tensor *out, std::string *error) {
  json::Fields f(value, "a tensor");
  f.string("name", &out->name);
  if (!f.ok(error))
    return false;
  json::Fields named(value, "tensor '" + out->name + "'");
  named.shape("shape", &out->shape);
  const json::Value *pieces = named.field("pieces", json::Value::Array);
  if (!named.ok(error))
    return false;
  if (!bounded(out->shape)) {
    *error = "tensor '" + out->name + "': a shape beyond " + std::to_string(kMaxRank) +
             " dimensions or 2^48 elements";
    return false;
  }
  int64_t covered = 0;
  for (const json::Value &item : pieces->items) {
    Piece piece;
    if (!parsePiece(item, "a piece of tensor '" + out->name + "'", &piece, error))
      return false;
    if (!(*error = checkPiece(*out, piece)).empty())
      return false;
    covered += piece.box.numel();
    out->pieces.push_back(std::move(piece));
    if (covered > numel(out->shape))
      break; // overlapping pieces: said below, before the sum can grow further
  }
  if (covered != numel(out->shape)) {
    *error = "the pieces of tensor '" + out->name + "' hold " + std::to_string(covered) +
             " elements, the tensor " + std::to_string(numel(out->shape));
    return false;
  }
  return true;
}

/// The header fields and the list of files.
bool parseHead(const json::Value &root, Map *out, std::string *error) {
  const json::Value *format = root.get("format");
  if (!format || format->kind != json::Value::String || format->text != kFormat) {
    *error = std::string("not a weights map (no \"format\": \"") + kFormat +
             "\"); write one with python3 -m braid.hf_weights MODEL_DIR -o MAP.json";
    return false;
  }
  json::Fields f(root, "the map");
  int64_t version = 0;
  f.integer("version", &version);
  f.string("source", &out->source);
  const json::Value *files = f.field("files", json::Value::Array);
  if (!f.ok(error))
    return false;
  if (version != kVersion) {
    *error = "format version " + std::to_string(version) + "; this runtime reads version " +
             std::to_string(kVersion);
    return false;
  }
  for (const json::Value &item : files->items) {
    json::Fields ff(item, "a file");
    File file;
    ff.string("path", &file.path);
    ff.integer("bytes", &file.bytes);
    if (!ff.ok(error))
      return false;
    out->files.push_back(std::move(file));
  }
  return true;
}

} // namespace

const Tensor *Map::find(const std::string &name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

bool isState(const std::string &name) {
  return name.rfind("opt.", 0) == 0 || name.rfind("cache.", 0) == 0;
}

bool parseMap(const std::string &text, const std::string &path, Map *out, std::string *error) {
  json::Value root;
  std::string why;
  *out = Map();
  out->path = path;
  if (!json::parse(text, &root, &why)) {
    *error = path + ": malformed JSON: " + why;
    return false;
  }
  bool ok = parseHead(root, out, &why);
  const json::Value *tensors = root.get("tensors");
  if (ok && (!tensors || tensors->kind != json::Value::Array)) {
    why = "no array 'tensors'";
    ok = false;
  }
  for (size_t i = 0; ok && i < tensors->items.size(); ++i) {
    Tensor t;
    ok = parseTensor(tensors->items[i], &t, &why);
    if (ok && out->find(t.name)) {
      why = "tensor '" + t.name + "' is listed twice";
      ok = false;
    }
    out->tensors.push_back(std::move(t));
  }
  if (!ok)
    *error = path + ": " + why;
  return ok;
}

} // namespace braid::rt::weights
