//===- trace.cpp - kernel trace in Chrome / Perfetto JSON -----------------===//

#include "trace.h"

#include "json.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace braid::rt {

bool Trace::setFlops(double flops) {
  if (open_.empty())
    return false;
  ops_[size_t(open_.back())].flops = flops;
  return true;
}

int64_t Trace::begin(Backend &backend, const char *op, const char *label, std::string scope,
                     int64_t step, const char *category) {
  int64_t id = int64_t(ops_.size());
  ops_.push_back({op ? op : "", label ? label : "", std::move(scope), step, -1, category});
  open_.push_back(id);
  backend.markBegin(id);
  return id;
}

bool Trace::end(Backend &backend) {
  if (open_.empty())
    return false;
  int64_t id = open_.back();
  open_.pop_back();
  backend.markEnd(id);
  return true;
}

namespace {

/// `ns` nanoseconds as microseconds with three decimals ("12.345").
std::string micros(int64_t ns) {
  char text[32];
  uint64_t magnitude = ns < 0 ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  std::snprintf(text, sizeof text, "%s%llu.%03llu", ns < 0 ? "-" : "",
                (unsigned long long)(magnitude / 1000), (unsigned long long)(magnitude % 1000));
  return text;
}

} // namespace

double Trace::nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Trace::writeSpans(FILE *file, int32_t pid, int firstLane) const {
  std::map<std::string, int> lanes;
  for (const Span &span : spans_) {
    auto [it, fresh] = lanes.try_emplace(span.lane, firstLane + int(lanes.size()));
    if (fresh)
      std::fprintf(file,
                   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"name\":%s}}",
                   int(pid), it->second, json::quote(span.lane).c_str());
    int64_t begin = std::llround(span.beginUs * 1e3), end = std::llround(span.endUs * 1e3);
    std::fprintf(file,
                 ",\n{\"name\":%s,\"cat\":\"span\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                 "\"pid\":%d,\"tid\":%d,\"args\":{\"detail\":%s,\"step\":%lld}}",
                 json::quote(span.name).c_str(), micros(begin).c_str(),
                 micros(end > begin ? end - begin : 0).c_str(), int(pid), it->second,
                 json::quote(span.detail).c_str(), (long long)span.step);
  }
}

bool Trace::write(Backend &backend, const std::string &path, int32_t pid,
                  std::string *error) const {
  backend.synchronize();
  std::vector<OpTiming> timings = backend.resolveTimings(size());
  // GPU ranks' transfers: their stream's events, complete after the
  // synchronize, on the kernels' clock.
  std::vector<Transfer> transfers = transfers_;
  for (Transfer &t : transfers)
    if (t.span && !(backend.eventMicros(t.span->beginEvent(), &t.beginUs) &&
                    backend.eventMicros(t.span->endEvent(), &t.endUs)))
      t.beginUs = t.endUs = 0;
  FILE *file = std::fopen(path.c_str(), "w");
  if (!file) {
    if (error)
      *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  // The process's row: named and sorted by rank when several files are merged.
  std::fprintf(file,
               "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
               "\"tid\":0,\"args\":{\"name\":\"rank %d\"}},\n{\"name\":\"process_sort_index\","
               "\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
               int(pid), int(pid), int(pid), int(pid));
  if (!transfers_.empty() || !spans_.empty())
    std::fprintf(file,
                 ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                 "\"args\":{\"name\":\"compute\"}}",
                 int(pid));
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op &op = ops_[i];
    OpTiming t = i < timings.size() ? timings[i] : OpTiming{};
    if (!std::isfinite(t.beginUs) || !std::isfinite(t.endUs))
      t = OpTiming{}; // never print nan/inf: the document must stay valid JSON
    // Whole nanoseconds, the end rounded like the begin: a nested op then
    // never sticks out of its enclosing one by a rounding.
    int64_t begin = std::llround(t.beginUs * 1e3), end = std::llround(t.endUs * 1e3);
    std::fprintf(file,
                 ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                 "\"pid\":%d,\"tid\":0,\"args\":{\"label\":%s,\"scope\":%s,\"step\":%lld",
                 json::quote(op.op).c_str(), op.category, micros(begin).c_str(),
                 micros(end > begin ? end - begin : 0).c_str(), int(pid),
                 json::quote(op.label).c_str(), json::quote(op.scope).c_str(),
                 (long long)op.step);
    if (op.flops >= 0)
      std::fprintf(file, ",\"flops\":%.17g", op.flops);
    std::fputs("}}", file);
  }
  // One lane per group, numbered in the order the groups first transferred.
  std::map<std::string, int> lanes;
  for (const Transfer &t : transfers) {
    auto [it, fresh] = lanes.try_emplace(t.group, int(lanes.size()) + 1);
    if (fresh)
      std::fprintf(file,
                   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"name\":%s}}",
                   int(pid), it->second, json::quote("comm " + t.group).c_str());
    int64_t begin = std::llround(t.beginUs * 1e3), end = std::llround(t.endUs * 1e3);
    std::fprintf(file,
                 ",\n{\"name\":%s,\"cat\":\"comm\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,"
                 "\"pid\":%d,\"tid\":%d,\"args\":{\"group\":%s,\"step\":%lld",
                 json::quote(t.kind).c_str(), micros(begin).c_str(),
                 micros(end > begin ? end - begin : 0).c_str(), int(pid), it->second,
                 json::quote(t.group).c_str(), (long long)t.step);
    if (t.linkEndUs > 0)
      std::fprintf(file, ",\"link_end\":%s", micros(std::llround(t.linkEndUs * 1e3)).c_str());
    std::fputs("}}", file);
  }
  writeSpans(file, pid, int(lanes.size()) + 1);
  std::fputs("\n],\"displayTimeUnit\":\"ms\"}\n", file);
  if (std::fclose(file) != 0) {
    if (error)
      *error = "cannot write " + path;
    return false;
  }
  return true;
}

} // namespace braid::rt
