// hg -> runtime command list with a symbolic memory plan (see HgToCommands.h).
#include "compiler/Conversion/HgToCommands/HgToCommands.h"

#include "compiler/Analysis/SymbolicShapes.h"
#include "compiler/Codegen/MemoryPlan.h"
#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>
#include <limits>

using namespace mlir;
using hybrid::BufferDesc;
using hybrid::BufferKind;
using hybrid::SymExpr;

namespace hybridc {
namespace {

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
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return os.str();
}

llvm::Expected<hybrid::DType> dtypeOf(Type type) {
  Type elt = cast<ShapedType>(type).getElementType();
  if (elt.isF32())
    return hybrid::DType::F32;
  if (elt.isInteger(64))
    return hybrid::DType::I64;
  if (elt.isInteger(1))
    return hybrid::DType::Bool;
  std::string s;
  llvm::raw_string_ostream os(s);
  elt.print(os);
  return error("element type " + os.str() + " has no runtime dtype");
}

/// Attributes whose absence means a non-zero default (ODS DefaultValuedAttr);
/// written out so kernels never depend on their own copy of the default.
const llvm::StringMap<std::vector<std::pair<const char *, int64_t>>> &
intDefaults() {
  static const llvm::StringMap<std::vector<std::pair<const char *, int64_t>>>
      table = {
          {"layer_norm", {{"axis", -1}}},
          {"rms_norm", {{"axis", -1}}},
          {"linear", {{"transpose_weight", 1}}},
          {"reduce_sum", {{"keepdims", 1}}},
          {"reduce_mean", {{"keepdims", 1}}},
          {"reduce_max", {{"keepdims", 1}}},
          {"reduce_min", {{"keepdims", 1}}},
          {"reduce_prod", {{"keepdims", 1}}},
      };
  return table;
}

/// Converts an op's attributes into the bundle's attribute records.
std::vector<hybrid::AttrDesc> convertAttrs(Operation *op, StringRef kernel) {
  std::vector<hybrid::AttrDesc> out;
  for (NamedAttribute na : op->getAttrs()) {
    StringRef name = na.getName().getValue();
    if (name == "operandSegmentSizes" || name == "value")
      continue;
    hybrid::AttrDesc a;
    a.name = name.str();
    Attribute attr = na.getValue();
    if (auto b = dyn_cast<BoolAttr>(attr))
      a.i = b.getValue();
    else if (auto i = dyn_cast<IntegerAttr>(attr))
      a.i = i.getInt();
    else if (auto f = dyn_cast<FloatAttr>(attr))
      a.f = f.getValueAsDouble();
    else if (auto s = dyn_cast<StringAttr>(attr))
      a.s = s.str();
    else if (auto arr = dyn_cast<DenseI64ArrayAttr>(attr))
      a.ints.assign(arr.asArrayRef().begin(), arr.asArrayRef().end());
    else if (auto arr = dyn_cast<ArrayAttr>(attr)) {
      // Integer lists travel; symbolic shapes live in the result buffers.
      if (!llvm::all_of(arr, [](Attribute e) { return isa<IntegerAttr>(e); }))
        continue;
      for (Attribute e : arr)
        a.ints.push_back(cast<IntegerAttr>(e).getInt());
    } else
      continue;
    out.push_back(std::move(a));
  }
  auto present = [&](const char *n) {
    return llvm::any_of(out, [&](auto &a) { return a.name == n; });
  };
  auto it = intDefaults().find(kernel);
  if (it != intDefaults().end())
    for (auto &[n, v] : it->second)
      if (!present(n)) {
        hybrid::AttrDesc a;
        a.name = n;
        a.i = v;
        out.push_back(a);
      }
  if (kernel == "gelu" && !present("approximate")) {
    hybrid::AttrDesc a;
    a.name = "approximate";
    a.s = "none";
    out.push_back(a);
  }
  // Optional operands are announced so kernels need not count operands.
  auto flag = [&](const char *n, bool v) {
    hybrid::AttrDesc a;
    a.name = n;
    a.i = v;
    out.push_back(a);
  };
  if (auto ln = dyn_cast<hg::LayerNormOp>(op)) {
    flag("has_weight", static_cast<bool>(ln.getWeight()));
    flag("has_bias", static_cast<bool>(ln.getBias()));
  } else if (auto rn = dyn_cast<hg::RmsNormOp>(op)) {
    flag("has_weight", static_cast<bool>(rn.getWeight()));
  } else if (auto lin = dyn_cast<hg::LinearOp>(op)) {
    flag("has_bias", static_cast<bool>(lin.getBias()));
  } else if (auto at = dyn_cast<hg::AttentionOp>(op)) {
    flag("has_mask", static_cast<bool>(at.getMask()));
    flag("has_alibi", static_cast<bool>(at.getAlibiSlopes()));
  }
  return out;
}

/// The most bytes one constant may take in the bundle. A splat (what
/// ConstantOfShape and Expand of a scalar fold to) is small in hg but is
/// written out element by element, so its size counts.
constexpr int64_t kMaxConstantBytes = int64_t(256) << 20;

llvm::Error checkConstantSize(hg::ConstantOp op, DenseElementsAttr dense,
                              hybrid::DType dtype) {
  int64_t bytes = static_cast<int64_t>(hybrid::dtypeSize(dtype));
  for (int64_t d : dense.getType().getShape())
    if (llvm::MulOverflow(bytes, d, bytes))
      bytes = std::numeric_limits<int64_t>::max();
  if (bytes <= kMaxConstantBytes)
    return llvm::Error::success();
  std::string shape;
  for (int64_t d : dense.getType().getShape())
    shape += (shape.empty() ? "" : ",") + std::to_string(d);
  return error("the constant at " + locString(op.getLoc()) + " (" +
               hybrid::dtypeName(dtype) + " [" + shape + "]" +
               (dense.isSplat() ? ", a splat" : "") + ") takes " +
               (bytes == std::numeric_limits<int64_t>::max()
                    ? std::string("over 2^63")
                    : std::to_string(bytes)) +
               " bytes, more than the " + std::to_string(kMaxConstantBytes) +
               " (256 MiB) a bundle constant may hold");
}

llvm::Expected<hybrid::ConstantDesc> convertConstant(hg::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return error("constant at " + locString(op.getLoc()) +
                 " is not a dense elements attribute");
  auto dt = dtypeOf(dense.getType());
  if (!dt)
    return dt.takeError();
  if (llvm::Error e = checkConstantSize(op, dense, *dt))
    return std::move(e);
  hybrid::ConstantDesc c;
  c.dtype = *dt;
  c.shape.assign(dense.getType().getShape().begin(),
                 dense.getType().getShape().end());
  int64_t n = dense.getNumElements();
  c.data.resize(n * hybrid::dtypeSize(*dt));
  uint8_t *p = c.data.data();
  switch (*dt) {
  case hybrid::DType::F32: {
    auto vals = dense.getValues<float>();
    for (int64_t i = 0; i < n; ++i) {
      float v = vals[i];
      std::memcpy(p + 4 * i, &v, 4);
    }
    break;
  }
  case hybrid::DType::I64: {
    auto vals = dense.getValues<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = vals[i];
      std::memcpy(p + 8 * i, &v, 8);
    }
    break;
  }
  case hybrid::DType::Bool: {
    auto vals = dense.getValues<bool>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = vals[i] ? 1 : 0;
    break;
  }
  }
  return c;
}

class CommandListBuilder {
public:
  CommandListBuilder(func::FuncOp func, const SymbolicShapes &shapes,
                     hybrid::BundleDesc &bundle)
      : func_(func), shapes_(shapes), bundle_(bundle) {}

  llvm::Error build() {
    exe_.name = func_.getSymName().str();
    exe_.symbols = shapes_.symbols();
    if (llvm::Error e = bindArguments())
      return e;
    for (Operation &op : func_.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (llvm::Error e = bindResults(ret))
          return e;
        continue;
      }
      if (llvm::Error e = lowerOp(&op))
        return e;
    }
    planWorkspace();
    bundle_.executables.push_back(std::move(exe_));
    return llvm::Error::success();
  }

private:
  llvm::Expected<int32_t> addBuffer(Value v, BufferKind kind, int32_t index,
                                    StringRef name) {
    auto dt = dtypeOf(v.getType());
    if (!dt)
      return dt.takeError();
    BufferDesc b;
    b.kind = kind;
    b.dtype = *dt;
    b.shape = shapes_.shapeOf(v);
    b.index = index;
    b.name = name.str();
    exe_.buffers.push_back(std::move(b));
    firstUse_.push_back(static_cast<int>(exe_.commands.size()));
    lastUse_.push_back(static_cast<int>(exe_.commands.size()));
    return static_cast<int32_t>(exe_.buffers.size() - 1);
  }

  /// The buffer that owns the bytes of `b` (follows aliases).
  int32_t root(int32_t b) const {
    while (exe_.buffers[b].kind == BufferKind::Alias)
      b = exe_.buffers[b].index;
    return b;
  }

  llvm::Error bindArguments() {
    for (BlockArgument arg : func_.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto param = func_.getArgAttrOfType<StringAttr>(i, "hg.param")) {
        auto dt = dtypeOf(arg.getType());
        if (!dt)
          return dt.takeError();
        auto type = cast<RankedTensorType>(arg.getType());
        if (!type.hasStaticShape())
          return error("parameter '" + param.str() + "' has a dynamic shape");
        int32_t index = -1;
        for (size_t p = 0; p < bundle_.params.size(); ++p)
          if (bundle_.params[p].name == param.getValue())
            index = static_cast<int32_t>(p);
        hybrid::Shape shape(type.getShape().begin(), type.getShape().end());
        if (index < 0) {
          bundle_.params.push_back({param.str(), *dt, shape, ""});
          index = static_cast<int32_t>(bundle_.params.size() - 1);
        } else if (bundle_.params[index].shape != shape) {
          return error("parameter '" + param.str() +
                       "' is used with two shapes");
        }
        auto b = addBuffer(arg, BufferKind::Param, index, param.getValue());
        if (!b)
          return b.takeError();
        values_[arg] = *b;
        continue;
      }
      auto nameAttr = func_.getArgAttrOfType<StringAttr>(i, "hg.name");
      std::string name = nameAttr ? nameAttr.str() : "arg" + std::to_string(i);
      int32_t port = static_cast<int32_t>(exe_.inputs.size());
      auto b = addBuffer(arg, BufferKind::Input, port, name);
      if (!b)
        return b.takeError();
      exe_.inputs.push_back({name, *b});
      values_[arg] = *b;
    }
    return llvm::Error::success();
  }

  llvm::Error lowerOp(Operation *op) {
    if (op->getNumResults() != 1)
      return error(op->getName().getStringRef() + " at " +
                   locString(op->getLoc()) + ": expected one result");
    Value result = op->getResult(0);
    std::string loc = locString(op->getLoc());
    if (auto c = dyn_cast<hg::ConstantOp>(op)) {
      auto desc = convertConstant(c);
      if (!desc)
        return desc.takeError();
      bundle_.constants.push_back(std::move(*desc));
      auto b =
          addBuffer(result, BufferKind::Constant,
                    static_cast<int32_t>(bundle_.constants.size() - 1), loc);
      if (!b)
        return b.takeError();
      values_[result] = *b;
      return llvm::Error::success();
    }
    if (isa<hg::ReshapeOp>(op)) {
      int32_t src = root(values_.lookup(op->getOperand(0)));
      auto b = addBuffer(result, BufferKind::Alias, src, loc);
      if (!b)
        return b.takeError();
      values_[result] = *b;
      return llvm::Error::success();
    }
    StringRef kernel = op->getName().stripDialect();
    if (op->getDialect()->getNamespace() != "hg")
      return error("cannot lower op " + op->getName().getStringRef() + " at " +
                   loc + " to a kernel call");
    hybrid::CommandDesc cmd;
    cmd.kernel = kernel.str();
    cmd.loc = loc;
    cmd.attrs = convertAttrs(op, kernel);
    int cmdIndex = static_cast<int>(exe_.commands.size());
    for (Value operand : op->getOperands()) {
      int32_t b = values_.lookup(operand);
      cmd.operands.push_back(b);
      int32_t r = root(b);
      lastUse_[r] = std::max(lastUse_[r], cmdIndex);
    }
    auto b = addBuffer(result, BufferKind::Workspace, -1, loc);
    if (!b)
      return b.takeError();
    values_[result] = *b;
    cmd.results.push_back(*b);
    exe_.commands.push_back(std::move(cmd));
    return llvm::Error::success();
  }

  llvm::Error bindResults(func::ReturnOp ret) {
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto nameAttr = func_.getResultAttrOfType<StringAttr>(i, "hg.name");
      std::string name =
          nameAttr ? nameAttr.str() : "result" + std::to_string(i);
      int32_t port = static_cast<int32_t>(exe_.outputs.size());
      int32_t b = values_.lookup(v);
      BufferDesc &buf = exe_.buffers[b];
      if (buf.kind == BufferKind::Workspace) {
        // Written straight into the caller's output.
        buf.kind = BufferKind::Output;
        buf.index = port;
        exe_.outputs.push_back({name, b});
        continue;
      }
      // Inputs, parameters, constants, views and repeated results are copied.
      auto out = addBuffer(v, BufferKind::Output, port, name);
      if (!out)
        return out.takeError();
      hybrid::CommandDesc copy;
      copy.kernel = "copy";
      copy.operands = {b};
      copy.results = {*out};
      copy.loc = "result " + name;
      lastUse_[root(b)] = static_cast<int>(exe_.commands.size());
      exe_.commands.push_back(std::move(copy));
      exe_.outputs.push_back({name, *out});
    }
    return llvm::Error::success();
  }

  void planWorkspace() {
    std::vector<PlannedValue> planned;
    std::vector<size_t> owner;
    for (size_t b = 0; b < exe_.buffers.size(); ++b) {
      const BufferDesc &buf = exe_.buffers[b];
      if (buf.kind != BufferKind::Workspace)
        continue;
      SymExpr bytes(static_cast<int64_t>(hybrid::dtypeSize(buf.dtype)));
      for (const SymExpr &d : buf.shape)
        bytes = bytes * d;
      planned.push_back({bytes,
                         static_cast<unsigned>(hybrid::dtypeSize(buf.dtype)),
                         firstUse_[b], lastUse_[b]});
      owner.push_back(b);
    }
    MemoryPlan plan = planMemory(planned);
    for (size_t i = 0; i < owner.size(); ++i)
      exe_.buffers[owner[i]].offset = plan.offsets[i];
    exe_.workspaceBytes = plan.totalBytes;
  }

  func::FuncOp func_;
  const SymbolicShapes &shapes_;
  hybrid::BundleDesc &bundle_;
  hybrid::ExecutableDesc exe_;
  llvm::DenseMap<Value, int32_t> values_;
  std::vector<int> firstUse_, lastUse_;
};

} // namespace

llvm::Error lowerToExecutable(func::FuncOp func, hybrid::BundleDesc &bundle) {
  if (!func.getBody().hasOneBlock())
    return error("function @" + func.getSymName() + " must have one block");
  auto shapes = SymbolicShapes::compute(func);
  if (!shapes)
    return shapes.takeError();
  CommandListBuilder builder(func, *shapes, bundle);
  return builder.build();
}

} // namespace hybridc
