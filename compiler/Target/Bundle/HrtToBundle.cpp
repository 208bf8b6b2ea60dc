// Serialisation of planned hrt executables into the bundle's in-memory form
// (hybrid::BundleDesc), which hybrid_bundle writes as a .hyb file.
#include "compiler/Target/Bundle/HrtToBundle.h"

#include "compiler/Version.h"
#include "dialects/hg/Transforms/Lora.h"

#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

namespace hybridc {

using namespace mlir;
using hybrid::SymExpr;

// hrt's access is the bundle's, value for value (the command kinds are
// generated for both from runtime/base/ops/ops.py).
static_assert(static_cast<int>(hrt::Access::Read) ==
                  static_cast<int>(hybrid::Access::Read) &&
              static_cast<int>(hrt::Access::ReadWrite) ==
                  static_cast<int>(hybrid::Access::ReadWrite));

namespace {

/// Constants larger than this are refused (a bundle addresses at most
/// 2 GiB, and a constant this large is a frontend bug or a hostile model).
constexpr int64_t kMaxConstantBytes = int64_t(256) << 20;

llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string locString(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  return "";
}

std::optional<hybrid::DType> dtypeOf(Type t) {
  if (t.isF32())
    return hybrid::DType::F32;
  if (t.isBF16())
    return hybrid::DType::BF16;
  if (t.isF16())
    return hybrid::DType::F16;
  if (t.isSignlessInteger(64))
    return hybrid::DType::I64;
  if (t.isSignlessInteger(32))
    return hybrid::DType::I32;
  if (t.isSignlessInteger(1))
    return hybrid::DType::Bool;
  return std::nullopt;
}

#include "compiler/Target/Bundle/HrtToOps.inc"

/// The constant's size in bytes, or an error when it exceeds the bound. A
/// splat (what ConstantOfShape and Expand of a scalar fold to) is small in
/// the IR but is written out element by element, so its size counts.
llvm::Error checkConstantSize(Location loc, DenseElementsAttr dense,
                              hybrid::DType dtype) {
  int64_t bytes = static_cast<int64_t>(hybrid::dtypeSize(dtype));
  bool overflow = false;
  for (int64_t d : dense.getType().getShape())
    overflow = overflow || llvm::MulOverflow(bytes, d, bytes);
  if (!overflow && bytes <= kMaxConstantBytes)
    return llvm::Error::success();
  std::string shape;
  for (int64_t d : dense.getType().getShape())
    shape += (shape.empty() ? "" : ",") + std::to_string(d);
  return error("the constant at " + locString(loc) + " (" +
               hybrid::dtypeName(dtype) + " [" + shape + "]" +
               (dense.isSplat() ? ", a splat" : "") + ") takes " +
               (overflow ? std::string("over 2^63") : std::to_string(bytes)) +
               " bytes, more than the " + std::to_string(kMaxConstantBytes) +
               " (256 MiB) a bundle constant may hold");
}

/// Little-endian bytes of a dense constant of `dtype` (checked by
/// checkConstantSize first).
std::vector<uint8_t> constantBytes(DenseElementsAttr dense,
                                   hybrid::DType dtype) {
  int64_t n = dense.getNumElements();
  int64_t size = static_cast<int64_t>(hybrid::dtypeSize(dtype));
  std::vector<uint8_t> bytes(static_cast<size_t>(n * size));
  uint8_t *p = bytes.data();
  switch (dtype) {
  case hybrid::DType::F32: {
    auto values = dense.getValues<float>();
    for (int64_t i = 0; i < n; ++i) {
      float v = values[i];
      std::memcpy(p + 4 * i, &v, 4);
    }
    break;
  }
  case hybrid::DType::BF16:
  case hybrid::DType::F16: {
    auto values = dense.getValues<APFloat>();
    for (int64_t i = 0; i < n; ++i) {
      auto bits =
          static_cast<uint16_t>(values[i].bitcastToAPInt().getZExtValue());
      std::memcpy(p + 2 * i, &bits, 2);
    }
    break;
  }
  case hybrid::DType::I64: {
    auto values = dense.getValues<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = values[i];
      std::memcpy(p + 8 * i, &v, 8);
    }
    break;
  }
  case hybrid::DType::I32: {
    auto values = dense.getValues<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = values[i];
      std::memcpy(p + 4 * i, &v, 4);
    }
    break;
  }
  case hybrid::DType::Bool: {
    auto values = dense.getValues<bool>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = values[i] ? 1 : 0;
    break;
  }
  }
  return bytes;
}

class BundleWriter {
public:
  /// `paramSources` is the importer's "hg.param_sources" (may be null).
  BundleWriter(hybrid::BundleDesc &bundle, DictionaryAttr paramSources)
      : bundle_(bundle), paramSources_(paramSources) {}

  llvm::Error addExecutable(hrt::ExecutableOp exe) {
    exe_ = hybrid::ExecutableDesc();
    buffers_.clear();
    communicators_.clear();
    exe_.name = exe.getSymName().str();
    symbols_ = exe.getSymbolNames();
    exe_.symbols = symbols_;
    exe_.symbolMax.assign(symbols_.size(), 0);
    if (std::optional<ArrayRef<int64_t>> max = exe.getSymbolMax())
      exe_.symbolMax.assign(max->begin(), max->end());
    exe_.paramAccess = static_cast<hybrid::Access>(exe.getParamAccess());
    if (!exe.getWorkspace() || !exe.getAlignment())
      return error("@" + exe_.name +
                   " has no memory plan (run hrt-plan-memory first)");
    exe_.workspaceBytes = *hrt::parseSizeAttr(*exe.getWorkspace(), symbols_);
    exe_.workspaceAlignment = static_cast<int64_t>(*exe.getAlignment());

    for (Operation &op : exe.getBlock())
      if (llvm::Error e = add(&op))
        return e;
    bundle_.executables.push_back(std::move(exe_));
    return llvm::Error::success();
  }

private:
  llvm::Error fail(Operation *op, const llvm::Twine &msg) {
    std::string loc = locString(op->getLoc());
    return error("@" + exe_.name + ": " + op->getName().getStringRef() +
                 (loc.empty() ? "" : " at " + loc) + ": " + msg);
  }

  llvm::Expected<int32_t> addBuffer(Value v, hybrid::BufferKind kind,
                                    int32_t index, std::string name,
                                    Attribute offset = {}) {
    auto type = cast<hrt::BufferType>(v.getType());
    std::optional<hybrid::DType> dtype = dtypeOf(type.getElementType());
    std::optional<hybrid::SymShape> shape = hrt::getSymShape(type, symbols_);
    if (!dtype || !shape)
      return fail(v.getDefiningOp(), "unsupported buffer type");
    hybrid::BufferDesc b;
    b.kind = kind;
    b.dtype = *dtype;
    b.shape = std::move(*shape);
    b.index = index;
    b.name = std::move(name);
    if (offset)
      b.offset = *hrt::parseSizeAttr(offset, symbols_);
    exe_.buffers.push_back(std::move(b));
    auto id = static_cast<int32_t>(exe_.buffers.size() - 1);
    buffers_[v] = id;
    return id;
  }

  /// The bundle buffer of `v`, which `user` reads or writes. Verified hrt
  /// defines every buffer before its use in the executable's one block;
  /// anything else is an error, never a silent buffer 0.
  llvm::Expected<int32_t> bufferOf(Value v, Operation *user) {
    auto it = buffers_.find(v);
    if (it == buffers_.end())
      return fail(user, "uses a buffer that no op before it in @" + exe_.name +
                            " defines");
    return it->second;
  }

  llvm::Expected<int32_t> paramIndex(hrt::ParamOp p) {
    auto type = p.getResult().getType();
    hybrid::ParamDesc desc;
    desc.name = p.getName().str();
    // "": no initializer holds it (a bias the exporter dropped for being
    // zero).
    if (paramSources_)
      if (auto source = paramSources_.getAs<StringAttr>(desc.name)) {
        desc.source = source.str();
        desc.onnxZeros = desc.source.empty();
      }
    desc.dtype = *dtypeOf(type.getElementType());
    desc.shard = shardOf(p.getShard());
    // The table has the checkpoint's shape; a shard's buffer is its piece.
    if (desc.shard)
      desc.shape = desc.shard->shape;
    else
      for (Attribute d : type.getShape())
        desc.shape.push_back(cast<IntegerAttr>(d).getInt());
    for (size_t i = 0; i < bundle_.params.size(); ++i)
      if (bundle_.params[i].name == desc.name) {
        if (bundle_.params[i].dtype != desc.dtype ||
            bundle_.params[i].shape != desc.shape ||
            !sameShard(bundle_.params[i].shard, desc.shard))
          return fail(p, "parameter '" + desc.name +
                             "' has another dtype, shape or shard in an "
                             "earlier executable");
        return static_cast<int32_t>(i);
      }
    bundle_.params.push_back(std::move(desc));
    return static_cast<int32_t>(bundle_.params.size() - 1);
  }

  llvm::Expected<int32_t> stateIndex(hrt::StateOp s) {
    hybrid::DType dtype = *dtypeOf(s.getResult().getType().getElementType());
    std::optional<hybrid::ShardDesc> shard = shardOf(s.getShard());
    int32_t index = -1;
    for (size_t i = 0; i < bundle_.states.size(); ++i)
      if (bundle_.states[i].name == s.getName()) {
        if (bundle_.states[i].dtype != dtype ||
            !sameShard(bundle_.states[i].shard, shard))
          return fail(s, "state '" + s.getName() +
                             "' has another dtype or shard in an earlier "
                             "executable");
        index = static_cast<int32_t>(i);
      }
    if (index < 0) {
      bundle_.states.push_back({s.getName().str(), dtype, shard});
      index = static_cast<int32_t>(bundle_.states.size() - 1);
    }
    exe_.states.push_back({index, static_cast<hybrid::Access>(s.getAccess())});
    return index;
  }

  static std::optional<hybrid::ShardDesc>
  shardOf(std::optional<hrt::ShardAttr> attr) {
    if (!attr)
      return std::nullopt;
    return hybrid::ShardDesc{
        static_cast<int32_t>(attr->getWorldSize()),
        hybrid::Shape(attr->getShape().begin(), attr->getShape().end())};
  }

  static bool sameShard(const std::optional<hybrid::ShardDesc> &a,
                        const std::optional<hybrid::ShardDesc> &b) {
    if (!a || !b)
      return !a && !b;
    return a->worldSize == b->worldSize && a->shape == b->shape;
  }

  llvm::Error add(Operation *op) {
    using hybrid::BufferKind;
    auto done = [](llvm::Expected<int32_t> id) -> llvm::Error {
      return id ? llvm::Error::success() : id.takeError();
    };
    if (auto p = dyn_cast<hrt::ParamOp>(op)) {
      llvm::Expected<int32_t> index = paramIndex(p);
      if (!index)
        return index.takeError();
      return done(addBuffer(p, BufferKind::Param, *index, p.getName().str()));
    }
    if (auto s = dyn_cast<hrt::StateOp>(op)) {
      llvm::Expected<int32_t> index = stateIndex(s);
      if (!index)
        return index.takeError();
      return done(addBuffer(s, BufferKind::State, *index, s.getName().str()));
    }
    if (auto c = dyn_cast<hrt::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return fail(op, "the value is not a dense elements attribute");
      hybrid::ConstantDesc desc;
      desc.dtype = *dtypeOf(dense.getElementType());
      desc.shape.assign(dense.getType().getShape().begin(),
                        dense.getType().getShape().end());
      if (llvm::Error e = checkConstantSize(op->getLoc(), dense, desc.dtype))
        return e;
      desc.data = constantBytes(dense, desc.dtype);
      bundle_.constants.push_back(std::move(desc));
      return done(addBuffer(c, BufferKind::Constant,
                            static_cast<int32_t>(bundle_.constants.size() - 1),
                            locString(op->getLoc())));
    }
    if (auto in = dyn_cast<hrt::InputOp>(op)) {
      auto port = static_cast<int32_t>(exe_.inputs.size());
      llvm::Expected<int32_t> id = addBuffer(
          in, BufferKind::Input, port, in.getName().str(), *in.getOffset());
      if (!id)
        return id.takeError();
      hybrid::PortDesc desc{in.getName().str(), *id, std::nullopt};
      if (std::optional<APFloat> fill = in.getDefaultValue())
        desc.defaultValue = fill->convertToDouble();
      exe_.inputs.push_back(std::move(desc));
      return llvm::Error::success();
    }
    if (auto out = dyn_cast<hrt::OutputOp>(op)) {
      auto port = static_cast<int32_t>(exe_.outputs.size());
      llvm::Expected<int32_t> id = addBuffer(
          out, BufferKind::Output, port, out.getName().str(), *out.getOffset());
      if (!id)
        return id.takeError();
      exe_.outputs.push_back({out.getName().str(), *id, std::nullopt});
      return llvm::Error::success();
    }
    if (auto a = dyn_cast<hrt::AllocOp>(op))
      return done(addBuffer(a, BufferKind::Workspace, -1,
                            locString(op->getLoc()), *a.getOffset()));
    if (auto v = dyn_cast<hrt::ViewOp>(op))
      return done(addBuffer(v, BufferKind::Alias,
                            buffers_.lookup(v.getSource()),
                            locString(op->getLoc())));
    if (auto c = dyn_cast<hrt::CommunicatorOp>(op)) {
      communicators_[c.getResult()] =
          static_cast<int32_t>(exe_.communicators.size());
      exe_.communicators.push_back(c.getName().str());
      return llvm::Error::success();
    }
    auto cmd = dyn_cast<hrt::CommandOp>(op);
    if (!cmd)
      return fail(op, "is not an hrt buffer source or command");
    hybrid::CommandDesc desc;
    std::optional<hybrid::Op> typed = toBundleOp(op);
    if (!typed)
      return fail(op, "has no encoding in the bundle");
    desc.op = std::move(*typed);
    if (auto collective = dyn_cast<hrt::CollectiveOp>(op)) {
      auto it = communicators_.find(collective.getCommunicator());
      if (it == communicators_.end())
        return fail(op, "its communicator is not an hrt.communicator of @" +
                            exe_.name);
      std::get<hybrid::ops::Collective>(desc.op).communicator = it->second;
    }
    for (Value in : cmd.getCommandInputs()) {
      if (!in) {
        desc.operands.push_back(-1);
        continue;
      }
      llvm::Expected<int32_t> b = bufferOf(in, op);
      if (!b)
        return b.takeError();
      desc.operands.push_back(*b);
    }
    for (Value out : cmd.getCommandResults()) {
      llvm::Expected<int32_t> b = bufferOf(out, op);
      if (!b)
        return b.takeError();
      desc.results.push_back(*b);
    }
    desc.stream = cmd.getStreamIndex();
    desc.loc = locString(op->getLoc());
    exe_.numStreams = std::max(exe_.numStreams, desc.stream + 1);
    if (auto *record = std::get_if<hybrid::ops::RecordEvent>(&desc.op))
      exe_.numEvents = std::max(exe_.numEvents, record->event + 1);
    if (auto *wait = std::get_if<hybrid::ops::WaitEvent>(&desc.op))
      exe_.numEvents = std::max(exe_.numEvents, wait->event + 1);
    exe_.commands.push_back(std::move(desc));
    return llvm::Error::success();
  }

  hybrid::BundleDesc &bundle_;
  hybrid::ExecutableDesc exe_;
  std::vector<std::string> symbols_;
  llvm::DenseMap<Value, int32_t> buffers_;
  llvm::DenseMap<Value, int32_t> communicators_;
  DictionaryAttr paramSources_;
};

} // namespace

llvm::Expected<hybrid::BundleDesc> translateHrtToBundle(ModuleOp module) {
  hybrid::BundleDesc bundle;
  bundle.producer = std::string("hybridc ") + kVersion;
  if (auto model = module->getAttrOfType<StringAttr>("hg.model"))
    bundle.model = model.str();
  if (auto source = module->getAttrOfType<StringAttr>("hg.source"))
    bundle.source = source.str();
  auto strings = [&](StringRef attr, std::vector<std::string> &out) {
    if (auto list = module->getAttrOfType<ArrayAttr>(attr))
      for (Attribute a : list)
        if (auto s = dyn_cast<StringAttr>(a))
          out.push_back(s.str());
  };
  strings("hg.tied", bundle.tied);
  strings("hg.checkpoint_prefixes", bundle.checkpointPrefixes);
  strings("hg.checkpoint_extras", bundle.checkpointExtras);
  // What hg-lora recorded: the adapters the runtime loads, saves, inits
  // and (with @lora_fuse) merges around generation.
  if (module->hasAttr(hg::kLoraAttr)) {
    std::string why;
    std::optional<hg::LoraConfig> lora = hg::readLoraConfig(module, &why);
    if (!lora)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
    bundle.lora.rank = static_cast<int32_t>(lora->rank);
    bundle.lora.alpha = lora->alpha;
    bundle.lora.targetModules = lora->targets;
    bundle.lora.onlyOptimize = lora->onlyOptimize;
    for (const hg::LoraAdapter &a : lora->adapters)
      bundle.lora.adapters.push_back(
          {a.module, a.weight, a.loraA, a.loraB, a.fanInFanOut});
    bundle.lora.fusedGeneration = llvm::any_of(
        module.getOps<hrt::ExecutableOp>(),
        [](hrt::ExecutableOp e) { return e.getSymName() == "lora_fuse"; });
  }
  // What hrt-zero-partition recorded: the group the collectives run over.
  if (auto ranks = module->getAttrOfType<IntegerAttr>("hrt.world_size"))
    bundle.worldSize = static_cast<int32_t>(ranks.getInt());
  if (auto stage = module->getAttrOfType<IntegerAttr>("hrt.zero_stage"))
    bundle.zeroStage = static_cast<int32_t>(stage.getInt());
  BundleWriter writer(
      bundle, module->getAttrOfType<DictionaryAttr>("hg.param_sources"));
  bool any = false;
  for (auto exe : module.getOps<hrt::ExecutableOp>()) {
    if (llvm::Error e = writer.addExecutable(exe))
      return std::move(e);
    any = true;
  }
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<hrt::ExecutableOp>(op))
      return error("the module still holds '" + op.getName().getStringRef() +
                   "' (only hrt.executable can be serialised)");
  if (!any)
    return error("the module has no hrt.executable to serialise");
  return bundle;
}

} // namespace hybridc
