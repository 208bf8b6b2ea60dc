// hg-fuse-norms: decomposed RMSNorm / LayerNorm -> hg.rms_norm / hg.layer_norm.
// RUN: hybridc-opt --hg-fuse-norms --split-input-file --verify-diagnostics %s | FileCheck %s
// The same cases in bf16 (constants as bf16 rounds them) fuse alike:
// RUN: sed -e 's/f32/bf16/g' -e 's/9.9999999747524271E-7/9.9837779998779296E-7/' -e 's/9.9999997473787516E-6/1.0013580322265625E-5/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-norms --split-input-file --verify-diagnostics %t.bf16.mlir | FileCheck %t.bf16.mlir

// Llama as exported: w * (x * reciprocal(sqrt(mean(x^2) + eps))).
// CHECK-LABEL: func.func @rms_norm_llama
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32> {{.*}}, %[[W:.+]]: tensor<64xf32>
// CHECK: %[[Y:.+]] = hg.rms_norm %[[X]] weight %[[W]] {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_llama(%x: tensor<?x?x64xf32> {hg.dims = ["b", "t", 64]},
                          %w: tensor<64xf32> {hg.param = "norm.weight"}) -> tensor<?x?x64xf32> {
  %two = hg.constant dense<2.0> : tensor<f32>
  %eps = hg.constant dense<1.0e-6> : tensor<f32>
  %0 = hg.pow %x, %two : tensor<?x?x64xf32>, tensor<f32> -> tensor<?x?x64xf32>
  %1 = hg.reduce_mean %0 [2] : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %2 = hg.add %1, %eps : tensor<?x?x1xf32>, tensor<f32> -> tensor<?x?x1xf32>
  %3 = hg.sqrt %2 : tensor<?x?x1xf32> -> tensor<?x?x1xf32>
  %4 = hg.reciprocal %3 : tensor<?x?x1xf32> -> tensor<?x?x1xf32>
  %5 = hg.mul %x, %4 : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %6 = hg.mul %w, %5 : tensor<64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %6 : tensor<?x?x64xf32>
}

// -----

// rsqrt of eps + mean(x * x), no weight; the norm's other user keeps it
// unweighted.
// CHECK-LABEL: func.func @rms_norm_rsqrt
// CHECK: %[[N:.+]] = hg.rms_norm %{{.+}} {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64}
// CHECK: hg.mul %[[N]], %{{.+}}
// CHECK: return
func.func @rms_norm_rsqrt(%x: tensor<8x32xf32>, %w: tensor<32xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %eps = hg.constant dense<1.0e-5> : tensor<f32>
  %0 = hg.mul %x, %x : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %1 = hg.reduce_mean %0 [-1] : tensor<8x32xf32> -> tensor<8x1xf32>
  %2 = hg.add %eps, %1 : tensor<f32>, tensor<8x1xf32> -> tensor<8x1xf32>
  %3 = hg.rsqrt %2 : tensor<8x1xf32> -> tensor<8x1xf32>
  %4 = hg.mul %3, %x : tensor<8x1xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %5 = hg.mul %4, %w : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  return %4, %5 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// LayerNorm spelled out: (x - mean) / sqrt(var + eps) * w + b.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x?x16xf32> {{.*}}, %[[W:.+]]: tensor<16xf32> {{.*}}, %[[B:.+]]: tensor<16xf32>
// CHECK: %[[Y:.+]] = hg.layer_norm %[[X]] weight %[[W]] bias %[[B]] {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x?x16xf32> {hg.dims = [2, "t", 16]},
                      %w: tensor<16xf32> {hg.param = "ln.weight"},
                      %b: tensor<16xf32> {hg.param = "ln.bias"}) -> tensor<2x?x16xf32> {
  %two = hg.constant dense<2.0> : tensor<f32>
  %eps = hg.constant dense<1.0e-5> : tensor<f32>
  %mean = hg.reduce_mean %x [2] : tensor<2x?x16xf32> -> tensor<2x?x1xf32>
  %d = hg.sub %x, %mean : tensor<2x?x16xf32>, tensor<2x?x1xf32> -> tensor<2x?x16xf32>
  %d2 = hg.sub %x, %mean : tensor<2x?x16xf32>, tensor<2x?x1xf32> -> tensor<2x?x16xf32>
  %sq = hg.pow %d2, %two : tensor<2x?x16xf32>, tensor<f32> -> tensor<2x?x16xf32>
  %var = hg.reduce_mean %sq [2] : tensor<2x?x16xf32> -> tensor<2x?x1xf32>
  %ve = hg.add %var, %eps : tensor<2x?x1xf32>, tensor<f32> -> tensor<2x?x1xf32>
  %s = hg.sqrt %ve : tensor<2x?x1xf32> -> tensor<2x?x1xf32>
  %n = hg.div %d, %s : tensor<2x?x16xf32>, tensor<2x?x1xf32> -> tensor<2x?x16xf32>
  %y = hg.mul %n, %w : tensor<2x?x16xf32>, tensor<16xf32> -> tensor<2x?x16xf32>
  %z = hg.add %y, %b : tensor<2x?x16xf32>, tensor<16xf32> -> tensor<2x?x16xf32>
  return %z : tensor<2x?x16xf32>
}

// -----

// The mean is over a leading axis, so this is not a norm over trailing
// dims; it stays decomposed and the reciprocal square root is reported.
// CHECK-LABEL: func.func @not_trailing
// CHECK-NOT: hg.rms_norm
// CHECK: hg.rsqrt
func.func @not_trailing(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %eps = hg.constant dense<1.0e-5> : tensor<f32>
  %0 = hg.mul %x, %x : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %1 = hg.reduce_mean %0 [0] : tensor<8x32xf32> -> tensor<1x32xf32>
  %2 = hg.add %1, %eps : tensor<1x32xf32>, tensor<f32> -> tensor<1x32xf32>
  // expected-warning @+1 {{reciprocal square root 'hg.rsqrt' not fused into a norm; it runs unfused}}
  %3 = hg.rsqrt %2 : tensor<1x32xf32> -> tensor<1x32xf32>
  %4 = hg.mul %x, %3 : tensor<8x32xf32>, tensor<1x32xf32> -> tensor<8x32xf32>
  return %4 : tensor<8x32xf32>
}
