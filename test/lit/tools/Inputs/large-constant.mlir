// A 200 MB float constant (under the size limit for constants, so it is
// written out densely): more than hybridc gets under `ulimit -v 400000`.
module attributes {hg.model = "large-constant"} {
  func.func @forward(%x: tensor<?xf32> {hg.name = "x", hg.dims = ["n"]})
      -> (tensor<50000000xf32> {hg.name = "y"}) {
    %c = hg.constant dense<1.0> : tensor<50000000xf32>
    return %c : tensor<50000000xf32>
  }
}
