//===- link_model.h - emulated links per grid axis --------------*- C++ -*-===//
//
// The link model that the CPU ranks' link emulator (BRAID_LINK, comm_mpi.cpp)
// charges and that --braid-print-plan's link= option predicts with, in one
// place so that the two cannot drift apart. Header only, the C++ standard
// library only: the runtime and the compiler both include it, through the
// CMake target BraidLinkModel (common/CMakeLists.txt).
//
// A description names a link per grid axis:
//
//   tp:2us,20GB/s;dp:10us,2GB/s
//
// each "axis:latency,bandwidth" with the latency of one step (s, ms, us, ns)
// and the bandwidth a rank has on the link in one direction (B/s, KB/s,
// MB/s, GB/s, decimal; KiB/s, MiB/s, GiB/s, binary); "*" names the link of
// every axis not listed. A transfer over a group of several axes uses the
// slowest link among them (the one it must cross), and axes with no link
// cost nothing.
//
// A transfer of kind K over n ranks whose rank sends `bytesSent` bytes (the
// ring model's volume that --braid-print-plan counts and the runtime's
// counters too) takes steps(K, n) * latency + bytesSent / bandwidth:
// 2(n-1) steps for a ring all-reduce, n-1 for an all-gather, reduce-scatter,
// all-to-all (pairwise) or broadcast (chain), one for a message (send, one
// shift of a ring).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LINK_MODEL_H
#define BRAID_LINK_MODEL_H

#include <cctype>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace braid::link {

/// The bounds of a link's numbers, which the cost model's hardware
/// descriptions keep too (lib/CostModel/DataFiles.h takes them from here):
/// latencies up to kMaxLatencySeconds, bandwidths from 1 B/s up to
/// kMaxBytesPerSecond (a million times an H100's peak rate). Past them the
/// models' sums overflow to infinities (an infinite latency has the
/// emulator sleep forever) and their step times to NaN.
constexpr double kMaxLatencySeconds = 1e3, kMaxBytesPerSecond = 1e21;

struct Link {
  double latency = 0;        ///< seconds per step
  double bytesPerSecond = 0; ///< per rank, one direction
};

/// A description: links by axis name ("*": every other axis).
struct Links {
  std::map<std::string, Link> byAxis;
  bool empty() const { return byAxis.empty(); }

  /// The link of axis `name`, or null when it has none.
  const Link *of(const std::string &name) const {
    auto it = byAxis.find(name);
    if (it == byAxis.end())
      it = byAxis.find("*");
    return it == byAxis.end() ? nullptr : &it->second;
  }

  /// The link a group over `axes` crosses: the slowest (lowest bandwidth,
  /// then highest latency) of theirs; false when none has a link.
  bool group(const std::vector<std::string> &axes, Link *out) const {
    bool found = false;
    for (const std::string &axis : axes) {
      const Link *l = of(axis);
      if (!l)
        continue;
      if (!found || l->bytesPerSecond < out->bytesPerSecond ||
          (l->bytesPerSecond == out->bytesPerSecond && l->latency > out->latency))
        *out = *l;
      found = true;
    }
    return found;
  }
};

namespace detail {

inline std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// A number followed by one of `units` (name, factor), in [lo, hi] once
/// scaled; false on anything else (strtod reads "inf" and "1e999" too).
inline bool quantity(const std::string &text,
                     const std::vector<std::pair<const char *, double>> &units, double lo,
                     double hi, double *out) {
  std::string t = trim(text);
  const char *begin = t.c_str();
  char *end = nullptr;
  double value = std::strtod(begin, &end);
  if (end == begin || !(value >= 0))
    return false;
  std::string unit = trim(std::string(end));
  for (const auto &[name, factor] : units)
    if (unit == name) {
      *out = value * factor;
      return *out >= lo && *out <= hi; // false for NaN and infinities
    }
  return false;
}

} // namespace detail

/// A grid axis name: [A-Za-z_][A-Za-z0-9_]* (the rule of --grid, whose
/// parser, runtime/src/comm_self.cpp, uses this too).
inline bool isAxisName(const std::string &name) {
  if (name.empty() || !(std::isalpha((unsigned char)name[0]) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return false;
  return true;
}

/// Parses a description (above); false with a message naming the part that
/// is wrong. An empty text is no description (no links).
inline bool parse(const std::string &text, Links *out, std::string *error) {
  out->byAxis.clear();
  size_t at = 0;
  while (at <= text.size()) {
    size_t semi = text.find(';', at);
    std::string part = detail::trim(
        text.substr(at, semi == std::string::npos ? std::string::npos : semi - at));
    at = semi == std::string::npos ? text.size() + 1 : semi + 1;
    if (part.empty())
      continue;
    size_t colon = part.find(':'), comma = part.find(',');
    if (colon == std::string::npos || comma == std::string::npos || comma < colon) {
      *error = "'" + part + "' is not axis:latency,bandwidth";
      return false;
    }
    std::string axis = detail::trim(part.substr(0, colon));
    if (axis != "*" && !isAxisName(axis)) {
      *error = "'" + axis + "' is not an axis name";
      return false;
    }
    if (out->byAxis.count(axis)) {
      *error = "axis '" + axis + "' has two links";
      return false;
    }
    Link link;
    if (!detail::quantity(part.substr(colon + 1, comma - colon - 1),
                          {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}}, 0,
                          kMaxLatencySeconds, &link.latency)) {
      *error = "latency '" + detail::trim(part.substr(colon + 1, comma - colon - 1)) +
               "' of axis '" + axis + "' is not a number with s, ms, us or ns, at most 1000 s";
      return false;
    }
    if (!detail::quantity(part.substr(comma + 1),
                          {{"B/s", 1.0},
                           {"KB/s", 1e3},
                           {"MB/s", 1e6},
                           {"GB/s", 1e9},
                           {"KiB/s", 1024.0},
                           {"MiB/s", 1048576.0},
                           {"GiB/s", 1073741824.0}},
                          1, kMaxBytesPerSecond, &link.bytesPerSecond)) {
      *error = "bandwidth '" + detail::trim(part.substr(comma + 1)) + "' of axis '" + axis +
               "' is not a number with B/s, KB/s, MB/s or GB/s, at least 1 B/s";
      return false;
    }
    out->byAxis[axis] = link;
  }
  return true;
}

/// The blocks a rank sends in a transfer of `kind` over n ranks, the ring
/// model's (a block: an all-reduce's or broadcast's buffer, one rank's share
/// of an all-gather, reduce-scatter or all-to-all, a message): 2(n-1)/n of
/// an all-reduce, n-1 of an all-gather, reduce-scatter or all-to-all, (n-1)/n
/// of a chained broadcast (every rank but the last forwards), one message.
/// --braid-print-plan, the runtime's counters and the link emulator count so.
inline double ringBlocks(const std::string &kind, double n) {
  if (n <= 1)
    return 0;
  if (kind == "all_reduce")
    return 2 * (n - 1) / n;
  if (kind == "broadcast")
    return (n - 1) / n;
  if (kind == "send" || kind == "shift")
    return 1;
  return n - 1;
}

/// The steps of a transfer of `kind` ("all_reduce", "all_gather",
/// "reduce_scatter", "all_to_all", "broadcast", "send", "shift") over n ranks.
inline double steps(const std::string &kind, double n) {
  if (n <= 1)
    return 0;
  if (kind == "all_reduce")
    return 2 * (n - 1);
  if (kind == "send" || kind == "shift")
    return 1;
  return n - 1;
}

/// Seconds of that transfer on `link` when a rank sends `bytesSent`.
inline double seconds(const Link &link, const std::string &kind, double n,
                      double bytesSent) {
  if (n <= 1)
    return 0;
  return steps(kind, n) * link.latency + bytesSent / link.bytesPerSecond;
}

} // namespace braid::link

#endif // BRAID_LINK_MODEL_H
