"""Every command of an hrt executable, defined once (see opdsl.py).

Order matters: the enums' cases and the ops' order are bundle values (the
hybrid::Op variant index is the bundle's union type - 1). Append only, and
bump kBundleFormatVersion when an older runtime would misread a bundle.
Adding an op: README.md, "Adding an op".
"""

from opdsl import (Attr, Case, Comm, Enum, HgForm, In, Op, Opt, OptOut, Out,
                   Var, VarOut)

# ---------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------

BinaryKind = Enum("BinaryKind", "binary operation", [
    Case("Add", "add", kernel="add"),
    Case("Sub", "sub", kernel="sub"),
    Case("Mul", "mul", kernel="mul"),
    Case("Div", "div", kernel="div", doc="integer division truncates"),
    Case("Pow", "pow", kernel="pow"),
    Case("Max", "max", kernel="max"),
    Case("Min", "min", kernel="min"),
    Case("Mod", "mod", kernel="mod",
         doc="result takes the divisor's sign (Python %)"),
    Case("FMod", "fmod", kernel="fmod",
         doc="result takes the dividend's sign (C fmod)"),
    Case("Equal", "equal", kernel="equal"),
    Case("Less", "less", kernel="less"),
    Case("LessEqual", "less_equal", kernel="lessEqual"),
    Case("Greater", "greater", kernel="greater"),
    Case("GreaterEqual", "greater_equal", kernel="greaterEqual"),
    Case("And", "and", kernel="logicalAnd"),
    Case("Or", "or", kernel="logicalOr"),
    Case("Xor", "xor", kernel="logicalXor"),
], name_function="binaryKindName")

UnaryKind = Enum("UnaryKind", "unary operation", [
    Case("Neg", "neg", kernel="neg"),
    Case("Abs", "abs", kernel="abs"),
    Case("Sign", "sign", kernel="sign"),
    Case("Exp", "exp", kernel="exp"),
    Case("Log", "log", kernel="log"),
    Case("Sqrt", "sqrt", kernel="sqrt"),
    Case("Rsqrt", "rsqrt", kernel="rsqrt"),
    Case("Reciprocal", "reciprocal", kernel="reciprocal"),
    Case("Tanh", "tanh", kernel="tanh"),
    Case("Sigmoid", "sigmoid", kernel="sigmoid"),
    Case("Relu", "relu", kernel="relu"),
    Case("Silu", "silu", kernel="silu"),
    Case("GeluErf", "gelu", kernel="geluErf"),
    Case("GeluTanh", "gelu_tanh", kernel="geluTanh"),
    Case("Sin", "sin", kernel="sin"),
    Case("Cos", "cos", kernel="cos"),
    Case("Erf", "erf", kernel="erf"),
    Case("Floor", "floor", kernel="floor"),
    Case("Ceil", "ceil", kernel="ceil"),
    Case("Not", "not", kernel="logicalNot"),
    Case("IsNan", "is_nan", kernel="isNan"),
    Case("IsInf", "is_inf", kernel="isInf"),
], name_function="unaryKindName")

ReduceKind = Enum("ReduceKind", "reduction", [
    Case("Sum", "sum", "reduce_sum", "reduceSum"),
    Case("Mean", "mean", "reduce_mean", "reduceMean"),
    Case("Max", "max", "reduce_max", "reduceMax"),
    Case("Min", "min", "reduce_min", "reduceMin"),
    Case("Prod", "prod", "reduce_prod", "reduceProd"),
], name_function="reduceKindName")

CollectiveKind = Enum("CollectiveKind", "collective", [
    Case("AllGather", "all_gather"),
    Case("ReduceScatter", "reduce_scatter"),
    Case("AllReduce", "all_reduce"),
    Case("Shard", "shard"),
], doc="Shard: this rank's piece of a tensor every rank holds whole (ZeRO's "
       "flat partition, the rest zeros); no data moves between ranks.",
   name_function="collectiveKindName")

Activation = Enum("Activation", "linear epilogue activation", [
    Case("None", "none"),
    Case("Relu", "relu"),
    Case("GeluErf", "gelu"),
    Case("GeluTanh", "gelu_tanh"),
    Case("Silu", "silu"),
], doc="What a linear layer applies to x . W + bias before its residual (the "
       "GEMM epilogue): GeluErf is hg.gelu, GeluTanh its tanh approximation.",
   name_function="activationName")

NormKind = Enum("NormKind", "linear prologue norm", [
    Case("None", "none"),
    Case("LayerNorm", "layer_norm"),
    Case("RmsNorm", "rms_norm"),
], doc="What a linear layer applies to its input rows before the product (the "
       "GEMM prologue): hg.layer_norm or hg.rms_norm over the last dim.")

ENUMS = [BinaryKind, UnaryKind, ReduceKind, Activation, NormKind,
         CollectiveKind]

# ---------------------------------------------------------------------------
# Commands (in the bundle's union order)
# ---------------------------------------------------------------------------

ONE_IN = [In("input")]

OPS = [
    Op("Binary", "binary", "lhs (kind) rhs with NumPy broadcasting",
       "(lhs, rhs) -> result; NumPy broadcasting. Comparisons and logic give "
       "bool.",
       outs=[Out()], ins=[In("lhs"), In("rhs")],
       attrs=[Attr("kind", BinaryKind, "Add", lead=True)], kinds="kind"),
    Op("Unary", "unary", "elementwise (kind) input", "(input) -> result.",
       outs=[Out()], ins=ONE_IN,
       attrs=[Attr("kind", UnaryKind, "Neg", lead=True)], kinds="kind"),
    Op("Clip", "clip", "clamp to the bounds that are present",
       "(input) -> result, clamped to the bounds that are present.",
       outs=[Out()], ins=ONE_IN,
       attrs=[Attr("min", "opt_f64", ods="optional",
                   doc="absent bounds are null (not 0, not +-inf)"),
              Attr("max", "opt_f64", ods="optional")]),
    Op("Select", "select", "cond ? lhs : rhs with broadcasting",
       "(cond, lhs, rhs) -> result; cond ? lhs : rhs with broadcasting.",
       outs=[Out()], ins=[In("cond"), In("lhs"), In("rhs")]),
    Op("Cast", "cast", "convert elements to the result's element type",
       "(input) -> result of the result buffer's dtype.",
       outs=[Out()], ins=ONE_IN),
    Op("Copy", "copy", "copy the bytes (same element type and count)",
       "(input) -> result of the same dtype and element count (bytes "
       "copied).", outs=[Out()], ins=ONE_IN),
    Op("Fill", "fill", "set every element to value",
       "() -> result, every element `value` (converted to the result's "
       "dtype).", outs=[Out()],
       attrs=[Attr("value", "f64", 0, lead=True)]),
    Op("Transpose", "transpose", "result dim i = input dim perm[i]",
       "(input) -> result; result dim i = input dim perm[i].",
       outs=[Out()], ins=ONE_IN, attrs=[Attr("perm", "i64s")]),
    Op("BroadcastTo", "broadcast_to", "NumPy broadcast to the result's shape",
       "(input) -> result, NumPy-broadcast to the result's shape.",
       outs=[Out()], ins=ONE_IN),
    Op("Slice", "slice", "strided slice (ONNX Slice semantics)",
       "(input) -> result; ONNX Slice semantics per listed axis.",
       outs=[Out()], ins=ONE_IN,
       attrs=[Attr("axes", "i64s"), Attr("starts", "i64s"),
              Attr("ends", "i64s"), Attr("steps", "i64s")]),
    Op("Concat", "concat", "join along axis",
       "(inputs...) -> result, joined along `axis`.",
       outs=[Out()], ins=[Var("inputs")], attrs=[Attr("axis", "i64", 0)],
       arity="-1"),
    Op("Gather", "gather", "ONNX Gather",
       "(data, indices) -> result; ONNX Gather.",
       outs=[Out()], ins=[In("data"), In("indices")],
       attrs=[Attr("axis", "i64", 0)]),
    Op("GatherNd", "gather_nd", "ONNX GatherND",
       "(data, indices) -> result; ONNX GatherND.",
       outs=[Out()], ins=[In("data"), In("indices")],
       attrs=[Attr("batch_dims", "i64", 0)]),
    Op("Iota", "iota", "start, start + step, ...",
       "() -> result[n]: start, start + step, ...",
       outs=[Out()], attrs=[Attr("start", "f64", 0), Attr("step", "f64", 1)]),
    Op("CumSum", "cumsum", "running sum along axis",
       "(input) -> result, running sum along `axis`.",
       outs=[Out()], ins=ONE_IN, kernel="cumsum", scratch=True,
       attrs=[Attr("axis", "i64", 0), Attr("exclusive", "bool", False),
              Attr("reverse", "bool", False)]),
    Op("Trilu", "trilu", "keep a triangle of the last two dims",
       "(input) -> result; keeps the upper (or lower) triangle offset by k.",
       outs=[Out()], ins=ONE_IN,
       attrs=[Attr("upper", "bool", True), Attr("k", "i64", 0)]),
    Op("Reduce", "reduce", "reduce over axes (all when empty)",
       "(input) -> result, reduced over `axes` (all when empty).",
       outs=[Out()], ins=ONE_IN, kinds="kind", scratch=True,
       attrs=[Attr("kind", ReduceKind, "Sum", lead=True),
              Attr("axes", "i64s"), Attr("keepdims", "bool", True)]),
    Op("Softmax", "softmax", "softmax (or log-softmax) along axis",
       "(input) -> result; softmax (or log-softmax) along `axis`.",
       display='o.log ? "log_softmax" : "softmax"',
       outs=[Out()], ins=ONE_IN, scratch=True,
       attrs=[Attr("axis", "i64", -1), Attr("log", "bool", False)]),
    Op("LayerNorm", "layer_norm", "layer normalisation over dims [axis, rank)",
       "(input, weight?, bias?) -> result; normalised over dims [axis, rank).",
       outs=[Out()], ins=[In("input"), Opt("weight"), Opt("bias")],
       scratch=True,
       attrs=[Attr("epsilon", "f64", 1e-5), Attr("axis", "i64", -1)]),
    Op("RmsNorm", "rms_norm", "RMS normalisation over dims [axis, rank)",
       "(input, weight?) -> result.",
       outs=[Out()], ins=[In("input"), Opt("weight")], scratch=True,
       attrs=[Attr("epsilon", "f64", 1e-6), Attr("axis", "i64", -1)]),
    Op("MatMul", "matmul", "NumPy matmul", "(lhs, rhs) -> result; NumPy "
       "matmul.", outs=[Out()], ins=[In("lhs"), In("rhs")], kernel="matmul",
       scratch=True),
    Op("Linear", "linear",
       "activation(norm(x) . weight (+ bias)) (+ residual)",
       "(input, weight, bias?, residual?, norm_weight?, norm_bias?) -> result "
       "= activation(norm(input) . W + bias) + residual, each element rounded "
       "once; weight [N, K] when transposeWeight (nn.Linear), else [K, N]; "
       "residual has the result's shape. norm (the prologue) normalises each "
       "input row of K as ops::LayerNorm / ops::RmsNorm with normEpsilon, "
       "times norm_weight [K] (+ norm_bias [K]) when given, and rounds it to "
       "the input's type before the product.",
       outs=[Out()],
       ins=[In("input"), In("weight"), Opt("bias"), Opt("residual"),
            Opt("norm_weight", trailing=True), Opt("norm_bias", trailing=True)],
       scratch=True,
       attrs=[Attr("transpose_weight", "bool", True),
              Attr("activation", Activation, "None", ods="default"),
              Attr("norm", NormKind, "None", ods="default"),
              Attr("norm_epsilon", "f64", 1e-5, ods="default")],
       format="""
    $input `:` type($input) `,` $weight `:` type($weight)
    (`bias` $bias^ `:` type($bias))? (`activation` $activation^)?
    (`residual` $residual^ `:` type($residual))?
    (`norm` $norm^)? (`norm_weight` $norm_weight^ `:` type($norm_weight))?
    (`norm_bias` $norm_bias^ `:` type($norm_bias))? `into` $out `:` type($out)
    attr-dict"""),
    Op("Embedding", "embedding", "rows of table at ids",
       "(table, ids) -> result.",
       outs=[Out()], ins=[In("table"), In("ids")]),
    Op("Rotary", "rotary", "rotary position embedding",
       "(input, cos, sin) -> result.",
       outs=[Out()], ins=[In("input"), In("cos"), In("sin")],
       attrs=[Attr("interleaved", "bool", False)]),
    Op("Attention", "attention",
       "scaled dot-product attention with grouped KV heads",
       "(query, key, value, mask?, alibi_slopes?, key_length?, key_mask?) -> "
       "result. key_length, when present, is an i64 [1] tensor in device "
       "memory holding how many leading keys exist (S' <= S, the key buffer's "
       "length: a KV cache's filled slots); queries align to the end of those "
       "S' keys. key_mask, when present, is an integer [B, S] tensor: key j "
       "of row b is padding (never attended) where it is 0. With `append`, "
       "three more operands (append_key, append_value [B, Hkv, T', D], "
       "append_at i64 [1]) are first written into key and value at "
       "[append_at, append_at + T') along axis 2 (as two CacheWrites), and "
       "the command's results are (result, key, value).",
       description="""
    With `append_key` / `append_value` [B, Hkv, T', Dh] and `append_at`
    (i64 [1]), the command first writes them into `key` / `value` (the KV
    cache) at [append_at, append_at + T') along axis 2, as two
    `hrt.cache_write`s would, then attends over the cache (hrt-fold-kv-
    appends makes it from those writes): it writes `key` and `value` too.""",
       outs=[Out()],
       ins=[In("query"), In("key"), In("value"), Opt("mask"),
            Opt("alibi_slopes", "alibi"), Opt("key_length"), Opt("key_mask"),
            Opt("append_key", required_when="append", trailing=True),
            Opt("append_value", required_when="append", trailing=True),
            Opt("append_at", required_when="append", trailing=True)],
       scratch=True,
       attrs=[Attr("scale", "f64", 1), Attr("causal", "bool", False),
              Attr("sliding_window", "i64", 0),
              Attr("append", "bool", False,
                   derived="c.getAppendKey() != nullptr")],
       side_writes=("key", "value"), side_writes_when="append"),
    Op("Collective", "collective",
       "all_gather / reduce_scatter / all_reduce / shard over a communicator",
       "(input) -> result over communicator `communicator` (an index into "
       "the executable's communicators). With one rank every kind is a copy.",
       description="""
    `shard` takes this rank's piece of a tensor that every rank holds whole
    (ZeRO's flat partition: piece r of the tensor flattened and padded with
    zeros to a multiple of the world size); it moves no data between ranks
    but needs the communicator's rank.""",
       outs=[Out()], ins=[In("input"), Comm()], kernel=None,
       attrs=[Attr("kind", CollectiveKind, "AllReduce", lead=True),
              Attr("communicator", "i32", 0, derived="0",
                   doc="the bundle writer numbers the communicators")],
       format="""
    $kind $input `:` type($input) `into` $out `:` type($out) `over`
    $communicator attr-dict"""),
    Op("RecordEvent", "record_event",
       "mark `event` as reached on the command's stream",
       "Marks `event` as reached on the command's stream.", kernel=None,
       attrs=[Attr("event", "i32", 0, lead=True)]),
    Op("WaitEvent", "wait_event", "make the command's stream wait for `event`",
       "Makes the command's stream wait until `event` was reached.",
       kernel=None, attrs=[Attr("event", "i32", 0, lead=True)]),
    Op("CacheWrite", "cache_write",
       "write update into out at a device offset along axis",
       "(update, offset) -> result: writes `update` into the result at "
       "[offset, offset + n) along `axis` (n = update's length there; every "
       "other dim equal) and leaves the rest of the result as it was - the "
       "result is the KV cache (or another state) itself, updated in place. "
       "`offset` is an i64 [1] tensor in device memory, so one captured step "
       "serves every position. Slices past the end of the result are an "
       "error on the CPU and dropped on devices that cannot report one.",
       description="""
    Only the slice [offset, offset + n) of `out` is written; the rest keeps
    its bytes (`out` is the cache itself).""",
       outs=[Out()], ins=[In("update"), In("offset")],
       attrs=[Attr("axis", "i64", 0)],
       format="""
    $update `:` type($update) `at` $offset `:` type($offset) `into` $out `:`
    type($out) attr-dict"""),
    Op("Sample", "sample", "a token per row of logits (hybrid::ops::Sample)",
       "(logits [B, V] float, sampling [3] f32, rng [2] i64) -> result [B] "
       "i64. sampling = {temperature, top_p, top_k}: temperature <= 0 takes "
       "the argmax (the first on ties); else logits / temperature, keep the "
       "top_k largest (top_k <= 0: all), then the smallest set of the most "
       "likely tokens whose probability reaches top_p (top_p >= 1: all), and "
       "draw from the renormalised rest with u = hybrid::philoxUniform(rng[0], "
       "rng[1], row) (Philox.h), walking the kept tokens from most to least "
       "likely (ties by index). The same seed and counter give the same "
       "tokens on every backend.",
       outs=[Out()], ins=[In("logits"), In("sampling"), In("rng")],
       scratch=True),
    Op("SampleStep", "sample_step",
       "the sampling epilogue of a generation step (hybrid::ops::SampleStep)",
       "The sampling epilogue of a generation step in one command (what "
       "hg-split-generation's @prefill and @decode end with): (logits [B, V] "
       "float, config [4] i64 = {eos or -1, pad, min_new, unused}, sampling "
       "[3] f32, rng [2] i64, count [1] i64, finished [B] bool, lengths [B] "
       "i64) -> (token [B] i64, tokens [B, N] i64, logprobs [B, N] f32, "
       "lengths [B] i64, finished [B] bool, count [1] i64, rng [2] i64). Per "
       "row, in f32: the EOS logit is -inf while count < min_new; the token "
       "is Sample's of those logits; its log-probability is "
       "log_softmax(logits / T)[token] (T = temperature, 1 when greedy); a "
       "finished row emits pad and 0. token and log-probability are written "
       "at column `count` of tokens and logprobs, which keep every other "
       "column (as CacheWrite, they are the state itself); lengths += "
       "!finished, finished |= token == eos, count += 1, rng[1] += 1. The "
       "results lengths, finished, count and rng may be the operands' "
       "buffers (updated in place).",
       description="""
    hg.sample_step over buffers. `tokens` and `logprobs` are written at
    column `count` only, the rest keeps its bytes (they are the state
    itself, as hrt.cache_write's `out`); `lengths`, `finished`, `count`
    and `rng` may be the buffers of `in_lengths`, `in_finished`,
    `in_count` and `in_rng` (updated in place).""",
       outs=[Out("token"), Out("tokens"), Out("logprobs"), Out("lengths"),
             Out("finished"), Out("count"), Out("rng")],
       ins=[In("logits"), In("config"), In("sampling"), In("in_rng"),
            In("in_count"), In("in_finished"), In("in_lengths")],
       scratch=True,
       format="""
    $logits `:` type($logits) `,` $config `:` type($config) `,` $sampling `:`
    type($sampling) `,` $in_rng `:` type($in_rng) `count` $in_count `:`
    type($in_count) `finished` $in_finished `:` type($in_finished) `lengths`
    $in_lengths `:` type($in_lengths) `into` $token `:` type($token) `,`
    $tokens `:` type($tokens) `,` $logprobs `:` type($logprobs) `,` $lengths
    `:` type($lengths) `,` $finished `:` type($finished) `,` $count `:`
    type($count) `,` $rng `:` type($rng) attr-dict"""),
    Op("LinearGroup", "linear_group",
       "linears that share their input, as one command",
       "(input, then per member i: weight_i, bias_i?) -> (result_0, ...): "
       "member i is ops::Linear{transposeWeight, activation} of the input "
       "with its weight's output features [featureBegins[i], featureEnds[i]) "
       "only - rows of a [N, K] weight (transposeWeight), columns of a [K, N] "
       "one - and the same range of its bias [N]; result i has the input's "
       "shape with featureEnds[i] - featureBegins[i] last. Members may share "
       "a weight (one fused projection cut into several results). No "
       "residual, no norm.",
       description="""
    Member i is `hrt.linear` of `input` with `weights[i]` (and `biases[i]`
    when the group has biases) restricted to the weight's output features
    [feature_begins[i], feature_ends[i]): rows of a [N, K] weight with
    `transpose_weight`, columns of a [K, N] one otherwise, and the same
    range of the bias. Its result `outs[i]` is the input's shape with
    feature_ends[i] - feature_begins[i] last. The activation is every
    member's; the group has no residual and no norm prologue. Members may
    read one weight (GPT-2's fused c_attn, cut into q, k and v): a backend
    can then run them as one product, or as one launch over all the
    members' features (hrt-group-linears makes these).""",
       outs=[VarOut("outs")],
       ins=[In("input"), Var("weights"), Var("biases")], scratch=True,
       attrs=[Attr("transpose_weight", "bool", True),
              Attr("activation", Activation, "None", ods="default"),
              Attr("feature_begins", "i64s"), Attr("feature_ends", "i64s")],
       ods_attr_order=("feature_begins", "feature_ends", "transpose_weight",
                       "activation"),
       arity="1 + 2 * static_cast<int>(o.featureBegins.size())",
       optional_operand="position >= 1 && position % 2 == 0",
       result_count="static_cast<int>(o.featureBegins.size())",
       format="""
    $input `:` type($input) `weights` `(` $weights `:` type($weights) `)`
    (`biases` `(` $biases^ `:` type($biases) `)`)?
    `features` $feature_begins `to` $feature_ends
    (`activation` $activation^)? `into` `(` $outs `:` type($outs) `)`
    attr-dict""",
       ods_extra="""
    /// (input, then per member: weight, bias or null), hybrid/Ops.h's order.
    ::llvm::SmallVector<::mlir::Value> getCommandInputs();
    ::mlir::Value getCommandResult() { return getOuts().front(); }
    ::llvm::SmallVector<::mlir::Value> getCommandResults() {
      return ::llvm::SmallVector<::mlir::Value>(getOuts());
    }
    unsigned getNumCommandOuts() { return getOuts().size(); }
    int32_t getStreamIndex() { return getStream(); }
    size_t getNumMembers() { return getWeights().size(); }"""),
    Op("AdamWUpdate", "adamw_update",
       "torch.optim.AdamW's update of one parameter "
       "(hybrid::ops::AdamWUpdate)",
       "torch.optim.AdamW's update of one parameter in one pass (hg-adamw): "
       "(param, grad, exp_avg, exp_avg_sq, beta1, beta2, eps, step_size, "
       "bias_correction2_sqrt, decay_factor) -> (param, exp_avg, exp_avg_sq), "
       "every tensor f32 of one shape, every scalar f32 [1]. Per element, in "
       "f32 and in this order (the composed update's, so the results are its "
       "bits): m' = beta1 m + (1 - beta1) g; v' = beta2 v + (1 - beta2) (g "
       "g); p' = p decay_factor - step_size (m' / (sqrt(v') / "
       "bias_correction2_sqrt + eps)). step_size = lr / (1 - beta1^t), "
       "bias_correction2_sqrt = sqrt(1 - beta2^t) and decay_factor = 1 - lr "
       "weight_decay are computed once per step. The results may be the "
       "buffers of param, exp_avg and exp_avg_sq (updated in place). Mixed "
       "precision: grad may also be bf16 or f16 (read as f32, exactly, as a "
       "cast to f32 would), and with `workingParam` a fourth result, bf16 or "
       "f16 of param's shape, gets p' rounded to nearest even (what a cast of "
       "the new f32 master writes): the working weight, so no cast runs "
       "before or after the update.",
       description="""
    hg.adamw_update over buffers: one pass over the parameter (or its f32
    master), its gradient and moments. `param`, `exp_avg` and `exp_avg_sq`
    may be the buffers of `in_param`, `in_exp_avg` and `in_exp_avg_sq`
    (updated in place); they are f32 of one shape, `grad` f32, bf16 or f16
    of that shape, every scalar f32 [1]. With `working_param` (bf16 or f16,
    the param's shape; a fourth out, after the moments) the command also
    writes the new param rounded to it: the working weight of a parameter
    kept through an f32 master.""",
       outs=[Out("param"), Out("exp_avg"), Out("exp_avg_sq"),
             OptOut("working_param")],
       ins=[In("in_param"), In("grad"), In("in_exp_avg"),
            In("in_exp_avg_sq"), In("beta1"), In("beta2"), In("eps"),
            In("step_size"), In("bias_correction2_sqrt"),
            In("decay_factor")],
       kernel="adamwUpdate",
       attrs=[Attr("working_param", "bool", False,
                   derived="c.getWorkingParam() != nullptr")],
       result_count="o.workingParam ? 4 : 3",
       format="""
    $in_param `:` type($in_param) `,` $grad `:` type($grad) `moments`
    $in_exp_avg `:` type($in_exp_avg) `,` $in_exp_avg_sq `:`
    type($in_exp_avg_sq) `betas` $beta1 `:` type($beta1) `,` $beta2 `:`
    type($beta2) `eps` $eps `:` type($eps) `step_size` $step_size `:`
    type($step_size) `bias_correction2_sqrt` $bias_correction2_sqrt `:`
    type($bias_correction2_sqrt) `decay_factor` $decay_factor `:`
    type($decay_factor) `into` $param `:` type($param) `,` $exp_avg `:`
    type($exp_avg) `,` $exp_avg_sq `:` type($exp_avg_sq)
    (`working` $working_param^ `:` type($working_param))? attr-dict""",
       ods_extra="""
    /// (in_param, grad, in_exp_avg, in_exp_avg_sq, the six scalars),
    /// hybrid/Ops.h's order.
    ::llvm::SmallVector<::mlir::Value> getCommandInputs() {
      return ::llvm::SmallVector<::mlir::Value>(
          getOperands().drop_front(getNumCommandOuts()));
    }
    ::mlir::Value getCommandResult() { return getParam(); }
    /// param, exp_avg, exp_avg_sq and the working parameter when written.
    ::llvm::SmallVector<::mlir::Value> getCommandResults() {
      return ::llvm::SmallVector<::mlir::Value>(
          getOperands().take_front(getNumCommandOuts()));
    }
    unsigned getNumCommandOuts() { return getWorkingParam() ? 4 : 3; }
    int32_t getStreamIndex() { return getStream(); }"""),
    Op("AttentionGrad", "attention_grad",
       "attention's backward (hybrid::ops::AttentionGrad)",
       "Attention's backward: (query, key, value, grad_out [B, Hq, T, Dv], "
       "mask?, alibi_slopes?, key_mask?) -> (grad_query, grad_key, "
       "grad_value), each shaped as its input. The probabilities p are "
       "Attention's (same scale, causal and sliding-window limits, additive "
       "mask, ALiBi bias and key padding; no key_length), recomputed; then "
       "dv = p^T grad_out, dp = grad_out v^T, ds = p (dp - rowsum(dp p)), dq "
       "= ds k scale, dk = ds^T q scale, the query heads of a KV head summed "
       "into it. A query row that sees no key has p = 0, so it adds nothing.",
       description="""
    hg.attention_grad over buffers: writes the gradients of query, key and
    value. Its kernels take scratch of their own (the CUDA one materialises
    the probabilities of a chunk of heads there), declared by the kernel
    for the call's shapes as every kernel's scratch is.""",
       outs=[Out("grad_query"), Out("grad_key"), Out("grad_value")],
       ins=[In("query"), In("key"), In("value"), In("grad_out"), Opt("mask"),
            Opt("alibi_slopes", "alibi"), Opt("key_mask")], scratch=True,
       attrs=[Attr("scale", "f64", 1), Attr("causal", "bool", False),
              Attr("sliding_window", "i64", 0)]),
    Op("LayerNormGrad", "layer_norm_grad",
       "layer norm's backward (hybrid::ops::LayerNormGrad)",
       "Layer norm's backward: (input, weight?, grad_out) -> (grad_input, "
       "grad_weight, grad_bias), normalised over dims [axis, rank) as "
       "LayerNorm. With x^ = (x - mean) rstd, rstd = 1 / sqrt(var + epsilon) "
       "(population variance) and dx^ = grad_out weight (grad_out without "
       "weight): grad_input = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)), "
       "input's shape; grad_weight = sum over rows of grad_out x^, grad_bias "
       "= sum over rows of grad_out, both the normalised shape; all of "
       "input's dtype.",
       description="""
    hg.layer_norm_grad over buffers: writes the gradients of input, weight
    and bias. Its kernels take scratch of their own (the CUDA one sums the
    weight and bias gradients of blocks of rows there), declared by the
    kernel for the call's shapes as every kernel's scratch is.""",
       outs=[Out("grad_input"), Out("grad_weight"), Out("grad_bias")],
       ins=[In("input"), Opt("weight"), In("grad_out")], scratch=True,
       attrs=[Attr("epsilon", "f64", 1e-5), Attr("axis", "i64", -1)],
       format="""
    $input `:` type($input) (`weight` $weight^ `:` type($weight))? `grad`
    $grad_out `:` type($grad_out) `into` $grad_input `:` type($grad_input)
    `,` $grad_weight `:` type($grad_weight) `,` $grad_bias `:`
    type($grad_bias) attr-dict"""),
    Op("LabelLogProbs", "label_log_probs",
       "log_softmax(logits)[label] (hybrid::ops::LabelLogProbs)",
       "A fused cross-entropy: (logits [..., V] float, labels [...] i32/i64) "
       "-> f32 [...], each row's log-softmax at its label, x[label] - max - "
       "log(sum exp(x - max)) in f32; 0 where the label is outside [0, V) "
       "(HuggingFace's ignore index -100 among them).",
       outs=[Out()], ins=[In("logits"), In("labels")]),
    Op("LabelLogProbsGrad", "label_log_probs_grad",
       "label_log_probs' backward (hybrid::ops::LabelLogProbsGrad)",
       "LabelLogProbs' backward: (logits, labels, grad [...] f32) -> "
       "grad_logits of the logits' dtype and shape, grad (onehot(label) - "
       "softmax(logits)) per row (softmax in f32, rounded once); zero rows "
       "where the label is outside [0, V).",
       outs=[Out()], ins=[In("logits"), In("labels"), In("grad")]),
    Op("EmbeddingGrad", "embedding_grad",
       "embedding's table gradient (hybrid::ops::EmbeddingGrad)",
       "Embedding's table gradient: (ids [...] i32/i64, grad_out [..., D]) -> "
       "[rows, D] of grad_out's dtype (rows from the result's shape): row r "
       "is the sum of grad_out's rows whose id is r, added in position order "
       "in f32 and rounded once, so every run and backend gives the same "
       "bits; zero for ids never seen; ids outside [0, rows) add nothing.",
       description="""
    hg.embedding_grad over buffers: out [rows, D] gets grad_out's rows summed
    per id in position order. Its kernels take scratch of their own (the
    positions sorted by id), declared by the kernel for the call's shapes.""",
       outs=[Out()], ins=[In("ids"), In("grad_out")], scratch=True),
    Op("ActivationGrad", "activation_grad",
       "an activation's backward (hybrid::ops::ActivationGrad)",
       "An activation's backward: (input, grad_out) -> grad_in, all three of "
       "one shape and float dtype; grad_in = grad_out act'(input) per "
       "element, in f32 and rounded once. act' is what hg's VJP rules define "
       "(VjpRules.cpp): Relu 1 where x > 0, else 0; Silu s (1 + x (1 - s)), s "
       "= sigmoid(x); GeluErf Phi(x) + x phi(x); GeluTanh (1 + tanh u) / 2 + "
       "x / 2 (1 - tanh^2 u) k (1 + 3 a x^2), u = k (x + a x^3), k = sqrt(2 / "
       "pi), a = 0.044715. Activation::None is not an activation_grad.",
       description="""
    hg.activation_grad over buffers: grad_in = grad_out act'(input) per
    element, in f32 and rounded once; input, grad_out and grad_in have one
    shape and float element type.""",
       outs=[Out("grad_in")], ins=[In("input"), In("grad_out")],
       attrs=[Attr("activation", Activation, "GeluTanh", lead=True)],
       format="""
    $activation $input `:` type($input) `grad` $grad_out `:` type($grad_out)
    `into` $grad_in `:` type($grad_in) attr-dict"""),
    Op("ClippedSurrogate", "clipped_surrogate",
       "PPO's clipped surrogate per token (hybrid::ops::ClippedSurrogate)",
       "PPO's clipped surrogate objective per token, as DeepSpeed-Chat's "
       "actor_loss_fn computes it before its masked mean, with GRPO/DAPO's "
       "asymmetric clipping: (logprobs, old_logprobs, advantages, mask) -> "
       "loss, all f32 of one shape. With r = exp((logprobs - old_logprobs) "
       "mask), in f32 and in this order: loss = max(-A r, -A clamp(r, 1 - "
       "clip_low, 1 + clip_high)) mask, the bounds rounded to f32 as torch "
       "rounds a clamp's scalars and NaN propagating as torch.max does. The "
       "average (PPO's reduce_sum(loss) / reduce_sum(mask), or GRPO's per "
       "sequence) is the graph's.",
       outs=[Out("loss")],
       ins=[In("logprobs"), In("old_logprobs"), In("advantages"), In("mask")],
       attrs=[Attr("clip_low", "f64", 0.2, ods="default"),
              Attr("clip_high", "f64", 0.2, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "logprobs", "old_logprobs", "advantages", "mask", "loss")})),
    Op("ClippedSurrogateGrad", "clipped_surrogate_grad",
       "clipped_surrogate's backward (hybrid::ops::ClippedSurrogateGrad)",
       "ClippedSurrogate's backward with respect to logprobs: (logprobs, "
       "old_logprobs, advantages, mask, grad) -> grad_logprobs, all f32 of "
       "one shape; torch autograd's gradient of the loss, in its order: t = "
       "grad mask; dr = -A t where -A r > -A clamp(r) or r lies in [1 - "
       "clip_low, 1 + clip_high] (where the terms are equal torch.max gives "
       "each half and the clamp passes its half), else 0; grad_logprobs = dr "
       "r mask.",
       outs=[Out("grad_logprobs")],
       ins=[In("logprobs"), In("old_logprobs"), In("advantages"), In("mask"),
            In("grad")],
       attrs=[Attr("clip_low", "f64", 0.2, ods="default"),
              Attr("clip_high", "f64", 0.2, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "logprobs", "old_logprobs", "advantages", "mask", "grad",
           "grad_logprobs")})),
    Op("ClippedValueLoss", "clipped_value_loss",
       "PPO's clipped value loss per token (hybrid::ops::ClippedValueLoss)",
       "The critic's clipped value loss per token, as DeepSpeed-Chat's "
       "critic_loss_fn computes it before its 0.5 and masked mean: (values, "
       "old_values, returns, mask) -> loss, all f32 of one shape. In f32 and "
       "in torch's order: vc = min(max(values, old_values - clip), "
       "old_values + clip) (torch.clamp with tensor bounds, clip rounded to "
       "f32); loss = max((values - returns)^2, (vc - returns)^2) mask, NaN "
       "propagating as torch.max does. The 0.5 and the average (PPO's "
       "reduce_sum(loss) / reduce_sum(mask): masked_mean) are the graph's, "
       "as clipped_surrogate's are.",
       outs=[Out("loss")],
       ins=[In("values"), In("old_values"), In("returns"), In("mask")],
       attrs=[Attr("clip", "f64", 0.2, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "values", "old_values", "returns", "mask", "loss")})),
    Op("ClippedValueLossGrad", "clipped_value_loss_grad",
       "clipped_value_loss's backward (hybrid::ops::ClippedValueLossGrad)",
       "ClippedValueLoss's backward with respect to values: (values, "
       "old_values, returns, mask, grad) -> grad_values, all f32 of one "
       "shape; torch autograd's gradient, in its order: t = grad mask; "
       "torch.max gives t to the larger square (t / 2 to each on a tie); "
       "grad_values = t1 (2 (values - returns)) + t2 (2 (vc - returns)), the "
       "second term only where old_values - clip <= values <= old_values + "
       "clip (the clamp passes its gradient inside its bounds, bounds "
       "included).",
       outs=[Out("grad_values")],
       ins=[In("values"), In("old_values"), In("returns"), In("mask"),
            In("grad")],
       attrs=[Attr("clip", "f64", 0.2, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "values", "old_values", "returns", "mask", "grad",
           "grad_values")})),
    Op("PpoRewards", "ppo_rewards",
       "PPO's per-token rewards with the KL penalty "
       "(hybrid::ops::PpoRewards)",
       "DeepSpeed-Chat's compute_rewards and the zeroing after each "
       "sequence's end that train_rlhf does before GAE: (logprobs [B, L], "
       "ref_logprobs [B, L], reward_scores [B], action_mask [B, L], values "
       "[B, L], kl_ctl [1]) -> (rewards [B, L], old_values [B, L]), all f32. "
       "Per row b, ends = start + sum(action_mask[b, start:]) + 1; for t < "
       "ends: rewards = (-kl_ctl) (logprobs - ref_logprobs), old_values = "
       "values; at t = min(ends, L) - 1 the reward adds clamp(score, "
       "-clip_reward_value, clip_reward_value) (bounds rounded to f32); for "
       "t >= ends both are 0. kl_ctl is an operand because adaptive KL "
       "controllers change it between steps; start (the first action's "
       "position, DeepSpeed-Chat's prompt length - 1) and the clip are fixed.",
       outs=[Out("rewards"), Out("old_values")],
       ins=[In("logprobs"), In("ref_logprobs"), In("reward_scores"),
            In("action_mask"), In("values"), In("kl_ctl")],
       attrs=[Attr("start", "i64", 0),
              Attr("clip_reward_value", "f64", 5.0, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "logprobs", "ref_logprobs", "reward_scores", "action_mask",
           "values", "kl_ctl", "rewards", "old_values")}, shape="custom")),
    Op("Gae", "gae",
       "generalised advantage estimation (hybrid::ops::Gae)",
       "Generalised advantage estimation over positions [start, L), as "
       "DeepSpeed-Chat's get_advantages_and_returns: (rewards [B, L], values "
       "[B, L]) -> (advantages [B, L - start], returns [B, L - start]), all "
       "f32; values are the old values, zeroed past each sequence's end "
       "(PpoRewards' second result). Per row, from t = L - 1 down to start, "
       "in f32 and in this order: delta = (rewards[t] + gamma next) - "
       "values[t] with next = values[t + 1] (0 at L - 1); last = delta + "
       "(gamma lam) last (last starts at 0; gamma lam is one f32, the "
       "product of the two in double as Python computes it); advantages[t - "
       "start] = last; returns = advantages + values[:, start:].",
       outs=[Out("advantages"), Out("returns")],
       ins=[In("rewards"), In("values")],
       attrs=[Attr("start", "i64", 0), Attr("gamma", "f64", 1.0, ods="default"),
              Attr("lam", "f64", 0.95, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "rewards", "values", "advantages", "returns")}, shape="custom")),
    Op("MaskedWhiten", "masked_whiten",
       "whiten under a mask (hybrid::ops::MaskedWhiten)",
       "TRL's masked_whiten of advantages: (input, mask) -> result, all f32 "
       "of one shape. mean = sum(input mask) / sum(mask); var = sum((input - "
       "mean)^2 mask) / sum(mask), times sum(mask) / (sum(mask) - 1) when "
       "unbiased (TRL's default); result = (input - mean) rsqrt(var + "
       "epsilon), plus mean again unless shift_mean, for every element (the "
       "masked ones too). Sums run in double and are rounded to f32 once; "
       "the rest is f32. One masked element with unbiased gives NaN, as "
       "torch does.",
       outs=[Out()], ins=[In("input"), In("mask")],
       attrs=[Attr("shift_mean", "bool", True, ods="default"),
              Attr("unbiased", "bool", True, ods="default"),
              Attr("epsilon", "f64", 1e-8, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in ("input", "mask", "out")})),
    Op("GroupAdvantages", "group_advantages",
       "GRPO's group-relative advantages (hybrid::ops::GroupAdvantages)",
       "GRPO's group-relative advantages of per-sequence scores, as TRL's "
       "GRPOTrainer computes them: (scores [B]) -> advantages [B], f32; B = "
       "prompts x group_size, a prompt's samples contiguous. a = s - mean "
       "over the group, divided by (std + epsilon) when `scale` (TRL's "
       "scale_rewards; std unbiased as torch.std, so group_size >= 2). Mean "
       "and variance are summed in double and rounded to f32 once; the rest "
       "is f32.",
       outs=[Out("advantages")], ins=[In("scores")],
       attrs=[Attr("group_size", "i64", 1),
              Attr("scale", "bool", True, ods="default"),
              Attr("epsilon", "f64", 1e-4, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in ("scores", "advantages")})),
    Op("KlK3", "kl_k3",
       "the k3 estimate of KL to the reference per token "
       "(hybrid::ops::KlK3)",
       "The k3 estimator of KL(policy || reference) per token (GRPO's "
       "penalty, TRL's per_token_kl): (logprobs, ref_logprobs) -> kl, all "
       "f32 of one shape; d = ref_logprobs - logprobs, kl = (exp(d) - d) - 1 "
       "in f32.",
       outs=[Out("kl")], ins=[In("logprobs"), In("ref_logprobs")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "logprobs", "ref_logprobs", "kl")})),
    Op("KlK3Grad", "kl_k3_grad",
       "kl_k3's backward (hybrid::ops::KlK3Grad)",
       "KlK3's backward with respect to logprobs: (logprobs, ref_logprobs, "
       "grad) -> grad_logprobs, all f32 of one shape; torch autograd's "
       "grad - grad exp(ref_logprobs - logprobs).",
       outs=[Out("grad_logprobs")],
       ins=[In("logprobs"), In("ref_logprobs"), In("grad")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "logprobs", "ref_logprobs", "grad", "grad_logprobs")})),
    Op("MaskedMean", "masked_mean",
       "a per-token loss averaged under a mask (hybrid::ops::MaskedMean)",
       "A per-token loss averaged under a mask: (input [..., T], mask [..., "
       "T]) -> f32 [] (rank 0), f32 operands of one shape. Token level "
       "(PPO's, DAPO's): sum(input mask) / sum(mask). per_sequence (GRPO's): "
       "the mean over rows of sum_t(input mask) / sum_t(mask). Sums run in "
       "double and are rounded to f32 once, each division and the mean's "
       "are f32; a row (or all) masked out gives NaN as torch does.",
       outs=[Out()], ins=[In("input"), In("mask")],
       attrs=[Attr("per_sequence", "bool", False, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in ("input", "mask", "out")},
                 shape="custom")),
    Op("MaskedMeanGrad", "masked_mean_grad",
       "masked_mean's backward (hybrid::ops::MaskedMeanGrad)",
       "MaskedMean's backward with respect to its input: (mask [..., T], "
       "grad []) -> grad_input [..., T], f32; torch autograd's (grad / "
       "sum(mask)) mask, or per_sequence ((grad / rows) / sum_t(mask)) mask "
       "per row.",
       outs=[Out("grad_input")], ins=[In("mask"), In("grad")],
       attrs=[Attr("per_sequence", "bool", False, ods="default")],
       verifier=False,
       hg=HgForm(types={o: "F32Tensor" for o in (
           "mask", "grad", "grad_input")}, shape="custom")),
    Op("PairwiseRankingLoss", "pairwise_ranking_loss",
       "a reward model's pairwise ranking loss "
       "(hybrid::ops::PairwiseRankingLoss)",
       "DeepSpeed-Chat's RewardModel.forward loss (step 2): (values [2B, T] "
       "f32, input_ids [2B, T] i64, attention_mask [2B, T] i64) -> (loss [], "
       "end_scores [2B], accuracy []), f32. Rows 0..B-1 are the chosen "
       "answers, rows B..2B-1 the rejected ones, pair b = (b, B + b); right "
       "padding (num_padding_at_beginning = 0), the mask 0 at padding. A "
       "row's end is its first masked position (T when none); positions "
       "compare equal when both are padding or both tokens of one id. Per "
       "pair: when the rows are equal, span = [T - 1, T) and the rejected "
       "end is the chosen's; else span = [d, max(c_end, r_end)), d the first "
       "unequal position. pair loss = mean over the span of "
       "-logsigmoid(chosen - rejected) (torch's log_sigmoid in f32; the "
       "span's sum in double, rounded to f32 once, divided by its length in "
       "f32; an empty span gives NaN as torch's mean does); loss = the pair "
       "losses summed in f32 in order, divided by B. end_scores[row] = "
       "values[row, end - 1] (DeepSpeed-Chat's chosen_mean_scores then "
       "rejected_mean_scores; an end of 0 reads T - 1, as torch's index -1 "
       "does); accuracy = the fraction of pairs whose chosen end score is "
       "greater than the rejected one's (DeepSpeed-Chat's evaluation).",
       outs=[Out("loss"), Out("end_scores"), Out("accuracy")],
       ins=[In("values"), In("input_ids"), In("attention_mask")],
       verifier=False,
       hg=HgForm(types={"values": "F32Tensor", "input_ids": "I64Tensor",
                        "attention_mask": "I64Tensor", "loss": "F32Tensor",
                        "end_scores": "F32Tensor", "accuracy": "F32Tensor"},
                 shape="custom")),
    Op("PairwiseRankingLossGrad", "pairwise_ranking_loss_grad",
       "pairwise_ranking_loss's backward "
       "(hybrid::ops::PairwiseRankingLossGrad)",
       "PairwiseRankingLoss's backward with respect to values: (values [2B, "
       "T], input_ids, attention_mask, grad [] (the loss's), grad_end_scores "
       "[2B]) -> grad_values [2B, T], f32; torch autograd's: over each "
       "pair's span, with s = chosen - rejected and u = -(grad / B) / "
       "span length, torch's log_sigmoid backward u (m - sign z / (1 + z)), "
       "z = exp(-|s|), m = 1 and sign = 1 where s < 0, else m = 0 and sign = "
       "-1, to the chosen value and its negation to the rejected one; plus "
       "grad_end_scores[row] at each row's end - 1; zero elsewhere. The "
       "accuracy, a count of comparisons, has no gradient.",
       outs=[Out("grad_values")],
       ins=[In("values"), In("input_ids"), In("attention_mask"), In("grad"),
            In("grad_end_scores")],
       verifier=False,
       hg=HgForm(types={"values": "F32Tensor", "input_ids": "I64Tensor",
                        "attention_mask": "I64Tensor", "grad": "F32Tensor",
                        "grad_end_scores": "F32Tensor",
                        "grad_values": "F32Tensor"}, shape="custom")),
]
