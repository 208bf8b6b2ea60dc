// Per-token cost of the GPT-2 124M kernels at batch 1 and batch 4 (T = 128),
// to catch kernels whose cost per token grows with the batch: each kernel
// alone, and a whole forward composed from the kernels with per-layer
// weights (as the runtime runs it). Disabled by default (it takes seconds
// and half a gigabyte); run with
//   hybrid_kernels_tests --gtest_also_run_disabled_tests \
//     --gtest_filter='*BatchScaling*'
#include "KernelTestSupport.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>

namespace hybrid::cpu::test {
namespace {

/// Best wall time of `repeats` runs of fn, in milliseconds (the host is
/// shared and noisy: the minimum is the kernel's cost).
double bestMs(int repeats, const std::function<void()> &fn) {
  fn(); // warm caches, threads and scratch
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best,
                    std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

struct Timing {
  const char *name;
  double ms[2]; // B = 1, B = 4
  int perLayer; // calls per transformer layer (0: once per forward)
};

TEST(DISABLED_BatchScaling, Gpt2Kernels) {
  const int64_t T = 128, D = 768, F = 3072, V = 50257, H = 12;
  const int64_t batches[2] = {1, 4};
  const int repeats = 5;
  Random rng(7);
  std::vector<Timing> rows = {
      {"linear [BT,768]x[768,2304]", {}, 1},
      {"linear [BT,768]x[768,768]", {}, 1},
      {"linear [BT,768]x[768,3072]", {}, 1},
      {"linear [BT,3072]x[3072,768]", {}, 1},
      {"linear [BT,768]x[768,50257]", {}, 0},
      {"linear [BT,768]x[50257,768]^T", {}, 0},
      {"attention Bx12x128x64 causal", {}, 1},
      {"layer_norm [BT,768]", {}, 2},
      {"gelu_tanh [BT,3072]", {}, 1},
      {"add [BT,768]", {}, 2},
      {"slice [B,T,2304]->[B,T,768]", {}, 3},
      {"transpose [B,T,12,64]->[B,12,T,64]", {}, 3},
      {"transpose [B,12,T,64]->[B,T,12,64]", {}, 1},
      {"copy [B,T,768]", {}, 4},
  };
  HostTensor wQkv = rng.f32({D, 3 * D}, -0.05f, 0.05f),
             wProj = rng.f32({D, D}, -0.05f, 0.05f),
             wFc = rng.f32({D, F}, -0.05f, 0.05f),
             wFcProj = rng.f32({F, D}, -0.05f, 0.05f),
             wHead = rng.f32({D, V}, -0.05f, 0.05f),
             wte = rng.f32({V, D}, -0.05f, 0.05f);
  HostTensor bQkv = rng.f32({3 * D}), bD = rng.f32({D}), bF = rng.f32({F});
  HostTensor gamma = rng.f32({D}), beta = rng.f32({D});
  for (int bi = 0; bi < 2; ++bi) {
    const int64_t B = batches[bi], M = B * T;
    HostTensor x = rng.f32({M, D}), h = rng.f32({M, F});
    HostTensor q = rng.f32({B, H, T, D / H}), k = rng.f32({B, H, T, D / H}),
               v = rng.f32({B, H, T, D / H});
    HostTensor out3(DType::F32, {M, 3 * D}), outD(DType::F32, {M, D}),
        outF(DType::F32, {M, F}), outV(DType::F32, {M, V}),
        outA(DType::F32, {B, H, T, D / H}), outS(DType::F32, {B, T, D}),
        outT(DType::F32, {B, T, H, D / H});
    HostTensor qkv = rng.f32({B, T, 3 * D}), split = rng.f32({B, T, H, D / H});
    const Op plain = ops::Linear{false};
    const Op attn = ops::Attention{0.125, true};
    const Op ln = ops::LayerNorm{1e-5};
    const Op gelu = ops::Unary{UnaryKind::GeluTanh};
    const Op add = ops::Binary{BinaryKind::Add};
    std::function<void()> fns[] = {
        [&] {
          runKernel(plain, {&x, &wQkv, &bQkv, nullptr}, out3);
        },
        [&] {
          runKernel(plain, {&x, &wProj, &bD, nullptr}, outD);
        },
        [&] {
          runKernel(plain, {&x, &wFc, &bF, nullptr}, outF);
        },
        [&] {
          runKernel(plain, {&h, &wFcProj, &bD, nullptr}, outD);
        },
        [&] {
          runKernel(plain, {&x, &wHead, nullptr, nullptr}, outV);
        },
        [&] {
          runKernel(ops::Linear{true}, {&x, &wte, nullptr, nullptr}, outV);
        },
        [&] {
          runKernel(attn, {&q, &k, &v, nullptr, nullptr, nullptr, nullptr},
                    outA);
        },
        [&] {
          runKernel(ln, {&x, &gamma, &beta}, outD);
        },
        [&] { runKernel(gelu, {&h}, outF); },
        [&] {
          runKernel(add, {&x, &x}, outD);
        },
        [&] {
          runKernel(ops::Slice{{-1}, {D}, {2 * D}, {1}}, {&qkv}, outS);
        },
        [&] {
          runKernel(ops::Transpose{{0, 2, 1, 3}}, {&split}, outA);
        },
        [&] {
          runKernel(ops::Transpose{{0, 2, 1, 3}}, {&q}, outT);
        },
        [&] { runKernel(ops::Copy{}, {&x}, outS); },
    };
    for (size_t r = 0; r < rows.size(); ++r)
      rows[r].ms[bi] = bestMs(r == 4 || r == 5 ? 2 : repeats, fns[r]);
  }
  std::printf("%-32s %10s %10s %12s %12s %7s\n", "kernel", "B=1 ms", "B=4 ms",
              "B=1 us/tok", "B=4 us/tok", "ratio");
  double forward[2] = {0, 0};
  for (const Timing &t : rows) {
    const double perTok1 = t.ms[0] * 1e3 / T, perTok4 = t.ms[1] * 1e3 / (4 * T);
    std::printf("%-32s %10.3f %10.3f %12.2f %12.2f %7.2f\n", t.name, t.ms[0],
                t.ms[1], perTok1, perTok4, perTok4 / perTok1);
    for (int bi = 0; bi < 2; ++bi)
      if (t.name != rows[4].name) // the head is one of the two layouts
        forward[bi] += t.ms[bi] * (t.perLayer ? 12 * t.perLayer : 1);
  }
  std::printf("GPT-2 forward (these kernels, 12 layers): B=1 %.1f ms = %.0f "
              "tok/s, B=4 %.1f ms = %.0f tok/s (%d threads)\n",
              forward[0], T / forward[0] * 1e3, forward[1],
              4 * T / forward[1] * 1e3, numThreads());
}

/// GPT-2 124M with random weights, one layer's worth of buffers reused by
/// every layer (as a memory plan would), timing each kernel family.
class Gpt2Forward {
public:
  static constexpr int64_t kD = 768, kH = 12, kF = 3072, kV = 50257,
                           kLayers = 12, kPositions = 1024;

  Gpt2Forward() {
    Random rng(11);
    wte_ = rng.f32({kV, kD}, -0.05f, 0.05f);
    wpe_ = rng.f32({kPositions, kD}, -0.05f, 0.05f);
    for (int l = 0; l < kLayers; ++l) {
      Layer layer;
      layer.ln1w = rng.f32({kD}, 0.9f, 1.1f);
      layer.ln1b = rng.f32({kD}, -0.1f, 0.1f);
      layer.ln2w = rng.f32({kD}, 0.9f, 1.1f);
      layer.ln2b = rng.f32({kD}, -0.1f, 0.1f);
      layer.wQkv = rng.f32({kD, 3 * kD}, -0.05f, 0.05f);
      layer.bQkv = rng.f32({3 * kD}, -0.1f, 0.1f);
      layer.wProj = rng.f32({kD, kD}, -0.05f, 0.05f);
      layer.bProj = rng.f32({kD}, -0.1f, 0.1f);
      layer.wFc = rng.f32({kD, kF}, -0.05f, 0.05f);
      layer.bFc = rng.f32({kF}, -0.1f, 0.1f);
      layer.wFcProj = rng.f32({kF, kD}, -0.05f, 0.02f);
      layer.bFcProj = rng.f32({kD}, -0.1f, 0.1f);
      layers_.push_back(std::move(layer));
    }
    lnfw_ = rng.f32({kD}, 0.9f, 1.1f);
    lnfb_ = rng.f32({kD}, -0.1f, 0.1f);
  }

  /// Milliseconds per kernel family of one forward over B x T tokens.
  std::map<std::string, double> run(int64_t B, int64_t T) {
    const int64_t Dh = kD / kH;
    Random rng(12);
    HostTensor ids = rng.i64({B, T}, 0, kV - 1);
    HostTensor pos = run(ops::Iota{}, {}, DType::I64, {T});
    HostTensor x(DType::F32, {B, T, kD}), h(DType::F32, {B, T, kD}),
        tok(DType::F32, {B, T, kD}), pe(DType::F32, {T, kD}),
        qkv(DType::F32, {B, T, 3 * kD}), ff(DType::F32, {B, T, kF}),
        ff2(DType::F32, {B, T, kF}), attn(DType::F32, {B, kH, T, Dh}),
        merged(DType::F32, {B, T, kH, Dh}), logits(DType::F32, {B, T, kV});
    HostTensor part[3], heads[3];
    for (int i = 0; i < 3; ++i) {
      part[i] = HostTensor(DType::F32, {B, T, kH, Dh});
      heads[i] = HostTensor(DType::F32, {B, kH, T, Dh});
    }
    std::map<std::string, double> ms;
    auto timed = [&](const char *family, const Op &op,
                     std::initializer_list<const HostTensor *> in,
                     HostTensor &out) {
      auto t0 = std::chrono::steady_clock::now();
      runKernel(op, in, out);
      ms[family] += std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    };
    const Op linear = ops::Linear{false}, ln = ops::LayerNorm{1e-5},
             add = ops::Binary{BinaryKind::Add},
             gelu = ops::Unary{UnaryKind::GeluTanh},
             attention = ops::Attention{1 / 8.0, true},
             toHeads = ops::Transpose{{0, 2, 1, 3}};
    timed("embedding", ops::Embedding{}, {&wte_, &ids}, tok);
    timed("embedding", ops::Embedding{}, {&wpe_, &pos}, pe);
    timed("add", add, {&tok, &pe}, x);
    for (const Layer &l : layers_) {
      timed("layer_norm", ln, {&x, &l.ln1w, &l.ln1b}, h);
      timed("linear qkv", linear, {&h, &l.wQkv, &l.bQkv, nullptr}, qkv);
      for (int i = 0; i < 3; ++i) {
        part[i].shape = {B, T, kD};
        timed("slice", ops::Slice{{-1}, {i * kD}, {(i + 1) * kD}, {1}}, {&qkv},
              part[i]);
        part[i].shape = {B, T, kH, Dh}; // reshape: the same bytes
        timed("transpose", toHeads, {&part[i]}, heads[i]);
      }
      timed(
          "attention", attention,
          {&heads[0], &heads[1], &heads[2], nullptr, nullptr, nullptr, nullptr},
          attn);
      timed("transpose", toHeads, {&attn}, merged);
      merged.shape = {B, T, kD};
      timed("linear proj", linear, {&merged, &l.wProj, &l.bProj, nullptr}, h);
      merged.shape = {B, T, kH, Dh};
      timed("add", add, {&x, &h}, x);
      timed("layer_norm", ln, {&x, &l.ln2w, &l.ln2b}, h);
      timed("linear fc", linear, {&h, &l.wFc, &l.bFc, nullptr}, ff);
      timed("gelu", gelu, {&ff}, ff2);
      timed("linear fc_proj", linear, {&ff2, &l.wFcProj, &l.bFcProj, nullptr},
            h);
      timed("add", add, {&x, &h}, x);
    }
    timed("layer_norm", ln, {&x, &lnfw_, &lnfb_}, h);
    timed("linear lm_head", ops::Linear{true}, {&h, &wte_, nullptr, nullptr},
          logits);
    return ms;
  }

private:
  struct Layer {
    HostTensor ln1w, ln1b, ln2w, ln2b, wQkv, bQkv, wProj, bProj, wFc, bFc,
        wFcProj, bFcProj;
  };
  HostTensor run(const Op &op, std::initializer_list<const HostTensor *> in,
                 DType dt, Shape shape) {
    return test::run(op, in, dt, std::move(shape));
  }
  HostTensor wte_, wpe_, lnfw_, lnfb_;
  std::vector<Layer> layers_;
};

TEST(DISABLED_BatchScaling, Gpt2Forward) {
  const int64_t T = 128;
  Gpt2Forward model;
  const int64_t batches[2] = {1, 4};
  std::map<std::string, double> best[2];
  double bestTotal[2] = {1e30, 1e30};
  for (int repeat = 0; repeat < 4; ++repeat)
    for (int bi = 0; bi < 2; ++bi) {
      std::map<std::string, double> ms = model.run(batches[bi], T);
      double total = 0;
      for (auto &[family, t] : ms) {
        total += t;
        double &b = best[bi][family];
        b = repeat == 0 ? t : std::min(b, t);
      }
      bestTotal[bi] = std::min(bestTotal[bi], total);
    }
  std::printf("%-16s %10s %10s %12s %12s %7s\n", "family (best of 4)", "B=1 ms",
              "B=4 ms", "B=1 us/tok", "B=4 us/tok", "ratio");
  for (auto &[family, t1] : best[0]) {
    const double t4 = best[1][family];
    std::printf("%-16s %10.2f %10.2f %12.2f %12.2f %7.2f\n", family.c_str(), t1,
                t4, t1 * 1e3 / T, t4 * 1e3 / (4 * T),
                (t4 / 4) / std::max(t1, 1e-9));
  }
  std::printf("forward: B=1 %.1f ms = %.0f tok/s, B=4 %.1f ms = %.0f tok/s "
              "(%d threads)\n",
              bestTotal[0], T / bestTotal[0] * 1e3, bestTotal[1],
              4 * T / bestTotal[1] * 1e3, numThreads());
}

} // namespace
} // namespace hybrid::cpu::test
