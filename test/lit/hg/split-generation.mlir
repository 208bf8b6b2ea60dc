// hg-split-generation: @forward -> @prefill (prompt, last logits, state
// initialised) and @decode (one token, every input a state, seq = 1), both
// ending in the sampling epilogue.
// RUN: hybridc-opt %s --split-input-file --hg-split-generation --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: {hg.dims = ["batch"], hg.state = "gen.token"}
// CHECK-SAME: %[[PAST:[^:]+]]: tensor<1xi64> {hg.state = "gen.past"}
// CHECK-SAME: %[[KM:[^:]+]]: tensor<?x?xi64> {hg.dims = ["batch", "cap"], hg.state = "gen.key_mask"}
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi64> {hg.dims = ["batch"], hg.state = "gen.position"}
// CHECK-SAME: %[[COUNT:[^:]+]]: tensor<1xi64> {hg.state = "gen.count"}
// CHECK-SAME: %[[FIN:[^:]+]]: tensor<?xi1> {hg.dims = ["batch"], hg.state = "gen.finished"}
// CHECK-SAME: %[[LEN:[^:]+]]: tensor<?xi64> {hg.dims = ["batch"], hg.state = "gen.lengths"}
// CHECK-SAME: %[[CFG:[^:]+]]: tensor<4xi64> {hg.state = "gen.config"}
// CHECK-SAME: %[[SMP:[^:]+]]: tensor<3xf32> {hg.state = "gen.sampling"}
// CHECK-SAME: %[[RNG:[^:]+]]: tensor<2xi64> {hg.state = "gen.rng"}
// CHECK-SAME: %[[TOKS:[^:]+]]: tensor<?x?xi64> {hg.dims = ["batch", "nmax"], hg.state = "gen.tokens"}
// CHECK-SAME: %[[LPS:[^:]+]]: tensor<?x?xf32> {hg.dims = ["batch", "nmax"], hg.state = "gen.logprobs"}
// CHECK-SAME: attributes {hg.dim_max = {cap = 64 : i64}, hg.generation = "decode"}
// The new token's slot joins the key mask; its position comes from state.
// CHECK: %[[FILLED:.+]] = hg.cache_write %[[KM]], %{{.+}} at %[[PAST]] {axis = 1 : i64}
// CHECK: %[[P2:.+]] = hg.reshape %[[POS]] ["batch", 1]
// CHECK: hg.embedding %{{.+}}, %[[P2]]
// Every shape that named seq now says 1.
// CHECK: hg.reshape %{{.+}} ["batch", 1, 2, 4]
// CHECK: hg.attention {{.+}} key_mask %[[FILLED]]
// CHECK: %[[NEXT:.+]] = hg.add %[[POS]], %{{.+}} : tensor<?xi64>, tensor<1xi64>
// Sampling is one op over the logits (no cast) and the state: EOS banned
// before min_new tokens, a draw, the log-probability of the
// temperature-scaled logits, pad for finished rows, the state advanced.
// CHECK-NOT: hg.cast
// CHECK-NOT: hg.log_softmax
// CHECK: %[[TOKEN:[^,]+]], %[[NTOKS:[^,]+]], %[[NLPS:[^,]+]], %[[NLEN:[^,]+]], %[[NFIN:[^,]+]], %[[NCOUNT:[^,]+]], %[[NRNG:[^ ]+]] = hg.sample_step %{{.+}}, %[[CFG]], %[[SMP]], %[[RNG]] count %[[COUNT]] finished %[[FIN]] lengths %[[LEN]] tokens %[[TOKS]] logprobs %[[LPS]] : (tensor<?x16xf32>,
// CHECK-SAME: -> (tensor<?xi64>, tensor<?x?xi64>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xi1>, tensor<1xi64>, tensor<2xi64>)
// CHECK-NOT: hg.
// CHECK: return %[[FILLED]], %[[NEXT]], %{{[^,]+}}, %[[NTOKS]], %[[NLPS]], %[[NLEN]], %[[NFIN]], %[[TOKEN]], %[[NCOUNT]], %[[NRNG]] :
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: hg.name = "input_ids"
// CHECK-SAME: hg.name = "attention_mask"
// CHECK-SAME: attributes {hg.dim_max = {cap = 64 : i64, seq = 64 : i64}, hg.generation = "prefill"}
// The prompt's length, the cleared key mask with the prompt's mask in it,
// each row's next position, the last position's logits.
// CHECK: hg.iota ["seq"] {start = 1.000000e+00 : f64, step = 1.000000e+00 : f64}
// CHECK: hg.broadcast_to %{{.+}} ["batch", "cap"]
// CHECK: hg.cache_write
// CHECK: hg.reduce_sum %arg1 [1] {keepdims = false}
// CHECK: hg.slice %{{.+}} {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>
// A new generation: count 0, no row finished, every length 0.
// CHECK-DAG: %[[NONE:.+]] = hg.broadcast_to %{{.+}} ["batch"] : tensor<1xi1> -> tensor<?xi1>
// CHECK-DAG: %[[EMPTY:.+]] = hg.broadcast_to %{{.+}} ["batch"] : tensor<1xi64> -> tensor<?xi64>
// CHECK: %[[ZERO:.+]] = hg.constant dense<0> : tensor<1xi64>
// CHECK-NEXT: hg.sample_step {{.+}} count %[[ZERO]] finished %[[NONE]] lengths %[[EMPTY]]
module attributes {hg.model = "tiny"} {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %mask: tensor<?x?xi64> {hg.name = "attention_mask", hg.dims = ["batch", "seq"], hg.default = 1 : i64},
                     %emb: tensor<16x8xf32> {hg.param = "embed"}, %head: tensor<16x8xf32> {hg.param = "head"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) attributes {hg.dim_max = {seq = 64 : i64}} {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    %p = hg.positions %mask : tensor<?x?xi64> -> tensor<?x?xi64>
    %pe = hg.embedding %emb, %p : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    %h = hg.add %x, %pe : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %q = hg.reshape %h ["batch", "seq", 2, 4] : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
    %qt = hg.transpose %q [0, 2, 1, 3] : tensor<?x?x2x4xf32> -> tensor<?x2x?x4xf32>
    %a = hg.attention %qt, %qt, %qt key_mask %mask {causal = true, scale = 0.5 : f64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64>) -> tensor<?x2x?x4xf32>
    %at = hg.transpose %a [0, 2, 1, 3] : tensor<?x2x?x4xf32> -> tensor<?x?x2x4xf32>
    %m = hg.reshape %at ["batch", "seq", 8] : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %m, %head : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// -----

// bf16 logits widened to f32 (HF's logits.float()): both steps sample the
// bf16 logits (the cast is exact, and sample_step computes in f32; the
// cast is left dead for the canonicaliser).
// CHECK-LABEL: func.func @decode(
// CHECK: %[[L:.+]] = hg.linear {{.+}} -> tensor<?x?x16xbf16>
// CHECK: %[[R:.+]] = hg.reshape %[[L]] ["batch", 16] : tensor<?x?x16xbf16> -> tensor<?x16xbf16>
// CHECK: hg.sample_step %[[R]],
// CHECK-LABEL: func.func @prefill(
// CHECK: hg.sample_step %{{.+}} : (tensor<?x16xbf16>,
module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xbf16> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xbf16>, tensor<?x?xi64> -> tensor<?x?x8xbf16>
    %p = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
    %pe = hg.embedding %emb, %p : tensor<16x8xbf16>, tensor<?xi64> -> tensor<?x8xbf16>
    %h = hg.add %x, %pe : tensor<?x?x8xbf16>, tensor<?x8xbf16> -> tensor<?x?x8xbf16>
    %l = hg.linear %h, %emb : (tensor<?x?x8xbf16>, tensor<16x8xbf16>) -> tensor<?x?x16xbf16>
    %f = hg.cast %l : tensor<?x?x16xbf16> -> tensor<?x?x16xf32>
    return %f : tensor<?x?x16xf32>
  }
}

// -----

// Without an attention_mask (an ONNX export of input_ids only), @decode's
// positions are the graph's iota over seq moved past the filled slots.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[PAST:[^:]+]]: tensor<1xi64> {hg.state = "gen.past"}
// CHECK-NOT: gen.key_mask
// CHECK: %[[FIRST:.+]] = hg.iota [1] {start = 0.000000e+00 : f64, step = 1.000000e+00 : f64} : tensor<1xi64>
// CHECK: hg.add %[[FIRST]], %[[PAST]]
module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xf32> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    %p = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
    %pe = hg.embedding %emb, %p : tensor<16x8xf32>, tensor<?xi64> -> tensor<?x8xf32>
    %h = hg.add %x, %pe : tensor<?x?x8xf32>, tensor<?x8xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %h, %emb : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// -----

// expected-error @+1 {{hg-split-generation: @forward needs an input_ids argument and a logits result}}
func.func @forward(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["n"]}) -> (tensor<?xf32> {hg.name = "y"}) {
  return %x : tensor<?xf32>
}

// -----

// An op that reads across positions (here a running sum of the embeddings)
// cannot run one token at a time: the pass says which and why.
module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xf32> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    // expected-error @+1 {{hg-split-generation: a decode step cannot run this op one token at a time: it scans along a dim of size seq}}
    %c = hg.cumsum %x {axis = 1 : i64} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %c, %emb : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// -----

// Unfused attention: scores pair every query position with every key.
module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xf32> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    %t = hg.transpose %x [0, 2, 1] : tensor<?x?x8xf32> -> tensor<?x8x?xf32>
    // expected-error @+1 {{it pairs every position with every other (seq x seq)}}
    %s = hg.matmul %x, %t : tensor<?x?x8xf32>, tensor<?x8x?xf32> -> tensor<?x?x?xf32>
    %p = hg.softmax %s {axis = 2 : i64} : tensor<?x?x?xf32> -> tensor<?x?x?xf32>
    %o = hg.matmul %p, %x : tensor<?x?x?xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %o, %emb : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// -----

// A reshape that folds positions into features, and a slice of positions.
module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xf32> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    // expected-error @+1 {{it regroups the elements of different positions of seq}}
    %r = hg.reshape %x ["batch", "4*seq", 2] : tensor<?x?x8xf32> -> tensor<?x?x2xf32>
    %b = hg.reshape %r ["batch", "seq", 8] : tensor<?x?x2xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %b, %emb : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}

// -----

module {
  func.func @forward(%ids: tensor<?x?xi64> {hg.name = "input_ids", hg.dims = ["batch", "seq"]},
                     %emb: tensor<16x8xf32> {hg.param = "embed"})
      -> (tensor<?x?x16xf32> {hg.name = "logits"}) {
    %x = hg.embedding %emb, %ids : tensor<16x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    // expected-error @+1 {{it slices along a dim of size seq}}
    %s = hg.slice %x {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 9223372036854775807>, steps = array<i64: 1>} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %l = hg.linear %s, %emb : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
    return %l : tensor<?x?x16xf32>
  }
}
