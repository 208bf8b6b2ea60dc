// convert-hg-to-hrt: buffers, ports, aliases, output copies, parameter
// dedup, attribute defaults (from hg's ODS) and symbol limits.
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt --verify-diagnostics | FileCheck %s

// A value computed by a command and returned once is written straight into
// its port; reshapes become views (aliases, no copy); symbols come from
// hg.dims, their limits from hg.dim_max.
// CHECK-LABEL: hrt.executable @forward symbols ["batch", "seq"] params read
// CHECK-SAME: symbol_max = array<i64: 0, 128>
// CHECK: %[[X:.+]] = hrt.input "x" : <f32, [batch, seq, 4]>
// CHECK: %[[Y:.+]] = hrt.output "y" : <f32, [batch, seq, 4]>
// CHECK: %[[V:.+]] = hrt.view %[[X]] : <f32, [batch, seq, 4]> to <f32, ["batch*seq", 4]>
// CHECK: %[[T:.+]] = hrt.alloc : <f32, ["batch*seq", 4]>
// CHECK: hrt.unary relu %[[V]] : {{.+}} into %[[T]]
// CHECK: %[[T3:.+]] = hrt.view %[[T]] : <f32, ["batch*seq", 4]> to <f32, [batch, seq, 4]>
// CHECK: hrt.unary neg %[[T3]] : {{.+}} into %[[Y]]
// CHECK-NOT: hrt.copy
module {
  func.func @forward(%x: tensor<?x?x4xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?x?x4xf32> {hg.name = "y"}) attributes {hg.dim_max = {seq = 128 : i64}} {
    %f = hg.reshape %x ["batch*seq", 4] : tensor<?x?x4xf32> -> tensor<?x4xf32>
    %r = hg.relu %f : tensor<?x4xf32> -> tensor<?x4xf32>
    %u = hg.reshape %r ["batch", "seq", 4] : tensor<?x4xf32> -> tensor<?x?x4xf32>
    %n = hg.neg %u : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
    return %n : tensor<?x?x4xf32>
  }
}

// -----

// Returned inputs, parameters, views and values returned twice are copied
// into their ports.
// CHECK-LABEL: hrt.executable @copies
// CHECK: %[[X:.+]] = hrt.input "x" : <f32, [n]>
// CHECK: %[[W:.+]] = hrt.param "w" : <f32, [3]>
// CHECK: %[[O0:.+]] = hrt.output "x_out"
// CHECK: %[[O1:.+]] = hrt.output "w_out"
// CHECK: %[[O2:.+]] = hrt.output "first"
// CHECK: %[[O3:.+]] = hrt.output "second"
// CHECK: %[[O4:.+]] = hrt.output "view"
// CHECK: %[[E:.+]] = hrt.alloc : <f32, [n]>
// CHECK: hrt.unary exp %[[X]] : <f32, [n]> into %[[E]]
// CHECK: %[[EV:.+]] = hrt.view %[[E]]
// CHECK: hrt.copy %[[X]] : <f32, [n]> into %[[O0]]
// CHECK: hrt.copy %[[W]] : <f32, [3]> into %[[O1]]
// CHECK: hrt.copy %[[E]] : <f32, [n]> into %[[O2]]
// CHECK: hrt.copy %[[E]] : <f32, [n]> into %[[O3]]
// CHECK: hrt.copy %[[EV]] : <f32, [n, 1]> into %[[O4]]
module {
  func.func @copies(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["n"]},
                    %w: tensor<3xf32> {hg.param = "w"})
      -> (tensor<?xf32> {hg.name = "x_out"}, tensor<3xf32> {hg.name = "w_out"},
          tensor<?xf32> {hg.name = "first"}, tensor<?xf32> {hg.name = "second"},
          tensor<?x1xf32> {hg.name = "view"}) {
    %e = hg.exp %x : tensor<?xf32> -> tensor<?xf32>
    %v = hg.reshape %e ["n", 1] : tensor<?xf32> -> tensor<?x1xf32>
    return %x, %w, %e, %e, %v : tensor<?xf32>, tensor<3xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x1xf32>
  }
}

// -----

// Two arguments naming one checkpoint tensor (a tied weight) are one
// parameter buffer.
// CHECK-LABEL: hrt.executable @tied
// CHECK: %[[W:.+]] = hrt.param "embed.weight" : <f32, [10, 4]>
// CHECK-NOT: hrt.param
// CHECK: hrt.embedding %[[W]]
// CHECK: hrt.linear %{{.+}}, %[[W]]
module {
  func.func @tied(%ids: tensor<?xi64> {hg.name = "ids", hg.dims = ["n"]},
                  %e: tensor<10x4xf32> {hg.param = "embed.weight"},
                  %h: tensor<10x4xf32> {hg.param = "embed.weight"})
      -> (tensor<?x10xf32> {hg.name = "logits"}) {
    %x = hg.embedding %e, %ids : tensor<10x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
    %l = hg.linear %x, %h : (tensor<?x4xf32>, tensor<10x4xf32>) -> tensor<?x10xf32>
    return %l : tensor<?x10xf32>
  }
}

// -----

// Attributes hg leaves to its ODS defaults are written out in hrt: the
// layer_norm axis (-1), linear's transpose_weight (true), reduce keepdims
// (true), gelu's approximation (none -> gelu), attention's causal (false)
// and sliding window (0), and absent optional operands stay absent.
// CHECK-LABEL: hrt.executable @defaults
// CHECK: hrt.layer_norm %{{.+}} : <f32, [2, 8]> into %{{.+}} {axis = -1 : i64, epsilon = 1.000000e-05 : f64}
// CHECK: hrt.linear {{.+}} {transpose_weight = true}
// CHECK: hrt.unary gelu
// CHECK: hrt.reduce sum {{.+}} {axes = array<i64: 1>, keepdims = true}
// CHECK: hrt.attention {{.+}} {causal = false, scale = 5.000000e-01 : f64, sliding_window = 0 : i64}
// CHECK: hrt.binary fmod
module {
  func.func @defaults(%x: tensor<2x8xf32> {hg.name = "x"}, %w: tensor<8x8xf32> {hg.param = "w"},
                      %q: tensor<1x2x3x4xf32> {hg.name = "q"})
      -> (tensor<2x8xf32> {hg.name = "a"}, tensor<2x1xf32> {hg.name = "b"},
          tensor<1x2x3x4xf32> {hg.name = "c"}, tensor<2x8xf32> {hg.name = "d"}) {
    %n = hg.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %l = hg.linear %n, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %g = hg.gelu %l : tensor<2x8xf32> -> tensor<2x8xf32>
    %s = hg.reduce_sum %g [1] : tensor<2x8xf32> -> tensor<2x1xf32>
    %a = hg.attention %q, %q, %q {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    %m = hg.mod %g, %x {fmod = true} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %g, %s, %a, %m : tensor<2x8xf32>, tensor<2x1xf32>, tensor<1x2x3x4xf32>, tensor<2x8xf32>
  }
}

// -----

// bf16 graphs lower like f32 ones, with bf16 buffers.
// CHECK-LABEL: hrt.executable @bf16
// CHECK: hrt.param "w" : <bf16, [8, 8]>
// CHECK: hrt.rms_norm %{{.+}} : <bf16, [n, 8]> weight %{{.+}} : !hrt.buffer<bf16, [8]> into
// CHECK: hrt.cast %{{.+}} : <bf16, [n, 8]> into %{{.+}} : <f32, [n, 8]>
module {
  func.func @bf16(%x: tensor<?x8xbf16> {hg.name = "x", hg.dims = ["n"]},
                  %w: tensor<8x8xbf16> {hg.param = "w"}, %g: tensor<8xbf16> {hg.param = "g"})
      -> (tensor<?x8xf32> {hg.name = "y"}) {
    %l = hg.linear %x, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
    %n = hg.rms_norm %l weight %g {epsilon = 1.0e-6 : f64} : (tensor<?x8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
    %c = hg.cast %n : tensor<?x8xbf16> -> tensor<?x8xf32>
    return %c : tensor<?x8xf32>
  }
}

// -----

// A shape the symbols cannot express is an error naming the op.
module {
  func.func @bad(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["n"]}) -> (tensor<?xf32> {hg.name = "y"}) {
    // expected-error @+1 {{'hg.slice' op slice bound on symbolic dimension n is not provably in range}}
    %s = hg.slice %x {axes = array<i64: 0>, starts = array<i64: 2>, ends = array<i64: 9223372036854775807>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
    return %s : tensor<?xf32>
  }
}

// -----

// A linear's epilogue carries over: its activation by name, its residual as
// a buffer.
// CHECK-LABEL: hrt.executable @epilogue
// CHECK: %[[X:.+]] = hrt.input "x"
// CHECK: hrt.linear %[[X]] : <f32, [2, 8]>, %{{.+}} activation gelu_tanh residual %[[X]] : !hrt.buffer<f32, [2, 8]> into
module {
  func.func @epilogue(%x: tensor<2x8xf32> {hg.name = "x"}, %w: tensor<8x8xf32> {hg.param = "w"})
      -> (tensor<2x8xf32> {hg.name = "y"}) {
    %l = hg.linear %x, %w residual %x {activation = "gelu_tanh"} : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    return %l : tensor<2x8xf32>
  }
}

// -----

// A result tagged hg.param writes that parameter back (an optimizer step):
// the executable's parameter access is read_write and the new value, whose
// old one nothing reads afterwards, is computed in the parameter's buffer
// (elementwise: each element is read before it is written).
// CHECK-LABEL: hrt.executable @step symbols [] params read_write
// CHECK: %[[W:.+]] = hrt.param "w" : <f32, [4]>
// CHECK: hrt.binary sub %[[W]] : <f32, [4]>, %{{.+}} into %[[W]] : <f32, [4]>
// CHECK-NOT: hrt.copy
module {
  func.func @step(%w: tensor<4xf32> {hg.param = "w"}, %g: tensor<4xf32> {hg.name = "g"})
      -> (tensor<4xf32> {hg.param = "w"}) {
    %0 = hg.sub %w, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{result #0 writes parameter 'v' that no argument of @bad_step is}}
  func.func @bad_step(%w: tensor<4xf32> {hg.param = "w"}) -> (tensor<4xf32> {hg.param = "v"}) {
    return %w : tensor<4xf32>
  }
}
