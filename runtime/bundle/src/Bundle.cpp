// .hyb bundles: framing, FlatBuffers encoding and semantic validation.
#include "hybrid/Bundle.h"

#include "hybrid/FileIO.h"
#include "hybrid/SizeMath.h"
#include "bundle_generated.h"

#include <cstring>
#include <set>

namespace hybrid {

namespace {

constexpr uint64_t kMaxPayload = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

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

template <typename T> size_t len(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

bool validDType(DType t) { return static_cast<uint8_t>(t) <= 2; }

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

//===----------------------------------------------------------------------===//
// BundleDesc -> FlatBuffer
//===----------------------------------------------------------------------===//

class Encoder {
public:
  explicit Encoder(size_t sizeHint) : fbb_(sizeHint) {}

  std::vector<uint8_t> encode(const BundleDesc &b) {
    std::vector<flatbuffers::Offset<fb::Param>> params;
    for (const ParamDesc &p : b.params)
      params.push_back(fb::CreateParamDirect(fbb_, p.name.c_str(),
                                             static_cast<fb::DType>(p.dtype),
                                             &p.shape, p.layout.c_str()));
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
    std::vector<flatbuffers::Offset<flatbuffers::String>> tied;
    for (const std::string &t : b.tied)
      tied.push_back(fbb_.CreateString(t));
    auto root = fb::CreateBundleDirect(
        fbb_, b.producer.c_str(), b.model.c_str(), b.source.c_str(), &params,
        &constants, &executables, &tied);
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
  flatbuffers::Offset<fb::Expr> expr(const SymExpr &e) {
    std::vector<flatbuffers::Offset<fb::Term>> terms;
    for (const auto &[mono, coeff] : e.terms())
      terms.push_back(fb::CreateTermDirect(fbb_, coeff, &mono));
    return fb::CreateExprDirect(fbb_, &terms);
  }

  flatbuffers::Offset<fb::Executable> executable(const ExecutableDesc &e) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> symbols;
    for (const std::string &s : e.symbols)
      symbols.push_back(fbb_.CreateString(s));
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
      std::vector<flatbuffers::Offset<fb::Attr>> attrs;
      for (const AttrDesc &a : c.attrs)
        attrs.push_back(fb::CreateAttrDirect(fbb_, a.name.c_str(), a.i, a.f,
                                             a.s.c_str(), &a.ints, &a.floats));
      commands.push_back(fb::CreateCommandDirect(fbb_, c.kernel.c_str(),
                                                 &c.operands, &c.results,
                                                 &attrs, c.loc.c_str()));
    }
    auto ports = [&](const std::vector<PortDesc> &ps) {
      std::vector<flatbuffers::Offset<fb::Port>> out;
      for (const PortDesc &p : ps)
        out.push_back(fb::CreatePortDirect(fbb_, p.name.c_str(), p.buffer));
      return out;
    };
    auto inputs = ports(e.inputs);
    auto outputs = ports(e.outputs);
    auto workspace = expr(e.workspaceBytes);
    return fb::CreateExecutableDirect(fbb_, e.name.c_str(), &symbols, &buffers,
                                      &commands, &inputs, &outputs, workspace,
                                      e.workspaceAlignment);
  }

  flatbuffers::FlatBufferBuilder fbb_;
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
        d.shape = shape(p->shape());
        d.layout = str(p->layout());
        b.params.push_back(std::move(d));
      }
    if (auto *cs = root.constants())
      for (const fb::Constant *c : *cs) {
        ConstantDesc d;
        d.dtype = static_cast<DType>(c->dtype());
        d.shape = shape(c->shape());
        d.data = scalars(c->data());
        b.constants.push_back(std::move(d));
      }
    if (auto *es = root.executables())
      for (const fb::Executable *e : *es)
        b.executables.push_back(executable(*e));
    if (auto *ts = root.tied())
      for (const flatbuffers::String *t : *ts)
        b.tied.push_back(str(t));
    return b;
  }

private:
  static Shape shape(const flatbuffers::Vector<int64_t> *v) {
    return scalars(v);
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
        out.push_back(PortDesc{str(p->name()), p->buffer()});
    return out;
  }

  ExecutableDesc executable(const fb::Executable &e) {
    ExecutableDesc d;
    d.name = str(e.name());
    if (auto *syms = e.symbols())
      for (const flatbuffers::String *s : *syms)
        d.symbols.push_back(str(s));
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
        cd.kernel = str(c->kernel());
        cd.operands = scalars(c->operands());
        cd.results = scalars(c->results());
        if (auto *attrs = c->attrs())
          for (const fb::Attr *a : *attrs) {
            AttrDesc ad;
            ad.name = str(a->name());
            ad.i = a->i();
            ad.f = a->f();
            ad.s = str(a->s());
            ad.ints = scalars(a->ints());
            ad.floats = scalars(a->floats());
            cd.attrs.push_back(std::move(ad));
          }
        cd.loc = str(c->loc());
        d.commands.push_back(std::move(cd));
      }
    d.inputs = ports(e.inputs());
    d.outputs = ports(e.outputs());
    d.workspaceBytes = expr(e.workspace_bytes());
    d.workspaceAlignment = e.workspace_alignment();
    return d;
  }

  std::string what_;
};

//===----------------------------------------------------------------------===//
// Semantic validation
//===----------------------------------------------------------------------===//

class Validator {
public:
  Validator(const BundleDesc &b, const std::string &what)
      : b_(b), what_(what) {}

  void run() {
    std::set<std::string> names;
    for (size_t i = 0; i < b_.params.size(); ++i) {
      const ParamDesc &p = b_.params[i];
      std::string ctx = "param " + std::to_string(i) + " '" + p.name + "'";
      if (p.name.empty())
        fail("param " + std::to_string(i) + " has no name");
      if (!names.insert(p.name).second)
        fail("duplicate param '" + p.name + "'");
      checkDType(p.dtype, ctx);
      if (detail::checkedNumel(p.shape) < 0)
        fail(ctx + " has an invalid shape " + shapeToString(p.shape));
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
    if (!validDType(t))
      fail(ctx + " has invalid dtype value " +
           std::to_string(static_cast<unsigned>(t)));
  }

  void checkExpr(const SymExpr &e, size_t numSymbols, const std::string &ctx) {
    for (const auto &[mono, coeff] : e.terms())
      for (uint8_t s : mono)
        if (s >= numSymbols)
          fail(ctx + " uses symbol #" + std::to_string(s) + " but there are " +
               std::to_string(numSymbols) + " symbols");
  }

  // The buffer whose memory `i` uses, following alias chains (already known
  // to be acyclic).
  size_t root(const ExecutableDesc &e, size_t i) {
    while (e.buffers[i].kind == BufferKind::Alias)
      i = static_cast<size_t>(e.buffers[i].index);
    return i;
  }

  void executable(const ExecutableDesc &e) {
    std::string x = "executable '" + e.name + "'";
    if (e.symbols.size() > 256)
      fail(x + " has " + std::to_string(e.symbols.size()) +
           " symbols (at most 256)");
    std::set<std::string> syms;
    for (const std::string &s : e.symbols) {
      if (s.empty())
        fail(x + " has an unnamed symbol");
      if (!syms.insert(s).second)
        fail(x + " has symbol '" + s + "' twice");
    }
    size_t ns = e.symbols.size();
    size_t nb = e.buffers.size();
    for (size_t i = 0; i < nb; ++i) {
      const BufferDesc &b = e.buffers[i];
      std::string ctx =
          x + " buffer " + std::to_string(i) + " '" + b.name + "'";
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
      switch (b.kind) {
      case BufferKind::Workspace:
        break;
      case BufferKind::Param:
        inRange(b_.params.size(), "param");
        sameAs(b_.params[b.index].dtype, b_.params[b.index].shape,
               "param '" + b_.params[b.index].name + "'");
        break;
      case BufferKind::Constant:
        inRange(b_.constants.size(), "constant");
        sameAs(b_.constants[b.index].dtype, b_.constants[b.index].shape,
               "constant " + std::to_string(b.index));
        break;
      case BufferKind::Input:
        inRange(e.inputs.size(), "input");
        if (e.inputs[b.index].buffer != static_cast<int32_t>(i))
          fail(ctx + " is input " + std::to_string(b.index) +
               " but that port names buffer " +
               std::to_string(e.inputs[b.index].buffer));
        break;
      case BufferKind::Output:
        inRange(e.outputs.size(), "output");
        if (e.outputs[b.index].buffer != static_cast<int32_t>(i))
          fail(ctx + " is output " + std::to_string(b.index) +
               " but that port names buffer " +
               std::to_string(e.outputs[b.index].buffer));
        break;
      case BufferKind::Alias:
        inRange(nb, "buffer");
        if (static_cast<size_t>(b.index) == i)
          fail(ctx + " aliases itself");
        break;
      default:
        fail(ctx + " has invalid kind value " +
             std::to_string(static_cast<unsigned>(b.kind)));
      }
    }
    // Alias chains must end in a buffer with memory of its own.
    for (size_t i = 0; i < nb; ++i) {
      size_t j = i, steps = 0;
      while (e.buffers[j].kind == BufferKind::Alias) {
        j = static_cast<size_t>(e.buffers[j].index);
        if (++steps > nb)
          fail(x + " buffer " + std::to_string(i) + " '" + e.buffers[i].name +
               "' is part of an alias cycle");
      }
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
      }
    };
    checkPorts(e.inputs, BufferKind::Input, "input");
    checkPorts(e.outputs, BufferKind::Output, "output");
    for (size_t c = 0; c < e.commands.size(); ++c) {
      const CommandDesc &cmd = e.commands[c];
      std::string ctx = x + " command " + std::to_string(c) + " '" +
                        cmd.kernel + "'" +
                        (cmd.loc.empty() ? "" : " (" + cmd.loc + ")");
      if (cmd.kernel.empty())
        fail(x + " command " + std::to_string(c) + " names no kernel");
      for (int32_t op : cmd.operands)
        if (op != -1 && (op < 0 || static_cast<size_t>(op) >= nb))
          fail(ctx + " reads buffer " + std::to_string(op) + " of " +
               std::to_string(nb));
      for (int32_t r : cmd.results) {
        if (r < 0 || static_cast<size_t>(r) >= nb)
          fail(ctx + " writes buffer " + std::to_string(r) + " of " +
               std::to_string(nb));
        BufferKind k = e.buffers[root(e, static_cast<size_t>(r))].kind;
        if (k == BufferKind::Constant || k == BufferKind::Input)
          fail(ctx + " writes buffer " + std::to_string(r) + " '" +
               e.buffers[r].name + "', which is read-only (" +
               (k == BufferKind::Constant ? "a constant" : "an input") + ")");
      }
    }
    checkExpr(e.workspaceBytes, ns, x + " workspace size");
    int64_t a = e.workspaceAlignment;
    if (a <= 0 || (a & (a - 1)) || a > (int64_t(1) << 30))
      fail(x + " has workspace alignment " + std::to_string(a) +
           " (must be a power of two)");
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
                ", this runtime reads " + std::to_string(kBundleFormatVersion) +
                "; recompile with this hybridc");
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
