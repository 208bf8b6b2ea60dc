// Shapes that are not one polynomial in the symbols for every binding are
// compile errors naming the op and where it is.
// RUN: split-file %s %t
// RUN: not hybridc compile %t/slice-start.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=SLICE
// RUN: not hybridc compile %t/slice-start.mlir --emit=bundle 2>&1 | count 1
// RUN: not hybridc compile %t/slice-empty.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not hybridc compile %t/reshape-symbol.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=SYMBOL
// RUN: not hybridc compile %t/reshape-count.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not hybridc compile %t/broadcast.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=BROADCAST
// RUN: not hybridc compile %t/no-name.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=NO-NAME
// RUN: not hybridc compile %t/bad-name.mlir --emit=bundle 2>&1 | FileCheck %s --check-prefix=BAD-NAME

// seq - 2 is negative for seq = 1, where ONNX would clamp the start to 0.
// SLICE: hybridc: error: loc("{{.*}}slice-start.mlir":4:10): 'hg.slice' op slice bound on symbolic dimension seq is not provably in range
//--- slice-start.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["seq"]})
      -> (tensor<?xf32> {hg.name = "y"}) {
    %s = hg.slice %x {axes = array<i64: 0>, starts = array<i64: -2>, ends = array<i64: 9223372036854775807>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
    return %s : tensor<?xf32>
  }
}

// [1, seq - 1) is empty for seq <= 2 only.
// EMPTY: hybridc: error: loc("{{.*}}slice-empty.mlir":4:10): 'hg.slice' op slice [1, seq - 1) may be empty or not, depending on the sizes
//--- slice-empty.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["seq"]})
      -> (tensor<?xf32> {hg.name = "y"}) {
    %s = hg.slice %x {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: -1>, steps = array<i64: 1>} : tensor<?xf32> -> tensor<?xf32>
    return %s : tensor<?xf32>
  }
}

// SYMBOL: hybridc: error: loc("{{.*}}reshape-symbol.mlir":4:10): 'hg.reshape' op bad symbolic size 'n': unknown symbol 'n'
//--- reshape-symbol.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?xf32> {hg.name = "y"}) {
    %r = hg.reshape %x ["n"] : tensor<?x?xf32> -> tensor<?xf32>
    return %r : tensor<?xf32>
  }
}

// COUNT: hybridc: error: loc("{{.*}}reshape-count.mlir":4:10): 'hg.reshape' op element count batch*seq != 2*batch*seq
//--- reshape-count.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?x2xf32> {hg.name = "y"}) {
    %r = hg.reshape %x ["batch*seq", 2] : tensor<?x?xf32> -> tensor<?x2xf32>
    return %r : tensor<?x2xf32>
  }
}

// BROADCAST: hybridc: error: loc("{{.*}}broadcast.mlir":5:10): 'hg.add' op cannot prove dimensions batch and seq broadcast-compatible
//--- broadcast.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]},
                     %y: tensor<?x?xf32> {hg.name = "y", hg.dims = ["seq", "batch"]})
      -> (tensor<?x?xf32> {hg.name = "z"}) {
    %s = hg.add %x, %y : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}

// NO-NAME: hybridc: error: loc("{{.*}}no-name.mlir":{{[0-9]+}}:{{[0-9]+}}): argument 1: dynamic dimension 1 has no name in hg.dims
//--- no-name.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]},
                     %y: tensor<?x?xf32> {hg.name = "y", hg.dims = ["batch"]})
      -> (tensor<?x?xf32> {hg.name = "z"}) {
    %s = hg.add %x, %y : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}

// BAD-NAME: hybridc: error: loc("{{.*}}bad-name.mlir":{{[0-9]+}}:{{[0-9]+}}): argument 0: bad symbolic size 'seq+': expected a number or a name at offset 4
//--- bad-name.mlir
module attributes {hg.model = "t"} {
  func.func @forward(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["seq+"]})
      -> (tensor<?xf32> {hg.name = "y"}) {
    %e = hg.exp %x : tensor<?xf32> -> tensor<?xf32>
    return %e : tensor<?xf32>
  }
}
