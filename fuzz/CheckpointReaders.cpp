//===- CheckpointReaders.cpp - fuzz target: what --resume reads -----------===//
//
// A checkpoint's manifest and per-rank index (JSON), a safetensors file's
// header and a weights map (--init-from, weights_map.h) come from disk, where a crash or another program may have left
// anything. The input's first byte picks the reader, the rest is the file:
// a reader answers false with a message, never crashes. Seeds: a checkpoint
// the test writes with braid-run (test/Fuzz/checkpoint-readers.py).
//
//===----------------------------------------------------------------------===//

#include "checkpoint_format.h"
#include "json.h"
#include "safetensors.h"
#include "weights_map.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

using namespace braid::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t which = data[0] % 5;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::string error;
  switch (which) {
  case 0: {
    json::Value value;
    (void)json::parse(text, &value, &error);
    break;
  }
  case 1: {
    ckpt::Manifest manifest;
    (void)ckpt::parseManifest(text, &manifest, &error);
    break;
  }
  case 2: {
    ckpt::RankIndex index;
    (void)ckpt::parseIndex(text, &index, &error);
    break;
  }
  case 3: {
    // readHeader reads from a FILE: the bytes through fmemopen (an empty
    // buffer is no stream).
    if (text.empty())
      break;
    FILE *file = fmemopen(text.data(), text.size(), "rb");
    if (!file)
      break;
    safetensors::Header header;
    (void)safetensors::readHeader(file, static_cast<int64_t>(text.size()), &header, &error);
    std::fclose(file);
    break;
  }
  case 4: {
    weights::Map map;
    (void)weights::parseMap(text, "map.json", &map, &error);
    break;
  }
  }
  return 0;
}
