// Per-token cost of the GPT-2 124M kernels at batch 1 and batch 4 (T = 128),
// to catch kernels whose cost per token grows with the batch. Disabled by
// default (it takes seconds); run with
//   hybrid_kernels_tests --gtest_also_run_disabled_tests \
//     --gtest_filter='*BatchScaling*'
#include "KernelTestSupport.h"

#include <chrono>
#include <cstdio>
#include <functional>

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
          runKernel(plain, {&x, &wQkv, &bQkv}, out3);
        },
        [&] {
          runKernel(plain, {&x, &wProj, &bD}, outD);
        },
        [&] {
          runKernel(plain, {&x, &wFc, &bF}, outF);
        },
        [&] {
          runKernel(plain, {&h, &wFcProj, &bD}, outD);
        },
        [&] {
          runKernel(plain, {&x, &wHead, nullptr}, outV);
        },
        [&] {
          runKernel(ops::Linear{true}, {&x, &wte, nullptr}, outV);
        },
        [&] {
          runKernel(attn, {&q, &k, &v, nullptr, nullptr}, outA);
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

} // namespace
} // namespace hybrid::cpu::test
