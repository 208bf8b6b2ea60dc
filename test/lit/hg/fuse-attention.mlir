// hg-fuse-attention: softmax(q k^T * scale + mask) v -> hg.attention.
// RUN: hybridc-opt --hg-fuse-attention --split-input-file --verify-diagnostics %s | FileCheck %s
// The same cases in bf16 (constants as bf16 rounds them) fuse alike:
// RUN: sed -e 's/f32/bf16/g' -e 's/0xFF800000/0xFF80/g' -e 's/0x7F800000/0x7F80/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-attention --split-input-file --verify-diagnostics %t.bf16.mlir | FileCheck %t.bf16.mlir

// The plain form: scale on both operands, k^T as an hg.transpose, no mask.
// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[K:.+]]: tensor<2x4x8x16xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>)
// CHECK: %[[A:.+]] = hg.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[A]]
func.func @plain(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = hg.constant dense<0.5> : tensor<f32>
  %kt = hg.transpose %k [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %qs = hg.mul %q, %s : tensor<2x4x8x16xf32>, tensor<f32> -> tensor<2x4x8x16xf32>
  %ks = hg.mul %kt, %s : tensor<2x4x16x8xf32>, tensor<f32> -> tensor<2x4x16x8xf32>
  %0 = hg.matmul %qs, %ks : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  %1 = hg.softmax %0 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = hg.matmul %1, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %2 : tensor<2x4x8x16xf32>
}

// -----

// As torch.onnx exports SDPA: k^T by reshape / transpose / reshape, the
// NaN cleanup after softmax, and the causal mask built from iota. The mask
// is proven causal and dropped.
// CHECK-LABEL: func.func @exported_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32> {{.*}}, %[[K:.+]]: tensor<?x4x?x16xf32> {{.*}}, %[[V:.+]]: tensor<?x4x?x16xf32>
// CHECK: %[[A:.+]] = hg.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[A]]
func.func @exported_causal(%q: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]},
                           %k: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]},
                           %v: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]}) -> tensor<?x4x?x16xf32> {
  %k3 = hg.reshape %k ["4*batch", "seq", 16] : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %k3t = hg.transpose %k3 [0, 2, 1] : tensor<?x?x16xf32> -> tensor<?x16x?xf32>
  %kt = hg.reshape %k3t ["batch", 4, 16, "seq"] : tensor<?x16x?xf32> -> tensor<?x4x16x?xf32>
  %s = hg.constant dense<0.5> : tensor<f32>
  %qs = hg.mul %q, %s : tensor<?x4x?x16xf32>, tensor<f32> -> tensor<?x4x?x16xf32>
  %ks = hg.mul %kt, %s : tensor<?x4x16x?xf32>, tensor<f32> -> tensor<?x4x16x?xf32>
  %pos = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  %rows = hg.reshape %pos [1, 1, "seq", 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %cols = hg.reshape %pos [1, 1, 1, "seq"] : tensor<?xi64> -> tensor<1x1x1x?xi64>
  %visible = hg.less_equal %cols, %rows : tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64> -> tensor<1x1x?x?xi1>
  %zero = hg.constant dense<0.0> : tensor<f32>
  %min = hg.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = hg.select %visible, %zero, %min : tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32> -> tensor<1x1x?x?xf32>
  %0 = hg.matmul %qs, %ks : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32> -> tensor<?x4x?x?xf32>
  %1 = hg.add %0, %mask : tensor<?x4x?x?xf32>, tensor<1x1x?x?xf32> -> tensor<?x4x?x?xf32>
  %2 = hg.softmax %1 {axis = 3 : i64} : tensor<?x4x?x?xf32> -> tensor<?x4x?x?xf32>
  %3 = hg.is_nan %2 : tensor<?x4x?x?xf32> -> tensor<?x4x?x?xi1>
  %4 = hg.select %3, %zero, %2 : tensor<?x4x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32> -> tensor<?x4x?x?xf32>
  %5 = hg.matmul %4, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %5 : tensor<?x4x?x16xf32>
}

// -----

// Causal with a sliding window of 4 keys (Mistral): j <= i and j > i - 4.
// CHECK-LABEL: func.func @sliding_window
// CHECK: hg.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.000000e+00 : f64, sliding_window = 4 : i64}
// CHECK-NOT: hg.select
func.func @sliding_window(%q: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]},
                          %k: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]},
                          %v: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]}) -> tensor<1x2x?x8xf32> {
  %kt = hg.transpose %k [0, 1, 3, 2] : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %pos = hg.iota ["t"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  %rows = hg.reshape %pos ["t", 1] : tensor<?xi64> -> tensor<?x1xi64>
  %four = hg.constant dense<4> : tensor<i64>
  %lo = hg.sub %rows, %four : tensor<?x1xi64>, tensor<i64> -> tensor<?x1xi64>
  %causal = hg.less_equal %pos, %rows : tensor<?xi64>, tensor<?x1xi64> -> tensor<?x?xi1>
  %recent = hg.greater %pos, %lo : tensor<?xi64>, tensor<?x1xi64> -> tensor<?x?xi1>
  %visible = hg.and %causal, %recent : tensor<?x?xi1>, tensor<?x?xi1> -> tensor<?x?xi1>
  %zero = hg.constant dense<0.0> : tensor<f32>
  %inf = hg.constant dense<0xFF800000> : tensor<f32>
  %mask = hg.select %visible, %zero, %inf : tensor<?x?xi1>, tensor<f32>, tensor<f32> -> tensor<?x?xf32>
  %0 = hg.matmul %q, %kt : tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32> -> tensor<1x2x?x?xf32>
  %1 = hg.add %0, %mask : tensor<1x2x?x?xf32>, tensor<?x?xf32> -> tensor<1x2x?x?xf32>
  %2 = hg.softmax %1 {axis = 3 : i64} : tensor<1x2x?x?xf32> -> tensor<1x2x?x?xf32>
  %3 = hg.matmul %2, %v : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>
  return %3 : tensor<1x2x?x8xf32>
}

// -----

// j < i is not the causal mask (the diagonal is hidden): the mask stays.
// CHECK-LABEL: func.func @strict_mask_kept
// CHECK: %[[M:.+]] = hg.select
// CHECK: hg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[M]] {scale = 1.000000e+00 : f64}
// CHECK-NOT: causal
func.func @strict_mask_kept(%q: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]},
                            %k: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]},
                            %v: tensor<1x2x?x8xf32> {hg.dims = [1, 2, "t", 8]}) -> tensor<1x2x?x8xf32> {
  %kt = hg.transpose %k [0, 1, 3, 2] : tensor<1x2x?x8xf32> -> tensor<1x2x8x?xf32>
  %pos = hg.iota ["t"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  %rows = hg.reshape %pos ["t", 1] : tensor<?xi64> -> tensor<?x1xi64>
  %visible = hg.less %pos, %rows : tensor<?xi64>, tensor<?x1xi64> -> tensor<?x?xi1>
  %zero = hg.constant dense<0.0> : tensor<f32>
  %inf = hg.constant dense<0xFF800000> : tensor<f32>
  %mask = hg.select %visible, %zero, %inf : tensor<?x?xi1>, tensor<f32>, tensor<f32> -> tensor<?x?xf32>
  %0 = hg.matmul %q, %kt : tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32> -> tensor<1x2x?x?xf32>
  %1 = hg.add %mask, %0 : tensor<?x?xf32>, tensor<1x2x?x?xf32> -> tensor<1x2x?x?xf32>
  %2 = hg.softmax %1 {axis = 3 : i64} : tensor<1x2x?x?xf32> -> tensor<1x2x?x?xf32>
  %3 = hg.matmul %2, %v : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>
  return %3 : tensor<1x2x?x8xf32>
}

// -----

// A mask from the caller is kept as the mask operand.
// CHECK-LABEL: func.func @caller_mask
// CHECK-SAME: %[[M:[^:]+]]: tensor<2x1x8x8xf32>)
// CHECK: hg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[M]]
func.func @caller_mask(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                       %m: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %kt = hg.transpose %k [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %0 = hg.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  %1 = hg.add %0, %m : tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = hg.softmax %1 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = hg.matmul %2, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %3 : tensor<2x4x8x16xf32>
}

// -----

// Grouped-query attention (2 KV heads for 4 query heads): the repeat_kv
// reshape(broadcast_to(reshape(kv))) is undone; the scale sits on q before
// its reshape and transpose (OPT) and on the scores after the matmul.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32> {{.*}}, %[[K:.+]]: tensor<?x2x?x16xf32> {{.*}}, %[[V:.+]]: tensor<?x2x?x16xf32>
// CHECK: %[[Q4:.+]] = hg.reshape %[[X]] ["b", "t", 4, 16]
// CHECK: %[[Q:.+]] = hg.transpose %[[Q4]] [0, 2, 1, 3]
// CHECK: %[[A:.+]] = hg.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[A]]
func.func @gqa(%x: tensor<?x?x64xf32> {hg.dims = ["b", "t", 64]},
               %k: tensor<?x2x?x16xf32> {hg.dims = ["b", 2, "t", 16]},
               %v: tensor<?x2x?x16xf32> {hg.dims = ["b", 2, "t", 16]}) -> tensor<?x4x?x16xf32> {
  %c = hg.constant dense<0.5> : tensor<f32>
  %two = hg.constant dense<2.0> : tensor<f32>
  %xs = hg.mul %x, %c : tensor<?x?x64xf32>, tensor<f32> -> tensor<?x?x64xf32>
  %q4 = hg.reshape %xs ["b", "t", 4, 16] : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %q = hg.transpose %q4 [0, 2, 1, 3] : tensor<?x?x4x16xf32> -> tensor<?x4x?x16xf32>
  %k5 = hg.reshape %k ["b", 2, 1, "t", 16] : tensor<?x2x?x16xf32> -> tensor<?x2x1x?x16xf32>
  %kb = hg.broadcast_to %k5 ["b", 2, 2, "t", 16] : tensor<?x2x1x?x16xf32> -> tensor<?x2x2x?x16xf32>
  %kr = hg.reshape %kb ["b", 4, "t", 16] : tensor<?x2x2x?x16xf32> -> tensor<?x4x?x16xf32>
  %v5 = hg.reshape %v ["b", 2, 1, "t", 16] : tensor<?x2x?x16xf32> -> tensor<?x2x1x?x16xf32>
  %vb = hg.broadcast_to %v5 ["b", 2, 2, "t", 16] : tensor<?x2x1x?x16xf32> -> tensor<?x2x2x?x16xf32>
  %vr = hg.reshape %vb ["b", 4, "t", 16] : tensor<?x2x2x?x16xf32> -> tensor<?x4x?x16xf32>
  %k3 = hg.reshape %kr ["4*b", "t", 16] : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %k3t = hg.transpose %k3 [0, 2, 1] : tensor<?x?x16xf32> -> tensor<?x16x?xf32>
  %kt = hg.reshape %k3t ["b", 4, 16, "t"] : tensor<?x16x?xf32> -> tensor<?x4x16x?xf32>
  %0 = hg.matmul %q, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32> -> tensor<?x4x?x?xf32>
  %1 = hg.div %0, %two : tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %2 = hg.softmax %1 {axis = 3 : i64} : tensor<?x4x?x?xf32> -> tensor<?x4x?x?xf32>
  %3 = hg.matmul %2, %vr : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %3 : tensor<?x4x?x16xf32>
}

// -----

// Softmax over the heads is not attention: it stays, with a warning.
// CHECK-LABEL: func.func @not_attention
// CHECK: hg.softmax
// CHECK-NOT: hg.attention
func.func @not_attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %kt = hg.transpose %k [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %0 = hg.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  // expected-warning @+1 {{softmax 'hg.softmax' not fused into attention; it runs unfused}}
  %1 = hg.softmax %0 {axis = 1 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = hg.matmul %1, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %2 : tensor<2x4x8x16xf32>
}

// -----

// HF eager attention (GPT-2, OPT): k.transpose(1, 2).transpose(2, 3) is
// canonicalized into one transpose [0, 2, 3, 1] of k [B, S, H, D]; the keys
// are transpose(k, [0, 2, 1, 3]).
// CHECK-LABEL: func.func @eager_key_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32> {{.*}}, %[[K:.+]]: tensor<?x?x4x16xf32> {{.*}}, %[[V:.+]]: tensor<?x4x?x16xf32>
// CHECK: %[[KH:.+]] = hg.transpose %[[K]] [0, 2, 1, 3] : tensor<?x?x4x16xf32> -> tensor<?x4x?x16xf32>
// CHECK: %[[A:.+]] = hg.attention %[[Q]], %[[KH]], %[[V]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[A]]
func.func @eager_key_transpose(%q: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]},
                               %k: tensor<?x?x4x16xf32> {hg.dims = ["batch", "seq", 4, 16]},
                               %v: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]}) -> tensor<?x4x?x16xf32> {
  %kt = hg.transpose %k [0, 2, 3, 1] : tensor<?x?x4x16xf32> -> tensor<?x4x16x?xf32>
  %s = hg.constant dense<0.25> : tensor<f32>
  %pos = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  %rows = hg.reshape %pos [1, 1, "seq", 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %cols = hg.reshape %pos [1, 1, 1, "seq"] : tensor<?xi64> -> tensor<1x1x1x?xi64>
  %visible = hg.less_equal %cols, %rows : tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64> -> tensor<1x1x?x?xi1>
  %zero = hg.constant dense<0.0> : tensor<f32>
  %min = hg.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = hg.select %visible, %zero, %min : tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32> -> tensor<1x1x?x?xf32>
  %0 = hg.matmul %q, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32> -> tensor<?x4x?x?xf32>
  %1 = hg.mul %0, %s : tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %2 = hg.add %1, %mask : tensor<?x4x?x?xf32>, tensor<1x1x?x?xf32> -> tensor<?x4x?x?xf32>
  %3 = hg.softmax %2 {axis = 3 : i64} : tensor<?x4x?x?xf32> -> tensor<?x4x?x?xf32>
  %4 = hg.matmul %3, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %4 : tensor<?x4x?x16xf32>
}

// -----

// The same single key transpose, but the query's one head is broadcast
// against four key heads by the matmul: not attention, it stays.
// CHECK-LABEL: func.func @eager_key_transpose_broadcast_query
// CHECK: hg.transpose
// CHECK: hg.softmax
// CHECK-NOT: hg.attention
func.func @eager_key_transpose_broadcast_query(%q: tensor<2x1x8x16xf32>, %k: tensor<2x8x4x16xf32>,
                                               %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %kt = hg.transpose %k [0, 2, 3, 1] : tensor<2x8x4x16xf32> -> tensor<2x4x16x8xf32>
  %0 = hg.matmul %q, %kt : tensor<2x1x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  // expected-warning @+1 {{softmax 'hg.softmax' not fused into attention; it runs unfused}}
  %1 = hg.softmax %0 {axis = 3 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = hg.matmul %1, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %2 : tensor<2x4x8x16xf32>
}

// -----

// BLOOM's eager attention as torch.onnx exports it: heads folded into the
// batch ([2*batch, seq, 4]), ALiBi from the positions of an all-ones
// attention mask ((cumsum - 1) * mask) times one slope per head, added by
// baddbmm before the causal mask. One hg.attention with the slopes,
// reshaped back to the folded form the caller reads.
// CHECK-LABEL: func.func @bloom_alibi
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x2x?x4xf32> {{.*}}, %[[K:[^:]+]]: tensor<?x2x?x4xf32> {{.*}}, %[[V:[^:]+]]: tensor<?x2x?x4xf32>
// CHECK: %[[S:.+]] = hg.constant dense<[2.500000e-01, 6.250000e-02]> : tensor<2xf32>
// CHECK: %[[A:.+]] = hg.attention %[[Q]], %[[K]], %[[V]] alibi %[[S]] {causal = true, scale = 5.000000e-01 : f64}
// CHECK: %[[R:.+]] = hg.reshape %[[A]] ["2*batch", "seq", 4]
// CHECK-NEXT: return %[[R]]
func.func @bloom_alibi(%q: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]},
                       %k: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]},
                       %v: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]}) -> tensor<?x?x4xf32> {
  %one = hg.constant dense<1.0> : tensor<f32>
  %ones = hg.broadcast_to %one ["batch", "seq"] : tensor<f32> -> tensor<?x?xf32>
  %sum = hg.cumsum %ones {axis = 1 : i64} : tensor<?x?xf32> -> tensor<?x?xf32>
  %pos0 = hg.sub %sum, %one : tensor<?x?xf32>, tensor<f32> -> tensor<?x?xf32>
  %pos1 = hg.mul %pos0, %ones : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %pos = hg.reshape %pos1 ["batch", 1, "seq"] : tensor<?x?xf32> -> tensor<?x1x?xf32>
  %slopes = hg.constant dense<[[0.25], [0.0625]]> : tensor<2x1xf32>
  %bias = hg.mul %slopes, %pos : tensor<2x1xf32>, tensor<?x1x?xf32> -> tensor<?x2x?xf32>
  %alibi = hg.reshape %bias ["2*batch", 1, "seq"] : tensor<?x2x?xf32> -> tensor<?x1x?xf32>
  %iota = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  %rows = hg.reshape %iota [1, 1, "seq", 1] : tensor<?xi64> -> tensor<1x1x?x1xi64>
  %cols = hg.reshape %iota [1, 1, 1, "seq"] : tensor<?xi64> -> tensor<1x1x1x?xi64>
  %visible = hg.less_equal %cols, %rows : tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64> -> tensor<1x1x?x?xi1>
  %zero = hg.constant dense<0.0> : tensor<f32>
  %min = hg.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = hg.select %visible, %zero, %min : tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32> -> tensor<1x1x?x?xf32>
  %q3 = hg.reshape %q ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %k3 = hg.reshape %k ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %kt = hg.transpose %k3 [0, 2, 1] : tensor<?x?x4xf32> -> tensor<?x4x?xf32>
  %v3 = hg.reshape %v ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %0 = hg.matmul %q3, %kt : tensor<?x?x4xf32>, tensor<?x4x?xf32> -> tensor<?x?x?xf32>
  %s = hg.constant dense<0.5> : tensor<f32>
  %1 = hg.mul %0, %s : tensor<?x?x?xf32>, tensor<f32> -> tensor<?x?x?xf32>
  %2 = hg.add %1, %alibi : tensor<?x?x?xf32>, tensor<?x1x?xf32> -> tensor<?x?x?xf32>
  %3 = hg.reshape %2 ["batch", 2, "seq", "seq"] : tensor<?x?x?xf32> -> tensor<?x2x?x?xf32>
  %4 = hg.add %3, %mask : tensor<?x2x?x?xf32>, tensor<1x1x?x?xf32> -> tensor<?x2x?x?xf32>
  %5 = hg.softmax %4 {axis = 3 : i64} : tensor<?x2x?x?xf32> -> tensor<?x2x?x?xf32>
  %6 = hg.reshape %5 ["2*batch", "seq", "seq"] : tensor<?x2x?x?xf32> -> tensor<?x?x?xf32>
  %7 = hg.matmul %6, %v3 : tensor<?x?x?xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  return %7 : tensor<?x?x4xf32>
}

// -----

// The same form, but the positions are a caller's tensor, not provably
// the key index: not ALiBi, nothing fuses.
// CHECK-LABEL: func.func @bloom_bias_not_alibi
// CHECK: hg.softmax
// CHECK-NOT: hg.attention
func.func @bloom_bias_not_alibi(%q: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]},
                                %k: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]},
                                %v: tensor<?x2x?x4xf32> {hg.dims = ["batch", 2, "seq", 4]},
                                %m: tensor<?x?xf32> {hg.dims = ["batch", "seq"]}) -> tensor<?x?x4xf32> {
  %pos = hg.reshape %m ["batch", 1, "seq"] : tensor<?x?xf32> -> tensor<?x1x?xf32>
  %slopes = hg.constant dense<[[0.25], [0.0625]]> : tensor<2x1xf32>
  %bias = hg.mul %slopes, %pos : tensor<2x1xf32>, tensor<?x1x?xf32> -> tensor<?x2x?xf32>
  %alibi = hg.reshape %bias ["2*batch", 1, "seq"] : tensor<?x2x?xf32> -> tensor<?x1x?xf32>
  %q3 = hg.reshape %q ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %k3 = hg.reshape %k ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %kt = hg.transpose %k3 [0, 2, 1] : tensor<?x?x4xf32> -> tensor<?x4x?xf32>
  %v3 = hg.reshape %v ["2*batch", "seq", 4] : tensor<?x2x?x4xf32> -> tensor<?x?x4xf32>
  %0 = hg.matmul %q3, %kt : tensor<?x?x4xf32>, tensor<?x4x?xf32> -> tensor<?x?x?xf32>
  %2 = hg.add %0, %alibi : tensor<?x?x?xf32>, tensor<?x1x?xf32> -> tensor<?x?x?xf32>
  %3 = hg.reshape %2 ["batch", 2, "seq", "seq"] : tensor<?x?x?xf32> -> tensor<?x2x?x?xf32>
  // expected-warning @+1 {{softmax 'hg.softmax' not fused into attention; it runs unfused}}
  %5 = hg.softmax %3 {axis = 3 : i64} : tensor<?x2x?x?xf32> -> tensor<?x2x?x?xf32>
  %6 = hg.reshape %5 ["2*batch", "seq", "seq"] : tensor<?x2x?x?xf32> -> tensor<?x?x?xf32>
  %7 = hg.matmul %6, %v3 : tensor<?x?x?xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  return %7 : tensor<?x?x4xf32>
}
