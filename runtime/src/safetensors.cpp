//===- safetensors.cpp - the container of checkpoint shards ---------------===//

#include "safetensors.h"

#include "json.h"

#include <cstring>

namespace braid::rt::safetensors {

namespace {

/// Headers past this are not a shard's (the reference reader's limit).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

bool readShape(const json::Value &value, std::vector<int64_t> *shape) {
  if (value.kind != json::Value::Array)
    return false;
  shape->clear();
  for (const json::Value &item : value.items) {
    int64_t n;
    if (!item.asInt(&n) || n < 0)
      return false;
    shape->push_back(n);
  }
  return true;
}

bool readEntry(const std::string &key, const json::Value &value, Entry *out, std::string *error) {
  const json::Value *dtype = value.get("dtype"), *shape = value.get("shape"),
                    *offsets = value.get("data_offsets");
  out->key = key;
  if (!dtype || dtype->kind != json::Value::String || !parseDtype(dtype->text, &out->dtype)) {
    *error = "entry '" + key + "' has no dtype this runtime reads";
    return false;
  }
  if (!shape || !readShape(*shape, &out->shape)) {
    *error = "entry '" + key + "' has no valid shape";
    return false;
  }
  if (!offsets || offsets->kind != json::Value::Array || offsets->items.size() != 2 ||
      !offsets->items[0].asInt(&out->begin) || !offsets->items[1].asInt(&out->end) ||
      out->begin < 0 || out->end < out->begin) {
    *error = "entry '" + key + "' has no valid data_offsets";
    return false;
  }
  int64_t bytes = braid_dtype_size(out->dtype);
  for (int64_t n : out->shape)
    bytes = n && bytes > INT64_MAX / n ? -1 : bytes * n;
  if (bytes != out->end - out->begin) {
    *error = "entry '" + key + "' holds " + std::to_string(out->end - out->begin) +
             " bytes, its dtype and shape " + std::to_string(bytes);
    return false;
  }
  return true;
}

} // namespace

const char *dtypeName(braid_dtype dtype) {
  switch (dtype) {
  case BRAID_F32:
    return "F32";
  case BRAID_BF16:
    return "BF16";
  case BRAID_F16:
    return "F16";
  case BRAID_I32:
    return "I32";
  case BRAID_I64:
    return "I64";
  }
  return "?";
}

bool parseDtype(const std::string &name, braid_dtype *out) {
  for (braid_dtype d : {BRAID_F32, BRAID_BF16, BRAID_F16, BRAID_I32, BRAID_I64})
    if (name == dtypeName(d)) {
      *out = d;
      return true;
    }
  return false;
}

std::string header(std::vector<Entry> *entries, const Metadata &metadata) {
  std::string text = "{";
  if (!metadata.empty()) {
    text += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i)
      text +=
          (i ? "," : "") + json::quote(metadata[i].first) + ":" + json::quote(metadata[i].second);
    text += "}";
  }
  int64_t at = 0;
  for (Entry &e : *entries) {
    int64_t bytes = braid_dtype_size(e.dtype);
    for (int64_t n : e.shape)
      bytes *= n;
    e.begin = at;
    e.end = at += bytes;
    text += std::string(text.size() > 1 ? "," : "") + json::quote(e.key) + ":{\"dtype\":\"" +
            dtypeName(e.dtype) + "\",\"shape\":" + shapeJson(e.shape) + ",\"data_offsets\":[" +
            std::to_string(e.begin) + "," + std::to_string(e.end) + "]}";
  }
  text += "}";
  // The data starts 8-byte aligned (what the format's readers expect).
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + text;
}

const Entry *Header::find(const std::string &key) const {
  for (const Entry &e : entries)
    if (e.key == key)
      return &e;
  return nullptr;
}

bool readHeader(FILE *file, int64_t fileBytes, Header *out, std::string *error) {
  unsigned char length[8];
  if (fileBytes < 8 || std::fseek(file, 0, SEEK_SET) != 0 || std::fread(length, 1, 8, file) != 8) {
    *error = "too short for a safetensors header";
    return false;
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | length[i];
  if (n > kMaxHeaderBytes || int64_t(n) > fileBytes - 8) {
    *error = "header length " + std::to_string(n) + " does not fit the file's " +
             std::to_string(fileBytes) + " bytes";
    return false;
  }
  std::string text(size_t(n), '\0');
  if (std::fread(text.data(), 1, text.size(), file) != text.size()) {
    *error = "cannot read the header";
    return false;
  }
  json::Value root;
  std::string why;
  if (!json::parse(text, &root, &why) || root.kind != json::Value::Object) {
    *error = "malformed header: " + (why.empty() ? "not an object" : why);
    return false;
  }
  Header h;
  h.dataStart = 8 + int64_t(n);
  for (const auto &[key, value] : root.members) {
    if (key == "__metadata__") {
      for (const auto &[name, text] : value.members)
        if (text.kind == json::Value::String)
          h.metadata.emplace_back(name, text.text);
      continue;
    }
    Entry e;
    if (!readEntry(key, value, &e, error))
      return false;
    if (e.end > fileBytes - h.dataStart) {
      *error = "entry '" + key + "' ends past the end of the file";
      return false;
    }
    h.entries.push_back(std::move(e));
  }
  *out = std::move(h);
  return true;
}

} // namespace braid::rt::safetensors
