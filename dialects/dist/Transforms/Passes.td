//===- Passes.td - passes of the dist dialect ---------------*- tablegen -*-===//
//
// Passes from per-rank dist programs to per-rank dist programs: they run after
// --convert-braid-to-dist (lib/Conversion/BraidToDist) and reorder, regroup
// or check its transfers.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define BRAID_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistCheckCollectiveOrderPass
    : Pass<"dist-check-collective-order", "::mlir::ModuleOp"> {
  let summary = "Check that every pipeline stage issues a group's collectives in one order";
  let description = [{
    A collective completes only when every rank of its group has issued it,
    and ranks issue their collectives on a communicator in program order:
    two ranks that issue a group's collectives in different orders wait for
    each other forever. SPMD ranks run one program; the stages of a
    pipelined module (`braid.pipeline_entries`) run one program each. For
    every group whose ranks lie in several stages (its axes include pp),
    this pass flattens each stage's program (calls included, in program
    order) into the sequence of that group's collectives and reports, at the
    first collective out of order, the stage and the collective the first
    stage issues there instead. Point-to-point transfers along pp match by
    tag in the dist dialect (and over MPI), but in issue order over NCCL,
    which has no tags: the pass also checks that the sends of each stage to
    another, in program order, are that stage's receives from it in program
    order (tag and type), and reports the first receive out of order. The
    training pipeline runs it after the lowering to dist; the overlap
    scheduler must keep what it checks.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def BraidCollectiveMatmulPass
    : Pass<"braid-collective-matmul", "::mlir::ModuleOp"> {
  let summary = "All-gathers before matrix products and reduce-scatters after them as rings of shifts and product chunks";
  let description = [{
    Sequence parallelism gathers a layer's input over tp before its
    column-parallel products, and nothing can hide the gather: the products
    need all of it. In every function of a per-rank dist program, a
    `dist.all_gather` of n ranks along a leading dimension whose every use
    is the input of a `braid.linear` becomes n steps (collective matmul, as
    in Wang et al., ASPLOS 2023, and PyTorch's async TP): at step k each
    product computes the piece of its rows from the block the rank holds,
    while a cyclic `dist.shift` by -1 brings the next block (after k shifts
    the block of the rank k places up); `dist.assemble` puts piece k at
    block (c + k) mod n. The rows are those of the gathered products, the
    same sums in the same order; when the gathered value has other uses
    (an activation saved for the backward) it is assembled from the ring's
    blocks.

    The other half: a `dist.reduce_scatter` (sum) of `braid.linear` rows,
    or of a sum of them (a backward's input gradient, summed over the
    products that read the input), along a leading dimension becomes a ring
    of partial sums: at step k the rank computes the rows of block
    (c - 1 - k) mod n (`dist.block`) of every product, sums them and adds
    the sum its lower neighbour passed on (a cyclic shift by +1) while its
    own travels on; after n - 1 steps it holds its block summed over the
    ranks (the sum in ring order).

    With `mode` auto the cost model on `hardware` chooses: a ring replaces
    the gather (the reduce-scatter) when it is faster than the collective
    and the products on the whole value. The ring takes one step and then
    n - 1 times the slower of a step's kernels and the shift (one message
    over the group's link); without it the products wait for the whole
    collective, then run. Kernels cost their roofline time and a launch
    (the description's `kernel_launch_s`), so that smaller chunks pay their
    launches and reread their weights: tiny layers keep the collective.
    `always` and `never` force it.
  }];
  let options = [
    Option<"mode", "mode", "::mlir::braid::CollectiveMatmulMode",
           /*default=*/"::mlir::braid::CollectiveMatmulMode::Auto",
           "Whether a ring replaces the collective (auto: where the cost "
           "model predicts it faster)">,
    Option<"hardware", "hardware", "std::string",
           /*default=*/"::mlir::braid::kDefaultHardware",
           "Hardware description for the choice (lib/CostModel/hardware)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def BraidScheduleOverlapPass
    : Pass<"braid-schedule-overlap", "::mlir::ModuleOp"> {
  let summary = "Start each transfer as early and wait for it as late as its uses allow";
  let description = [{
    In every function of a per-rank dist program, each transfer starts right
    after the latest of: its operands' definitions (for a transfer's result,
    that transfer's wait; the elementwise ops and reshapes only it reads
    move with it), for a group whose ranks run different programs (a
    pipelined module's groups over pp) the previous transfer on it and the
    last call issuing one there (so that every rank of such a group issues
    them in one order; the ranks of any other group all run this program
    and share its order), and the last op writing persistent storage
    (updates, set_param, a call holding one); the elementwise ops,
    reshapes and parameter reads only it reads move with it. A transfer of
    parameters only (ZeRO-3's gathers, whose operands are there from the
    start) starts no earlier than one call ahead of its first use, so that
    one layer's parameters arrive while the previous layer computes and at
    most two layers' are gathered at once. Each wait
    moves to just before the first op reading its transfers' results, the
    next op writing persistent storage, or the terminator. The ops between
    run while the transfer is in flight: a layer's gradient all-reduce
    overlaps the backward of the layers below it.

    In a pipelined module, the data-parallel gradient reductions that follow
    a chunk's last backward call move into a copy of the chunk's backward
    made for that call (`<chunk>.bwd.last`, taking the sums of the earlier
    micro-batches as arguments), together with the send of its cotangent to
    the previous stage, so that each starts when its layer's gradient is
    final; the moved ops carry `dist.announce` for dumps.

    The order is then chosen by a list scheduler over the timing model that
    --braid-print-plan simulates (compute at the rates of `hardware`'s
    calibration, the planner's, or its roofline,
    each group's transfers in turn on its own link, timed by `hardware`'s
    links or the emulator's `link`s), in the manner of XLA's
    latency-hiding scheduler: among the ops whose operands are there,
    every transfer starts at once (a pipeline's first: another stage waits
    for them); else the op that does not stall on a transfer in flight goes
    first, then an op a transfer reads, then the one with the longest path
    to the function's end (transfers at their seconds), then program order;
    the waits an op needs are taken just before it. Functions are scheduled
    after their callees, whose predicted seconds their calls take. Compute
    keeps its side of calls and ops with regions (a layer moved would keep
    its activations live longer; a pipeline action keeps its place), and
    nothing crosses an op writing persistent storage. A layer's weight
    gradients then run while its input gradient is reduced (as Megatron
    overlaps them), an expert layer's router gradient while one all-to-all
    moves and its experts' weight gradients while the next does
    (`move-compute=false` keeps compute in program order).

    Once the starts are in place, consecutive reductions of one group, kind
    and element type combine into buckets (PyTorch DDP's gradient buckets):
    each is one transfer of a flat `dist.pack` of its tensors, every tensor
    taken out by a `dist.unpack` before the first reader of any, so that a
    step's many small gradient reductions pay the link's latency once per
    bucket and still start while the backward runs. A bucket closes once it holds
    `bucket-mb` MiB, the first one of a function `first-bucket-mb`; a tensor
    that size or larger stays alone. A reduction joins only if it is ready
    before every member is needed (first read, or the next write of
    persistent storage); a reduce-scatter's bucket holds each rank's blocks
    together. Groups over pp are never bucketed.

    ZeRO-1 and 2 end a step with the all-gather of each parameter's updated
    ranges, which nothing after them can hide. With `defer-param-gather`
    (the default) each moves to the next step, before the parameter's first
    read (into a copy of a pipeline chunk's forward made for its first call,
    `<chunk>.first`, when the chunk reads it), where the schedule starts
    them all at the step's start and waits for each before the layer that
    reads it (Megatron's overlap-param-gather). The same gathers make
    `<step>.finish`, named by the step's `braid.finish`, which the runtime
    runs before it reads the parameters: step 1 gathers the values every
    rank holds already, and the finish between two steps changes nothing.

    ZeRO-3 gathers a layer's parameters inside the layer's functions, where
    nothing precedes them to hide behind: each gather of a function's
    argument moves to the function's callers (the function then takes the
    whole parameter), where the prefetch rule applies.

    The memory plan keeps a transfer's operands and results live until its
    wait, so the schedule can grow the memory a program needs. The
    scheduled programs' peak of live bytes (the memory plan's, callee frames
    included) may exceed the unscheduled one's by the fraction
    `memory-growth` of the unscheduled arena, and with moved gathers by one
    call's gathered parameters more (what a layer-ahead prefetch holds, as
    DeepSpeed's and FSDP's do by default). The list scheduler keeps each
    function within that much over its own unscheduled peak as it picks
    (counting live bytes as the memory plan does): a unit that would go over
    waits, and when nothing fits, the wait of a transfer in flight that frees
    the most is taken early (XLA's scheduler tracks memory pressure alike).
    Each try's program is then checked by the memory plan itself. Over the
    budget, the same schedule is tried with compute
    left in place; then prefetches start after the previous call instead;
    over it still, the gathers stay in their functions and that program is
    scheduled under the fraction alone; over it still, every function keeps
    its order. A schedule that fits takes its buckets
    if it still fits with them or if they add at most their largest
    bucket to its peak (a bucket's flat copies); else it keeps one
    transfer per tensor. The training pipeline runs the pass after the
    lowering to dist (`schedule-overlap=false` turns it off).
  }];
  let options = [
    Option<"memoryGrowth", "memory-growth", "double", /*default=*/"0.05",
           "Fraction the scheduled peak of live bytes may exceed the "
           "unscheduled one's by">,
    Option<"moveCompute", "move-compute", "bool", /*default=*/"true",
           "Move compute a transfer does not feed after its start, and "
           "compute after a wait that does not read its result before it">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "MiB a bucket of reductions closes at (PyTorch DDP's "
           "bucket_cap_mb; 0: no buckets)">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "MiB the first bucket of a function closes at, so that the "
           "first reduction starts early (DDP's first bucket)">,
    Option<"deferParamGather", "defer-param-gather", "bool", /*default=*/"true",
           "Gather ZeRO-1/2's updated parameter ranges in the next step, "
           "before each parameter's first read, instead of at the step's end">,
    Option<"hardware", "hardware", "std::string",
           /*default=*/"::mlir::braid::kDefaultHardware",
           "Hardware whose compute and links the list scheduler times "
           "(lib/CostModel/hardware)">,
    Option<"link", "link", "std::string", /*default=*/"\"\"",
           "Links per grid axis that time the transfers instead, as the CPU "
           "ranks' emulator (BRAID_LINK) charges them: tp:2us,20GB/s;dp:..">,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"auto\"",
           "Compute rates: auto (the hardware's calibration; a description "
           "file's compute at the roofline), roofline, or a calibration's "
           "name or .json file">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

#endif // BRAID_DIALECT_DIST_TRANSFORMS_PASSES_TD
