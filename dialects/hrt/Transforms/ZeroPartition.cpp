// hrt-zero-partition: ZeRO's partition of optimizer state, gradients and
// parameters over a data-parallel group, and the collectives it takes
// (see Passes.td).
//
// Every buffer's contents have a placement over the ranks: whole, one
// rank's shard of a flat partition, a rank's gradient (the gradient is the
// mean over the ranks) or a rank's summand (the value is the sum); a whole
// tensor is also known to be replicated (the same on every rank: weights,
// optimizer state, constants, hyperparameters, what collectives gathered,
// and what is computed from those alone) or not (a rank's own data).
// Commands are visited in program order; each one either keeps its
// operands as they are (elementwise commands on shards, sums of gradients)
// or gets them in the form it needs, through a collective inserted where
// that form first exists. A replicated tensor's shard is the rank's piece,
// taken without communication.
#include "dialects/hrt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace hybridc::hrt {

#define GEN_PASS_DEF_ZEROPARTITION
#include "dialects/hrt/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// The communicator of the data-parallel group.
constexpr StringLiteral kCommunicator = "data_parallel";

int64_t numElements(BufferType type) {
  int64_t n = 1;
  for (Attribute d : type.getShape()) {
    auto size = dyn_cast<IntegerAttr>(d);
    if (!size)
      return -1; // symbolic: never a parameter's shape
    n *= size.getInt();
  }
  return n;
}

/// How a buffer's contents are spread over the ranks.
struct Placement {
  enum Kind {
    Whole,   ///< the whole tensor (replicated, or this rank's own data)
    Shard,   ///< this rank's piece of a tensor laid out as `layout`
    Grad,    ///< this rank's gradient of a parameter laid out as `layout`;
             ///< the gradient is the mean over the ranks
    Partial, ///< this rank's summand; the value is the sum over the ranks
  };
  Kind kind = Whole;
  ShardAttr layout; ///< Shard and Grad

  static Placement whole() { return {}; }
  static Placement shard(ShardAttr l) { return {Shard, l}; }
  static Placement grad(ShardAttr l) { return {Grad, l}; }
  static Placement partial() { return {Partial, {}}; }

  /// Same kind, and pieces of the same size.
  bool sameAs(const Placement &o) const {
    if (kind != o.kind)
      return false;
    return (kind != Shard && kind != Grad) ||
           layout.getNumElements() == o.layout.getNumElements();
  }
};

/// What the pass shards, from the module's parameters.
class ZeroPlan {
public:
  ZeroPlan(int64_t stage, int64_t worldSize)
      : stage_(stage), worldSize_(worldSize) {}

  int64_t stage() const { return stage_; }
  int64_t worldSize() const { return worldSize_; }

  /// Records the parameter of `op`; false when another executable uses it
  /// with another element type or shape.
  bool addParam(ParamOp op) {
    auto [it, added] =
        params_.try_emplace(op.getName(), op.getResult().getType());
    return added || it->second == op.getResult().getType();
  }

  /// The layout of parameter `name` split over the group; null when the
  /// module has no such parameter.
  ShardAttr layoutOf(StringRef name, MLIRContext *context) const {
    auto it = params_.find(name);
    if (it == params_.end())
      return {};
    SmallVector<int64_t> shape;
    for (Attribute d : it->second.getShape())
      shape.push_back(cast<IntegerAttr>(d).getInt());
    return ShardAttr::get(context, worldSize_, shape);
  }

  /// For a state that accumulates a parameter's gradients
  /// (`opt.grad.<param>`) or is its optimizer state (`opt.<kind>.<param>`,
  /// of the parameter's element count): the kind, and the state's layout
  /// split over the group.
  struct StateOf {
    StringRef kind;
    ShardAttr layout;
  };
  std::optional<StateOf> parameterOfState(StateOp op) const {
    StringRef name = op.getName();
    if (!name.consume_front("opt."))
      return std::nullopt;
    auto [kind, param] = name.split('.');
    ShardAttr layout = layoutOf(param, op.getContext());
    BufferType type = op.getResult().getType();
    if (!layout || numElements(type) != layout.getNumElements())
      return std::nullopt;
    SmallVector<int64_t> shape;
    for (Attribute d : type.getShape())
      shape.push_back(cast<IntegerAttr>(d).getInt());
    return StateOf{kind, ShardAttr::get(op.getContext(), worldSize_, shape)};
  }

private:
  int64_t stage_, worldSize_;
  llvm::StringMap<BufferType> params_;
};

/// The partition of one executable.
class ExecutablePartition {
public:
  ExecutablePartition(ExecutableOp exe, const ZeroPlan &plan,
                      int64_t maxReuseDistance)
      : exe_(exe), plan_(plan), maxReuseDistance_(maxReuseDistance),
        b_(exe.getContext()) {}

  LogicalResult run() {
    SmallVector<Operation *> commands;
    for (Operation &op : exe_.getBlock())
      if (isa<CommandOp>(op))
        commands.push_back(&op);
    placeSources();
    findGradients(commands);
    for (Operation *op : commands)
      if (failed(partition(op)))
        return failure();
    // Views of what a collective now reads in their place.
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(exe_.getBlock().getOperations())))
      if (isa<ViewOp>(op) && op.use_empty())
        op.erase();
    return success();
  }

private:
  /// A buffer that owns its bytes (see getRootBuffer).
  struct Root {
    Placement placement;
    bool fixed = false; ///< holds `placement` and no other (params, states,
                        ///< inputs, allocs written twice)
    bool port = false;  ///< an output: anything but a shard
    bool replicated = false; ///< whole and the same on every rank
    Operation *lastWriter = nullptr;
  };

  /// The whole and the shard form of a root's contents, made for the
  /// contents `writer` left.
  struct Forms {
    Operation *writer = nullptr;
    Value whole, shard;
    Operation *shardEnd = nullptr; ///< the last op that makes `shard`
  };

  /// A gathered parameter (stage 3) and the gathered-element count at its
  /// last use.
  struct Gathered {
    Value whole;
    int64_t mark;
    Operation *writer;
  };

  int64_t worldSize() const { return plan_.worldSize(); }
  MLIRContext *context() { return exe_.getContext(); }

  //===--------------------------------------------------------------------===//
  // Sources
  //===--------------------------------------------------------------------===//

  void placeSources() {
    llvm::DenseMap<Value, int> writers;
    for (Operation &op : exe_.getBlock())
      if (isa<CommandOp>(op))
        for (Value target : targetsOf(&op))
          ++writers[target];
    for (Operation &op : exe_.getBlock()) {
      if (auto p = dyn_cast<ParamOp>(op)) {
        Root &r = roots_[p.getResult()];
        r.fixed = r.replicated = true;
        if (plan_.stage() == 3) {
          ShardAttr layout = plan_.layoutOf(p.getName(), context());
          p.setShardAttr(layout);
          retype(p.getResult(), layout);
          r.placement = Placement::shard(layout);
        }
      } else if (auto s = dyn_cast<StateOp>(op)) {
        Root &r = roots_[s.getResult()];
        r.fixed = true;
        // Optimizer state follows the same updates on every rank; other
        // state (a KV cache) is the rank's own.
        r.replicated = s.getName().starts_with("opt.");
        std::optional<ZeroPlan::StateOf> of = plan_.parameterOfState(s);
        if (!of)
          continue;
        bool gradient = of->kind == "grad";
        if (gradient)
          accumulators_[s.getResult()] = of->layout;
        if (plan_.stage() >= (gradient ? 2 : 1)) {
          s.setShardAttr(of->layout);
          retype(s.getResult(), of->layout);
          r.placement = Placement::shard(of->layout);
        } else if (gradient) {
          r.placement = Placement::grad(of->layout);
        }
      } else if (isa<ConstantOp>(op)) {
        roots_[op.getResult(0)].fixed = roots_[op.getResult(0)].replicated =
            true;
      } else if (auto in = dyn_cast<InputOp>(op)) {
        // A scalar input is a hyperparameter, which every rank passes
        // alike; a tensor is the rank's data.
        Root &r = roots_[in.getResult()];
        r.fixed = true;
        r.replicated = numElements(in.getResult().getType()) == 1;
      } else if (isa<OutputOp>(op)) {
        roots_[op.getResult(0)].port = true;
      } else if (isa<AllocOp>(op)) {
        // An alloc written twice (a copy, then a cache write into it) keeps
        // one shape for both.
        roots_[op.getResult(0)].fixed = writers.lookup(op.getResult(0)) > 1;
      }
    }
  }

  /// Marks the buffers that hold a rank's gradient of a parameter once
  /// written: the `grad.<param>` outputs (and what is copied into them)
  /// and what is added or copied to a gradient accumulator.
  void findGradients(ArrayRef<Operation *> commands) {
    llvm::DenseMap<Value, ShardAttr> outputs;
    for (Operation &op : exe_.getBlock())
      if (auto out = dyn_cast<OutputOp>(op))
        if (StringRef name = out.getName(); name.consume_front("grad."))
          if (ShardAttr layout = plan_.layoutOf(name, context()))
            outputs[out.getResult()] = gradients_[out.getResult()] = layout;
    for (Operation *op : commands) {
      Value out = cast<CommandOp>(op).getCommandResult();
      if (!out)
        continue;
      Value target = getRootBuffer(out);
      if (auto copy = dyn_cast<CopyOp>(op); copy && outputs.count(target))
        gradients_.try_emplace(getRootBuffer(copy.getInput()),
                               outputs.lookup(target));
      // What is added (or copied) into an accumulator.
      auto acc = accumulators_.find(target);
      auto add = dyn_cast<BinaryOp>(op);
      if (acc == accumulators_.end() ||
          !(isa<CopyOp>(op) || (add && add.getKind() == BinaryKind::Add)))
        continue;
      for (Value in : cast<CommandOp>(op).getCommandInputs())
        if (getRootBuffer(in) != target)
          gradients_.try_emplace(getRootBuffer(in), acc->second);
    }
    // A gradient that is a constant (zeros, for a parameter the loss does
    // not reach) is one from the start.
    for (auto &[root, layout] : gradients_)
      if (root.getDefiningOp<ConstantOp>())
        roots_[root].placement = Placement::grad(layout);
  }

  /// Gives `root` and every view of it the type of one shard of `layout`.
  void retype(Value root, ShardAttr layout) {
    SmallVector<Value> values = {root};
    for (size_t i = 0; i < values.size(); ++i) {
      Value v = values[i];
      auto type = cast<BufferType>(v.getType());
      wholeType_.try_emplace(v, type);
      v.setType(shardType(type.getElementType(), layout));
      for (Operation *user : v.getUsers())
        if (auto view = dyn_cast<ViewOp>(user))
          values.push_back(view.getResult());
    }
  }

  BufferType shardType(Type elementType, ShardAttr layout) {
    return bufferType(elementType, layout.getShardElements());
  }
  BufferType bufferType(Type elementType, int64_t n) {
    Builder b(context());
    return BufferType::get(context(), elementType,
                           b.getArrayAttr({b.getI64IntegerAttr(n)}));
  }
  /// The type `v` has as a whole tensor (before a shard took its place).
  BufferType wholeTypeOf(Value v) const {
    if (BufferType t = wholeType_.lookup(v))
      return t;
    return cast<BufferType>(v.getType());
  }

  //===--------------------------------------------------------------------===//
  // Commands
  //===--------------------------------------------------------------------===//

  /// The buffer operands a command reads (its outs excluded).
  static SmallVector<OpOperand *> inputsOf(Operation *op) {
    unsigned outs = cast<CommandOp>(op).getNumCommandOuts();
    SmallVector<OpOperand *> inputs;
    for (OpOperand &o : op->getOpOperands().drop_front(outs))
      if (isa<BufferType>(o.get().getType()))
        inputs.push_back(&o);
    return inputs;
  }

  /// The roots of a command's outs: one buffer for most commands, an AdamW
  /// update's parameter and moments (and working parameter), a sample
  /// step's seven.
  static SmallVector<Value> targetsOf(Operation *op) {
    unsigned outs = cast<CommandOp>(op).getNumCommandOuts();
    SmallVector<Value> targets;
    for (Value out : op->getOperands().take_front(outs))
      targets.push_back(getRootBuffer(out));
    return targets;
  }

  const Placement &placementOf(Value v) {
    return roots_[getRootBuffer(v)].placement;
  }

  bool accepts(const Root &target, const Placement &p) const {
    if (target.fixed)
      return target.placement.sameAs(p);
    if (target.port)
      return p.kind != Placement::Shard;
    return true;
  }

  LogicalResult partition(Operation *op) {
    Value out = cast<CommandOp>(op).getCommandResult();
    if (!out)
      return success(); // an event
    Value target = getRootBuffer(out);
    SmallVector<Value> targets = targetsOf(op);
    // A copy: converting operands adds roots (and moves the map's entries).
    const Root t = roots_[target];
    SmallVector<OpOperand *> inputs = inputsOf(op);

    if (std::optional<Placement> p = sumOfGradients(op, inputs, out);
        p && accepts(t, *p))
      return written(target, *p, op);
    if (auto reduce = dyn_cast<ReduceOp>(op);
        reduce && isSumOfShard(reduce) && accepts(t, Placement::partial())) {
      // All axes of the whole tensor are the one axis of its shard.
      reduce.setAxes(ArrayRef<int64_t>{});
      return written(target, Placement::partial(), op);
    }
    if (ShardAttr layout = elementwiseOnShards(op, inputs, out, targets)) {
      Placement p = Placement::shard(layout);
      if (acceptAll(targets, p)) {
        Value gradient = accumulatedGradient(op);
        shardInputs(op, inputs, layout, gradient);
        if (gradient)
          op->moveAfter(forms_[gradient].shardEnd);
        for (Value shard : targets) {
          if (!roots_[shard].fixed)
            retype(shard, layout);
          (void)written(shard, p, op);
        }
        return success();
      }
      if (targets.size() == 1 &&
          (!t.fixed || t.placement.kind == Placement::Whole))
        return computeShardThenGather(op, inputs, out, layout);
    }
    if (isa<FillOp>(op) && t.fixed) // a fill fills a shard as well
      return written(target, t.placement, op);

    bool replicated = true;
    for (OpOperand *in : inputs) {
      in->set(asWhole(in->get(), op));
      replicated = replicated && roots_[getRootBuffer(in->get())].replicated;
    }
    for (Value whole : targets) {
      Placement p = Placement::whole();
      if (ShardAttr layout = gradients_.lookup(whole))
        p = Placement::grad(layout);
      else if (!roots_[whole].fixed)
        roots_[whole].replicated = replicated;
      const Root &w = roots_[whole];
      if (accepts(w, p)) {
        (void)written(whole, p, op);
        continue;
      }
      if (targets.size() == 1 && w.placement.kind == Placement::Shard &&
          p.kind == Placement::Whole && replicated)
        return computeWholeThenShard(op, out, w.placement.layout);
      return op->emitError()
             << "hrt-zero-partition: @" << exe_.getSymName() << ": writes "
             << describe(p) << " into " << describe(whole) << ", which holds "
             << describe(w.placement) << " at ZeRO stage " << plan_.stage();
    }
    return success();
  }

  /// Whether every buffer of `targets` may hold `p`.
  bool acceptAll(ArrayRef<Value> targets, const Placement &p) {
    return llvm::all_of(targets,
                        [&](Value root) { return accepts(roots_[root], p); });
  }

  /// A command computing a replicated tensor into a sharded buffer: it runs
  /// into a whole buffer, of which the rank keeps its piece.
  LogicalResult computeWholeThenShard(Operation *op, Value out,
                                      ShardAttr layout) {
    b_.setInsertionPoint(op);
    Value whole = alloc(wholeTypeOf(out), op->getLoc());
    roots_[whole].replicated = true;
    op->setOperand(0, whole);
    b_.setInsertionPointAfter(op);
    collective(CollectiveKind::Shard, whole, out, op->getLoc());
    return written(getRootBuffer(out), Placement::shard(layout),
                   &*std::prev(b_.getInsertionPoint()));
  }

  static StringRef describe(const Placement &p) {
    switch (p.kind) {
    case Placement::Whole:
      return "a whole tensor";
    case Placement::Shard:
      return "a shard";
    case Placement::Grad:
      return "a rank's gradient";
    case Placement::Partial:
      return "a rank's summand";
    }
    llvm_unreachable("placement");
  }

  LogicalResult written(Value target, const Placement &p, Operation *writer) {
    Root &t = roots_[target];
    if (!t.fixed)
      t.placement = p;
    t.lastWriter = writer;
    return success();
  }

  std::string describe(Value root) {
    Operation *def = root.getDefiningOp();
    if (auto s = dyn_cast_or_null<StateOp>(def))
      return "state '" + s.getName().str() + "'";
    if (auto p = dyn_cast_or_null<ParamOp>(def))
      return "parameter '" + p.getName().str() + "'";
    if (auto o = dyn_cast_or_null<OutputOp>(def))
      return "output '" + o.getName().str() + "'";
    return "a workspace buffer";
  }

  static bool isZeroConstant(Value root) {
    auto c = root.getDefiningOp<ConstantOp>();
    if (!c)
      return false;
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return false;
    if (isa<FloatType>(dense.getElementType()))
      return llvm::all_of(dense.getValues<APFloat>(),
                          [](const APFloat &v) { return v.isZero(); });
    return llvm::all_of(dense.getValues<APInt>(),
                        [](const APInt &v) { return v.isZero(); });
  }

  /// A sum (or copy) of rank gradients or summands stays one: the mean
  /// (sum) over the ranks is taken once, later. Zero constants may join.
  std::optional<Placement>
  sumOfGradients(Operation *op, ArrayRef<OpOperand *> inputs, Value out) {
    auto binary = dyn_cast<BinaryOp>(op);
    bool linear =
        isa<CopyOp>(op) || (binary && (binary.getKind() == BinaryKind::Add ||
                                       binary.getKind() == BinaryKind::Sub));
    if (!linear)
      return std::nullopt;
    std::optional<Placement> p;
    for (OpOperand *in : inputs) {
      if (isZeroConstant(getRootBuffer(in->get())))
        continue;
      const Placement &q = placementOf(in->get());
      if ((q.kind != Placement::Grad && q.kind != Placement::Partial) ||
          (p && !p->sameAs(q)) ||
          numElements(wholeTypeOf(in->get())) != numElements(wholeTypeOf(out)))
        return std::nullopt;
      p = q;
    }
    return p;
  }

  /// Whether `reduce` sums all elements of a shard: this rank's summand of
  /// the sum of the whole tensor, when no padding (zeros only where a
  /// gradient was reduce-scattered) is part of the shard.
  bool isSumOfShard(ReduceOp reduce) {
    const Placement &q = placementOf(reduce.getInput());
    if (reduce.getKind() != ReduceKind::Sum || q.kind != Placement::Shard ||
        q.layout.getNumElements() % worldSize() != 0)
      return false;
    int64_t rank = wholeTypeOf(reduce.getInput()).getRank();
    return reduce.getAxes().empty() ||
           static_cast<int64_t>(reduce.getAxes().size()) == rank;
  }

  /// The layout an elementwise command can run on, piece by piece: its
  /// tensor operands are shards of one layout, gradients (which become
  /// shards from stage 1 on) or replicated tensors (of which a rank takes
  /// its piece), its other operands whole scalars; and a shard is there: an
  /// operand, or a result's buffer. When a result's buffer holds whole
  /// tensors only shards and gradients may be operands (gathering the
  /// result then costs what gathering them would). An AdamW update is
  /// elementwise with three results, or four with its working parameter
  /// (`targets`, the roots of its outs), of `out`'s element count: the
  /// working parameter's buffer becomes a shard of the master's layout as
  /// a cast's result would.
  ShardAttr elementwiseOnShards(Operation *op, ArrayRef<OpOperand *> inputs,
                                Value out, ArrayRef<Value> targets) {
    if (!isa<BinaryOp, UnaryOp, SelectOp, CastOp, CopyOp, ClipOp,
             AdamWUpdateOp>(op))
      return {};
    int64_t n = numElements(wholeTypeOf(out));
    ShardAttr layout;
    for (Value target : targets)
      if (const Placement &q = roots_[target].placement;
          q.kind == Placement::Shard)
        layout = q.layout;
    bool slices = false;
    for (OpOperand *in : inputs) {
      Value root = getRootBuffer(in->get());
      const Placement &q = roots_[root].placement;
      int64_t m = numElements(wholeTypeOf(in->get()));
      bool piece = q.kind == Placement::Shard ||
                   (q.kind == Placement::Grad && plan_.stage() >= 1);
      if (piece) {
        if (m != n || q.layout.getNumElements() != n)
          return {};
        layout = q.layout;
      } else if (m == 1 && q.kind != Placement::Grad) {
        continue; // a scalar, whole or summed
      } else if (m == n && q.kind == Placement::Whole &&
                 roots_[root].replicated) {
        slices = true;
      } else {
        return {}; // a rank's own data: it has no piece of it
      }
    }
    if (!layout || layout.getNumElements() != n ||
        (slices && !acceptAll(targets, Placement::shard(layout))))
      return {};
    return layout;
  }

  /// Operands of a command that runs on shards of `layout`: gradients
  /// reduce-scattered, replicated tensors cut to this rank's piece,
  /// summands (scalars) all-reduced. The shard of `early` (a gradient) is
  /// made right after the gradient is.
  void shardInputs(Operation *op, ArrayRef<OpOperand *> inputs,
                   ShardAttr layout, Value early = {}) {
    for (OpOperand *in : inputs) {
      Placement q = placementOf(in->get());
      if (q.kind == Placement::Grad ||
          (q.kind == Placement::Whole &&
           numElements(wholeTypeOf(in->get())) == layout.getNumElements() &&
           layout.getNumElements() != 1))
        in->set(
            asShard(in->get(), op, layout, getRootBuffer(in->get()) == early));
      else if (q.kind == Placement::Partial)
        in->set(asWhole(in->get(), op));
    }
  }

  /// For `acc += gradient` into a sharded gradient accumulator: the
  /// gradient's root, when the addition can move up to right after the
  /// gradient's last write (nothing in between touches the accumulator,
  /// and the buffers it names exist there). Then the reduce-scatter and the
  /// addition follow the gradient at once: the whole gradient is free
  /// early, and its shard does not hold workspace through the rest of the
  /// backward pass.
  Value accumulatedGradient(Operation *op) {
    auto add = dyn_cast<BinaryOp>(op);
    if (!add || add.getKind() != BinaryKind::Add)
      return {};
    Value acc = getRootBuffer(add.getOut());
    if (!accumulators_.count(acc))
      return {};
    Value gradient;
    for (Value in : {add.getLhs(), add.getRhs()})
      if (getRootBuffer(in) != acc)
        gradient = getRootBuffer(in);
    Operation *writer = gradient ? roots_[gradient].lastWriter : nullptr;
    if (!writer || placementOf(gradient).kind != Placement::Grad)
      return {};
    for (Value v : op->getOperands())
      if (getRootBuffer(v) != gradient)
        if (Operation *def = v.getDefiningOp();
            def && !def->isBeforeInBlock(writer))
          return {};
    for (Operation *between = writer->getNextNode(); between != op;
         between = between->getNextNode())
      if (auto cmd = dyn_cast<CommandOp>(between))
        for (Value v : op->getOperands())
          if (Value r = getRootBuffer(v); r != gradient && touchesRoot(cmd, r))
            return {};
    return gradient;
  }

  /// A command on shards whose result buffer holds whole tensors: it runs
  /// into a shard, which is gathered there (a copy of a shard is that
  /// gather alone).
  LogicalResult computeShardThenGather(Operation *op,
                                       ArrayRef<OpOperand *> inputs, Value out,
                                       ShardAttr layout) {
    shardInputs(op, inputs, layout);
    Value piece;
    if (isa<CopyOp>(op)) {
      piece = inputs.front()->get();
    } else {
      b_.setInsertionPoint(op);
      Type elementType = cast<BufferType>(out.getType()).getElementType();
      piece = b_.create<AllocOp>(op->getLoc(), shardType(elementType, layout),
                                 nullptr);
      roots_[piece].placement = Placement::shard(layout);
      op->setOperand(0, piece);
    }
    b_.setInsertionPointAfter(op);
    Operation *last = gatherInto(piece, layout, out, op->getLoc());
    if (isa<CopyOp>(op))
      op->erase();
    Root &t = roots_[getRootBuffer(out)];
    t.replicated = true;
    return written(getRootBuffer(out), Placement::whole(), last);
  }

  //===--------------------------------------------------------------------===//
  // Forms and collectives
  //===--------------------------------------------------------------------===//

  /// `v` as a whole tensor, for `user`.
  Value asWhole(Value v, Operation *user) {
    Value root = getRootBuffer(v);
    Placement p = roots_[root].placement;
    Value whole;
    switch (p.kind) {
    case Placement::Whole:
      return v;
    case Placement::Shard:
      whole = root.getDefiningOp<ParamOp>()
                  ? gatheredParam(root, user)
                  : form(root, user, /*shard=*/false, [&](Location loc) {
                      return gather(root, p.layout, wholeTypeOf(root), loc);
                    });
      break;
    case Placement::Grad:
    case Placement::Partial:
      whole = form(root, user, /*shard=*/false, [&](Location loc) {
        return allReduce(root, p.kind == Placement::Grad, loc);
      });
      break;
    }
    b_.setInsertionPoint(user);
    return viewAs(whole, wholeTypeOf(v), v.getLoc());
  }

  /// `v` seen as `type` (itself when it has that type).
  Value viewAs(Value v, BufferType type, Location loc) {
    if (v.getType() == type)
      return v;
    return b_.create<ViewOp>(loc, type, v);
  }

  /// `v`, a shard or a rank's gradient, as this rank's shard.
  /// `v` as this rank's shard of `layout`: a shard as it is, a rank's
  /// gradient reduce-scattered (right after its last write when `early`), a
  /// replicated tensor cut to the rank's piece.
  Value asShard(Value v, Operation *user, ShardAttr layout,
                bool early = false) {
    Value root = getRootBuffer(v);
    Placement p = roots_[root].placement;
    if (p.kind == Placement::Shard)
      return v;
    if (p.kind == Placement::Grad)
      return form(
          root, user, /*shard=*/true,
          [&](Location loc) { return reduceScatter(root, p.layout, loc); },
          early);
    assert(roots_[root].replicated && "a rank's own data has no piece");
    return form(
        root, user, /*shard=*/true,
        [&](Location loc) {
          Type elementType = cast<BufferType>(root.getType()).getElementType();
          return collective(CollectiveKind::Shard, root,
                            alloc(shardType(elementType, layout), loc), loc);
        },
        early, layout);
  }

  /// The form of `root`'s current contents that `make` builds, made once,
  /// right before `user` (its first reader): made earlier, a small buffer
  /// would hold workspace through everything in between. With `early`,
  /// right after the command that wrote the contents instead.
  Value form(Value root, Operation *user, bool shard,
             llvm::function_ref<Value(Location)> make, bool early = false,
             ShardAttr layout = {}) {
    Operation *writer = roots_[root].lastWriter;
    if (!layout)
      layout = roots_[root].placement.layout;
    Forms &f = forms_[root];
    if (f.writer != writer)
      f = Forms{writer, {}, {}, nullptr};
    if (Value made = shard ? f.shard : f.whole)
      return made;
    if (early && writer)
      b_.setInsertionPointAfter(writer);
    else
      b_.setInsertionPoint(user);
    Value made = make(nameOf(root, user));
    Forms &g = forms_[root]; // `make` adds no forms; this is `f`
    (shard ? g.shard : g.whole) = made;
    if (shard)
      g.shardEnd = &*std::prev(b_.getInsertionPoint());
    Root &r = roots_[getRootBuffer(made)];
    r.placement = shard ? Placement::shard(layout) : Placement::whole();
    r.replicated = !shard; // gathered or summed: the same on every rank
    return made;
  }

  /// A parameter shard gathered for `user` (stage 3): right before it, or
  /// the buffer gathered for an earlier use when at most
  /// max-reuse-distance elements of other parameters were gathered since.
  Value gatheredParam(Value root, Operation *user) {
    Operation *writer = roots_[root].lastWriter;
    ShardAttr layout = roots_[root].placement.layout;
    auto it = gathered_.find(root);
    if (it != gathered_.end() && it->second.writer == writer &&
        gatheredElements_ - it->second.mark <= maxReuseDistance_) {
      it->second.mark = gatheredElements_;
      return it->second.whole;
    }
    b_.setInsertionPoint(user);
    Value whole = gather(root, layout, wholeTypeOf(root), nameOf(root, user));
    roots_[getRootBuffer(whole)].replicated = true;
    gatheredElements_ += layout.getNumElements();
    gathered_[root] = {whole, gatheredElements_, writer};
    return whole;
  }

  Location nameOf(Value root, Operation *user) {
    Operation *def = root.getDefiningOp();
    StringRef name;
    if (auto p = dyn_cast_or_null<ParamOp>(def))
      name = p.getName();
    else if (auto s = dyn_cast_or_null<StateOp>(def))
      name = s.getName();
    else if (auto o = dyn_cast_or_null<OutputOp>(def))
      name = o.getName();
    if (name.empty())
      return user->getLoc();
    return NameLoc::get(StringAttr::get(context(), name));
  }

  Value communicator() {
    if (!comm_) {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(&exe_.getBlock());
      comm_ = b_.create<CommunicatorOp>(
          exe_.getLoc(), CommunicatorType::get(context()), kCommunicator);
    }
    return comm_;
  }

  Value alloc(BufferType type, Location loc) {
    Value v = b_.create<AllocOp>(loc, type, nullptr);
    roots_[v]; // a buffer of the pass's own, written once
    return v;
  }

  Value collective(CollectiveKind kind, Value input, Value out, Location loc) {
    Value comm = communicator();
    b_.create<CollectiveOp>(loc, out, input, comm, kind);
    return out;
  }

  Value constant(Type elementType, int64_t n, Attribute value, Location loc) {
    auto tensor = RankedTensorType::get({n}, elementType);
    return b_.create<ConstantOp>(loc, bufferType(elementType, n),
                                 DenseElementsAttr::get(tensor, value));
  }

  /// Multiplies a reduced gradient by 1 / world size, in place: the mean.
  void scaleToMean(Value v, Location loc) {
    Type elementType = cast<BufferType>(v.getType()).getElementType();
    Value &factor = meanFactors_[elementType];
    if (!factor) {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointAfter(communicator().getDefiningOp());
      factor = constant(
          elementType, 1,
          b_.getFloatAttr(elementType, 1.0 / static_cast<double>(worldSize())),
          exe_.getLoc());
    }
    b_.create<BinaryOp>(loc, v, v, factor, BinaryKind::Mul);
  }

  /// The whole tensor of the shards in `piece` (laid out as `layout`), of
  /// type `wholeType`.
  Value gather(Value piece, ShardAttr layout, BufferType wholeType,
               Location loc) {
    Value whole = alloc(wholeType, loc);
    gatherInto(piece, layout, whole, loc);
    return whole;
  }

  /// Gathers the shards in `piece` into `whole` (a buffer of the whole
  /// tensor's element count); returns the last command.
  Operation *gatherInto(Value piece, ShardAttr layout, Value whole,
                        Location loc) {
    Type elementType = cast<BufferType>(whole.getType()).getElementType();
    int64_t n = layout.getNumElements();
    int64_t padded = layout.getShardElements() * worldSize();
    if (padded == n) {
      collective(CollectiveKind::AllGather, piece, whole, loc);
      return &*std::prev(b_.getInsertionPoint());
    }
    Value all = collective(CollectiveKind::AllGather, piece,
                           alloc(bufferType(elementType, padded), loc), loc);
    Value flat = viewAs(whole, bufferType(elementType, n), loc);
    return b_.create<SliceOp>(loc, flat, all, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n},
                              ArrayRef<int64_t>{1});
  }

  /// This rank's shard of the mean of the ranks' gradients in `grad`.
  Value reduceScatter(Value grad, ShardAttr layout, Location loc) {
    auto type = cast<BufferType>(grad.getType());
    Type elementType = type.getElementType();
    int64_t n = layout.getNumElements();
    int64_t padded = layout.getShardElements() * worldSize();
    Value input = grad;
    if (padded != n) {
      input = alloc(bufferType(elementType, padded), loc);
      Value flat = viewAs(grad, bufferType(elementType, n), loc);
      Value zeros =
          constant(elementType, padded - n, b_.getZeroAttr(elementType), loc);
      b_.create<ConcatOp>(loc, input, ValueRange{flat, zeros}, int64_t(0));
    }
    Value piece = collective(CollectiveKind::ReduceScatter, input,
                             alloc(shardType(elementType, layout), loc), loc);
    scaleToMean(piece, loc);
    return piece;
  }

  /// The sum over the ranks of `v` (a summand), or the mean (a gradient).
  Value allReduce(Value v, bool mean, Location loc) {
    Value sum = collective(CollectiveKind::AllReduce, v,
                           alloc(cast<BufferType>(v.getType()), loc), loc);
    if (mean)
      scaleToMean(sum, loc);
    return sum;
  }

  ExecutableOp exe_;
  const ZeroPlan &plan_;
  int64_t maxReuseDistance_;
  OpBuilder b_;
  Value comm_;
  llvm::DenseMap<Value, Root> roots_;
  llvm::DenseMap<Value, BufferType> wholeType_;   // shards: their whole type
  llvm::DenseMap<Value, ShardAttr> accumulators_; // opt.grad.<param> states
  llvm::DenseMap<Value, ShardAttr> gradients_;    // roots that hold a gradient
  llvm::DenseMap<Value, Forms> forms_;
  llvm::DenseMap<Value, Gathered> gathered_;
  int64_t gatheredElements_ = 0;
  llvm::DenseMap<Type, Value> meanFactors_; // 1 / world size, by type
};

class ZeroPartitionPass : public impl::ZeroPartitionBase<ZeroPartitionPass> {
public:
  using ZeroPartitionBase::ZeroPartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stage < 0 || stage > 3) {
      module.emitError() << "hrt-zero-partition: stage must be 0, 1, 2 or 3, "
                            "got "
                         << static_cast<int64_t>(stage);
      return signalPassFailure();
    }
    if (worldSize < 1) {
      module.emitError() << "hrt-zero-partition: world-size must be >= 1, got "
                         << static_cast<int64_t>(worldSize);
      return signalPassFailure();
    }
    if (maxReuseDistance < 0) {
      module.emitError() << "hrt-zero-partition: max-reuse-distance must be "
                            ">= 0, got "
                         << static_cast<int64_t>(maxReuseDistance);
      return signalPassFailure();
    }
    if (worldSize == 1)
      return; // one rank: nothing to split, nothing to communicate
    if (module->hasAttr("hrt.world_size")) {
      module.emitError("hrt-zero-partition: the module is partitioned "
                       "already");
      return signalPassFailure();
    }
    ZeroPlan plan(stage, worldSize);
    for (auto exe : module.getOps<ExecutableOp>()) {
      if (exe.getWorkspace()) {
        exe.emitError() << "hrt-zero-partition: @" << exe.getSymName()
                        << " has a memory plan already (partition before "
                           "hrt-plan-memory)";
        return signalPassFailure();
      }
      for (auto p : exe.getBlock().getOps<ParamOp>())
        if (!plan.addParam(p)) {
          p.emitError() << "hrt-zero-partition: parameter '" << p.getName()
                        << "' has another type in another executable";
          return signalPassFailure();
        }
    }
    for (auto exe : module.getOps<ExecutableOp>())
      if (failed(ExecutablePartition(exe, plan, maxReuseDistance).run()))
        return signalPassFailure();
    Builder b(module.getContext());
    module->setAttr("hrt.world_size", b.getI64IntegerAttr(worldSize));
    module->setAttr("hrt.zero_stage", b.getI64IntegerAttr(stage));
  }
};

} // namespace
} // namespace hybridc::hrt
