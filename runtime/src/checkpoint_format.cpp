//===- checkpoint_format.cpp - checkpoint manifests and files -------------===//

#include "checkpoint_format.h"

#include "json.h"
#include "safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace braid::rt::ckpt {

namespace {

using json::Fields;

std::string intArray(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

bool parseHex64(const std::string &text, uint64_t *out) {
  if (text.size() != 16)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0)
      return false;
    v = v << 4 | uint64_t(digit);
  }
  *out = v;
  return true;
}

std::string tensorsJson(const std::vector<Tensor> &tensors, const char *indent) {
  std::string out = "[";
  for (size_t t = 0; t < tensors.size(); ++t) {
    const Tensor &x = tensors[t];
    out += std::string(t ? "," : "") + "\n" + indent + "{\"name\": " + json::quote(x.name) +
           ", \"dtype\": \"" + safetensors::dtypeName(x.dtype) +
           "\", \"shape\": " + intArray(x.shape) + ", \"pieces\": [";
    for (size_t i = 0; i < x.pieces.size(); ++i) {
      const Piece &p = x.pieces[i];
      out += std::string(i ? "," : "") + "\n" + indent + "  {\"file\": " + json::quote(p.file) +
             ", \"key\": " + json::quote(p.key) + ", \"start\": " + intArray(p.box.start) +
             ", \"shape\": " + intArray(p.box.shape) + ", \"fnv1a64\": \"" + hex64(p.hash) + "\"}";
    }
    out += "]}";
  }
  return out + "]";
}

bool parsePiece(const json::Value &value, const std::string &where, Piece *out,
                std::string *error) {
  Fields f(value, where);
  std::string hash;
  f.string("file", &out->file);
  f.string("key", &out->key);
  f.shape("start", &out->box.start);
  f.shape("shape", &out->box.shape);
  f.string("fnv1a64", &hash);
  if (!hash.empty() && !parseHex64(hash, &out->hash))
    f.fail("'fnv1a64' is not 16 hex digits");
  if (out->box.start.size() != out->box.shape.size())
    f.fail("'start' and 'shape' differ in rank");
  return f.ok(error);
}

bool parseTensors(const json::Value &list, std::vector<Tensor> *out, std::string *error) {
  for (const json::Value &item : list.items) {
    Tensor t;
    Fields f(item, "a tensor");
    f.string("name", &t.name);
    Fields named(item, "tensor '" + t.name + "'");
    std::string dtype;
    named.string("dtype", &dtype);
    if (!dtype.empty() && !safetensors::parseDtype(dtype, &t.dtype))
      named.fail("unknown dtype '" + dtype + "'");
    named.shape("shape", &t.shape);
    const json::Value *pieces = named.field("pieces", json::Value::Array);
    if (!f.ok(error) || !named.ok(error))
      return false;
    for (const json::Value &p : pieces->items) {
      t.pieces.emplace_back();
      if (!parsePiece(p, "a piece of tensor '" + t.name + "'", &t.pieces.back(), error))
        return false;
      if (t.pieces.back().box.shape.size() != t.shape.size()) {
        *error = "a piece of tensor '" + t.name + "' has rank " +
                 std::to_string(t.pieces.back().box.shape.size()) + ", the tensor " +
                 std::to_string(t.shape.size());
        return false;
      }
    }
    out->push_back(std::move(t));
  }
  return true;
}

} // namespace

const Tensor *Manifest::find(const std::string &name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string manifestJson(const Manifest &m) {
  std::string out = "{\n";
  out += "  \"format\": " + json::quote(kFormat) + ",\n";
  out += "  \"version\": " + std::to_string(kVersion) + ",\n";
  out += "  \"model\": " + json::quote(m.model) + ",\n";
  out += "  \"step\": " + std::to_string(m.step) + ",\n";
  out += "  \"seed\": " + std::to_string(m.seed) + ",\n";
  out += "  \"grid\": " + json::quote(m.grid) + ",\n";
  out += "  \"ranks\": " + std::to_string(m.ranks) + ",\n";
  out += "  \"inputs\": " + json::quote(m.data.used() ? kInputsData : kInputs) + ",\n";
  if (m.data.used())
    out += "  \"data\": {\"file\": " + json::quote(m.data.file) +
           ", \"tokens\": " + std::to_string(m.data.tokens) +
           ", \"position\": " + std::to_string(m.data.position) + "},\n";
  out += "  \"rng\": " + json::quote(kRng) + ",\n";
  out += "  \"files\": [";
  for (size_t i = 0; i < m.files.size(); ++i)
    out += std::string(i ? "," : "") + "\n    {\"name\": " + json::quote(m.files[i].name) +
           ", \"bytes\": " + std::to_string(m.files[i].bytes) + "}";
  out += "],\n  \"tensors\": " + tensorsJson(m.tensors, "    ") + "\n}\n";
  return out;
}

bool parseManifest(const std::string &text, Manifest *out, std::string *error) {
  json::Value root;
  std::string why;
  if (!json::parse(text, &root, &why)) {
    *error = "malformed JSON: " + why;
    return false;
  }
  const json::Value *format = root.get("format");
  if (!format || format->kind != json::Value::String || format->text != kFormat) {
    *error = std::string("not a Braid checkpoint manifest (no \"format\": \"") + kFormat + "\")";
    return false;
  }
  Fields f(root, "manifest");
  int64_t version = 0;
  f.integer("version", &version);
  if (!f.ok(error))
    return false;
  if (version != kVersion) {
    *error = "format version " + std::to_string(version) + "; this runtime reads version " +
             std::to_string(kVersion);
    return false;
  }
  Manifest m;
  f.string("model", &m.model);
  f.string("grid", &m.grid);
  f.integer("step", &m.step);
  f.integer("ranks", &m.ranks);
  // A seed past 2^63 is written as the unsigned integer it is.
  if (const json::Value *s = f.field("seed", json::Value::Number)) {
    char *end = nullptr;
    errno = 0;
    m.seed = std::strtoull(s->text.c_str(), &end, 10);
    if (errno || !end || *end || s->text[0] == '-')
      f.fail("'seed' is not an unsigned integer");
  }
  // A run on a dataset says where it stands (absent: inputs from the seed).
  if (const json::Value *data = root.get("data")) {
    Fields fd(*data, "'data'");
    fd.string("file", &m.data.file);
    fd.integer("tokens", &m.data.tokens);
    fd.integer("position", &m.data.position);
    if (!fd.ok(error))
      return false;
    if (m.data.tokens < 0 || m.data.position < 0) {
      *error = "'data' has a negative token count or position";
      return false;
    }
  }
  const json::Value *files = f.field("files", json::Value::Array);
  const json::Value *tensors = f.field("tensors", json::Value::Array);
  if (!f.ok(error))
    return false;
  for (const json::Value &item : files->items) {
    Fields ff(item, "a file");
    File file;
    ff.string("name", &file.name);
    ff.integer("bytes", &file.bytes);
    if (!ff.ok(error))
      return false;
    m.files.push_back(file);
  }
  if (!parseTensors(*tensors, &m.tensors, error))
    return false;
  *out = std::move(m);
  return true;
}

std::string indexJson(const RankIndex &index) {
  return "{\n  \"rank\": " + std::to_string(index.rank) +
         ",\n  \"file\": " + json::quote(index.file.name) +
         ",\n  \"bytes\": " + std::to_string(index.file.bytes) +
         ",\n  \"tensors\": " + tensorsJson(index.tensors, "    ") + "\n}\n";
}

bool parseIndex(const std::string &text, RankIndex *out, std::string *error) {
  json::Value root;
  std::string why;
  if (!json::parse(text, &root, &why)) {
    *error = "malformed JSON: " + why;
    return false;
  }
  Fields f(root, "index");
  RankIndex index;
  f.integer("rank", &index.rank);
  f.string("file", &index.file.name);
  f.integer("bytes", &index.file.bytes);
  const json::Value *tensors = f.field("tensors", json::Value::Array);
  if (!f.ok(error) || !parseTensors(*tensors, &index.tensors, error))
    return false;
  *out = std::move(index);
  return true;
}

std::string pieceKey(const std::string &tensor, const std::vector<int64_t> &start) {
  std::string key = tensor + "@";
  for (size_t i = 0; i < start.size(); ++i)
    key += (i ? "," : "") + std::to_string(start[i]);
  return key;
}

std::string rankFile(int64_t rank, const char *extension) {
  char name[64];
  std::snprintf(name, sizeof name, "rank%05lld.%s", (long long)rank, extension);
  return name;
}

std::string shapeText(const std::vector<int64_t> &shape) { return intArray(shape); }

bool readWholeFile(const std::string &path, std::string *out, std::string *error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  out->clear();
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    out->append(buffer, n);
  bool ok = !std::ferror(file);
  std::fclose(file);
  if (!ok)
    *error = "cannot read " + path;
  return ok;
}

DurableFile::~DurableFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool DurableFile::open(const std::string &path, std::string *error) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool DurableFile::write(const void *data, int64_t bytes, std::string *error) {
  const char *at = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, at, size_t(std::min<int64_t>(bytes, int64_t(1) << 30)));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      *error = "cannot write " + path_ + ": " + std::strerror(errno);
      return false;
    }
    at += n;
    bytes -= n;
    written_ += n;
  }
  return true;
}

bool DurableFile::commit(std::string *error) {
  bool ok = ::fsync(fd_) == 0;
  if (!ok)
    *error = "cannot sync " + path_ + ": " + std::strerror(errno);
  if (::close(fd_) != 0 && ok) {
    *error = "cannot close " + path_ + ": " + std::strerror(errno);
    ok = false;
  }
  fd_ = -1;
  return ok;
}

bool writeDurably(const std::string &path, const std::string &text, std::string *error) {
  DurableFile file;
  return file.open(path, error) && file.write(text.data(), int64_t(text.size()), error) &&
         file.commit(error);
}

bool syncDirectory(const std::string &path, std::string *error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open directory " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::fsync(fd) == 0;
  if (!ok)
    *error = "cannot sync directory " + path + ": " + std::strerror(errno);
  ::close(fd);
  return ok;
}

} // namespace braid::rt::ckpt
