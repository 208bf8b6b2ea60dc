// hg-kv-cache: the attention of a generation step reads and writes KV-cache
// state buffers (see Passes.td for the contract).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace hybridc::hg {

#define GEN_PASS_DEF_KVCACHE
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

constexpr int64_t kDyn = ShapedType::kDynamic;

class KvCachePass : public impl::KvCacheBase<KvCachePass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    auto kind = f->getAttrOfType<StringAttr>("hg.generation");
    if (!kind)
      return;
    bool decode = kind.getValue() == "decode";
    if (!decode && kind.getValue() != "prefill") {
      f.emitError() << "hg-kv-cache: unknown hg.generation '" << kind.getValue()
                    << "'";
      return signalPassFailure();
    }
    // Where this step's keys go: slot 0 for the prompt, else the slots
    // already filled (gen.past).
    Value past;
    OpBuilder b(f.getContext());
    if (decode) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (auto s = f.getArgAttrOfType<StringAttr>(i, "hg.state");
            s && s.getValue() == "gen.past")
          past = f.getArgument(i);
      if (!past) {
        f.emitError("hg-kv-cache: a decode step needs the gen.past state");
        return signalPassFailure();
      }
    } else {
      b.setInsertionPointToStart(&f.getBody().front());
      past = b.create<ConstantOp>(
          f.getLoc(),
          DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                 ArrayRef<int64_t>{0}));
    }

    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    SmallVector<Value> results(ret.getOperands());
    SmallVector<Attribute> resultAttrs;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      resultAttrs.push_back(f.getResultAttrDict(i));

    Value length; // past + 1: the keys a decode step attends to
    int layer = 0;
    for (AttentionOp attn : llvm::to_vector(f.getOps<AttentionOp>())) {
      if (attn.getKeyLength()) {
        attn.emitError("hg-kv-cache: attention already reads a cache");
        return signalPassFailure();
      }
      auto caches = {std::pair<Value, const char *>{attn.getKey(), "key"},
                     {attn.getValue(), "value"}};
      SmallVector<Value, 2> written;
      for (auto [fresh, which] : caches) {
        auto type = cast<RankedTensorType>(fresh.getType());
        if (type.getRank() != 4) {
          attn.emitError("hg-kv-cache: keys and values must be [B, H, S, D]");
          return signalPassFailure();
        }
        auto cacheType =
            type.clone({kDyn, type.getDimSize(1), kDyn, type.getDimSize(3)});
        std::string name =
            "kv." + std::to_string(layer) + "." + std::string(which);
        unsigned index = f.getNumArguments();
        b.setInsertionPoint(attn);
        DictionaryAttr attrs = b.getDictionaryAttr(
            {b.getNamedAttr("hg.state", b.getStringAttr(name)),
             b.getNamedAttr("hg.dims",
                            b.getStrArrayAttr({"batch", "", "cap", ""}))});
        f.insertArgument(index, cacheType, attrs, attn.getLoc());
        Value cache =
            b.create<CacheWriteOp>(attn.getLoc(), f.getArgument(index), fresh,
                                   past, b.getI64IntegerAttr(2));
        written.push_back(cache);
        results.push_back(cache);
        resultAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr("hg.state", b.getStringAttr(name))));
      }
      if (decode) {
        // The step's query attends to the cache's filled slots, its own
        // included; nothing past them costs anything.
        if (!length) {
          b.setInsertionPointToStart(&f.getBody().front());
          Value one = b.create<ConstantOp>(
              attn.getLoc(),
              DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                     ArrayRef<int64_t>{1}));
          length = b.create<AddOp>(attn.getLoc(), past, one);
        }
        attn.getKeyMutable().assign(written[0]);
        attn.getValueMutable().assign(written[1]);
        attn.getKeyLengthMutable().assign(length);
      }
      ++layer;
    }
    if (layer == 0)
      return;
    b.setInsertionPoint(ret);
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    f.setFunctionType(b.getFunctionType(f.getBody().front().getArgumentTypes(),
                                        TypeRange(results)));
    f.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
} // namespace hybridc::hg
