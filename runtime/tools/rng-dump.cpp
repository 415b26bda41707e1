//===- rng-dump.cpp - print the runtime's deterministic init values -------===//
//
//   rng-dump --seed S --name NAME
//            [--init normal|zeros|ones|tokens|s4d_real|mamba_dt]
//            [--dtype f32|bf16|f16|i32|i64] [--std X] [--bound N]
//            [--start I] [--count C] [--bits]
//
// One line per element i in [start, start + count):
//   f32, bf16: the f32 bit pattern as 0x%08x (bf16: of the value widened to f32)
//   f16:       the half bit pattern as 0x%04x
//   i32, i64:  the decimal integer
//   --bits:    the Philox words x0 x1 x2 x3 as 0x%08x, space separated
// For comparison with test/lib/braid_ref/rng.py (test/Runtime/rng-exact.py).
//
//===----------------------------------------------------------------------===//

#include "rng.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace braid::rt;

namespace {
/// Element i of the values in `buffer`, read as a T.
template <typename T> T elementAt(const std::vector<char> &buffer, unsigned long long i) {
  T value;
  std::memcpy(&value, buffer.data() + sizeof(T) * i, sizeof(T));
  return value;
}
} // namespace

int main(int argc, char **argv) {
  unsigned long long seed = 0, start = 0, count = 1;
  std::string name, init = "normal", dtype = "f32";
  double stddev = 1.0;
  long long bound = 0;
  bool bits = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rng-dump: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--seed")
      seed = std::strtoull(value(), nullptr, 10);
    else if (arg == "--name")
      name = value();
    else if (arg == "--init")
      init = value();
    else if (arg == "--dtype")
      dtype = value();
    else if (arg == "--std")
      stddev = std::strtod(value(), nullptr);
    else if (arg == "--bound")
      bound = std::strtoll(value(), nullptr, 10);
    else if (arg == "--start")
      start = std::strtoull(value(), nullptr, 10);
    else if (arg == "--count")
      count = std::strtoull(value(), nullptr, 10);
    else if (arg == "--bits")
      bits = true;
    else {
      std::fprintf(stderr, "rng-dump: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (bits) {
    rng::Key key = rng::keyOf(seed, name.c_str());
    for (unsigned long long i = start; i < start + count; ++i) {
      auto x = rng::bitsAt(key, i);
      std::printf("0x%08x 0x%08x 0x%08x 0x%08x\n", x[0], x[1], x[2], x[3]);
    }
    return 0;
  }
  braid_init initKind = init == "normal"   ? BRAID_INIT_NORMAL
                        : init == "zeros"  ? BRAID_INIT_ZEROS
                        : init == "ones"   ? BRAID_INIT_ONES
                        : init == "tokens" ? BRAID_INIT_TOKENS
                        : init == "s4d_real" ? BRAID_INIT_S4D_REAL
                        : init == "mamba_dt" ? BRAID_INIT_MAMBA_DT
                                           : braid_init(-1);
  braid_dtype dt = dtype == "f32"    ? BRAID_F32
                   : dtype == "bf16" ? BRAID_BF16
                   : dtype == "f16"  ? BRAID_F16
                   : dtype == "i32"  ? BRAID_I32
                   : dtype == "i64"  ? BRAID_I64
                                     : braid_dtype(-1);
  if (int(initKind) < 0 || int(dt) < 0) {
    std::fprintf(stderr, "rng-dump: unknown init %s or dtype %s\n", init.c_str(), dtype.c_str());
    return 2;
  }
  std::vector<char> buffer(size_t(count) * 8);
  std::string error;
  if (!rng::fill(buffer.data(), dt, initKind, stddev, bound, seed, name.c_str(), start, count,
                 &error)) {
    std::fprintf(stderr, "rng-dump: %s\n", error.c_str());
    return 1;
  }
  std::string out;
  char line[64];
  for (unsigned long long i = 0; i < count; ++i) {
    switch (dt) {
    case BRAID_F32:
      std::snprintf(line, sizeof line, "0x%08x\n", elementAt<uint32_t>(buffer, i));
      break;
    case BRAID_BF16:
      std::snprintf(line, sizeof line, "0x%08x\n", uint32_t(elementAt<uint16_t>(buffer, i)) << 16);
      break;
    case BRAID_F16:
      std::snprintf(line, sizeof line, "0x%04x\n", elementAt<uint16_t>(buffer, i));
      break;
    case BRAID_I32:
      std::snprintf(line, sizeof line, "%d\n", elementAt<int32_t>(buffer, i));
      break;
    case BRAID_I64:
      std::snprintf(line, sizeof line, "%lld\n", (long long)elementAt<int64_t>(buffer, i));
      break;
    }
    out += line;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
