//===- trace.h - kernel trace in Chrome / Perfetto JSON ---------*- C++ -*-===//
//
// --trace FILE writes one JSON document per rank (rank R of several: FILE
// with ".rank<R>" before its extension), in the Chrome trace event format
// that Perfetto and chrome://tracing read:
//
//   {"traceEvents":[
//   {"name":"process_name","ph":"M","pid":R,"tid":0,"args":{"name":"rank R"}},
//   {"name":"process_sort_index","ph":"M","pid":R,"tid":0,"args":{"sort_index":R}},
//   {"name":"thread_name","ph":"M","pid":R,"tid":0,"args":{"name":"compute"}},
//   {"name":OP,"cat":"kernel","ph":"X","ts":T,"dur":D,"pid":R,"tid":0,
//    "args":{"label":LABEL,"scope":SCOPE,"step":K[,"flops":F]}},
//   ...
//   {"name":"thread_name","ph":"M","pid":R,"tid":L,"args":{"name":"comm AXES"}},
//   {"name":KIND,"cat":"comm","ph":"X","ts":T,"dur":D,"pid":R,"tid":L,
//    "args":{"group":AXES,"step":K[,"link_end":E]}},
//   ...
//   {"name":"thread_name","ph":"M","pid":R,"tid":S,"args":{"name":LANE}},
//   {"name":NAME,"cat":"span","ph":"X","ts":T,"dur":D,"pid":R,"tid":S,
//    "args":{"detail":DETAIL,"step":K}},
//   ...],"displayTimeUnit":"ms"}
//
// - One complete event ("ph":"X") per braid_rt_op_begin / braid_rt_op_end
//   pair, in the order the ops began: OP and LABEL are their arguments,
//   SCOPE the call path, K the step (0: initialization), F the FLOPs given by
//   braid_rt_op_flops. An op begun while another is open is recorded as well
//   and lies inside it (e.g. op "pipeline" label "F3" around the kernels of a
//   pipeline action): viewers nest it under the enclosing event.
// - Waits: a braid_event_wait of a transfer over more than one rank is an op
//   named "wait" of category "wait" (LABEL: "KIND over AXES") on the compute
//   lane: the time the program stood still for communication, what is
//   measured as exposed.
// - Communication lanes: each group (AXES, "dp" or "dp,tp") has its own
//   lane L >= 1, named "comm AXES", holding one event per transfer, recorded
//   at its wait. CPU ranks: the MPI provider knows the interval, from when
//   the transfer took its link to when it completed, which is no earlier
//   than when the emulated link finished with it (E, microseconds on the
//   same clock, under the link emulator); the rest is waiting for the
//   group's other ranks. GPU ranks: the NCCL provider, in a traced run,
//   brackets each transfer with timed events on its stream, from when the
//   stream could start it (the compute stream had produced its input) to
//   when NCCL finished it; the trace places them on the clock when written.
// - Span lanes: a driver's own intervals on lanes of their own, after the
//   communication lanes (serving: lane "serve" holds each iteration and,
//   inside it, its prefill and decode calls, driver_serve.cpp).
// - "pid" is the world rank R, so that the traceEvents of every rank's file
//   concatenated make one trace with a row per rank.
// - "ts" and "dur" are microseconds. "ts" is on the steady clock since its
//   epoch (CLOCK_MONOTONIC on Linux), which every process of a machine
//   shares, so the ranks of a machine lie on one timeline (not relative to a
//   process's start). CPU: host times at begin/end. CUDA: the device's event
//   times, placed on the host clock by an event recorded when the backend
//   was created (to within that synchronization's latency).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TRACE_H
#define BRAID_RUNTIME_TRACE_H

#include "backend.h"

#include <cstdint>
#include <cstdio>
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
    const char *category = "kernel"; ///< "kernel" or "wait"
  };
  /// A transfer on a communication lane, in microseconds on the steady clock.
  struct Transfer {
    std::string kind, group;
    int64_t step = 0;
    double beginUs = 0, endUs = 0;
    double linkEndUs = 0; ///< when the emulated link finished (0: none)
    /// GPU ranks: the events on the transfer's stream, from which write()
    /// takes beginUs and endUs (null: those are already known).
    std::shared_ptr<DeviceSpan> span;
  };

  /// A driver's interval on a lane of its own (host clock, microseconds).
  struct Span {
    std::string lane, name, detail;
    int64_t step = 0;
    double beginUs = 0, endUs = 0;
  };

  /// Opens op `id` = size() and marks its begin.
  int64_t begin(Backend &backend, const char *op, const char *label, std::string scope,
                int64_t step, const char *category = "kernel");
  /// Records a transfer on the lane of its group.
  void addTransfer(Transfer transfer) { transfers_.push_back(std::move(transfer)); }
  /// Records a span on its lane.
  void addSpan(Span span) { spans_.push_back(std::move(span)); }
  /// Now on the trace's clock (the steady clock, microseconds).
  static double nowUs();
  /// Marks the end of the innermost open op; false if none is open.
  bool end(Backend &backend);
  /// Sets the FLOPs of the innermost open op; false if none is open.
  bool setFlops(double flops);
  int64_t size() const { return int64_t(ops_.size()); }
  int64_t openCount() const { return int64_t(open_.size()); }
  const std::vector<Op> &ops() const { return ops_; }

  /// Synchronizes, resolves the timings and writes the JSON document (above)
  /// of world rank `pid`.
  bool write(Backend &backend, const std::string &path, int32_t pid, std::string *error) const;

private:
  std::vector<Op> ops_;
  std::vector<int64_t> open_;
  std::vector<Transfer> transfers_;
  std::vector<Span> spans_;

  void writeSpans(FILE *file, int32_t pid, int firstLane) const;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRACE_H
