// Every hg verifier and type inference error, one case each.
// RUN: hybridc-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'hg.add' op operands do not broadcast: lhs 'tensor<2x3xf32>', rhs 'tensor<4xf32>'}}
  %0 = hg.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @wrong_result_type(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hg.mul' op result type 'tensor<3x3xf32>' is incompatible with the inferred type 'tensor<2x3xf32>'}}
  %0 = hg.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @compare_result_not_bool(%a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.less' op result type 'tensor<3xf32>' is incompatible with the inferred type 'tensor<3xi1>'}}
  %0 = hg.less %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @binary_element_mismatch(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'hg.sub' op lhs and rhs element types differ ('f32' vs 'i64')}}
  %0 = hg.sub %a, %b : tensor<3xf32>, tensor<3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @arith_on_bool(%a: tensor<3xi1>) {
  // expected-error @+1 {{'hg.add' op expects operands of numeric (float or i32/i64) elements, got 'i1'}}
  %0 = hg.add %a, %a : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  return
}

// -----

func.func @compare_element_mismatch(%a: tensor<3xi64>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hg.equal' op lhs and rhs element types differ ('i64' vs 'f32')}}
  %0 = hg.equal %a, %b : tensor<3xi64>, tensor<3xf32> -> tensor<3xi1>
  return
}

// -----

func.func @logical_on_float(%a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.and' op expects operands of i1 elements, got 'f32'}}
  %0 = hg.and %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xi1>
  return
}

// -----

func.func @float_unary_on_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'hg.exp' op expects input of floating-point (f32, bf16, f16) elements, got 'i64'}}
  %0 = hg.exp %a : tensor<3xi64> -> tensor<3xi64>
  return
}

// -----

func.func @not_on_float(%a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.not' op expects input of i1 elements, got 'f32'}}
  %0 = hg.not %a : tensor<3xf32> -> tensor<3xi1>
  return
}

// -----

func.func @neg_on_bool(%a: tensor<3xi1>) {
  // expected-error @+1 {{'hg.neg' op expects input of numeric (float or i32/i64) elements, got 'i1'}}
  %0 = hg.neg %a : tensor<3xi1> -> tensor<3xi1>
  return
}

// -----

func.func @gelu_mode(%a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = hg.gelu %a {approximate = "fast"} : tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @clip_bounds(%a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.clip' op min 6 is greater than max 0}}
  %0 = hg.clip %a {min = 6.0 : f64, max = 0.0 : f64} : tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @select_element_mismatch(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'hg.select' op lhs and rhs element types differ ('f32' vs 'i64')}}
  %0 = hg.select %c, %a, %b : tensor<3xi1>, tensor<3xf32>, tensor<3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @select_broadcast(%c: tensor<2xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'hg.select' op operands do not broadcast: cond 'tensor<2xi1>', lhs 'tensor<3xf32>'}}
  %0 = hg.select %c, %a, %a : tensor<2xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<3xi64>) {
  // expected-error @+1 {{'hg.cast' op changes the shape: input 'tensor<3xi64>', result 'tensor<4xf32>'}}
  %0 = hg.cast %a : tensor<3xi64> -> tensor<4xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.reshape' op changes the element count: input 'tensor<2x3xf32>' has 6, result 'tensor<4x2xf32>' has 8}}
  %0 = hg.reshape %a [4, 2] : tensor<2x3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @reshape_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.reshape' op `shape` entry #0 (-1 : i64) is invalid: size -1 is negative}}
  %0 = hg.reshape %a [-1, 3] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reshape_bad_symbol(%a: tensor<?xf32>) {
  // expected-error @+1 {{'hg.reshape' op `shape` entry #0 ("batch**2") is invalid: bad symbolic size 'batch**2': expected a number or a name at offset 6}}
  %0 = hg.reshape %a ["batch**2"] : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @reshape_bad_entry(%a: tensor<2xf32>) {
  // expected-error @+1 {{'hg.reshape' op `shape` entry #0 (2.000000e+00 : f32) is invalid: entries must be integers or symbolic size strings}}
  %0 = hg.reshape %a [2.0 : f32] : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @broadcast_to_conflict(%a: tensor<3x1xf32>) {
  // expected-error @+1 {{'hg.broadcast_to' op input dim 0 (size 3) cannot broadcast to size 1; only size-1 dims expand (resolve ONNX Expand's two-way broadcast into `shape`)}}
  %0 = hg.broadcast_to %a [1, 4] : tensor<3x1xf32> -> tensor<1x4xf32>
  return
}

// -----

func.func @broadcast_to_rank(%a: tensor<3x1xf32>) {
  // expected-error @+1 {{'hg.broadcast_to' op cannot broadcast input 'tensor<3x1xf32>' to rank 1}}
  %0 = hg.broadcast_to %a [4] : tensor<3x1xf32> -> tensor<4xf32>
  return
}

// -----

func.func @transpose_not_permutation(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.transpose' op perm [0, 0] is not a permutation of [0, 2)}}
  %0 = hg.transpose %a [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_perm_length(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.transpose' op perm has 3 entries but the input has rank 2}}
  %0 = hg.transpose %a [0, 1, 2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_lengths(%a: tensor<8xf32>) {
  // expected-error @+1 {{'hg.slice' op axes, starts, ends and steps must have the same length, got 1, 1, 2 and 1}}
  %0 = hg.slice %a {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 4, 5>, steps = array<i64: 1>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_zero_step(%a: tensor<8xf32>) {
  // expected-error @+1 {{'hg.slice' op step for axis 0 is zero}}
  %0 = hg.slice %a {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_axis(%a: tensor<8xf32>) {
  // expected-error @+1 {{'hg.slice' op axis 1 is out of range for rank 1 (valid: [-1, 1))}}
  %0 = hg.slice %a {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_axis_twice(%a: tensor<8xf32>) {
  // expected-error @+1 {{'hg.slice' op axis -1 is listed twice}}
  %0 = hg.slice %a {axes = array<i64: 0, -1>, starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hg.concat' op input #1 has rank 1 but input #0 has rank 2}}
  %0 = hg.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'hg.concat' op input #1 has size 4 in dim 1 where the others have 3 (only dim 0 may differ)}}
  %0 = hg.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.concat' op axis 2 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{'hg.concat' op input #1 has element type 'i64' but input #0 has 'f32'}}
  %0 = hg.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'hg.concat' op requires at least one input}}
  %0 = hg.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<4x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'hg.gather' op axis -3 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.gather %d, %i {axis = -3 : i64} : tensor<4x5xf32>, tensor<3xi64> -> tensor<3x5xf32>
  return
}

// -----

func.func @gather_nd_depth(%d: tensor<4x5xf32>, %i: tensor<3x3xi64>) {
  // expected-error @+1 {{'hg.gather_nd' op index depth 3 (last dim of indices) must be in [1, data rank - batch_dims] = [1, 2]}}
  %0 = hg.gather_nd %d, %i : tensor<4x5xf32>, tensor<3x3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @gather_nd_dynamic_depth(%d: tensor<4x5xf32>, %i: tensor<3x?xi64>) {
  // expected-error @+1 {{'hg.gather_nd' op needs a static last dim of indices (the index depth), got 'tensor<3x?xi64>'}}
  %0 = hg.gather_nd %d, %i : tensor<4x5xf32>, tensor<3x?xi64> -> tensor<3xf32>
  return
}

// -----

func.func @gather_nd_batch_dims(%d: tensor<4x5xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{'hg.gather_nd' op batch_dims 2 must be in [0, min(data rank, indices rank)) = [0, 2)}}
  %0 = hg.gather_nd %d, %i {batch_dims = 2 : i64} : tensor<4x5xf32>, tensor<3x1xi64> -> tensor<3xf32>
  return
}

// -----

func.func @gather_nd_batch_mismatch(%d: tensor<4x5xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{'hg.gather_nd' op batch dim 0 differs between data 'tensor<4x5xf32>' and indices 'tensor<3x1xi64>'}}
  %0 = hg.gather_nd %d, %i {batch_dims = 1 : i64} : tensor<4x5xf32>, tensor<3x1xi64> -> tensor<3xf32>
  return
}

// -----

func.func @iota_rank() {
  // expected-error @+1 {{'hg.iota' op result must be 1-D, got 'tensor<2x2xf32>'}}
  %0 = hg.iota [4] {start = 0.0 : f64, step = 1.0 : f64} : tensor<2x2xf32>
  return
}

// -----

func.func @iota_entries() {
  // expected-error @+1 {{'hg.iota' op length must have exactly one entry, got 2}}
  %0 = hg.iota [2, 2] {start = 0.0 : f64, step = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @iota_length() {
  // expected-error @+1 {{'hg.iota' op result 'tensor<5xf32>' does not have length 4}}
  %0 = hg.iota [4] {start = 0.0 : f64, step = 1.0 : f64} : tensor<5xf32>
  return
}

// -----

func.func @iota_bad_length() {
  // expected-error @+1 {{'hg.iota' op `length` entry #0 ("n+") is invalid}}
  %0 = hg.iota ["n+"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xf32>
  return
}

// -----

func.func @iota_fractional_int() {
  // expected-error @+1 {{'hg.iota' op step 0.5 is not an integer but the result is i64}}
  %0 = hg.iota [4] {start = 0.0 : f64, step = 0.5 : f64} : tensor<4xi64>
  return
}

// -----

func.func @cumsum_axis(%a: tensor<4xf32>) {
  // expected-error @+1 {{'hg.cumsum' op axis 1 is out of range for rank 1 (valid: [-1, 1))}}
  %0 = hg.cumsum %a {axis = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @trilu_rank(%a: tensor<4xf32>) {
  // expected-error @+1 {{'hg.trilu' op expects input of rank >= 2, got 'tensor<4xf32>'}}
  %0 = hg.trilu %a {upper = true} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'hg.reduce_sum' op axis 2 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.reduce_sum %a [2] : tensor<4x5xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_axis_twice(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'hg.reduce_max' op axis -1 is listed twice}}
  %0 = hg.reduce_max %a [1, -1] : tensor<4x5xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_on_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'hg.reduce_sum' op expects input of numeric (float or i32/i64) elements, got 'i1'}}
  %0 = hg.reduce_sum %a [0] : tensor<4xi1> -> tensor<1xi1>
  return
}

// -----

func.func @reduce_mean_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{'hg.reduce_mean' op expects input of floating-point (f32, bf16, f16) elements, got 'i64'}}
  %0 = hg.reduce_mean %a [0] : tensor<4xi64> -> tensor<1xi64>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'hg.softmax' op axis 2 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.softmax %a {axis = 2 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @log_softmax_axis(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'hg.log_softmax' op axis -3 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.log_softmax %a {axis = -3 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @layer_norm_weight(%a: tensor<2x4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'hg.layer_norm' op weight 'tensor<4xf32>' must have the normalised shape [8] of the input}}
  %0 = hg.layer_norm %a weight %w {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @layer_norm_bias(%a: tensor<2x4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'hg.layer_norm' op bias 'tensor<8xf32>' must have the normalised shape [4, 8] of the input}}
  %0 = hg.layer_norm %a bias %b {epsilon = 1.0e-5 : f64, axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @layer_norm_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.layer_norm' op axis 2 is out of range for rank 2 (valid: [-2, 2))}}
  %0 = hg.layer_norm %a {epsilon = 1.0e-5 : f64, axis = 2 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.layer_norm' op epsilon must be >= 0}}
  %0 = hg.layer_norm %a {epsilon = -1.0 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_grad_out(%a: tensor<2x8xf32>, %g: tensor<2x7xf32>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op grad_out 'tensor<2x7xf32>' must have the input's shape [2, 8]}}
  %0:3 = hg.layer_norm_grad %a grad %g {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<2x7xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_element_type(%a: tensor<2x8xf32>, %g: tensor<2x8xbf16>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op input and grad_out element types differ ('f32' vs 'bf16')}}
  %0:3 = hg.layer_norm_grad %a grad %g {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_weight(%a: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op weight 'tensor<8xf32>' must have the normalised shape [4, 8] of the input}}
  %0:3 = hg.layer_norm_grad %a weight %w grad %a {epsilon = 1.0e-5 : f64, axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_grad_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op axis -3 is out of range for rank 2 (valid: [-2, 2))}}
  %0:3 = hg.layer_norm_grad %a grad %a {epsilon = 1.0e-5 : f64, axis = -3 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_result(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op result type}}
  %0:3 = hg.layer_norm_grad %a grad %a {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_epsilon(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.layer_norm_grad' op epsilon must be >= 0}}
  %0:3 = hg.layer_norm_grad %a grad %a {epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_weight(%a: tensor<2x8xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.rms_norm' op weight 'tensor<2x8xf32>' must have the normalised shape [8] of the input}}
  %0 = hg.rms_norm %a weight %w {epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.rms_norm' op epsilon must be >= 0}}
  %0 = hg.rms_norm %a {epsilon = -1.0e-6 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'hg.matmul' op contracting dims differ: lhs 'tensor<2x3xf32>' has K = 3, rhs 'tensor<4x5xf32>' has K = 4}}
  %0 = hg.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+1 {{'hg.matmul' op batch dims do not broadcast: lhs 'tensor<2x2x3xf32>', rhs 'tensor<3x3x5xf32>'}}
  %0 = hg.matmul %a, %b : tensor<2x2x3xf32>, tensor<3x3x5xf32> -> tensor<2x2x5xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'hg.matmul' op expects operands of rank >= 1, got 'tensor<f32>' and 'tensor<3xf32>'}}
  %0 = hg.matmul %a, %b : tensor<f32>, tensor<3xf32> -> tensor<f32>
  return
}

// -----

func.func @matmul_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'hg.matmul' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<3xi64>'}}
  %0 = hg.matmul %a, %a : tensor<3xi64>, tensor<3xi64> -> tensor<i64>
  return
}

// -----

func.func @linear_k(%x: tensor<2x64xf32>, %w: tensor<128x32xf32>) {
  // expected-error @+1 {{'hg.linear' op input 'tensor<2x64xf32>' has K = 64 but weight 'tensor<128x32xf32>' has K = 32 (weight is [N, K])}}
  %0 = hg.linear %x, %w : (tensor<2x64xf32>, tensor<128x32xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<2x64xf32>, %w: tensor<64x128xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'hg.linear' op bias 'tensor<64xf32>' must be [128]}}
  %0 = hg.linear %x, %w bias %b {transpose_weight = false} : (tensor<2x64xf32>, tensor<64x128xf32>, tensor<64xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'hg.linear' op expects weight of rank 2, got 'tensor<64xf32>'}}
  %0 = hg.linear %x, %w : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<10x4x2xf32>, %ids: tensor<3xi64>) {
  // expected-error @+1 {{'hg.embedding' op expects table of rank 2, got 'tensor<10x4x2xf32>'}}
  %0 = hg.embedding %t, %ids : tensor<10x4x2xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return
}

// -----

func.func @embedding_padding_idx(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) {
  // expected-error @+1 {{'hg.embedding' op padding_idx 10 is not a row of the table (10 rows)}}
  %0 = hg.embedding %t, %ids {padding_idx = 10 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return
}

// -----

func.func @embedding_negative_padding_idx(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) {
  // expected-error @+1 {{'hg.embedding' op padding_idx -1 is not a row of the table (10 rows)}}
  %0 = hg.embedding %t, %ids {padding_idx = -1 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return
}

// -----

func.func @rotary_rank(%x: tensor<2x4x64xf32>, %c: tensor<1x4x64xf32>) {
  // expected-error @+1 {{'hg.rotary' op expects input [B, H, T, D], got 'tensor<2x4x64xf32>'}}
  %0 = hg.rotary %x, %c, %c : (tensor<2x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>) -> tensor<2x4x64xf32>
  return
}

// -----

func.func @rotary_odd(%x: tensor<1x2x4x64xf32>, %c: tensor<1x4x31xf32>) {
  // expected-error @+1 {{'hg.rotary' op rotary_dim 31 must be even}}
  %0 = hg.rotary %x, %c, %c : (tensor<1x2x4x64xf32>, tensor<1x4x31xf32>, tensor<1x4x31xf32>) -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @rotary_too_wide(%x: tensor<1x2x4x64xf32>, %c: tensor<1x4x128xf32>) {
  // expected-error @+1 {{'hg.rotary' op rotary_dim 128 exceeds the head dim 64}}
  %0 = hg.rotary %x, %c, %c : (tensor<1x2x4x64xf32>, tensor<1x4x128xf32>, tensor<1x4x128xf32>) -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @rotary_cos_sin(%x: tensor<1x2x4x64xf32>, %c: tensor<1x4x64xf32>, %s: tensor<1x4x32xf32>) {
  // expected-error @+1 {{'hg.rotary' op cos 'tensor<1x4x64xf32>' and sin 'tensor<1x4x32xf32>' must have the same type}}
  %0 = hg.rotary %x, %c, %s : (tensor<1x2x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x32xf32>) -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @rotary_cos_rank(%x: tensor<1x2x4x64xf32>, %c: tensor<4x64xf32>) {
  // expected-error @+1 {{'hg.rotary' op expects cos and sin [B or 1, T, rotary_dim], got 'tensor<4x64xf32>'}}
  %0 = hg.rotary %x, %c, %c : (tensor<1x2x4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @rotary_length(%x: tensor<1x2x4x64xf32>, %c: tensor<1x5x64xf32>) {
  // expected-error @+1 {{'hg.rotary' op cos/sin length 5 must match the input sequence length 4}}
  %0 = hg.rotary %x, %c, %c : (tensor<1x2x4x64xf32>, tensor<1x5x64xf32>, tensor<1x5x64xf32>) -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @rotary_batch(%x: tensor<2x2x4x64xf32>, %c: tensor<3x4x64xf32>) {
  // expected-error @+1 {{'hg.rotary' op cos/sin batch 3 must be 1 or match the input batch 2}}
  %0 = hg.rotary %x, %c, %c : (tensor<2x2x4x64xf32>, tensor<3x4x64xf32>, tensor<3x4x64xf32>) -> tensor<2x2x4x64xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<1x6x4x64xf32>, %kv: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention' op query heads 6 must be a multiple of KV heads 4}}
  %0 = hg.attention %q, %kv, %kv {scale = 0.125 : f64} : (tensor<1x6x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>) -> tensor<1x6x4x64xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x4x4x64xf32>, %kv: tensor<1x4x4x32xf32>) {
  // expected-error @+1 {{'hg.attention' op query head dim 64 differs from key head dim 32}}
  %0 = hg.attention %q, %kv, %kv {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x32xf32>, tensor<1x4x4x32xf32>) -> tensor<1x4x4x32xf32>
  return
}

// -----

func.func @attention_query_rank(%q: tensor<4x4x64xf32>, %kv: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention' op expects query of rank 4, got 'tensor<4x4x64xf32>'}}
  %0 = hg.attention %q, %kv, %kv {scale = 0.125 : f64} : (tensor<4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>) -> tensor<4x4x64xf32>
  return
}

// -----

func.func @attention_key_rank(%q: tensor<1x4x4x64xf32>, %k: tensor<4x4x64xf32>, %v: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention' op expects key [B, Hkv, S, Dh], got 'tensor<4x4x64xf32>'}}
  %0 = hg.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<4x4x64xf32>, tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  return
}

// -----

func.func @attention_kv_mismatch(%q: tensor<1x4x4x64xf32>, %k: tensor<1x4x4x64xf32>, %v: tensor<1x4x5x64xf32>) {
  // expected-error @+1 {{'hg.attention' op key 'tensor<1x4x4x64xf32>' and value 'tensor<1x4x5x64xf32>' must agree in [B, Hkv, S]}}
  %0 = hg.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x5x64xf32>) -> tensor<1x4x4x64xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x4x64xf32>, %kv: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention' op query batch 2 differs from key batch 1}}
  %0 = hg.attention %q, %kv, %kv {scale = 0.125 : f64} : (tensor<2x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>) -> tensor<2x4x4x64xf32>
  return
}

// -----

func.func @attention_mask_rank(%q: tensor<1x4x4x64xf32>, %m: tensor<1x1x1x4x4xf32>) {
  // expected-error @+1 {{'hg.attention' op mask 'tensor<1x1x1x4x4xf32>' has rank > 4}}
  %0 = hg.attention %q, %q, %q mask %m {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x1x1x4x4xf32>) -> tensor<1x4x4x64xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<1x4x?x64xf32>, %k: tensor<1x4x3x64xf32>, %m: tensor<1x1x3x4xf32>) {
  // expected-error @+1 {{'hg.attention' op mask 'tensor<1x1x3x4xf32>' does not broadcast to the scores [B, Hq, T, S] = [1, 4, ?, 3]}}
  %0 = hg.attention %q, %k, %k mask %m {scale = 0.125 : f64} : (tensor<1x4x?x64xf32>, tensor<1x4x3x64xf32>, tensor<1x4x3x64xf32>, tensor<1x1x3x4xf32>) -> tensor<1x4x?x64xf32>
  return
}

// -----

func.func @attention_alibi(%q: tensor<1x4x4x64xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'hg.attention' op alibi slopes 'tensor<8xf32>' must be [Hq] = [4]}}
  %0 = hg.attention %q, %q, %q alibi %s {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<8xf32>) -> tensor<1x4x4x64xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention' op sliding_window must be >= 0, got -1}}
  %0 = hg.attention %q, %q, %q {scale = 0.125 : f64, sliding_window = -1 : i64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  return
}

// -----

func.func @attention_grad_out(%q: tensor<1x4x4x64xf32>, %g: tensor<1x4x5x64xf32>) {
  // expected-error @+1 {{'hg.attention_grad' op grad_out 'tensor<1x4x5x64xf32>' must be the attention's result [B, Hq, T, Dv] = [1, 4, 4, 64]}}
  %0:3 = hg.attention_grad %q, %q, %q, %g {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x5x64xf32>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_element_type(%q: tensor<1x4x4x64xf32>, %g: tensor<1x4x4x64xbf16>) {
  // expected-error @+1 {{'hg.attention_grad' op query and grad_out element types differ ('f32' vs 'bf16')}}
  %0:3 = hg.attention_grad %q, %q, %q, %g {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xbf16>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_heads(%q: tensor<1x6x4x64xf32>, %kv: tensor<1x4x4x64xf32>) {
  // expected-error @+1 {{'hg.attention_grad' op query heads 6 must be a multiple of KV heads 4}}
  %0:3 = hg.attention_grad %q, %kv, %kv, %q {scale = 0.125 : f64} : (tensor<1x6x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x6x4x64xf32>) -> (tensor<1x6x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_key_mask(%q: tensor<1x4x4x64xf32>, %m: tensor<1x5xi64>) {
  // expected-error @+1 {{'hg.attention_grad' op key_mask 'tensor<1x5xi64>' must be [B, S] = [1, 4]}}
  %0:3 = hg.attention_grad %q, %q, %q, %q key_mask %m {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x5xi64>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_alibi(%q: tensor<1x4x4x64xf32>, %s: tensor<4x1xf32>) {
  // expected-error @+1 {{'hg.attention_grad' op alibi slopes 'tensor<4x1xf32>' must be [Hq] = [4]}}
  %0:3 = hg.attention_grad %q, %q, %q, %q alibi %s {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<4x1xf32>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_alibi_type(%q: tensor<1x4x4x64xf32>, %s: tensor<4xbf16>) {
  // expected-error @+1 {{'hg.attention_grad' op query and alibi element types differ ('f32' vs 'bf16')}}
  %0:3 = hg.attention_grad %q, %q, %q, %q alibi %s {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<4xbf16>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>)
  return
}

// -----

func.func @attention_grad_result(%q: tensor<1x4x4x64xf32>, %kv: tensor<1x2x4x64xf32>) {
  // expected-error @+1 {{'hg.attention_grad' op result type}}
  %0:3 = hg.attention_grad %q, %kv, %kv, %q {scale = 0.125 : f64} : (tensor<1x4x4x64xf32>, tensor<1x2x4x64xf32>, tensor<1x2x4x64xf32>, tensor<1x4x4x64xf32>) -> (tensor<1x4x4x64xf32>, tensor<1x4x4x64xf32>, tensor<1x2x4x64xf32>)
  return
}

// -----

func.func @cache_write_rank(%c: tensor<2x4x8xf32>, %u: tensor<2x1xf32>, %o: tensor<1xi64>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{update 'tensor<2x1xf32>' and cache 'tensor<2x4x8xf32>' ranks differ}}
  %r = hg.cache_write %c, %u at %o {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x1xf32>, tensor<1xi64>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

func.func @cache_write_dim(%c: tensor<2x4x8xf32>, %u: tensor<2x1x7xf32>, %o: tensor<1xi64>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{differ in dim 2}}
  %r = hg.cache_write %c, %u at %o {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x1x7xf32>, tensor<1xi64>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

func.func @cache_write_offset(%c: tensor<2x4xf32>, %u: tensor<2x1xf32>, %o: tensor<2xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expects offset as tensor<1xi64>, got 'tensor<2xi64>'}}
  %r = hg.cache_write %c, %u at %o {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

func.func @sample_params(%l: tensor<2x8xf32>, %s: tensor<2xf32>, %r: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{expects sampling as tensor<3xf32> {temperature, top_p, top_k}}}
  %t = hg.sample %l, %s, %r : (tensor<2x8xf32>, tensor<2xf32>, tensor<2xi64>) -> tensor<2xi64>
  return %t : tensor<2xi64>
}

// -----

func.func @sample_step_logits(%l: tensor<16xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects logits of rank 2}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<16xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_config(%l: tensor<2x8xf32>, %c: tensor<3xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects config as tensor<4xi64> {eos, pad, min_new, unused}, got 'tensor<3xi64>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<3xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_sampling(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<2xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects sampling as tensor<3xf32> {temperature, top_p, top_k}, got 'tensor<2xf32>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<2xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_rng(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<3xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects rng as tensor<2xi64> {seed, counter}, got 'tensor<3xi64>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<3xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<3xi64>)
  return
}

// -----

func.func @sample_step_count(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<2xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects count as tensor<1xi64>, got 'tensor<2xi64>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_finished(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<3xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects finished as [B] = [2] like the logits' rows, got 'tensor<3xi1>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<3xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<3xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_lengths(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi32>, %t: tensor<2x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects lengths as i64 [B] = [2] like the logits' rows, got 'tensor<2xi32>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi32>, tensor<2x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x6xf32>, tensor<2xi32>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_tokens(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<3x6xi64>, %p: tensor<2x6xf32>) {
  // expected-error @+1 {{expects tokens as i64 [B, N] with B = [2] like the logits' rows, got 'tensor<3x6xi64>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<3x6xi64>, tensor<2x6xf32>) -> (tensor<2xi64>, tensor<3x6xi64>, tensor<2x6xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @sample_step_logprobs(%l: tensor<2x8xf32>, %c: tensor<4xi64>, %s: tensor<3xf32>, %r: tensor<2xi64>, %n: tensor<1xi64>, %f: tensor<2xi1>, %len: tensor<2xi64>, %t: tensor<2x6xi64>, %p: tensor<2x5xf32>) {
  // expected-error @+1 {{expects logprobs as f32 of the shape of tokens [2, 6], got 'tensor<2x5xf32>'}}
  %0:7 = hg.sample_step %l, %c, %s, %r count %n finished %f lengths %len tokens %t logprobs %p : (tensor<2x8xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<2x6xi64>, tensor<2x5xf32>) -> (tensor<2xi64>, tensor<2x6xi64>, tensor<2x5xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
  return
}

// -----

func.func @key_mask(%q: tensor<1x2x3x4xf32>, %m: tensor<1x5xi64>) -> tensor<1x2x3x4xf32> {
  // expected-error @+1 {{key_mask 'tensor<1x5xi64>' must be [B, S] = [1, 3]}}
  %a = hg.attention %q, %q, %q key_mask %m {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x5xi64>) -> tensor<1x2x3x4xf32>
  return %a : tensor<1x2x3x4xf32>
}

// -----

func.func @linear_residual(%x: tensor<2x64xf32>, %w: tensor<128x64xf32>, %r: tensor<128xf32>) {
  // expected-error @+1 {{'hg.linear' op residual 'tensor<128xf32>' must have the result's type 'tensor<2x128xf32>'}}
  %0 = hg.linear %x, %w residual %r : (tensor<2x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @linear_activation(%x: tensor<2x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error @+1 {{'hg.linear' op activation 'swish' is not none, relu, gelu, gelu_tanh or silu}}
  %0 = hg.linear %x, %w {activation = "swish"} : (tensor<2x64xf32>, tensor<128x64xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @adamw_update_bf16(%p: tensor<4xbf16>, %g: tensor<4xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects param as f32, got 'tensor<4xbf16>'}}
  %0:3 = hg.adamw_update %p, %g moments %g, %g betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_shape(%p: tensor<4xf32>, %v: tensor<2x2xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects exp_avg_sq of the param's shape [4], got 'tensor<2x2xf32>'}}
  %0:3 = hg.adamw_update %p, %p moments %p, %v betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @adamw_update_grad(%p: tensor<4xf32>, %g: tensor<5xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects grad of the param's shape [4], got 'tensor<5xf32>'}}
  %0:3 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_scalar(%p: tensor<4xf32>, %s: tensor<1xf32>, %e: tensor<2xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects eps as tensor<1xf32>, got 'tensor<2xf32>'}}
  %0:3 = hg.adamw_update %p, %p moments %p, %p betas %s, %s eps %e step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_result(%p: tensor<4xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op result type}}
  %0:3 = hg.adamw_update %p, %p moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<5xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_grad_i32(%p: tensor<4xf32>, %g: tensor<4xi32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op operand #1 must be ranked tensor of}}
  %0:3 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_working_f32(%p: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects working_dtype bf16 or f16 (an f32 parameter is updated in place), got 'f32'}}
  %0:4 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working f32 : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_working_i32(%p: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op expects working_dtype bf16 or f16 (an f32 parameter is updated in place), got 'i32'}}
  %0:3 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working i32 : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_working_missing(%p: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op result type}}
  %0:3 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working bf16 : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_update_working_type(%p: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op result type}}
  %0:4 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working bf16 : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

func.func @adamw_update_working_unasked(%p: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'hg.adamw_update' op result type}}
  %0:4 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>)
  return
}

// -----

func.func @label_log_probs_labels(%x: tensor<2x3x8xf32>, %l: tensor<2x4xi64>) {
  // expected-error @+1 {{'hg.label_log_probs' op labels 'tensor<2x4xi64>' must have the logits' shape without the vocabulary dim [2, 3]}}
  %0 = hg.label_log_probs %x, %l : tensor<2x3x8xf32>, tensor<2x4xi64> -> tensor<2x3xf32>
  return
}

// -----

func.func @label_log_probs_result(%x: tensor<2x3x8xbf16>, %l: tensor<2x3xi64>) {
  // expected-error @+1 {{'hg.label_log_probs' op result #0 must be ranked tensor of 32-bit float values}}
  %0 = hg.label_log_probs %x, %l : tensor<2x3x8xbf16>, tensor<2x3xi64> -> tensor<2x3xbf16>
  return
}

// -----

func.func @label_log_probs_scalar(%x: tensor<f32>, %l: tensor<i64>) {
  // expected-error @+1 {{'hg.label_log_probs' op expects logits [..., V], got 'tensor<f32>'}}
  %0 = hg.label_log_probs %x, %l : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @label_log_probs_float_labels(%x: tensor<2x8xf32>, %l: tensor<2xf32>) {
  // expected-error @+1 {{'hg.label_log_probs' op operand #1 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = hg.label_log_probs %x, %l : tensor<2x8xf32>, tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @label_log_probs_grad_grad(%x: tensor<2x3x8xbf16>, %l: tensor<2x3xi64>, %g: tensor<3x2xf32>) {
  // expected-error @+1 {{'hg.label_log_probs_grad' op grad 'tensor<3x2xf32>' must have the logits' shape without the vocabulary dim [2, 3]}}
  %0 = hg.label_log_probs_grad %x, %l, %g : tensor<2x3x8xbf16>, tensor<2x3xi64>, tensor<3x2xf32> -> tensor<2x3x8xbf16>
  return
}

// -----

func.func @label_log_probs_grad_result(%x: tensor<2x8xbf16>, %l: tensor<2xi64>, %g: tensor<2xf32>) {
  // expected-error @+1 {{'hg.label_log_probs_grad' op result type 'tensor<2x8xf32>' is incompatible with the inferred type 'tensor<2x8xbf16>'}}
  %0 = hg.label_log_probs_grad %x, %l, %g : tensor<2x8xbf16>, tensor<2xi64>, tensor<2xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @embedding_grad_shape(%ids: tensor<2x3xi64>, %g: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'hg.embedding_grad' op grad_out 'tensor<2x4x8xbf16>' must have the ids' shape and a feature dim, [2, 3] + [D]}}
  %0 = hg.embedding_grad %ids, %g {rows = 10 : i64} : tensor<2x3xi64>, tensor<2x4x8xbf16> -> tensor<10x8xbf16>
  return
}

// -----

func.func @embedding_grad_rows(%ids: tensor<2x3xi64>, %g: tensor<2x3x8xbf16>) {
  // expected-error @+1 {{'hg.embedding_grad' op result type 'tensor<12x8xbf16>' is incompatible with the inferred type 'tensor<10x8xbf16>'}}
  %0 = hg.embedding_grad %ids, %g {rows = 10 : i64} : tensor<2x3xi64>, tensor<2x3x8xbf16> -> tensor<12x8xbf16>
  return
}

// -----

func.func @embedding_grad_negative_rows(%ids: tensor<2x3xi64>, %g: tensor<2x3x8xbf16>) {
  // expected-error @+1 {{'hg.embedding_grad' op rows must be >= 0, got -1}}
  %0 = hg.embedding_grad %ids, %g {rows = -1 : i64} : tensor<2x3xi64>, tensor<2x3x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @activation_grad_activation(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.activation_grad' op activation 'tanh' is not relu, gelu, gelu_tanh or silu}}
  %0 = hg.activation_grad %x, %x {activation = "tanh"} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @activation_grad_none(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.activation_grad' op activation 'none' is not relu, gelu, gelu_tanh or silu}}
  %0 = hg.activation_grad %x, %x {activation = "none"} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @activation_grad_element_type(%x: tensor<2x8xf32>, %g: tensor<2x8xbf16>) {
  // expected-error @+1 {{'hg.activation_grad' op input and grad_out element types differ ('f32' vs 'bf16')}}
  %0 = hg.activation_grad %x, %g {activation = "silu"} : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x8xf32>
  return
}

// -----

func.func @activation_grad_shape(%x: tensor<2x8xf32>, %g: tensor<2x7xf32>) {
  // expected-error @+1 {{'hg.activation_grad' op grad_out 'tensor<2x7xf32>' must have the input's shape [2, 8]}}
  %0 = hg.activation_grad %x, %g {activation = "relu"} : tensor<2x8xf32>, tensor<2x7xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @activation_grad_result(%x: tensor<2x8xbf16>) {
  // expected-error @+1 {{'hg.activation_grad' op result type 'tensor<2x8xf32>' is incompatible with the inferred type 'tensor<2x8xbf16>'}}
  %0 = hg.activation_grad %x, %x {activation = "gelu"} : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x8xf32>
  return
}

// -----

func.func @activation_grad_integer(%x: tensor<2x8xi32>) {
  // expected-error @+1 {{'hg.activation_grad' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = hg.activation_grad %x, %x {activation = "relu"} : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
  return
}

// -----

func.func @activation_grad_no_activation(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'hg.activation_grad' op requires attribute 'activation'}}
  %0 = hg.activation_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @clipped_surrogate_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'hg.clipped_surrogate' op expects every operand of one shape, got [2, 3] and [2, 4] (operand 1)}}
  %0 = hg.clipped_surrogate %a, %b, %a, %a : tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @clipped_surrogate_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'hg.clipped_surrogate' op result 'tensor<2x4xf32>' must have the operands' shape [2, 3]}}
  %0 = hg.clipped_surrogate %a, %a, %a, %a : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @clipped_surrogate_type(%a: tensor<2x3xbf16>) {
  // expected-error @+1 {{'hg.clipped_surrogate' op operand #0 must be ranked tensor of 32-bit float values}}
  %0 = hg.clipped_surrogate %a, %a, %a, %a : tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xf32>
  return
}

// -----

func.func @gae_result(%r: tensor<2x15xf32>) {
  // expected-error @+1 {{'hg.gae' op result type 'tensor<2x15xf32>', 'tensor<2x15xf32>' is incompatible with the inferred type 'tensor<2x8xf32>', 'tensor<2x8xf32>'}}
  %a:2 = hg.gae %r, %r {start = 7 : i64} : tensor<2x15xf32>, tensor<2x15xf32> -> tensor<2x15xf32>, tensor<2x15xf32>
  return
}

// -----

func.func @gae_start(%r: tensor<2x5xf32>) {
  // expected-error @+1 {{'hg.gae' op start 5 must lie in [0, L) of rewards [2, 5]}}
  %a:2 = hg.gae %r, %r {start = 5 : i64} : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x0xf32>, tensor<2x0xf32>
  return
}

// -----

func.func @gae_values(%r: tensor<2x5xf32>, %v: tensor<2x6xf32>) {
  // expected-error @+1 {{'hg.gae' op expects values of rewards's shape [2, 5], got 'tensor<2x6xf32>'}}
  %a:2 = hg.gae %r, %v {start = 1 : i64} : tensor<2x5xf32>, tensor<2x6xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @ppo_rewards_scores(%x: tensor<2x5xf32>, %s: tensor<3xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'hg.ppo_rewards' op expects reward_scores [B] = [2] like the logprobs' rows, got 'tensor<3xf32>'}}
  %r:2 = hg.ppo_rewards %x, %x, %s, %x, %x, %k {start = 1 : i64} : tensor<2x5xf32>, tensor<2x5xf32>, tensor<3xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<1xf32> -> tensor<2x5xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @ppo_rewards_kl(%x: tensor<2x5xf32>, %s: tensor<2xf32>, %k: tensor<2xf32>) {
  // expected-error @+1 {{'hg.ppo_rewards' op expects kl_ctl as tensor<1xf32>, got 'tensor<2xf32>'}}
  %r:2 = hg.ppo_rewards %x, %x, %s, %x, %x, %k {start = 1 : i64} : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2xf32> -> tensor<2x5xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @ppo_rewards_start(%x: tensor<2x5xf32>, %s: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'hg.ppo_rewards' op start 5 must lie in [0, L) of logprobs [2, 5]}}
  %r:2 = hg.ppo_rewards %x, %x, %s, %x, %x, %k {start = 5 : i64} : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<1xf32> -> tensor<2x5xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @ppo_rewards_mask(%x: tensor<2x5xf32>, %m: tensor<2x4xf32>, %s: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'hg.ppo_rewards' op expects action_mask of logprobs's shape [2, 5], got 'tensor<2x4xf32>'}}
  %r:2 = hg.ppo_rewards %x, %x, %s, %m, %x, %k {start = 1 : i64} : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x5xf32>, tensor<1xf32> -> tensor<2x5xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @masked_mean_mask(%x: tensor<2x5xf32>, %m: tensor<2x4xf32>) {
  // expected-error @+1 {{'hg.masked_mean' op expects mask of input's shape [2, 5], got 'tensor<2x4xf32>'}}
  %0 = hg.masked_mean %x, %m : tensor<2x5xf32>, tensor<2x4xf32> -> tensor<f32>
  return
}

// -----

func.func @masked_mean_result(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'hg.masked_mean' op result type 'tensor<1xf32>' is incompatible with the inferred type 'tensor<f32>'}}
  %0 = hg.masked_mean %x, %x : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<1xf32>
  return
}

// -----

func.func @masked_mean_grad(%m: tensor<2x5xf32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'hg.masked_mean_grad' op expects grad as tensor<f32> (masked_mean's result), got 'tensor<1xf32>'}}
  %0 = hg.masked_mean_grad %m, %g : tensor<2x5xf32>, tensor<1xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @clipped_value_loss_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'hg.clipped_value_loss' op expects every operand of one shape, got [2, 3] and [2, 4] (operand 2)}}
  %0 = hg.clipped_value_loss %a, %a, %b, %a : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @kl_k3_type(%a: tensor<2x3xbf16>) {
  // expected-error @+1 {{'hg.kl_k3' op operand #0 must be ranked tensor of 32-bit float values}}
  %0 = hg.kl_k3 %a, %a : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xf32>
  return
}

// -----

func.func @pairwise_ranking_loss_rows(%v: tensor<3x5xf32>, %ids: tensor<3x5xi64>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss' op expects values [2B, T] (the chosen rows, then the rejected), got 3 rows}}
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %ids : tensor<3x5xf32>, tensor<3x5xi64>, tensor<3x5xi64> -> tensor<f32>, tensor<3xf32>, tensor<f32>
  return
}

// -----

func.func @pairwise_ranking_loss_mask(%v: tensor<2x5xf32>, %ids: tensor<2x5xi64>, %m: tensor<2x4xi64>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss' op expects attention_mask of values's shape [2, 5], got 'tensor<2x4xi64>'}}
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %m : tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x4xi64> -> tensor<f32>, tensor<2xf32>, tensor<f32>
  return
}

// -----

func.func @pairwise_ranking_loss_ids_type(%v: tensor<2x5xf32>, %ids: tensor<2x5xi32>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss' op operand #1 must be ranked tensor of 64-bit signless integer values}}
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %ids : tensor<2x5xf32>, tensor<2x5xi32>, tensor<2x5xi32> -> tensor<f32>, tensor<2xf32>, tensor<f32>
  return
}

// -----

func.func @pairwise_ranking_loss_scores(%v: tensor<2x5xf32>, %ids: tensor<2x5xi64>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss' op result type 'tensor<f32>', 'tensor<1xf32>', 'tensor<f32>' is incompatible with the inferred type 'tensor<f32>', 'tensor<2xf32>', 'tensor<f32>'}}
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %ids : tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x5xi64> -> tensor<f32>, tensor<1xf32>, tensor<f32>
  return
}

// -----

func.func @pairwise_ranking_loss_grad_scores(%v: tensor<2x5xf32>, %ids: tensor<2x5xi64>, %g: tensor<f32>, %gs: tensor<4xf32>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss_grad' op expects grad_end_scores [2B] = [2] like the values' rows, got 'tensor<4xf32>'}}
  %d = hg.pairwise_ranking_loss_grad %v, %ids, %ids, %g, %gs : tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x5xi64>, tensor<f32>, tensor<4xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @pairwise_ranking_loss_grad_loss(%v: tensor<2x5xf32>, %ids: tensor<2x5xi64>, %g: tensor<1xf32>, %gs: tensor<2xf32>) {
  // expected-error @+1 {{'hg.pairwise_ranking_loss_grad' op expects grad as tensor<f32> (the loss's), got 'tensor<1xf32>'}}
  %d = hg.pairwise_ranking_loss_grad %v, %ids, %ids, %g, %gs : tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x5xi64>, tensor<1xf32>, tensor<2xf32> -> tensor<2x5xf32>
  return
}
