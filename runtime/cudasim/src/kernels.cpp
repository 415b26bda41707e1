//===- kernels.cpp - cudasim: blocks of fibers, barriers, launch checks ----===//
//
// A launch runs its blocks one after another on the OS thread of its stream.
// Each thread of a block is a fiber with a stack of its own; the
// scheduler runs every ready fiber in turn until it finishes or waits at a
// barrier (__syncthreads: the block; __syncwarp and the warp intrinsics: its
// warp). A barrier opens when every thread of its block (warp) that has not
// returned waits at it. When no fiber can run and none has a barrier to open,
// the block is deadlocked: a barrier in divergent code. That is reported with
// the kernel, the block and where each thread waits, and the process aborts.
//
// Switching between fibers. On x86-64, a switch saves the callee-saved
// registers and the floating-point control words on the old stack and loads
// them from the new one (switchStack, below): some nanoseconds. ucontext's
// swapcontext, used elsewhere, also saves the signal mask with a system call
// and took about 90% of a kernel test's time.
//
//===----------------------------------------------------------------------===//

#include "cudasim/cudasim.h"
#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDASIM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CUDASIM_ASAN 1
#endif
#ifdef CUDASIM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__)
#define CUDASIM_STACK_SWITCH 1
// switchStack(from, to): pushes rbp, rbx, r12-r15 and MXCSR / the x87 control
// word, saves the stack pointer in *from, then loads `to` and pops the same
// from it. A new fiber's stack is laid out as such a frame that returns into
// its entry function (BlockRunner::start).
extern "C" void cudasim_switch_stack(void **from, void *to);
asm(R"(
  .text
  .p2align 4
  .globl cudasim_switch_stack
  .hidden cudasim_switch_stack
  .type cudasim_switch_stack,@function
cudasim_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cudasim_switch_stack, .-cudasim_switch_stack
)");
#endif

namespace cudasim {
namespace {

// Kernels keep small arrays in "registers" (the attention kernels some KiB);
// AddressSanitizer's redzones take more.
#ifdef CUDASIM_ASAN
constexpr size_t kStackBytes = 512 * 1024;
#else
constexpr size_t kStackBytes = 256 * 1024;
#endif
constexpr int kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxGridYZ = 65535;
constexpr size_t kDefaultSharedLimit = 48 * 1024;
constexpr size_t kOptinSharedLimit = 227 * 1024; // H100 / H200

enum class FiberState { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
#ifdef CUDASIM_STACK_SWITCH
  void *sp = nullptr; // saved stack pointer while switched away
#else
  ucontext_t context;
#endif
  char *stack = nullptr;
  FiberState state = FiberState::Ready;
  uint3 index{0, 0, 0};
  void *fakeStack = nullptr; // AddressSanitizer's, while switched away
};

/// The fibers of the block now running on this OS thread.
struct BlockRunner {
  std::vector<Fiber> fibers;
#ifdef CUDASIM_STACK_SWITCH
  void *schedulerSp = nullptr;
#else
  ucontext_t scheduler;
#endif
  const std::function<void()> *body = nullptr;
  int current = -1;
  std::vector<uint64_t> exchangeSlots; // one per thread: warp exchange values
  std::vector<char> dynamicShared;
  size_t blockThreads = 0;
  const void *schedulerStackBottom = nullptr;
  size_t schedulerStackSize = 0;
  void *schedulerFakeStack = nullptr;

  ~BlockRunner() {
    for (Fiber &f : fibers)
      if (f.stack)
        munmap(f.stack, kStackBytes);
  }

  void ensureFibers(size_t n) {
    while (fibers.size() < n) {
      Fiber &f = fibers.emplace_back();
      void *stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (stack == MAP_FAILED) {
        std::fprintf(stderr, "cudasim: cannot map a fiber stack\n");
        std::abort();
      }
      f.stack = static_cast<char *>(stack);
    }
  }
};

thread_local ThreadIndices currentIndices;
thread_local BlockRunner *runner = nullptr;
thread_local const char *currentKernel = nullptr;

// Switches from the scheduler to fiber `i`, and back when it waits or ends.
void resume(BlockRunner &r, int i) {
  Fiber &f = r.fibers[static_cast<size_t>(i)];
  r.current = i;
  currentIndices.thread = f.index;
#ifdef CUDASIM_ASAN
  __sanitizer_start_switch_fiber(&r.schedulerFakeStack, f.stack, kStackBytes);
#endif
#ifdef CUDASIM_STACK_SWITCH
  cudasim_switch_stack(&r.schedulerSp, f.sp);
#else
  swapcontext(&r.scheduler, &f.context);
#endif
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(r.schedulerFakeStack, nullptr, nullptr);
#endif
  r.current = -1;
}

// From the running fiber back to the scheduler, with the fiber's new state.
void yieldTo(FiberState state) {
  BlockRunner &r = *runner;
  if (r.current < 0) {
    std::fprintf(stderr, "cudasim: a barrier or warp intrinsic outside a kernel\n");
    std::abort();
  }
  Fiber &f = r.fibers[static_cast<size_t>(r.current)];
  f.state = state;
#ifdef CUDASIM_ASAN
  __sanitizer_start_switch_fiber(&f.fakeStack, r.schedulerStackBottom, r.schedulerStackSize);
#endif
#ifdef CUDASIM_STACK_SWITCH
  cudasim_switch_stack(&f.sp, r.schedulerSp);
#else
  swapcontext(&f.context, &r.scheduler);
#endif
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(f.fakeStack, &r.schedulerStackBottom, &r.schedulerStackSize);
#endif
}

void fiberMain() {
  BlockRunner &r = *runner;
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &r.schedulerStackBottom, &r.schedulerStackSize);
#endif
  (*r.body)();
  Fiber &f = r.fibers[static_cast<size_t>(r.current)];
  f.state = FiberState::Done;
#ifdef CUDASIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, r.schedulerStackBottom, r.schedulerStackSize);
#endif
#ifdef CUDASIM_STACK_SWITCH
  // Back to the scheduler for good: the next block starts this stack afresh.
  cudasim_switch_stack(&f.sp, r.schedulerSp);
  std::abort(); // never resumed
#endif
  // With ucontext, returning switches to uc_link, the scheduler.
}

/// Lays out fiber `f`'s stack so that switching to it enters fiberMain: the
/// frame cudasim_switch_stack pops (control words, six registers) and
/// fiberMain's address to return into, placed so that fiberMain starts with
/// the stack aligned as after a call.
void startFiber(Fiber &f, BlockRunner &r) {
#ifdef CUDASIM_STACK_SWITCH
  (void)r;
  uint64_t *top = reinterpret_cast<uint64_t *>(f.stack + kStackBytes);
  uint64_t *frame = top - 9; // entry rsp = top - 8: 16-aligned + 8
  uint32_t mxcsr;
  uint16_t fpcw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpcw));
  frame[0] = uint64_t(mxcsr) | (uint64_t(fpcw) << 32);
  for (int i = 1; i <= 6; ++i)
    frame[i] = 0; // r15, r14, r13, r12, rbx, rbp
  frame[7] = reinterpret_cast<uint64_t>(&fiberMain);
  frame[8] = 0; // fiberMain's return address: it never returns
  f.sp = frame;
#else
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack;
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = &r.scheduler;
  makecontext(&f.context, fiberMain, 0);
#endif
}

const char *stateName(FiberState s) {
  switch (s) {
  case FiberState::Ready:
    return "ready";
  case FiberState::AtBlockBarrier:
    return "__syncthreads";
  case FiberState::AtWarpBarrier:
    return "a warp barrier (__syncwarp / shuffle / vote)";
  case FiberState::Done:
    return "returned";
  }
  return "?";
}

[[noreturn]] void reportDeadlock(BlockRunner &r, size_t n) {
  const ThreadIndices &ix = currentIndices;
  std::fprintf(stderr,
               "cudasim: deadlock in kernel %s, block (%u, %u, %u): threads wait at barriers "
               "that the others do not reach (a barrier in divergent code)\n",
               currentKernel, ix.block.x, ix.block.y, ix.block.z);
  // One line per run of threads in the same state.
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j + 1 < n && r.fibers[j + 1].state == r.fibers[i].state)
      ++j;
    std::fprintf(stderr, "  threads %zu..%zu: %s\n", i, j, stateName(r.fibers[i].state));
    i = j + 1;
  }
  std::abort();
}

void runBlock(BlockRunner &r, size_t n, bool reverse) {
  r.blockThreads = n;
  for (size_t i = 0; i < n; ++i) {
    Fiber &f = r.fibers[i];
    const dim3 &b = currentIndices.blockSize;
    f.index = uint3{static_cast<unsigned>(i % b.x), static_cast<unsigned>((i / b.x) % b.y),
                    static_cast<unsigned>(i / (size_t(b.x) * b.y))};
    f.state = FiberState::Ready;
    startFiber(f, r);
  }
  std::fill(r.exchangeSlots.begin(), r.exchangeSlots.begin() + static_cast<ptrdiff_t>(n),
            ~uint64_t(0));
  const size_t warps = (n + 31) / 32;
  while (true) {
    for (size_t k = 0; k < n; ++k) {
      size_t i = reverse ? n - 1 - k : k;
      if (r.fibers[i].state == FiberState::Ready) {
        resume(r, static_cast<int>(i));
      }
    }
    // Open the barriers that every live thread has reached.
    size_t live = 0, atBlock = 0;
    for (size_t i = 0; i < n; ++i) {
      FiberState s = r.fibers[i].state;
      live += s != FiberState::Done;
      atBlock += s == FiberState::AtBlockBarrier;
    }
    if (live == 0)
      return;
    bool opened = false;
    if (atBlock == live) {
      for (size_t i = 0; i < n; ++i)
        if (r.fibers[i].state == FiberState::AtBlockBarrier)
          r.fibers[i].state = FiberState::Ready;
      opened = true;
    } else {
      for (size_t w = 0; w < warps; ++w) {
        size_t begin = w * 32, end = std::min(n, begin + 32);
        size_t warpLive = 0, atWarp = 0;
        for (size_t i = begin; i < end; ++i) {
          warpLive += r.fibers[i].state != FiberState::Done;
          atWarp += r.fibers[i].state == FiberState::AtWarpBarrier;
        }
        if (warpLive > 0 && atWarp == warpLive) {
          for (size_t i = begin; i < end; ++i)
            if (r.fibers[i].state == FiberState::AtWarpBarrier)
              r.fibers[i].state = FiberState::Ready;
          opened = true;
        }
      }
    }
    if (!opened)
      reportDeadlock(r, n);
  }
}

struct KernelAttributes {
  std::mutex mutex;
  std::unordered_map<const void *, int> maxDynamicShared;
};
KernelAttributes &attributes() {
  static KernelAttributes a;
  return a;
}

bool reverseOrder() {
  static const bool reverse = [] {
    const char *order = std::getenv("BRAID_CUDASIM_ORDER");
    return order && std::string(order) == "reverse";
  }();
  return reverse;
}

} // namespace

ThreadIndices &indices() { return currentIndices; }

cudaError_t setMaxDynamicSharedMemory(const void *kernel, int bytes) {
  if (bytes < 0 || static_cast<size_t>(bytes) > kOptinSharedLimit)
    return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(attributes().mutex);
  attributes().maxDynamicShared[kernel] = bytes;
  return cudaSuccess;
}

void *dynamicSharedMemory() {
  if (!runner || runner->dynamicShared.empty())
    return nullptr;
  return runner->dynamicShared.data();
}

void syncThreads() { yieldTo(FiberState::AtBlockBarrier); }
void syncWarp() { yieldTo(FiberState::AtWarpBarrier); }

int laneId() { return runner->current % 32; }

uint64_t exchange(uint64_t value, int srcLaneOf(int lane, void *), void *arg) {
  BlockRunner &r = *runner;
  const int self = r.current, lane = self % 32, base = self - lane;
  r.exchangeSlots[static_cast<size_t>(self)] = value;
  syncWarp(); // every lane has written
  int src = srcLaneOf(lane, arg);
  uint64_t result = value;
  if (src >= 0 && src < 32 && static_cast<size_t>(base + src) < r.blockThreads)
    result = r.exchangeSlots[static_cast<size_t>(base + src)];
  syncWarp(); // every lane has read before any writes again
  return result;
}

unsigned ballot(bool predicate) {
  BlockRunner &r = *runner;
  const int self = r.current, lane = self % 32, base = self - lane;
  r.exchangeSlots[static_cast<size_t>(self)] = predicate ? 1 : 0;
  syncWarp();
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l) {
    size_t i = static_cast<size_t>(base + l);
    if (i < r.blockThreads && r.fibers[i].state != FiberState::Done && r.exchangeSlots[i] == 1)
      bits |= 1u << l;
  }
  syncWarp();
  return bits;
}

void launchKernel(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smemBytes,
                  cudaStream_t stream, std::function<void()> body) {
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ || block.z > 64) {
    std::fprintf(stderr,
                 "cudasim: kernel %s: invalid configuration grid (%u, %u, %u) block (%u, %u, %u)\n",
                 name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    setLastError(cudaErrorInvalidConfiguration);
    return;
  }
  if (smemBytes > kDefaultSharedLimit) {
    int allowed = 0;
    {
      std::lock_guard<std::mutex> lock(attributes().mutex);
      auto it = attributes().maxDynamicShared.find(kernel);
      allowed = it == attributes().maxDynamicShared.end() ? 0 : it->second;
    }
    if (smemBytes > static_cast<size_t>(allowed)) {
      std::fprintf(stderr,
                   "cudasim: kernel %s: %zu bytes of dynamic shared memory, above 48 KiB "
                   "without cudaFuncSetAttribute(MaxDynamicSharedMemorySize) of as much "
                   "(set: %d)\n",
                   name, smemBytes, allowed);
      setLastError(cudaErrorInvalidValue);
      return;
    }
  }
  static const bool traceLaunches = std::getenv("BRAID_CUDASIM_TRACE") != nullptr;
  if (traceLaunches)
    std::fprintf(stderr, "cudasim: launch %s on stream %p\n", name, static_cast<void *>(stream));
  enqueue(stream, [name, grid, block, smemBytes, threads, body = std::move(body)]() {
    thread_local BlockRunner local;
    BlockRunner &r = local;
    r.ensureFibers(threads);
    if (r.exchangeSlots.size() < threads)
      r.exchangeSlots.resize(threads);
    // Dynamic shared memory is garbage on a GPU: 0xff bytes (NaN) here.
    r.dynamicShared.assign(smemBytes, static_cast<char>(0xff));
    r.body = &body;
    BlockRunner *savedRunner = runner;
    const char *savedKernel = currentKernel;
    ThreadIndices savedIndices = currentIndices;
    runner = &r;
    currentKernel = name;
    currentIndices.gridSize = grid;
    currentIndices.blockSize = block;
    const bool reverse = reverseOrder();
    const size_t blocks = size_t(grid.x) * grid.y * grid.z;
    for (size_t k = 0; k < blocks; ++k) {
      size_t b = reverse ? blocks - 1 - k : k;
      currentIndices.block = uint3{static_cast<unsigned>(b % grid.x),
                                      static_cast<unsigned>((b / grid.x) % grid.y),
                                      static_cast<unsigned>(b / (size_t(grid.x) * grid.y))};
      runBlock(r, threads, reverse);
    }
    runner = savedRunner;
    currentKernel = savedKernel;
    currentIndices = savedIndices;
  });
}

} // namespace cudasim

//===--- Warp votes ---------------------------------------------------------===//

unsigned __ballot_sync(unsigned, int predicate) { return cudasim::ballot(predicate != 0); }
int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, !predicate) == 0; }
