//===- trace.h - kernel trace in Chrome / Perfetto JSON ---------*- C++ -*-===//

#ifndef BRAID_RUNTIME_TRACE_H
#define BRAID_RUNTIME_TRACE_H

#include "backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

/// The kernels bracketed by braid_rt_op_begin / braid_rt_op_end. Each gets an
/// id (its index); the backend marks its begin and end on the device timeline
/// and resolves the times after a synchronize.
class Trace {
public:
  struct Op {
    std::string op, label, scope;
    int64_t step = 0;
    double flops = -1; ///< matrix-product FLOPs when known
  };

  /// Opens op `id` = size() and marks its begin.
  int64_t begin(Backend &backend, const char *op, const char *label, std::string scope,
                int64_t step);
  /// Marks the end of the innermost open op; false if none is open.
  bool end(Backend &backend);
  /// Sets the FLOPs of the innermost open op; false if none is open.
  bool setFlops(double flops);
  int64_t size() const { return int64_t(ops_.size()); }
  int64_t openCount() const { return int64_t(open_.size()); }
  const std::vector<Op> &ops() const { return ops_; }

  /// Synchronizes, resolves the timings and writes the JSON document:
  /// {"traceEvents": [{"name", "cat": "kernel", "ph": "X", "ts", "dur", "pid",
  /// "tid", "args": {"label", "scope", "step"[, "flops"]}}...],
  /// "displayTimeUnit": "ms"}
  bool write(Backend &backend, const std::string &path, std::string *error) const;

private:
  std::vector<Op> ops_;
  std::vector<int64_t> open_;
};

/// `text` as a JSON string literal (quotes included).
std::string jsonString(const std::string &text);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRACE_H
