// Passes over the hrt dialect, alphabetical.
#ifndef HRT_TRANSFORMS_PASSES_TD
#define HRT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldKvAppends : Pass<"hrt-fold-kv-appends",
                         "::hybridc::hrt::ExecutableOp"> {
  let summary = "Fold a step's KV cache writes into the attention reading them";
  let description = [{
    Two `hrt.cache_write`s along axis 2 at the same offset, of a key and a
    value update [B, Hkv, T', D] into the rank-4 buffers that a later
    `hrt.attention` reads as its key and value, become that attention's
    `append_key` / `append_value` / `append_at`: the attention writes them
    into the cache before it attends, one command instead of three (a
    decode step's device operations are latency-bound: a GPU kernel can
    take the new keys from the update while it streams the cache). Only
    when no command between a write and the attention touches the cache,
    or writes the update or the offset; the writes are erased.
  }];
}

def GroupLinears : Pass<"hrt-group-linears", "::hybridc::hrt::ExecutableOp"> {
  let summary = "Run linears that share their input as one hrt.linear_group";
  let description = [{
    Two patterns become an `hrt.linear_group` (one command, so a backend can
    stream every member's weight in one launch):
      * `hrt.linear` commands on one stream that read the same input buffer
        with the same epilogue (transpose_weight, activation, each with or
        each without a bias; no residual, no norm prologue), at most a few
        commands apart, where no command between them writes the input,
        a later member's weight or bias, or touches a later member's
        result (a decode layer's q, k and v projections). The group runs
        where the first of them ran.
      * an `hrt.linear` whose result only `hrt.slice` commands read, each
        along the last axis with step 1 and static bounds, over disjoint
        ranges (GPT-2's c_attn cut into q, k and v): its members write the
        slices' results directly, and the full result's buffer goes.
    Each result a member writes earlier than before must be a workspace
    allocation (it moves up to the group). Run before memory planning;
    planned executables are left alone.
  }];
}

def PlanMemory : Pass<"hrt-plan-memory", "::hybridc::hrt::ExecutableOp"> {
  let summary = "Assign workspace offsets to allocations and ports";
  let description = [{
    Places every `hrt.alloc`, `hrt.input` and `hrt.output` of the executable
    in one workspace and sets its `offset` (bytes, a polynomial in the
    executable's symbols), and the executable's `workspace` size. A buffer
    lives from the first to the last command that touches it, directly or
    through views; inputs are live from the start (the caller fills them)
    and outputs to the end (the caller reads them). Buffers whose lifetimes
    do not overlap share space when one is provably at least as large as the
    other for every binding of the symbols. Every buffer starts on an
    `alignment`-byte boundary: the runtime rounds each offset up to it, and
    the plan reserves room for that (see MemoryPlan.h).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "byte alignment of every buffer (a power of two)">,
    Option<"keepPlans", "keep-plans", "bool", /*default=*/"false",
           "leave an executable that has a workspace already (a planned "
           "module given as input) as it is">,
  ];
}

def ZeroPartition : Pass<"hrt-zero-partition", "::mlir::ModuleOp"> {
  let summary = "Partition training state over a data-parallel group (ZeRO)";
  let description = [{
    Rewrites every executable of the module for data parallelism over
    `world-size` ranks at ZeRO stage `stage` (DeepSpeed's
    `zero_optimization.stage`). A sharded tensor uses the flat layout: it is
    flattened row-major, padded with zeros to a multiple of the world size
    and split into equal contiguous pieces, rank r holding piece r
    (`#hrt.shard`); its buffer becomes that 1-D piece.

    What is sharded, by the names the training lowering gives:
      * stage >= 1: per-parameter optimizer state, `opt.<kind>.<param>` of
        the parameter's element count (AdamW's moments);
      * stage >= 2: the gradient accumulators `opt.grad.<param>`;
      * stage 3: the parameters themselves, in the weight store.

    The gradients of a rank (the values added or copied to
    `opt.grad.<param>` and the `grad.<param>` outputs) are its share of
    the data-parallel mean. Whole tensors are replicated (the same on every
    rank: parameters, `opt.*` state, constants, scalar inputs, gathered or
    reduced values and what is computed from those alone) or a rank's own
    data. The pass follows each command from the sharded and per-rank
    values on and inserts the collectives (over the communicator
    "data_parallel") where a command needs another form:
      * a rank's gradient becomes the mean: `all_reduce` at stage 0,
        `reduce_scatter` into a shard from stage 1 on (then times
        1/world_size); a gradient added to a sharded accumulator is
        reduce-scattered, and added, right after its last write;
      * a sum over a shard (the squares of the global gradient norm) is
        `all_reduce`d before a non-linear use;
      * a replicated tensor that meets shards, or is written into a
        sharded state, is cut to this rank's piece (`shard`, no
        communication): the weights the optimizer updates at stages 1
        and 2, the weights that start f32 masters;
      * a shard written into whole tensors is `all_gather`ed there (the
        updated weights at stages 1 and 2), and a shard a command reads
        whole is gathered before it: at stage 3 every parameter before a
        command that reads it. A gathered parameter is a workspace buffer,
        so memory planning releases it after its last use; it is gathered
        again when more than `max-reuse-distance` elements of other
        parameters were gathered since its last use (DeepSpeed's
        `stage3_max_reuse_distance`).
    Elementwise commands (AdamW's fused update among them, every tensor
    it reads and writes the rank's piece) run on the shards, so the
    optimizer updates only this rank's piece of its state. Writing a rank's own data into a shard
    is an error (a rank cannot take its piece of data only it holds).

    Accumulating gradients over micro-batches stays local at stages 0 and 1
    (the mean is taken once, in @step); from stage 2 on every micro-batch's
    gradient is reduce-scattered. A world size of 1 changes nothing. The
    module records `hrt.world_size` and `hrt.zero_stage` for the bundle.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (data parallel), 1 (optimizer state), "
           "2 (+ gradients), 3 (+ parameters)">,
    Option<"worldSize", "world-size", "int64_t", /*default=*/"1",
           "ranks of the data-parallel group">,
    Option<"maxReuseDistance", "max-reuse-distance", "int64_t",
           /*default=*/"1000000000",
           "stage 3: keep a gathered parameter for its next use when at "
           "most this many elements of other parameters are gathered in "
           "between">,
  ];
}

def ZeroPrefetch : Pass<"hrt-zero-prefetch", "::hybridc::hrt::ExecutableOp"> {
  let summary = "Issue parameter all_gathers ahead of their use (ZeRO-3)";
  let description = [{
    Moves each `all_gather` of a sharded parameter earlier, onto stream 1,
    so that it overlaps the commands before its first use: gathers are
    issued in their order, each as soon as the gathers in flight (issued,
    not yet used) and itself hold at most `bucket-size` elements
    (DeepSpeed's `stage3_prefetch_bucket_size`). A moved gather waits for
    an event recorded on stream 0 where it is issued (its workspace slot
    may be one stream 0 still used), and stream 0 waits for an event
    recorded after it before the first use. A gather that alone exceeds
    the bucket stays where it is. Run before memory planning: a moved
    gather's buffer lives from its new place on.
  }];
  let options = [Option<"bucketSize", "bucket-size", "int64_t",
                        /*default=*/"50000000",
                        "elements of parameters gathered ahead of use">];
}

#endif // HRT_TRANSFORMS_PASSES_TD
