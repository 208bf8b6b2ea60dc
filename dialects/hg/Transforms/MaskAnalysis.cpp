// Abstract interpretation of shape-only index computations: every value is
// tracked as an affine function of its own element indices
// (c + sum_k a_k * i_k, with c a polynomial in the symbolic sizes), every
// bool as a conjunction of affine comparisons, and an additive attention
// mask as the predicate of its visible entries.
#include "dialects/hg/Transforms/MaskAnalysis.h"

#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OperandMatchers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
/// Fill values at or below this count as "masked" (-inf, finfo.min).
constexpr double kMaskedBelow = -1e30;

/// c + sum_k a[k] * i_k over the element indices of a tensor.
struct Affine {
  SymExpr c;
  SmallVector<int64_t> a;

  bool hasIndexTerms() const {
    return llvm::any_of(a, [](int64_t x) { return x != 0; });
  }
  friend bool operator==(const Affine &x, const Affine &y) {
    return x.c == y.c && x.a == y.a;
  }
  Affine operator-() const {
    Affine r{c * SymExpr(-1), a};
    for (int64_t &x : r.a)
      x = -x;
    return r;
  }
  Affine operator+(const Affine &o) const {
    Affine r{c + o.c, a};
    for (size_t k = 0; k < a.size(); ++k)
      r.a[k] += o.a[k];
    return r;
  }
  Affine operator-(const Affine &o) const { return *this + (-o); }
};

/// `e <= 0`, `e == 0` or `e != 0`.
struct Atom {
  enum Rel { LE, EQ, NE } rel;
  Affine e;
};

struct Abstract {
  enum Kind {
    Unknown,
    Int,  ///< integer-valued: `value`
    Pred, ///< bool: false everywhere if `never`, else the conjunction `atoms`
    Mask  ///< additive mask: 0 where the predicate holds, masked elsewhere
  } kind = Unknown;
  Affine value;
  bool never = false;
  SmallVector<Atom> atoms;

  static Abstract unknown() { return {}; }
  static Abstract integer(Affine v) {
    Abstract r;
    r.kind = Int;
    r.value = std::move(v);
    return r;
  }
  static Abstract constant(int64_t c, size_t rank) {
    return integer({SymExpr(c), SmallVector<int64_t>(rank, 0)});
  }
  static Abstract truth(bool value, Kind kind = Pred) {
    Abstract r;
    r.kind = kind;
    r.never = !value;
    return r;
  }
  bool isPredicate() const { return kind == Pred || kind == Mask; }
  bool isTrue() const { return isPredicate() && !never && atoms.empty(); }
  bool isConstantInt() const {
    return kind == Int && !value.hasIndexTerms() && value.c.isConstant();
  }
};

/// Where an index of a source tensor comes from: i_src = offset + step *
/// i_target[dim]; kZero: always 0 (a size-1 dim); kAmbiguous: depends on
/// whether a symbolic size is 1.
struct IndexSource {
  int64_t dim;
  SymExpr offset;
  int64_t step;
};
constexpr int64_t kZero = -1, kAmbiguous = -2;

std::optional<Affine> remap(const Affine &src, ArrayRef<IndexSource> map,
                            size_t targetRank) {
  Affine r{src.c, SmallVector<int64_t>(targetRank, 0)};
  for (size_t k = 0; k < src.a.size(); ++k) {
    int64_t a = src.a[k];
    if (a == 0 || map[k].dim == kZero)
      continue;
    if (map[k].dim == kAmbiguous)
      return std::nullopt;
    r.c = r.c + SymExpr(a) * map[k].offset;
    r.a[map[k].dim] += a * map[k].step;
  }
  return r;
}

Abstract remap(const Abstract &v, ArrayRef<IndexSource> map,
               size_t targetRank) {
  Abstract r = v;
  if (v.kind == Abstract::Int) {
    std::optional<Affine> a = remap(v.value, map, targetRank);
    if (!a)
      return Abstract::unknown();
    r.value = *a;
    return r;
  }
  if (!v.isPredicate())
    return Abstract::unknown();
  for (Atom &atom : r.atoms) {
    std::optional<Affine> a = remap(atom.e, map, targetRank);
    if (!a)
      return Abstract::unknown();
    atom.e = *a;
  }
  return r;
}

/// NumPy broadcast of shape `from` into `to`.
std::optional<SmallVector<IndexSource>> broadcastMap(const SymShape &from,
                                                     const SymShape &to) {
  if (from.size() > to.size())
    return std::nullopt;
  size_t off = to.size() - from.size();
  SmallVector<IndexSource> map;
  for (size_t j = 0; j < from.size(); ++j) {
    if (from[j] == to[j + off])
      map.push_back({static_cast<int64_t>(j + off), SymExpr(0), 1});
    else if (from[j] == SymExpr(1))
      map.push_back({kZero, SymExpr(0), 1});
    else
      map.push_back({kAmbiguous, SymExpr(0), 1});
  }
  return map;
}

/// Whether `e <= 0` for all indices (>= 0) and sizes (>= 1); and `e > 0`.
bool alwaysLE0(const Affine &e) {
  return llvm::all_of(e.a, [](int64_t x) { return x <= 0; }) &&
         SymExpr::knownGE(SymExpr(0), e.c);
}
bool alwaysGT0(const Affine &e) {
  return llvm::all_of(e.a, [](int64_t x) { return x >= 0; }) &&
         SymExpr::knownGE(e.c, SymExpr(1));
}

/// Drops atoms that always hold; notices ones that never do.
void simplify(Abstract &p) {
  SmallVector<Atom> kept;
  for (Atom &atom : p.atoms) {
    bool always = false, never = false;
    bool indexFree = !atom.e.hasIndexTerms();
    bool nonZero = indexFree && (SymExpr::knownGE(atom.e.c, SymExpr(1)) ||
                                 SymExpr::knownGE(SymExpr(-1), atom.e.c));
    bool zero = indexFree && atom.e.c == SymExpr(0);
    switch (atom.rel) {
    case Atom::LE:
      always = alwaysLE0(atom.e);
      never = alwaysGT0(atom.e);
      break;
    case Atom::EQ:
      always = zero;
      never = nonZero;
      break;
    case Atom::NE:
      always = nonZero;
      never = zero;
      break;
    }
    if (never)
      p.never = true;
    if (!always)
      kept.push_back(atom);
  }
  p.atoms = p.never ? SmallVector<Atom>() : kept;
}

Abstract negate(const Abstract &p) {
  if (!p.isPredicate())
    return Abstract::unknown();
  if (p.never || p.atoms.empty())
    return Abstract::truth(p.never, p.kind);
  if (p.atoms.size() != 1)
    return Abstract::unknown();
  Abstract r = p;
  Atom &atom = r.atoms.front();
  switch (atom.rel) {
  case Atom::LE: // not (e <= 0)  <=>  e >= 1  <=>  1 - e <= 0
    atom.e = -atom.e;
    atom.e.c = atom.e.c + SymExpr(1);
    break;
  case Atom::EQ:
    atom.rel = Atom::NE;
    break;
  case Atom::NE:
    atom.rel = Atom::EQ;
    break;
  }
  return r;
}

Abstract conjoin(const Abstract &x, const Abstract &y, Abstract::Kind kind) {
  if (!x.isPredicate() || !y.isPredicate())
    return Abstract::unknown();
  Abstract r;
  r.kind = kind;
  r.never = x.never || y.never;
  if (!r.never) {
    r.atoms = x.atoms;
    r.atoms.append(y.atoms.begin(), y.atoms.end());
  }
  simplify(r);
  return r;
}

std::optional<int64_t> integral(double v) {
  if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) > 9e15)
    return std::nullopt;
  return static_cast<int64_t>(v);
}

/// The interpreter. Memoised per value; the mask subgraphs are small.
class MaskInterpreter {
public:
  explicit MaskInterpreter(ValueShapes &shapes) : shapes_(shapes) {}

  Abstract eval(Value v, unsigned depth = 0) {
    auto it = memo_.find(v);
    if (it != memo_.end())
      return it->second;
    Abstract r = depth > 128 ? Abstract::unknown() : compute(v, depth);
    memo_[v] = r;
    return r;
  }

  /// `v` evaluated and broadcast into the index space of `target`.
  Abstract evalAs(Value v, const SymShape &target, unsigned depth) {
    std::optional<SymShape> from = shapes_.get(v);
    if (!from)
      return Abstract::unknown();
    std::optional<SmallVector<IndexSource>> map = broadcastMap(*from, target);
    if (!map)
      return Abstract::unknown();
    return remap(eval(v, depth + 1), *map, target.size());
  }

private:
  Abstract compute(Value v, unsigned depth);
  Abstract computeReshape(Value in, Value out, unsigned depth);
  Abstract computeSlice(SliceOp op, unsigned depth);
  Abstract computeConcat(ConcatOp op, unsigned depth);

  ValueShapes &shapes_;
  llvm::DenseMap<Value, Abstract> memo_;
};

Abstract MaskInterpreter::computeReshape(Value in, Value out, unsigned depth) {
  // Only reshapes that insert or drop size-1 dims keep indices apart.
  std::optional<SymShape> from = shapes_.get(in), to = shapes_.get(out);
  if (!from || !to)
    return Abstract::unknown();
  SmallVector<int64_t> toNonUnit;
  for (size_t j = 0; j < to->size(); ++j)
    if ((*to)[j] != SymExpr(1))
      toNonUnit.push_back(static_cast<int64_t>(j));
  SmallVector<IndexSource> map;
  size_t next = 0;
  for (const SymExpr &d : *from) {
    if (d == SymExpr(1)) {
      map.push_back({kZero, SymExpr(0), 1});
      continue;
    }
    if (next >= toNonUnit.size() || (*to)[toNonUnit[next]] != d)
      return Abstract::unknown();
    map.push_back({toNonUnit[next++], SymExpr(0), 1});
  }
  if (next != toNonUnit.size())
    return Abstract::unknown();
  return remap(eval(in, depth + 1), map, to->size());
}

Abstract MaskInterpreter::computeSlice(SliceOp op, unsigned depth) {
  std::optional<SymShape> from = shapes_.get(op.getInput());
  if (!from)
    return Abstract::unknown();
  SmallVector<IndexSource> map;
  for (size_t k = 0; k < from->size(); ++k)
    map.push_back({static_cast<int64_t>(k), SymExpr(0), 1});
  for (auto [axis, start, step] :
       llvm::zip(op.getAxes(), op.getStarts(), op.getSteps())) {
    int64_t ax = axis < 0 ? axis + static_cast<int64_t>(from->size()) : axis;
    const SymExpr &dim = (*from)[ax];
    if (step < 1)
      return Abstract::unknown();
    SymExpr first;
    if (start >= 0 && start < (kInt64Max >> 1) &&
        SymExpr::knownGE(dim, SymExpr(start)))
      first = SymExpr(start);
    else if (start < 0 && start > (kInt64Min >> 1) &&
             SymExpr::knownGE(dim + SymExpr(start), SymExpr(0)))
      first = dim + SymExpr(start);
    else if (start <= (kInt64Min >> 1))
      first = SymExpr(0);
    else
      return Abstract::unknown();
    map[ax] = {ax, first, step};
  }
  return remap(eval(op.getInput(), depth + 1), map, from->size());
}

Abstract MaskInterpreter::computeConcat(ConcatOp op, unsigned depth) {
  std::optional<SymShape> outShape = shapes_.get(op.getResult());
  if (!outShape)
    return Abstract::unknown();
  int64_t rank = static_cast<int64_t>(outShape->size());
  std::optional<int64_t> normalized = normalizeAxis(op.getAxis(), rank);
  if (!normalized)
    return Abstract::unknown();
  const int64_t axis = *normalized;
  // Each piece in global indices: i_axis(local) = i_axis - offset.
  struct Piece {
    Affine global;
    bool unit;
    SymExpr offset;
  };
  SmallVector<Piece> pieces;
  SymExpr offset(0);
  for (Value in : op.getInputs()) {
    std::optional<SymShape> s = shapes_.get(in);
    Abstract v = eval(in, depth + 1);
    if (!s || v.kind != Abstract::Int)
      return Abstract::unknown();
    Affine g = v.value;
    g.c = g.c - SymExpr(g.a[axis]) * offset;
    pieces.push_back({g, (*s)[axis] == SymExpr(1), offset});
    offset = offset + (*s)[axis];
  }
  const Piece *model = nullptr;
  for (const Piece &p : pieces)
    if (!p.unit) {
      model = &p;
      break;
    }
  if (!model)
    return Abstract::unknown();
  for (const Piece &p : pieces) {
    if (!p.unit) {
      if (!(p.global == model->global))
        return Abstract::unknown();
      continue;
    }
    // A one-element piece only has to agree with the model where it sits.
    Affine atModel = model->global, atPiece = p.global;
    atModel.c = atModel.c + SymExpr(atModel.a[axis]) * p.offset;
    atPiece.c = atPiece.c + SymExpr(atPiece.a[axis]) * p.offset;
    atModel.a[axis] = atPiece.a[axis] = 0;
    if (!(atModel == atPiece))
      return Abstract::unknown();
  }
  return Abstract::integer(model->global);
}

Abstract MaskInterpreter::compute(Value v, unsigned depth) {
  Operation *op = v.getDefiningOp();
  std::optional<SymShape> shape = shapes_.get(v);
  if (!op || !shape)
    return Abstract::unknown();
  size_t rank = shape->size();
  auto binary = [&](Operation *o, auto &&combine) -> Abstract {
    Abstract x = evalAs(o->getOperand(0), *shape, depth);
    Abstract y = evalAs(o->getOperand(1), *shape, depth);
    return combine(x, y);
  };
  auto compare = [&](Operation *o, auto &&atomOf) -> Abstract {
    return binary(o, [&](const Abstract &x, const Abstract &y) {
      if (x.kind != Abstract::Int || y.kind != Abstract::Int)
        return Abstract::unknown();
      Abstract r = Abstract::truth(true);
      r.atoms.push_back(atomOf(x.value - y.value));
      simplify(r);
      return r;
    });
  };
  auto le = [](Affine d) { return Atom{Atom::LE, std::move(d)}; };

  return TypeSwitch<Operation *, Abstract>(op)
      .Case<ConstantOp>([&](ConstantOp c) {
        auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
        if (!splat)
          return Abstract::unknown();
        Type et = splat.getElementType();
        if (et.isInteger(1))
          return Abstract::truth(splat.getSplatValue<bool>());
        std::optional<int64_t> value;
        if (et.isInteger(64))
          value = splat.getSplatValue<APInt>().getSExtValue();
        else if (isa<FloatType>(et))
          value = integral(splat.getSplatValue<APFloat>().convertToDouble());
        if (!value)
          return Abstract::unknown();
        return Abstract::constant(*value, rank);
      })
      .Case<IotaOp>([&](IotaOp iota) {
        std::optional<int64_t> start =
            integral(iota.getStart().convertToDouble());
        std::optional<int64_t> step =
            integral(iota.getStep().convertToDouble());
        if (!start || !step)
          return Abstract::unknown();
        return Abstract::integer({SymExpr(*start), {*step}});
      })
      .Case<ReshapeOp>([&](ReshapeOp r) {
        return computeReshape(r.getInput(), r.getResult(), depth);
      })
      .Case<BroadcastToOp>(
          [&](BroadcastToOp b) { return evalAs(b.getInput(), *shape, depth); })
      .Case<AddOp>([&](Operation *o) {
        return binary(o, [&](const Abstract &x, const Abstract &y) {
          if (x.kind == Abstract::Int && y.kind == Abstract::Int)
            return Abstract::integer(x.value + y.value);
          // Adding masks masks the union of their masked entries.
          if (x.kind == Abstract::Mask && y.kind == Abstract::Mask)
            return conjoin(x, y, Abstract::Mask);
          if (x.kind == Abstract::Mask && y.isConstantInt() &&
              y.value.c == SymExpr(0))
            return x;
          if (y.kind == Abstract::Mask && x.isConstantInt() &&
              x.value.c == SymExpr(0))
            return y;
          return Abstract::unknown();
        });
      })
      .Case<SubOp>([&](Operation *o) {
        return binary(o, [&](const Abstract &x, const Abstract &y) {
          if (x.kind != Abstract::Int || y.kind != Abstract::Int)
            return Abstract::unknown();
          return Abstract::integer(x.value - y.value);
        });
      })
      .Case<MulOp>([&](Operation *o) {
        return binary(o, [&](const Abstract &x, const Abstract &y) {
          if (x.kind != Abstract::Int || y.kind != Abstract::Int)
            return Abstract::unknown();
          const Abstract &k = x.isConstantInt() ? x : y;
          const Abstract &other = x.isConstantInt() ? y : x;
          if (!k.isConstantInt())
            return Abstract::unknown();
          int64_t f = *k.value.c.constant();
          Affine r{other.value.c * SymExpr(f), other.value.a};
          for (int64_t &a : r.a)
            a *= f;
          return Abstract::integer(r);
        });
      })
      .Case<LessEqualOp>([&](Operation *o) { return compare(o, le); })
      .Case<LessOp>([&](Operation *o) {
        return compare(o, [&](Affine d) {
          d.c = d.c + SymExpr(1);
          return le(d);
        });
      })
      .Case<GreaterEqualOp>([&](Operation *o) {
        return compare(o, [&](Affine d) { return le(-d); });
      })
      .Case<GreaterOp>([&](Operation *o) {
        return compare(o, [&](Affine d) {
          Affine n = -d;
          n.c = n.c + SymExpr(1);
          return le(n);
        });
      })
      .Case<EqualOp>([&](Operation *o) {
        return compare(o, [](Affine d) {
          return Atom{Atom::EQ, std::move(d)};
        });
      })
      .Case<AndOp>([&](Operation *o) {
        return binary(o, [](const Abstract &x, const Abstract &y) {
          return conjoin(x, y, Abstract::Pred);
        });
      })
      .Case<OrOp>([&](Operation *o) {
        return binary(o, [](const Abstract &x, const Abstract &y) {
          if (!x.isPredicate() || !y.isPredicate())
            return Abstract::unknown();
          if (x.isTrue() || y.never)
            return x;
          if (y.isTrue() || x.never)
            return y;
          return Abstract::unknown();
        });
      })
      .Case<NotOp>(
          [&](NotOp n) { return negate(eval(n.getInput(), depth + 1)); })
      .Case<SelectOp>([&](SelectOp s) {
        Abstract cond = evalAs(s.getCond(), *shape, depth);
        if (!cond.isPredicate())
          return Abstract::unknown();
        if (cond.isTrue())
          return evalAs(s.getLhs(), *shape, depth);
        if (cond.never)
          return evalAs(s.getRhs(), *shape, depth);
        std::optional<double> l = getScalarConstant(s.getLhs());
        std::optional<double> r = getScalarConstant(s.getRhs());
        if (!l || !r)
          return Abstract::unknown();
        cond.kind = Abstract::Mask;
        if (*l == 0 && *r <= kMaskedBelow)
          return cond;
        if (*l <= kMaskedBelow && *r == 0)
          return negate(cond);
        return Abstract::unknown();
      })
      .Case<CastOp>([&](CastOp c) {
        Abstract in = eval(c.getInput(), depth + 1);
        Type to = c.getType().getElementType();
        if (to.isInteger(1)) {
          if (in.kind != Abstract::Int)
            return in.kind == Abstract::Pred ? in : Abstract::unknown();
          Abstract r = Abstract::truth(true);
          r.atoms.push_back({Atom::NE, in.value});
          simplify(r);
          return r;
        }
        if (in.kind == Abstract::Int)
          return in; // integer values survive i64 <-> f32 (exact below 2^24)
        if (in.kind == Abstract::Pred && (in.isTrue() || in.never))
          return Abstract::constant(in.isTrue() ? 1 : 0, rank);
        return Abstract::unknown();
      })
      .Case<SliceOp>([&](SliceOp s) { return computeSlice(s, depth); })
      .Case<ConcatOp>([&](ConcatOp c) { return computeConcat(c, depth); })
      .Case<CumSumOp>([&](CumSumOp c) {
        Abstract in = eval(c.getInput(), depth + 1);
        if (!in.isConstantInt())
          return Abstract::unknown();
        int64_t k = *in.value.c.constant();
        std::optional<int64_t> normalized =
            normalizeAxis(c.getAxis(), static_cast<int64_t>(rank));
        if (!normalized)
          return Abstract::unknown();
        const int64_t axis = *normalized;
        // Running sums of a constant k: k * (number of summed entries).
        Affine r{SymExpr(0), SmallVector<int64_t>(rank, 0)};
        if (!c.getReverse()) {
          r.a[axis] = k;
          r.c = SymExpr(c.getExclusive() ? 0 : k);
        } else {
          r.a[axis] = -k;
          SymExpr len = (*shape)[axis];
          r.c = SymExpr(k) * (len - SymExpr(c.getExclusive() ? 1 : 0));
        }
        return Abstract::integer(r);
      })
      .Case<GatherOp, GatherNdOp>([&](Operation *o) {
        // Gathering from a tensor that is one value everywhere.
        Abstract data = eval(o->getOperand(0), depth + 1);
        if (data.isConstantInt())
          return Abstract::constant(*data.value.c.constant(), rank);
        if (data.kind == Abstract::Pred && (data.isTrue() || data.never))
          return Abstract::truth(data.isTrue());
        return Abstract::unknown();
      })
      .Default([](Operation *) { return Abstract::unknown(); });
}

} // namespace

MaskProof analyzeAttentionMask(Value mask, const SymShape &scores,
                               ValueShapes &shapes) {
  MaskProof unknown;
  if (scores.size() != 4)
    return unknown;
  MaskInterpreter interp(shapes);
  Abstract m = interp.evalAs(mask, scores, 0);
  if (m.isConstantInt() && m.value.c == SymExpr(0))
    return {MaskMeaning::None, 0};
  if (m.kind != Abstract::Mask)
    return unknown;
  simplify(m);
  if (m.never)
    return unknown;
  if (m.atoms.empty())
    return {MaskMeaning::None, 0};
  // With offset = S - T, for some k > 0:
  //   causal:  k * (j - i - offset) <= 0
  //   window:  k * (i - j + offset - w + 1) <= 0, i.e. j > i + offset - w
  SymExpr offset = scores[3] - scores[2];
  bool causal = false;
  int64_t window = 0;
  for (const Atom &atom : m.atoms) {
    const Affine &e = atom.e;
    int64_t k = e.a[3] > 0 ? e.a[3] : -e.a[3];
    if (atom.rel != Atom::LE || k == 0 || e.a[2] != -e.a[3] || e.a[0] != 0 ||
        e.a[1] != 0)
      return unknown;
    if (e.a[3] > 0) {
      if (causal || e.c != SymExpr(-k) * offset)
        return unknown;
      causal = true;
      continue;
    }
    std::optional<SymExpr> q = e.c.divExact(SymExpr(k));
    std::optional<int64_t> w =
        q ? (offset + SymExpr(1) - *q).constant() : std::nullopt;
    if (window || !w || *w <= 0)
      return unknown;
    window = *w;
  }
  if (!causal)
    return unknown;
  return {MaskMeaning::Causal, window};
}

bool isKeyIndexPerRow(Value positions, const SymShape &shape,
                      ValueShapes &shapes) {
  if (shape.empty())
    return false;
  MaskInterpreter interp(shapes);
  Abstract p = interp.evalAs(positions, shape, 0);
  return p.kind == Abstract::Int && p.value.a.back() == 1;
}

} // namespace hybridc::hg
