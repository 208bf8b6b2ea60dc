// .hyb bundles: framing, FlatBuffers encoding of the typed command lists, and
// the semantic validation every load applies (bundles are untrusted input).
#include "hybrid/Bundle.h"

#include "bundle_generated.h"
#include "hybrid/FileIO.h"
#include "hybrid/SizeMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>

namespace hybrid {

namespace {

constexpr uint64_t kMaxPayload = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

// The variant order is the union order (type value = index + 1); adding an
// op to one without the other must not compile.
static_assert(std::variant_size_v<Op> == fb::Op_MAX,
              "bundle.fbs union Op and hybrid::Op differ in length");

void putLE(std::vector<uint8_t> &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t getLE(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// The elements of a scalar vector. The verifier checks a vector's length
/// prefix, not that 8-byte elements are 8-byte aligned, so copy bytes rather
/// than load elements from a damaged buffer.
template <typename T> std::vector<T> scalars(const flatbuffers::Vector<T> *v) {
  std::vector<T> out;
  if (v && v->size()) {
    out.resize(v->size());
    std::memcpy(out.data(), v->Data(), v->size() * sizeof(T));
  }
  return out;
}

std::vector<std::string> strings(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *v) {
  std::vector<std::string> out;
  if (v)
    for (const flatbuffers::String *s : *v)
      out.push_back(str(s));
  return out;
}

//===----------------------------------------------------------------------===//
// BundleDesc -> FlatBuffer
//===----------------------------------------------------------------------===//

using Fbb = flatbuffers::FlatBufferBuilder;

/// One op as its union type and table.
struct EncodedOp {
  fb::Op type;
  flatbuffers::Offset<void> table;
};

#include "BundleOps.inc"

class Encoder {
public:
  explicit Encoder(size_t sizeHint) : fbb_(sizeHint) {}

  std::vector<uint8_t> encode(const BundleDesc &b) {
    std::vector<flatbuffers::Offset<fb::Param>> params;
    for (const ParamDesc &p : b.params)
      params.push_back(fb::CreateParamDirect(
          fbb_, p.name.c_str(), static_cast<fb::DType>(p.dtype), &p.shape,
          p.layout.c_str(), shard(p.shard), p.source.c_str(), p.onnxZeros));
    std::vector<flatbuffers::Offset<fb::State>> states;
    for (const StateDesc &s : b.states)
      states.push_back(fb::CreateStateDirect(fbb_, s.name.c_str(),
                                             static_cast<fb::DType>(s.dtype),
                                             shard(s.shard)));
    std::vector<flatbuffers::Offset<fb::Constant>> constants;
    for (const ConstantDesc &c : b.constants) {
      // Constant data is bulk bytes; align it for the widest element type.
      fbb_.ForceVectorAlignment(c.data.size(), 1, 16);
      auto data = fbb_.CreateVector(c.data);
      constants.push_back(fb::CreateConstant(fbb_,
                                             static_cast<fb::DType>(c.dtype),
                                             fbb_.CreateVector(c.shape), data));
    }
    std::vector<flatbuffers::Offset<fb::Executable>> executables;
    for (const ExecutableDesc &e : b.executables)
      executables.push_back(executable(e));
    auto tied = stringOffsets(b.tied);
    auto prefixes = stringOffsets(b.checkpointPrefixes);
    auto extras = stringOffsets(b.checkpointExtras);
    flatbuffers::Offset<fb::Lora> lora;
    if (b.lora.enabled()) {
      std::vector<flatbuffers::Offset<fb::LoraAdapter>> adapters;
      for (const LoraAdapterDesc &a : b.lora.adapters)
        adapters.push_back(fb::CreateLoraAdapterDirect(
            fbb_, a.module.c_str(), a.weight.c_str(), a.loraA.c_str(),
            a.loraB.c_str(), a.fanInFanOut));
      auto targets = stringOffsets(b.lora.targetModules);
      lora = fb::CreateLoraDirect(fbb_, b.lora.rank, b.lora.alpha, &targets,
                                  b.lora.onlyOptimize, b.lora.fusedGeneration,
                                  &adapters);
    }
    auto root = fb::CreateBundleDirect(
        fbb_, b.producer.c_str(), b.model.c_str(), b.source.c_str(), &params,
        &states, &constants, &executables, &tied, b.worldSize, b.zeroStage,
        &prefixes, &extras, lora);
    fb::FinishBundleBuffer(fbb_, root);

    uint64_t size = fbb_.GetSize();
    const uint8_t *payload = fbb_.GetBufferPointer();
    std::vector<uint8_t> out;
    out.reserve(kBundleHeaderSize + size);
    out.insert(out.end(), kBundleMagic, kBundleMagic + 8);
    putLE(out, kBundleFormatVersion, 4);
    putLE(out, 0, 4);
    putLE(out, size, 8);
    putLE(out, fnv1a64(payload, size), 8);
    out.insert(out.end(), payload, payload + size);
    return out;
  }

private:
  std::vector<flatbuffers::Offset<flatbuffers::String>>
  stringOffsets(const std::vector<std::string> &v) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> out;
    for (const std::string &s : v)
      out.push_back(fbb_.CreateString(s));
    return out;
  }

  flatbuffers::Offset<fb::Shard> shard(const std::optional<ShardDesc> &s) {
    if (!s)
      return 0;
    return fb::CreateShardDirect(fbb_, s->worldSize, &s->shape);
  }

  flatbuffers::Offset<fb::Expr> expr(const SymExpr &e) {
    std::vector<flatbuffers::Offset<fb::Term>> terms;
    for (const auto &[mono, coeff] : e.terms())
      terms.push_back(fb::CreateTermDirect(fbb_, coeff, &mono));
    return fb::CreateExprDirect(fbb_, &terms);
  }

  flatbuffers::Offset<fb::Executable> executable(const ExecutableDesc &e) {
    auto symbols = stringOffsets(e.symbols);
    std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
    for (const BufferDesc &buf : e.buffers) {
      std::vector<flatbuffers::Offset<fb::Expr>> shape;
      for (const SymExpr &d : buf.shape)
        shape.push_back(expr(d));
      auto offset = expr(buf.offset);
      buffers.push_back(
          fb::CreateBufferDirect(fbb_, static_cast<fb::BufferKind>(buf.kind),
                                 static_cast<fb::DType>(buf.dtype), &shape,
                                 buf.index, offset, buf.name.c_str()));
    }
    std::vector<flatbuffers::Offset<fb::Command>> commands;
    for (const CommandDesc &c : e.commands) {
      EncodedOp op = std::visit(OpEncoder{fbb_}, c.op);
      commands.push_back(fb::CreateCommandDirect(fbb_, op.type, op.table,
                                                 &c.operands, &c.results,
                                                 c.stream, c.loc.c_str()));
    }
    auto ports = [&](const std::vector<PortDesc> &ps) {
      std::vector<flatbuffers::Offset<fb::Port>> out;
      for (const PortDesc &p : ps)
        out.push_back(fb::CreatePortDirect(fbb_, p.name.c_str(), p.buffer,
                                           p.defaultValue.has_value(),
                                           p.defaultValue.value_or(0)));
      return out;
    };
    auto inputs = ports(e.inputs);
    auto outputs = ports(e.outputs);
    std::vector<flatbuffers::Offset<fb::StateUse>> states;
    for (const StateUse &u : e.states)
      states.push_back(
          fb::CreateStateUse(fbb_, u.state, static_cast<fb::Access>(u.access)));
    auto communicators = stringOffsets(e.communicators);
    auto workspace = expr(e.workspaceBytes);
    return fb::CreateExecutableDirect(
        fbb_, e.name.c_str(), &symbols, &e.symbolMax, &buffers, &commands,
        &inputs, &outputs, static_cast<fb::Access>(e.paramAccess), &states,
        &communicators, e.numStreams, e.numEvents, workspace,
        e.workspaceAlignment);
  }

  Fbb fbb_;
};

//===----------------------------------------------------------------------===//
// FlatBuffer -> BundleDesc (after the Verifier has checked every offset)
//===----------------------------------------------------------------------===//

class Decoder {
public:
  explicit Decoder(const std::string &what) : what_(what) {}

  BundleDesc decode(const fb::Bundle &root) {
    BundleDesc b;
    b.producer = str(root.producer());
    b.model = str(root.model());
    b.source = str(root.source());
    if (auto *ps = root.params())
      for (const fb::Param *p : *ps) {
        ParamDesc d;
        d.name = str(p->name());
        d.dtype = static_cast<DType>(p->dtype());
        d.shape = scalars(p->shape());
        d.layout = str(p->layout());
        d.shard = shard(p->shard());
        d.source = str(p->source());
        d.onnxZeros = p->onnx_zeros();
        b.params.push_back(std::move(d));
      }
    if (auto *ss = root.states())
      for (const fb::State *s : *ss)
        b.states.push_back({str(s->name()), static_cast<DType>(s->dtype()),
                            shard(s->shard())});
    if (auto *cs = root.constants())
      for (const fb::Constant *c : *cs) {
        ConstantDesc d;
        d.dtype = static_cast<DType>(c->dtype());
        d.shape = scalars(c->shape());
        d.data = scalars(c->data());
        b.constants.push_back(std::move(d));
      }
    if (auto *es = root.executables())
      for (const fb::Executable *e : *es)
        b.executables.push_back(executable(*e));
    b.tied = strings(root.tied());
    b.worldSize = root.world_size();
    b.zeroStage = root.zero_stage();
    b.checkpointPrefixes = strings(root.checkpoint_prefixes());
    b.checkpointExtras = strings(root.checkpoint_extras());
    if (const fb::Lora *lora = root.lora()) {
      b.lora.rank = lora->rank();
      b.lora.alpha = lora->alpha();
      b.lora.targetModules = strings(lora->target_modules());
      b.lora.onlyOptimize = lora->only_optimize();
      b.lora.fusedGeneration = lora->fused_generation();
      if (auto *as = lora->adapters())
        for (const fb::LoraAdapter *a : *as)
          b.lora.adapters.push_back({str(a->module_()), str(a->weight()),
                                     str(a->lora_a()), str(a->lora_b()),
                                     a->fan_in_fan_out()});
    }
    return b;
  }

private:
  std::optional<ShardDesc> shard(const fb::Shard *s) {
    if (!s)
      return std::nullopt;
    return ShardDesc{s->world_size(), scalars(s->shape())};
  }

  [[noreturn]] void fail(const std::string &msg) {
    throw Error(what_ + ": invalid bundle: " + msg);
  }

  SymExpr expr(const fb::Expr *e) {
    SymExpr r;
    if (!e || !e->terms())
      return r;
    for (const fb::Term *t : *e->terms()) {
      SymExpr::Monomial m = scalars(t->monomial());
      std::sort(m.begin(), m.end());
      // The writer emits each monomial once; a repeat would make the
      // coefficients add (and possibly overflow).
      if (r.terms().count(m))
        throw Error(what_ +
                    ": corrupt bundle: a size expression repeats a term");
      r = r + SymExpr::term(t->coeff(), m);
    }
    return r;
  }

  std::vector<PortDesc>
  ports(const flatbuffers::Vector<flatbuffers::Offset<fb::Port>> *v) {
    std::vector<PortDesc> out;
    if (v)
      for (const fb::Port *p : *v)
        out.push_back(PortDesc{str(p->name()), p->buffer(),
                               p->has_default()
                                   ? std::optional<double>(p->default_value())
                                   : std::nullopt});
    return out;
  }

  ExecutableDesc executable(const fb::Executable &e) {
    ExecutableDesc d;
    d.name = str(e.name());
    d.symbols = strings(e.symbols());
    d.symbolMax = scalars(e.symbol_max());
    if (auto *bufs = e.buffers())
      for (const fb::Buffer *b : *bufs) {
        BufferDesc bd;
        bd.kind = static_cast<BufferKind>(b->kind());
        bd.dtype = static_cast<DType>(b->dtype());
        if (auto *shape = b->shape())
          for (const fb::Expr *dim : *shape)
            bd.shape.push_back(expr(dim));
        bd.index = b->index();
        bd.offset = expr(b->offset());
        bd.name = str(b->name());
        d.buffers.push_back(std::move(bd));
      }
    if (auto *cmds = e.commands())
      for (const fb::Command *c : *cmds) {
        CommandDesc cd;
        std::optional<Op> op = decodeOp(*c);
        if (!op)
          fail("executable '" + d.name + "' command " +
               std::to_string(d.commands.size()) +
               (c->op_type() == fb::Op_NONE || !c->op()
                    ? " has no op"
                    : " has unknown op type " +
                          std::to_string(static_cast<unsigned>(c->op_type())) +
                          " (a newer hybridc?)"));
        cd.op = std::move(*op);
        cd.operands = scalars(c->operands());
        cd.results = scalars(c->results());
        cd.stream = c->stream();
        cd.loc = str(c->loc());
        d.commands.push_back(std::move(cd));
      }
    d.inputs = ports(e.inputs());
    d.outputs = ports(e.outputs());
    d.paramAccess = static_cast<Access>(e.param_access());
    if (auto *uses = e.states())
      for (const fb::StateUse *u : *uses)
        d.states.push_back({u->state(), static_cast<Access>(u->access())});
    d.communicators = strings(e.communicators());
    d.numStreams = e.num_streams();
    d.numEvents = e.num_events();
    d.workspaceBytes = expr(e.workspace_bytes());
    d.workspaceAlignment = e.workspace_alignment();
    return d;
  }

  std::string what_;
};

//===----------------------------------------------------------------------===//
// Semantic validation
//===----------------------------------------------------------------------===//

/// Positions of an op's optional operands (absent ones are -1).
/// a * b with every coefficient checked; nullopt on overflow, on a
/// coefficient beyond 2^61 (so that differences of such products cannot
/// overflow either) or when the product grows beyond any size a real plan
/// has (a damaged bundle must not make validation slow).
std::optional<SymExpr> checkedProduct(const SymExpr &a, const SymExpr &b) {
  constexpr int64_t kMaxCoeff = int64_t(1) << 61;
  constexpr size_t kMaxTerms = 1024, kMaxDegree = 64;
  if (a.terms().size() * b.terms().size() > kMaxTerms * kMaxTerms)
    return std::nullopt;
  std::map<SymExpr::Monomial, int64_t> terms;
  for (const auto &[ma, ca] : a.terms())
    for (const auto &[mb, cb] : b.terms()) {
      int64_t c;
      if (detail::mulOverflows(ca, cb, c))
        return std::nullopt;
      if (ma.size() + mb.size() > kMaxDegree)
        return std::nullopt;
      SymExpr::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t &slot = terms[m];
      if (detail::addOverflows(slot, c, slot) || slot > kMaxCoeff ||
          slot < -kMaxCoeff || terms.size() > kMaxTerms)
        return std::nullopt;
    }
  SymExpr r;
  for (const auto &[m, c] : terms)
    r = r + SymExpr::term(c, m);
  return r;
}

class Validator {
public:
  Validator(const BundleDesc &b, const std::string &what)
      : b_(b), what_(what) {}

  /// The adapters name parameters of matching shapes: W 2-D, A [r, in], B
  /// [out, r]; a fused bundle has the executables that merge them.
  void checkLora() {
    const LoraDesc &l = b_.lora;
    if (l.rank == 0 && l.adapters.empty())
      return;
    if (l.rank < 1 || !(l.alpha > 0) || !std::isfinite(l.alpha))
      fail("LoRA rank " + std::to_string(l.rank) + " and alpha " +
           std::to_string(l.alpha) + " (rank >= 1, alpha > 0)");
    if (l.adapters.empty())
      fail("LoRA without adapters");
    auto shapeOf = [&](const std::string &name) -> const Shape & {
      for (const ParamDesc &p : b_.params)
        if (p.name == name)
          return p.shape;
      fail("LoRA adapter names parameter '" + name + "', which is none");
    };
    for (const LoraAdapterDesc &a : l.adapters) {
      const Shape &w = shapeOf(a.weight), &la = shapeOf(a.loraA),
                  &lb = shapeOf(a.loraB);
      if (w.size() != 2)
        fail("LoRA weight '" + a.weight + "' is " + shapeToString(w));
      int64_t out = w[a.fanInFanOut ? 1 : 0], in = w[a.fanInFanOut ? 0 : 1];
      if (la != Shape{l.rank, in} || lb != Shape{out, l.rank})
        fail("LoRA adapter of '" + a.weight + "' " + shapeToString(w) +
             ": lora_A " + shapeToString(la) + ", lora_B " + shapeToString(lb) +
             " (expected [" + std::to_string(l.rank) + ", " +
             std::to_string(in) + "] and [" + std::to_string(out) + ", " +
             std::to_string(l.rank) + "])");
    }
    if (l.fusedGeneration)
      for (const char *name : {"lora_fuse", "lora_unfuse"})
        if (std::none_of(
                b_.executables.begin(), b_.executables.end(),
                [&](const ExecutableDesc &e) { return e.name == name; }))
          fail(std::string("fused LoRA generation without @") + name);
  }

  void run() {
    if (b_.worldSize < 1 || b_.worldSize > kMaxWorldSize)
      fail("world size " + std::to_string(b_.worldSize) + " (1 to " +
           std::to_string(kMaxWorldSize) + ")");
    if (b_.zeroStage < 0 || b_.zeroStage > 3)
      fail("ZeRO stage " + std::to_string(b_.zeroStage) + " (0 to 3)");
    std::set<std::string> names;
    for (size_t i = 0; i < b_.params.size(); ++i) {
      const ParamDesc &p = b_.params[i];
      std::string ctx = "param " + std::to_string(i) + " '" + p.name + "'";
      if (p.name.empty())
        fail("param " + std::to_string(i) + " has no name");
      if (!names.insert(p.name).second)
        fail("duplicate param '" + p.name + "'");
      checkDType(p.dtype, ctx);
      int64_t n = detail::checkedNumel(p.shape), bytes;
      if (n < 0 || detail::mulOverflows(
                       n, static_cast<int64_t>(dtypeSize(p.dtype)), bytes))
        fail(ctx + " has an invalid shape " + shapeToString(p.shape));
      checkShard(p.shard, ctx);
      if (p.onnxZeros && !p.source.empty())
        fail(ctx + " is zeros in ONNX and also read from initializer '" +
             p.source + "'");
      if (p.shard && p.shard->shape != p.shape)
        fail(ctx + " is " + shapeToString(p.shape) + " but its shard splits " +
             shapeToString(p.shard->shape));
    }
    checkLora();
    std::set<std::string> stateNames;
    for (size_t i = 0; i < b_.states.size(); ++i) {
      const StateDesc &s = b_.states[i];
      if (s.name.empty())
        fail("state " + std::to_string(i) + " has no name");
      if (!stateNames.insert(s.name).second)
        fail("duplicate state '" + s.name + "'");
      std::string ctx = "state " + std::to_string(i) + " '" + s.name + "'";
      checkDType(s.dtype, ctx);
      checkShard(s.shard, ctx);
    }
    for (size_t i = 0; i < b_.constants.size(); ++i) {
      const ConstantDesc &c = b_.constants[i];
      std::string ctx = "constant " + std::to_string(i);
      checkDType(c.dtype, ctx);
      int64_t n = detail::checkedNumel(c.shape);
      int64_t want;
      if (n < 0 || detail::mulOverflows(
                       n, static_cast<int64_t>(dtypeSize(c.dtype)), want))
        fail(ctx + " has an invalid shape " + shapeToString(c.shape));
      if (static_cast<uint64_t>(want) != c.data.size())
        fail(ctx + " holds " + std::to_string(c.data.size()) + " bytes but " +
             dtypeName(c.dtype) + " " + shapeToString(c.shape) + " needs " +
             std::to_string(want));
    }
    std::set<std::string> exeNames;
    for (const ExecutableDesc &e : b_.executables) {
      if (e.name.empty())
        fail("an executable has no name");
      if (!exeNames.insert(e.name).second)
        fail("duplicate executable '" + e.name + "'");
      executable(e);
    }
  }

private:
  [[noreturn]] void fail(const std::string &msg) {
    throw Error(what_ + ": invalid bundle: " + msg);
  }

  void checkDType(DType t, const std::string &ctx) {
    if (!isValidDType(static_cast<uint8_t>(t)))
      fail(ctx + " has invalid dtype value " +
           std::to_string(static_cast<unsigned>(t)));
  }

  /// A shard splits a sane shape over the bundle's (several) ranks.
  void checkShard(const std::optional<ShardDesc> &shard,
                  const std::string &ctx) {
    if (!shard)
      return;
    if (b_.worldSize < 2 || shard->worldSize != b_.worldSize)
      fail(ctx + " is split over " + std::to_string(shard->worldSize) +
           " ranks in a bundle for world size " + std::to_string(b_.worldSize));
    if (detail::checkedNumel(shard->shape) < 0)
      fail(ctx + " has a shard of invalid shape " +
           shapeToString(shard->shape));
  }

  void checkAccess(Access a, const std::string &ctx) {
    if (a != Access::Read && a != Access::ReadWrite)
      fail(ctx + " has invalid access value " +
           std::to_string(static_cast<unsigned>(a)));
  }

  void checkExpr(const SymExpr &e, size_t numSymbols, const std::string &ctx) {
    for (const auto &[mono, coeff] : e.terms())
      for (uint8_t s : mono)
        if (s >= numSymbols)
          fail(ctx + " uses symbol #" + std::to_string(s) + " but there are " +
               std::to_string(numSymbols) + " symbols");
  }

  /// The byte size of buffer `b` as a polynomial, or nullopt on overflow.
  std::optional<SymExpr> byteSize(const BufferDesc &b) {
    std::optional<SymExpr> r =
        SymExpr(static_cast<int64_t>(dtypeSize(b.dtype)));
    for (const SymExpr &d : b.shape)
      if (!(r = checkedProduct(*r, d)))
        return std::nullopt;
    return r;
  }

  std::string bufferName(const ExecutableDesc &e, size_t i) {
    return "buffer " + std::to_string(i) + " '" + e.buffers[i].name + "'";
  }

  void executable(const ExecutableDesc &e) {
    std::string x = "executable '" + e.name + "'";
    if (e.symbols.size() > SymExpr::kMaxSymbols)
      fail(x + " has " + std::to_string(e.symbols.size()) +
           " symbols (at most " + std::to_string(SymExpr::kMaxSymbols) + ")");
    std::set<std::string> syms;
    for (const std::string &s : e.symbols) {
      if (s.empty())
        fail(x + " has an unnamed symbol");
      if (!syms.insert(s).second)
        fail(x + " has symbol '" + s + "' twice");
    }
    if (e.symbolMax.size() != e.symbols.size())
      fail(x + " has " + std::to_string(e.symbolMax.size()) +
           " symbol limits for " + std::to_string(e.symbols.size()) +
           " symbols");
    for (size_t s = 0; s < e.symbolMax.size(); ++s)
      if (e.symbolMax[s] < 0)
        fail(x + " symbol '" + e.symbols[s] + "' has limit " +
             std::to_string(e.symbolMax[s]));
    if (e.numStreams < 1 || e.numStreams > kMaxStreams)
      fail(x + " has " + std::to_string(e.numStreams) + " streams (1 to " +
           std::to_string(kMaxStreams) + ")");
    if (e.numEvents < 0 || e.numEvents > kMaxEvents)
      fail(x + " has " + std::to_string(e.numEvents) + " events (0 to " +
           std::to_string(kMaxEvents) + ")");
    checkAccess(e.paramAccess, x + " param access");
    std::vector<int> stateAccess(b_.states.size(), -1); // -1: not declared
    for (size_t u = 0; u < e.states.size(); ++u) {
      const StateUse &use = e.states[u];
      std::string ctx = x + " state use " + std::to_string(u);
      if (use.state < 0 || static_cast<size_t>(use.state) >= b_.states.size())
        fail(ctx + " refers to state " + std::to_string(use.state) + " of " +
             std::to_string(b_.states.size()));
      checkAccess(use.access, ctx);
      if (stateAccess[use.state] >= 0)
        fail(x + " declares state '" + b_.states[use.state].name + "' twice");
      stateAccess[use.state] = static_cast<int>(use.access);
    }
    std::set<std::string> comms;
    for (const std::string &c : e.communicators)
      if (!comms.insert(c).second)
        fail(x + " names communicator '" + c + "' twice");

    size_t ns = e.symbols.size();
    size_t nb = e.buffers.size();
    for (size_t i = 0; i < nb; ++i) {
      const BufferDesc &b = e.buffers[i];
      std::string ctx = x + " " + bufferName(e, i);
      checkDType(b.dtype, ctx);
      for (size_t d = 0; d < b.shape.size(); ++d)
        checkExpr(b.shape[d], ns, ctx + " dim " + std::to_string(d));
      checkExpr(b.offset, ns, ctx + " offset");
      auto inRange = [&](size_t n, const char *what) {
        if (b.index < 0 || static_cast<size_t>(b.index) >= n)
          fail(ctx + " refers to " + what + " " + std::to_string(b.index) +
               " of " + std::to_string(n));
      };
      auto sameAs = [&](DType dt, const Shape &shape, const std::string &what) {
        bool same = dt == b.dtype && shape.size() == b.shape.size();
        for (size_t d = 0; same && d < shape.size(); ++d)
          same = b.shape[d].constant() == shape[d];
        if (!same)
          fail(ctx + " does not have the dtype and shape of " + what + " (" +
               dtypeName(dt) + " " + shapeToString(shape) + ")");
      };
      auto port = [&](const std::vector<PortDesc> &ports, const char *what) {
        inRange(ports.size(), what);
        if (ports[b.index].buffer != static_cast<int32_t>(i))
          fail(ctx + " is " + what + " " + std::to_string(b.index) +
               " but that port names buffer " +
               std::to_string(ports[b.index].buffer));
      };
      switch (b.kind) {
      case BufferKind::Workspace:
        break;
      case BufferKind::Param: {
        inRange(b_.params.size(), "param");
        const ParamDesc &p = b_.params[b.index];
        if (p.shard)
          sameAs(p.dtype, {p.shard->shardElements()},
                 "a shard of param '" + p.name + "'");
        else
          sameAs(p.dtype, p.shape, "param '" + p.name + "'");
        break;
      }
      case BufferKind::Constant:
        inRange(b_.constants.size(), "constant");
        sameAs(b_.constants[b.index].dtype, b_.constants[b.index].shape,
               "constant " + std::to_string(b.index));
        break;
      case BufferKind::Input:
        port(e.inputs, "input");
        break;
      case BufferKind::Output:
        port(e.outputs, "output");
        break;
      case BufferKind::Alias:
        inRange(nb, "buffer");
        if (static_cast<size_t>(b.index) == i)
          fail(ctx + " aliases itself");
        break;
      case BufferKind::State: {
        inRange(b_.states.size(), "state");
        const StateDesc &s = b_.states[b.index];
        if (s.dtype != b.dtype)
          fail(ctx + " is " + dtypeName(b.dtype) + " but state '" + s.name +
               "' is " + dtypeName(s.dtype));
        if (stateAccess[b.index] < 0)
          fail(ctx + " uses state '" + s.name +
               "', which the executable does not declare");
        if (s.shard)
          sameAs(s.dtype, {s.shard->shardElements()},
                 "a shard of state '" + s.name + "'");
        break;
      }
      default:
        fail(ctx + " has invalid kind value " +
             std::to_string(static_cast<unsigned>(b.kind)));
      }
    }
    // Alias chains must end in a buffer with memory of its own, and an
    // alias must fit in that memory whatever the symbols are.
    for (size_t i = 0; i < nb; ++i) {
      if (e.buffers[i].kind != BufferKind::Alias)
        continue;
      size_t j = i, steps = 0;
      while (e.buffers[j].kind == BufferKind::Alias) {
        j = static_cast<size_t>(e.buffers[j].index);
        if (++steps > nb)
          fail(x + " " + bufferName(e, i) + " is part of an alias cycle");
      }
      std::optional<SymExpr> mine = byteSize(e.buffers[i]);
      std::optional<SymExpr> theirs = byteSize(e.buffers[j]);
      if (!mine || !theirs)
        fail(x + " " + bufferName(e, i) +
             " or the buffer it aliases has a "
             "size that overflows");
      if (!SymExpr::knownGE(*theirs, *mine))
        fail(x + " " + bufferName(e, i) + " (" + mine->str(e.symbols) +
             " bytes) may not fit in " + bufferName(e, j) + " (" +
             theirs->str(e.symbols) + " bytes) that it aliases");
    }
    auto checkPorts = [&](const std::vector<PortDesc> &ports, BufferKind kind,
                          const char *what) {
      std::set<std::string> names;
      for (size_t p = 0; p < ports.size(); ++p) {
        const PortDesc &port = ports[p];
        std::string ctx = x + " " + what + " " + std::to_string(p);
        if (port.name.empty())
          fail(ctx + " has no name");
        if (!names.insert(port.name).second)
          fail(x + " has two " + what + "s named '" + port.name + "'");
        if (port.buffer < 0 || static_cast<size_t>(port.buffer) >= nb)
          fail(ctx + " '" + port.name + "' refers to buffer " +
               std::to_string(port.buffer) + " of " + std::to_string(nb));
        const BufferDesc &b = e.buffers[port.buffer];
        if (b.kind != kind || b.index != static_cast<int32_t>(p))
          fail(ctx + " '" + port.name + "' refers to buffer " +
               std::to_string(port.buffer) + " which is not " + what + " " +
               std::to_string(p));
        if (port.defaultValue && kind != BufferKind::Input)
          fail(ctx + " '" + port.name + "' has a default value");
        if (port.defaultValue && !std::isfinite(*port.defaultValue))
          fail(ctx + " '" + port.name + "' has a non-finite default value");
      }
    };
    checkPorts(e.inputs, BufferKind::Input, "input");
    checkPorts(e.outputs, BufferKind::Output, "output");
    for (size_t c = 0; c < e.commands.size(); ++c)
      command(e, c, stateAccess);
    checkExpr(e.workspaceBytes, ns, x + " workspace size");
    int64_t a = e.workspaceAlignment;
    if (a <= 0 || (a & (a - 1)) || a > (int64_t(1) << 30))
      fail(x + " has workspace alignment " + std::to_string(a) +
           " (must be a power of two)");
  }

  void command(const ExecutableDesc &e, size_t c,
               const std::vector<int> &stateAccess) {
    const CommandDesc &cmd = e.commands[c];
    size_t nb = e.buffers.size();
    std::string ctx = "executable '" + e.name + "' command " +
                      std::to_string(c) + " '" + opName(cmd.op) + "'" +
                      (cmd.loc.empty() ? "" : " (" + cmd.loc + ")");
    // Enum values first: opName and everything below rely on them.
    if (int kind = invalidKindValue(cmd.op); kind >= 0)
      fail(ctx + " has invalid kind value " + std::to_string(kind));
    std::visit(
        [&](const auto &o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ops::ActivationGrad>) {
            if (o.activation == Activation::None)
              fail(ctx + " has activation none");
          } else if constexpr (std::is_same_v<T, ops::LinearGroup>) {
            // Before the arity check, which counts members by begins.
            if (o.featureBegins.empty() ||
                o.featureBegins.size() != o.featureEnds.size())
              fail(ctx + " has " + std::to_string(o.featureBegins.size()) +
                   " feature begins and " +
                   std::to_string(o.featureEnds.size()) +
                   " ends (one per member, at least one member)");
            for (size_t i = 0; i < o.featureBegins.size(); ++i)
              if (o.featureBegins[i] < 0 ||
                  o.featureBegins[i] >= o.featureEnds[i])
                fail(ctx + " member " + std::to_string(i) + " has features [" +
                     std::to_string(o.featureBegins[i]) + ", " +
                     std::to_string(o.featureEnds[i]) + ")");
          }
        },
        cmd.op);

    int arity = opArity(cmd.op);
    if (arity >= 0 && cmd.operands.size() != static_cast<size_t>(arity))
      fail(ctx + " has " + std::to_string(cmd.operands.size()) +
           " operands, the op takes " + std::to_string(arity));
    if (arity < 0 && cmd.operands.empty())
      fail(ctx + " has no operands");
    int results = opResultCount(cmd.op);
    if (cmd.results.size() != static_cast<size_t>(results))
      fail(ctx + " has " + std::to_string(cmd.results.size()) +
           " results, the op writes " + std::to_string(results));
    if (cmd.stream < 0 || cmd.stream >= e.numStreams)
      fail(ctx + " runs on stream " + std::to_string(cmd.stream) + " of " +
           std::to_string(e.numStreams));
    for (size_t i = 0; i < cmd.operands.size(); ++i) {
      int32_t op = cmd.operands[i];
      if (op == -1 && operandOptional(cmd.op, i))
        continue;
      if (op == -1)
        fail(ctx + " leaves operand " + std::to_string(i) +
             " out, which the op requires");
      if (op < 0 || static_cast<size_t>(op) >= nb)
        fail(ctx + " reads buffer " + std::to_string(op) + " of " +
             std::to_string(nb));
    }
    for (int32_t r : cmd.results) {
      if (r < 0 || static_cast<size_t>(r) >= nb)
        fail(ctx + " writes buffer " + std::to_string(r) + " of " +
             std::to_string(nb));
      // Access: what a command writes must be writable memory.
      const BufferDesc &target =
          e.buffers[aliasRoot(e, static_cast<size_t>(r))];
      std::string wrote = ctx + " writes " + bufferName(e, r);
      switch (target.kind) {
      case BufferKind::Input:
        fail(wrote + ", which is read-only (an input)");
      case BufferKind::Constant:
        fail(wrote + ", which is read-only (a constant)");
      case BufferKind::Param:
        if (e.paramAccess != Access::ReadWrite)
          fail(wrote + ", which is read-only (param '" +
               b_.params[target.index].name +
               "'; the executable's param access is read)");
        break;
      case BufferKind::State:
        if (stateAccess[target.index] != static_cast<int>(Access::ReadWrite))
          fail(wrote + ", which is read-only (state '" +
               b_.states[target.index].name + "' is declared read)");
        break;
      default:
        break;
      }
    }
    opAttributes(e, cmd, ctx);
  }

  /// Attribute checks that need only ranks: an axis or permutation a kernel
  /// would index with is in range.
  void opAttributes(const ExecutableDesc &e, const CommandDesc &cmd,
                    const std::string &ctx) {
    auto rankOf = [&](int32_t buffer) -> int64_t {
      return buffer < 0 ? 0
                        : static_cast<int64_t>(e.buffers[buffer].shape.size());
    };
    int64_t in = cmd.operands.empty() ? 0 : rankOf(cmd.operands[0]);
    int64_t out = cmd.results.empty() ? 0 : rankOf(cmd.results[0]);
    auto axis = [&](int64_t a, int64_t rank, const char *what) {
      if (a < -rank || a >= rank)
        fail(ctx + " has " + what + " " + std::to_string(a) + " for rank " +
             std::to_string(rank));
    };
    std::visit(
        [&](const auto &o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, ops::Transpose>) {
            std::vector<bool> seen(o.perm.size());
            bool ok = static_cast<int64_t>(o.perm.size()) == in && in == out;
            for (int64_t p : o.perm) {
              ok = ok && p >= 0 && p < in && !seen[p];
              if (ok)
                seen[p] = true;
            }
            if (!ok)
              fail(ctx + " has a permutation that does not permute the " +
                   std::to_string(in) + " dims of its operand");
          } else if constexpr (std::is_same_v<T, ops::Slice>) {
            size_t n = o.axes.size();
            if (o.starts.size() != n || o.ends.size() != n ||
                (!o.steps.empty() && o.steps.size() != n))
              fail(ctx + " has axes, starts, ends and steps of different "
                         "lengths");
            std::set<int64_t> axes;
            for (int64_t a : o.axes) {
              axis(a, in, "axis");
              if (!axes.insert(a < 0 ? a + in : a).second)
                fail(ctx + " slices axis " + std::to_string(a) + " twice");
            }
            for (int64_t s : o.steps)
              if (s == 0)
                fail(ctx + " has step 0");
          } else if constexpr (std::is_same_v<T, ops::Concat>) {
            axis(o.axis, out, "axis");
          } else if constexpr (std::is_same_v<T, ops::Gather>) {
            axis(o.axis, in, "axis");
          } else if constexpr (std::is_same_v<T, ops::GatherNd>) {
            if (o.batchDims < 0 || o.batchDims >= std::max<int64_t>(in, 1))
              fail(ctx + " has batch_dims " + std::to_string(o.batchDims) +
                   " for rank " + std::to_string(in));
          } else if constexpr (std::is_same_v<T, ops::CumSum> ||
                               std::is_same_v<T, ops::Softmax> ||
                               std::is_same_v<T, ops::LayerNorm> ||
                               std::is_same_v<T, ops::LayerNormGrad> ||
                               std::is_same_v<T, ops::RmsNorm>) {
            axis(o.axis, in, "axis");
          } else if constexpr (std::is_same_v<T, ops::Reduce>) {
            for (int64_t a : o.axes)
              axis(a, in, "axis");
          } else if constexpr (std::is_same_v<T, ops::CacheWrite>) {
            axis(o.axis, out, "axis");
          } else if constexpr (std::is_same_v<T, ops::Attention>) {
            if (o.slidingWindow < 0)
              fail(ctx + " has sliding window " +
                   std::to_string(o.slidingWindow));
            using In = ops::Attention::In;
            using Out = ops::Attention::Out;
            if (!o.append && (cmd.operands[In::appendKey] != -1 ||
                              cmd.operands[In::appendValue] != -1 ||
                              cmd.operands[In::appendAt] != -1))
              fail(ctx + " gives appended keys but does not append");
            if (o.append &&
                (cmd.results[Out::keyOut] != cmd.operands[In::key] ||
                 cmd.results[Out::valueOut] != cmd.operands[In::value]))
              fail(ctx + " appends to other buffers than its key and value");
          } else if constexpr (std::is_same_v<T, ops::AttentionGrad>) {
            if (o.slidingWindow < 0)
              fail(ctx + " has sliding window " +
                   std::to_string(o.slidingWindow));
          } else if constexpr (std::is_same_v<T, ops::Collective>) {
            if (o.communicator < 0 ||
                static_cast<size_t>(o.communicator) >= e.communicators.size())
              fail(ctx + " uses communicator " +
                   std::to_string(o.communicator) + " of " +
                   std::to_string(e.communicators.size()));
          } else if constexpr (std::is_same_v<T, ops::RecordEvent> ||
                               std::is_same_v<T, ops::WaitEvent>) {
            if (o.event < 0 || o.event >= e.numEvents)
              fail(ctx + " uses event " + std::to_string(o.event) + " of " +
                   std::to_string(e.numEvents));
          }
        },
        cmd.op);
  }

  const BundleDesc &b_;
  std::string what_;
};

std::vector<uint8_t> encodeValidated(const BundleDesc &bundle,
                                     const std::string &what) {
  validateBundle(bundle, what);
  uint64_t bulk = 0;
  for (const ConstantDesc &c : bundle.constants)
    bulk += c.data.size();
  // FlatBuffers addresses at most 2 GiB; leave room for the tables.
  if (bulk > kMaxPayload / 2)
    throw Error(what + ": bundle constants total " + std::to_string(bulk) +
                " bytes, more than a bundle can hold (1 GiB)");
  return Encoder(1024 + bulk).encode(bundle);
}

} // namespace

uint64_t fnv1a64(const uint8_t *data, size_t size) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

void validateBundle(const BundleDesc &bundle, const std::string &what) {
  Validator(bundle, what).run();
}

std::vector<uint8_t> serializeBundle(const BundleDesc &bundle) {
  return encodeValidated(bundle, "bundle");
}

BundleDesc parseBundle(const uint8_t *data, size_t size,
                       const std::string &what) {
  if (size < sizeof(kBundleMagic) ||
      std::memcmp(data, kBundleMagic, sizeof(kBundleMagic)) != 0)
    throw Error(what + ": not a hybridc bundle (no HYBRIDC header)");
  if (size < kBundleHeaderSize)
    throw Error(what + ": truncated bundle: " + std::to_string(size) +
                " bytes, the header alone is " +
                std::to_string(kBundleHeaderSize));
  uint64_t version = getLE(data + 8, 4);
  if (version != kBundleFormatVersion)
    throw Error(what + ": bundle format version " + std::to_string(version) +
                "; this runtime reads version " +
                std::to_string(kBundleFormatVersion) +
                ": recompile it with hybridc");
  uint64_t payloadSize = getLE(data + 16, 8);
  uint64_t available = size - kBundleHeaderSize;
  if (payloadSize > available)
    throw Error(what + ": truncated bundle: header says " +
                std::to_string(payloadSize) + " payload bytes, file has " +
                std::to_string(available));
  if (payloadSize < available)
    throw Error(what +
                ": corrupt bundle: " + std::to_string(available - payloadSize) +
                " unexpected bytes after the payload");
  const uint8_t *payload = data + kBundleHeaderSize;
  if (fnv1a64(payload, payloadSize) != getLE(data + 24, 8))
    throw Error(what + ": corrupt bundle: checksum mismatch");
  if (payloadSize > kMaxPayload)
    throw Error(what + ": corrupt bundle: payload of " +
                std::to_string(payloadSize) + " bytes exceeds 2 GiB");

  // FlatBuffers wants its buffer aligned; a caller's bytes may not be.
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(payload) % alignof(uint64_t)) {
    aligned.resize((payloadSize + 7) / 8);
    std::memcpy(aligned.data(), payload, payloadSize);
    payload = reinterpret_cast<const uint8_t *>(aligned.data());
  }
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  opts.max_tables = 1u << 30;
  opts.check_alignment = true;
  flatbuffers::Verifier verifier(payload, payloadSize, opts);
  if (payloadSize >= 8 && !fb::BundleBufferHasIdentifier(payload))
    throw Error(what + ": corrupt bundle: payload is not a HYB1 FlatBuffer");
  if (!fb::VerifyBundleBuffer(verifier))
    throw Error(what + ": corrupt bundle: FlatBuffers verification failed");
  BundleDesc bundle = Decoder(what).decode(*fb::GetBundle(payload));
  validateBundle(bundle, what);
  return bundle;
}

void writeBundle(const BundleDesc &bundle, const std::string &path) {
  std::vector<uint8_t> bytes = encodeValidated(bundle, path);
  detail::writeFileAtomically(path, [&](const detail::ByteSink &write) {
    write(bytes.data(), bytes.size());
  });
}

BundleDesc readBundle(const std::string &path) {
  detail::MappedFile file(path);
  return parseBundle(file.data(), file.size(), path);
}

} // namespace hybrid
