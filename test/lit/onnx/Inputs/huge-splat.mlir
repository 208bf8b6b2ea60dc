// A splat whose byte size does not even fit in 64 bits.
module attributes {hg.model = "huge-splat"} {
  func.func @forward() -> (tensor<4294967296x4294967296xi64> {hg.name = "y"}) {
    %c = hg.constant dense<1> : tensor<4294967296x4294967296xi64> loc("ones")
    return %c : tensor<4294967296x4294967296xi64>
  }
}
