// hg-fuse-activations: decomposed GELU and SiLU -> hg.gelu / hg.silu.
// RUN: hybridc-opt --hg-fuse-activations --split-input-file --verify-diagnostics %s | FileCheck %s
// The same cases in bf16 (constants as bf16 rounds them) fuse alike:
// RUN: sed -e 's/f32/bf16/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-activations --split-input-file --verify-diagnostics %t.bf16.mlir | FileCheck %t.bf16.mlir

// GPT-2's gelu_new as exported: x * 0.5 * (tanh(0.79788 * (x + 0.044715 * x^3)) + 1).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:.+]]: tensor<?x256xf32>
// CHECK: %[[Y:.+]] = hg.gelu %[[X]] {approximate = "tanh"}
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh(%x: tensor<?x256xf32> {hg.dims = ["n", 256]}) -> tensor<?x256xf32> {
  %half = hg.constant dense<0.5> : tensor<f32>
  %three = hg.constant dense<3.0> : tensor<f32>
  %c = hg.constant dense<0.044715> : tensor<f32>
  %k = hg.constant dense<0.797884583> : tensor<f32>
  %one = hg.constant dense<1.0> : tensor<f32>
  %0 = hg.mul %x, %half : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %1 = hg.pow %x, %three : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %2 = hg.mul %1, %c : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %3 = hg.add %x, %2 : tensor<?x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
  %4 = hg.mul %3, %k : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %5 = hg.tanh %4 : tensor<?x256xf32> -> tensor<?x256xf32>
  %6 = hg.add %5, %one : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %7 = hg.mul %0, %6 : tensor<?x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
  return %7 : tensor<?x256xf32>
}

// -----

// The distributed form, x^3 as x * x * x and the 0.5 on the gate.
// CHECK-LABEL: func.func @gelu_tanh_distributed
// CHECK: %[[Y:.+]] = hg.gelu %{{.+}} {approximate = "tanh"}
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_distributed(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = hg.constant dense<0.5> : tensor<f32>
  %k = hg.constant dense<0.797884583> : tensor<f32>
  %k3 = hg.constant dense<0.0356774081> : tensor<f32>
  %one = hg.constant dense<1.0> : tensor<1xf32>
  %sq = hg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %cube = hg.mul %sq, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a = hg.mul %k, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %b = hg.mul %cube, %k3 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %u = hg.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = hg.tanh %u : tensor<4x8xf32> -> tensor<4x8xf32>
  %g = hg.add %one, %t : tensor<1xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %h = hg.mul %g, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = hg.mul %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// BLOOM's bloom_gelu_forward as torch.onnx exports it: x * 0.5 * (1 +
// tanh(0.79788456 * x * (1 + 0.044715 * x * x))), x read by every term.
// CHECK-LABEL: func.func @gelu_tanh_bloom
// CHECK: %[[Y:.+]] = hg.gelu %{{.+}} {approximate = "tanh"}
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_bloom(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = hg.constant dense<0.5> : tensor<f32>
  %k = hg.constant dense<0.797884583> : tensor<f32>
  %c = hg.constant dense<4.471500e-02> : tensor<f32>
  %one = hg.constant dense<1.0> : tensor<f32>
  %hx = hg.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %kx = hg.mul %x, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %cx = hg.mul %x, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %cxx = hg.mul %cx, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %p = hg.add %cxx, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %u = hg.mul %kx, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = hg.tanh %u : tensor<4x8xf32> -> tensor<4x8xf32>
  %g = hg.add %t, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = hg.mul %hx, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))).
// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[Y:.+]] = hg.gelu %{{[^ ]+}} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = hg.constant dense<0.5> : tensor<f32>
  %sqrt2 = hg.constant dense<1.41421354> : tensor<f32>
  %one = hg.constant dense<1.0> : tensor<f32>
  %0 = hg.div %x, %sqrt2 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = hg.erf %0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = hg.add %1, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = hg.mul %x, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = hg.mul %3, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// SiLU in both operand orders; the SwiGLU product around it stays.
// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[G:.+]]: tensor<4x8xf32>, %[[U:.+]]: tensor<4x8xf32>)
// CHECK: %[[S:.+]] = hg.silu %[[G]]
// CHECK: %[[T:.+]] = hg.silu %[[U]]
// CHECK: hg.mul %[[S]], %[[T]]
func.func @silu(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = hg.sigmoid %g : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = hg.mul %g, %0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = hg.sigmoid %u : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = hg.mul %2, %u : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = hg.mul %1, %3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// sigmoid of another value is not SiLU; a wrong GELU constant is not GELU
// (and the tanh gets a warning).
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: hg.silu
// CHECK-NOT: hg.gelu
func.func @not_fused(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = hg.sigmoid %y : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = hg.mul %x, %0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %half = hg.constant dense<0.5> : tensor<f32>
  %k = hg.constant dense<0.7> : tensor<f32>
  %one = hg.constant dense<1.0> : tensor<f32>
  %2 = hg.mul %x, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // expected-warning @+1 {{tanh 'hg.tanh' looks like part of a GELU but was not fused; it runs unfused}}
  %3 = hg.tanh %2 : tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = hg.add %3, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %5 = hg.mul %x, %4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = hg.mul %5, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %1, %6 : tensor<4x8xf32>, tensor<4x8xf32>
}
