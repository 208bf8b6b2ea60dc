// hrt verifier errors, one case each.
// RUN: hybridc-opt %s --split-input-file --verify-diagnostics

hrt.executable @writes_input symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  // expected-error @+1 {{writes the input 'x', which @writes_input may only read}}
  hrt.unary neg %x : !hrt.buffer<f32, [n]> into %x : !hrt.buffer<f32, [n]>
}

// -----

hrt.executable @writes_param symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{writes the parameter 'w', which @writes_param may only read}}
  hrt.fill 0.0 into %w : !hrt.buffer<f32, [4]>
}

// -----

// A parameter written through a view is still a parameter.
hrt.executable @writes_param_view symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [2, 2]>
  %v = hrt.view %w : !hrt.buffer<f32, [2, 2]> to !hrt.buffer<f32, [4]>
  // expected-error @+1 {{writes the parameter 'w'}}
  hrt.fill 0.0 into %v : !hrt.buffer<f32, [4]>
}

// -----

// The optimizer step may write parameters.
hrt.executable @step symbols [] params read_write {
  %w = hrt.param "w" : !hrt.buffer<f32, [4]>
  hrt.fill 0.0 into %w : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @writes_read_state symbols [] params read {
  %s = hrt.state "kv" read : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{writes the state 'kv', which @writes_read_state may only read}}
  hrt.fill 1.0 into %s : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @writes_constant symbols [] params read {
  %c = hrt.constant dense<1.0> : tensor<4xf32> : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{writes the constant, which}}
  hrt.fill 1.0 into %c : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @unknown_symbol symbols ["seq"] params read {
  // expected-error @+1 {{result type '!hrt.buffer<f32, [batch]>': bad symbolic size 'batch': unknown symbol 'batch'}}
  %x = hrt.input "x" : !hrt.buffer<f32, [batch]>
}

// -----

hrt.executable @duplicate_input symbols [] params read {
  %a = hrt.input "x" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{input 'x' appears twice in @duplicate_input}}
  %b = hrt.input "x" : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @duplicate_param symbols [] params read {
  %a = hrt.param "w" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{parameter 'w' appears twice in @duplicate_param}}
  %b = hrt.param "w" : !hrt.buffer<f32, [4]>
}

// -----

// expected-error @+1 {{symbol 'n' is listed twice}}
hrt.executable @twice symbols ["n", "n"] params read {
}

// -----

// expected-error @+1 {{symbol_max has 1 entries for 2 symbols}}
hrt.executable @limits symbols ["a", "b"] params read attributes {symbol_max = array<i64: 4>} {
}

// -----

hrt.executable @bad_view symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 4]>
  // expected-error @+1 {{views 4*n elements as 8*n}}
  %v = hrt.view %x : !hrt.buffer<f32, [n, 4]> to !hrt.buffer<f32, [n, 8]>
}

// -----

hrt.executable @view_dtype symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{changes the element type}}
  %v = hrt.view %x : !hrt.buffer<f32, [4]> to !hrt.buffer<i32, [4]>
}

// -----

hrt.executable @param_shape symbols ["n"] params read {
  // expected-error @+1 {{parameter 'w' must have a static shape}}
  %w = hrt.param "w" : !hrt.buffer<f32, [n]>
}

// -----

hrt.executable @comparison symbols [] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4]>
  %o = hrt.output "o" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{comparison result must be i1}}
  hrt.binary less %a : !hrt.buffer<f32, [4]>, %a : !hrt.buffer<f32, [4]> into %o : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @mixed_float symbols [] params read {
  %a = hrt.input "a" : !hrt.buffer<bf16, [4, 4]>
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %o = hrt.output "o" : !hrt.buffer<bf16, [4, 4]>
  // expected-error @+1 {{weight and result element types differ ('f32' vs 'bf16')}}
  hrt.linear %a : !hrt.buffer<bf16, [4, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %o : !hrt.buffer<bf16, [4, 4]> {transpose_weight = true}
}

// -----

hrt.executable @residual_shape symbols [] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 4]>
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %r = hrt.input "r" : !hrt.buffer<f32, [1, 4]>
  %o = hrt.output "o" : !hrt.buffer<f32, [4, 4]>
  // expected-error @+1 {{residual '!hrt.buffer<f32, [1, 4]>' must be the result's '!hrt.buffer<f32, [4, 4]>'}}
  hrt.linear %a : !hrt.buffer<f32, [4, 4]>, %w : !hrt.buffer<f32, [4, 4]> residual %r : !hrt.buffer<f32, [1, 4]> into %o : !hrt.buffer<f32, [4, 4]> {transpose_weight = true}
}

// -----

hrt.executable @activation_name symbols [] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 4]>
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %o = hrt.output "o" : !hrt.buffer<f32, [4, 4]>
  // expected-error @+1 {{one of the following enum values for attribute 'activation' [none, relu, gelu, gelu_tanh, silu]}}
  hrt.linear %a : !hrt.buffer<f32, [4, 4]>, %w : !hrt.buffer<f32, [4, 4]> activation swish into %o : !hrt.buffer<f32, [4, 4]> {transpose_weight = true}
}

// -----

hrt.executable @indices symbols [] params read {
  %t = hrt.param "t" : !hrt.buffer<f32, [10, 4]>
  %i = hrt.input "i" : !hrt.buffer<f32, [3]>
  %o = hrt.output "o" : !hrt.buffer<f32, [3, 4]>
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  hrt.embedding %t : !hrt.buffer<f32, [10, 4]>, %i : !hrt.buffer<f32, [3]> into %o : !hrt.buffer<f32, [3, 4]>
}

// -----

hrt.executable @stream symbols [] params read {
  %o = hrt.output "o" : !hrt.buffer<f32, [4]>
  // expected-error @+1 {{stream must be >= 0, got -1}}
  hrt.fill 0.0 into %o : !hrt.buffer<f32, [4]> {stream = -1 : i32}
}

// -----

hrt.executable @unplanned_port symbols [] params read attributes {workspace = 1024 : i64, alignment = 256 : i64} {
  // expected-error @+1 {{has no offset in a planned executable}}
  %o = hrt.output "o" : !hrt.buffer<f32, [4]>
}

// -----

// expected-error @+1 {{alignment 100 is not a power of two}}
hrt.executable @alignment symbols [] params read attributes {workspace = 1024 : i64, alignment = 100 : i64} {
}

// -----

// expected-error @+1 {{buffer element type must be f32, bf16, f16, i64, i32 or i1, got 'f64'}}
func.func private @f64(!hrt.buffer<f64, [4]>)

// -----

hrt.executable @stray symbols [] params read {
  // expected-error @+1 {{'hg.constant' op is not an hrt buffer source or command}}
  %c = hg.constant dense<1.0> : tensor<4xf32>
}

// -----

// An attention that appends takes the keys, the values and the offset.
hrt.executable @append_partial symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  // expected-error @+1 {{append_key, append_value and append_at come together}}
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, 4, 8]>, %vc : !hrt.buffer<f32, [1, 2, 4, 8]> append_key %k : !hrt.buffer<f32, [1, 2, 1, 8]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

hrt.executable @append_shape symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 1, 4]>
  %v = hrt.input "v" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %at = hrt.input "at" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  // expected-error @+1 {{append_key must match its cache in every dim but 2}}
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, 4, 8]>, %vc : !hrt.buffer<f32, [1, 2, 4, 8]> append_key %k : !hrt.buffer<f32, [1, 2, 1, 4]> append_value %v : !hrt.buffer<f32, [1, 2, 1, 8]> append_at %at : !hrt.buffer<i64, [1]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

// Appending writes the caches: a read-only state cannot take it.
hrt.executable @append_read_only symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %v = hrt.input "v" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %at = hrt.input "at" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kc" read : !hrt.buffer<f32, [1, 2, 4, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  // expected-error @+1 {{writes the state 'kc', which @append_read_only may only read}}
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, 4, 8]>, %vc : !hrt.buffer<f32, [1, 2, 4, 8]> append_key %k : !hrt.buffer<f32, [1, 2, 1, 8]> append_value %v : !hrt.buffer<f32, [1, 2, 1, 8]> append_at %at : !hrt.buffer<i64, [1]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

// attention_grad's key mask holds integers; every other operand and its
// gradients share one float type.
hrt.executable @attention_grad_key_mask symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 3, 8]>
  %m = hrt.input "m" : !hrt.buffer<f32, [1, 3]>
  %dq = hrt.output "dq" : !hrt.buffer<f32, [1, 2, 3, 8]>
  // expected-error @+1 {{key_mask must be i32 or i64}}
  hrt.attention_grad %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]> key_mask %m : !hrt.buffer<f32, [1, 3]> into %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

hrt.executable @attention_grad_types symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 3, 8]>
  %g = hrt.input "g" : !hrt.buffer<bf16, [1, 2, 3, 8]>
  %dq = hrt.output "dq" : !hrt.buffer<f32, [1, 2, 3, 8]>
  // expected-error @+1 {{grad_out}}
  hrt.attention_grad %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %g : !hrt.buffer<bf16, [1, 2, 3, 8]> into %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

hrt.executable @attention_grad_alibi_type symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 3, 8]>
  %s = hrt.input "s" : !hrt.buffer<bf16, [2]>
  %dq = hrt.output "dq" : !hrt.buffer<f32, [1, 2, 3, 8]>
  // expected-error @+1 {{alibi_slopes}}
  hrt.attention_grad %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]>, %q : !hrt.buffer<f32, [1, 2, 3, 8]> alibi %s : !hrt.buffer<bf16, [2]> into %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]>, %dq : !hrt.buffer<f32, [1, 2, 3, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

// layer_norm_grad's operands and gradients share one float type.
hrt.executable @layer_norm_grad_types symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 8]>
  %g = hrt.input "g" : !hrt.buffer<bf16, [2, 8]>
  %dx = hrt.output "dx" : !hrt.buffer<f32, [2, 8]>
  %dw = hrt.output "dw" : !hrt.buffer<f32, [8]>
  // expected-error @+1 {{grad_out and result element types differ ('bf16' vs 'f32')}}
  hrt.layer_norm_grad %x : !hrt.buffer<f32, [2, 8]> grad %g : !hrt.buffer<bf16, [2, 8]> into %dx : !hrt.buffer<f32, [2, 8]>, %dw : !hrt.buffer<f32, [8]>, %dw : !hrt.buffer<f32, [8]> {axis = -1 : i64, epsilon = 1.0e-5 : f64}
}

// -----

// activation_grad names an activation; its buffers share one float type
// and one shape.
hrt.executable @activation_grad_none symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 8]>
  %dx = hrt.output "dx" : !hrt.buffer<f32, [2, 8]>
  // expected-error @+1 {{'hrt.activation_grad' op needs an activation, got none}}
  hrt.activation_grad none %x : !hrt.buffer<f32, [2, 8]> grad %x : !hrt.buffer<f32, [2, 8]> into %dx : !hrt.buffer<f32, [2, 8]>
}

// -----

hrt.executable @activation_grad_types symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 8]>
  %g = hrt.input "g" : !hrt.buffer<bf16, [2, 8]>
  %dx = hrt.output "dx" : !hrt.buffer<f32, [2, 8]>
  // expected-error @+1 {{grad_out and result element types differ ('bf16' vs 'f32')}}
  hrt.activation_grad silu %x : !hrt.buffer<f32, [2, 8]> grad %g : !hrt.buffer<bf16, [2, 8]> into %dx : !hrt.buffer<f32, [2, 8]>
}

// -----

hrt.executable @activation_grad_ints symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<i32, [2, 8]>
  %dx = hrt.output "dx" : !hrt.buffer<i32, [2, 8]>
  // expected-error @+1 {{result must have float elements, got 'i32'}}
  hrt.activation_grad relu %x : !hrt.buffer<i32, [2, 8]> grad %x : !hrt.buffer<i32, [2, 8]> into %dx : !hrt.buffer<i32, [2, 8]>
}

// -----

hrt.executable @activation_grad_shapes symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 8]>
  %g = hrt.input "g" : !hrt.buffer<f32, ["2*n", 4]>
  %dx = hrt.output "dx" : !hrt.buffer<f32, [n, 8]>
  // expected-error @+1 {{'hrt.activation_grad' op grad_out '!hrt.buffer<f32, ["2*n", 4]>' must have the result's shape, '!hrt.buffer<f32, [n, 8]>'}}
  hrt.activation_grad gelu %x : !hrt.buffer<f32, [n, 8]> grad %g : !hrt.buffer<f32, ["2*n", 4]> into %dx : !hrt.buffer<f32, [n, 8]>
}

// -----

hrt.executable @group_no_member symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{needs at least one member}}
  "hrt.linear_group"(%a) <{feature_begins = array<i64>, feature_ends = array<i64>, operandSegmentSizes = array<i32: 0, 1, 0, 0>, transpose_weight = true}> : (!hrt.buffer<f32, [4, 8]>) -> ()
}

// -----

hrt.executable @group_results symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{has 1 results for 2 weights}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w, %w : !hrt.buffer<f32, [6, 8]>, !hrt.buffer<f32, [6, 8]>) features [0, 0] to [6, 6] into(%o : !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_biases symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{has 1 biases for 2 weights (one each, or none)}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w, %w : !hrt.buffer<f32, [6, 8]>, !hrt.buffer<f32, [6, 8]>) biases(%b : !hrt.buffer<f32, [6]>) features [0, 0] to [6, 6] into(%o, %o2 : !hrt.buffer<f32, [4, 6]>, !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_ranges symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{needs one feature range per member, got 1 begins and 2 ends for 2}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w, %w : !hrt.buffer<f32, [6, 8]>, !hrt.buffer<f32, [6, 8]>) features [0] to [6, 6] into(%o, %o2 : !hrt.buffer<f32, [4, 6]>, !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_dtype symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{weight and result element types differ ('bf16' vs 'f32')}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%h : !hrt.buffer<bf16, [6, 8]>) features [0] to [6] into(%o : !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_same_result symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 1 writes the buffer of an earlier member}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w, %w : !hrt.buffer<f32, [6, 8]>, !hrt.buffer<f32, [6, 8]>) features [0, 0] to [6, 6] into(%o, %o : !hrt.buffer<f32, [4, 6]>, !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_weight_rank symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 0's weight '!hrt.buffer<f32, [n]>' must be static and 2-D}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%x : !hrt.buffer<f32, [n]>) features [0] to [6] into(%o : !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @group_weight_k symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 0's weight '!hrt.buffer<f32, [6, 8]>' ([K, N]) does not take the input's 8 features}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w : !hrt.buffer<f32, [6, 8]>) features [0] to [6] into(%o : !hrt.buffer<f32, [4, 6]>) {transpose_weight = false}
}

// -----

hrt.executable @group_range symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 0's features [4, 7) are not a range of its weight's 6}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w : !hrt.buffer<f32, [6, 8]>) features [4] to [7] into(%o3 : !hrt.buffer<f32, [4, 3]>) {transpose_weight = true}
}

// -----

hrt.executable @group_bias_shape symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 0's bias '!hrt.buffer<f32, [3]>' must be [6], as its weight}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w : !hrt.buffer<f32, [6, 8]>) biases(%b3 : !hrt.buffer<f32, [3]>) features [0] to [3] into(%o3 : !hrt.buffer<f32, [4, 3]>) {transpose_weight = true}
}

// -----

hrt.executable @group_result_shape symbols ["n"] params read {
  %a = hrt.input "a" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %w = hrt.param "w" : !hrt.buffer<f32, [6, 8]>
  %h = hrt.param "h" : !hrt.buffer<bf16, [6, 8]>
  %b = hrt.param "b" : !hrt.buffer<f32, [6]>
  %b3 = hrt.param "b3" : !hrt.buffer<f32, [3]>
  %o = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o2 = hrt.alloc : !hrt.buffer<f32, [4, 6]>
  %o3 = hrt.alloc : !hrt.buffer<f32, [4, 3]>
  // expected-error @+1 {{member 0's result '!hrt.buffer<f32, [4, 6]>' must be the input's shape with 3 features}}
  hrt.linear_group %a : !hrt.buffer<f32, [4, 8]> weights(%w : !hrt.buffer<f32, [6, 8]>) features [3] to [6] into(%o : !hrt.buffer<f32, [4, 6]>) {transpose_weight = true}
}

// -----

hrt.executable @adamw_update_moment symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %m = hrt.alloc : !hrt.buffer<f32, [2, 2]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{exp_avg '!hrt.buffer<f32, [2, 2]>' must be the param's '!hrt.buffer<f32, [4]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %m : !hrt.buffer<f32, [2, 2]>, %p : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @adamw_update_scalar symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  %e = hrt.alloc : !hrt.buffer<f32, [2]>
  // expected-error @+1 {{eps must be f32 [1], got '!hrt.buffer<f32, [2]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %e : !hrt.buffer<f32, [2]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @adamw_update_bf16 symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<bf16, [4]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{param must be f32, got '!hrt.buffer<bf16, [4]>'}}
  hrt.adamw_update %p : !hrt.buffer<bf16, [4]>, %p : !hrt.buffer<bf16, [4]> moments %p : !hrt.buffer<bf16, [4]>, %p : !hrt.buffer<bf16, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<bf16, [4]>, %p : !hrt.buffer<bf16, [4]>, %p : !hrt.buffer<bf16, [4]>
}

// -----

hrt.executable @adamw_update_grad_i32 symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %g = hrt.alloc : !hrt.buffer<i32, [4]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{grad must be f32, bf16 or f16 of the param's shape, got '!hrt.buffer<i32, [4]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %g : !hrt.buffer<i32, [4]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @adamw_update_grad_shape symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %g = hrt.alloc : !hrt.buffer<bf16, [5]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{grad must be f32, bf16 or f16 of the param's shape, got '!hrt.buffer<bf16, [5]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %g : !hrt.buffer<bf16, [5]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @adamw_update_working_f32 symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %g = hrt.alloc : !hrt.buffer<bf16, [4]>
  %w = hrt.alloc : !hrt.buffer<f32, [4]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{working_param must be bf16 or f16 of the param's shape, got '!hrt.buffer<f32, [4]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %g : !hrt.buffer<bf16, [4]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> working %w : !hrt.buffer<f32, [4]>
}

// -----

hrt.executable @adamw_update_working_shape symbols [] params read {
  %p = hrt.alloc : !hrt.buffer<f32, [4]>
  %g = hrt.alloc : !hrt.buffer<bf16, [4]>
  %w = hrt.alloc : !hrt.buffer<bf16, [2, 2]>
  %s = hrt.alloc : !hrt.buffer<f32, [1]>
  // expected-error @+1 {{working_param must be bf16 or f16 of the param's shape, got '!hrt.buffer<bf16, [2, 2]>'}}
  hrt.adamw_update %p : !hrt.buffer<f32, [4]>, %g : !hrt.buffer<bf16, [4]> moments %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]>, %p : !hrt.buffer<f32, [4]> working %w : !hrt.buffer<bf16, [2, 2]>
}

// -----

hrt.executable @label_log_probs_result symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<bf16, [2, 8]>
  %l = hrt.input "l" : !hrt.buffer<i64, [2]>
  %y = hrt.output "y" : !hrt.buffer<bf16, [2]>
  // expected-error @+1 {{result must be f32, got 'bf16'}}
  hrt.label_log_probs %x : !hrt.buffer<bf16, [2, 8]>, %l : !hrt.buffer<i64, [2]> into %y : !hrt.buffer<bf16, [2]>
}

// -----

hrt.executable @label_log_probs_labels symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<bf16, [2, 8]>
  %l = hrt.input "l" : !hrt.buffer<f32, [2]>
  %y = hrt.output "y" : !hrt.buffer<f32, [2]>
  // expected-error @+1 {{labels must be i32 or i64, got 'f32'}}
  hrt.label_log_probs %x : !hrt.buffer<bf16, [2, 8]>, %l : !hrt.buffer<f32, [2]> into %y : !hrt.buffer<f32, [2]>
}

// -----

hrt.executable @label_log_probs_grad_types symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<bf16, [2, 8]>
  %l = hrt.input "l" : !hrt.buffer<i64, [2]>
  %g = hrt.input "g" : !hrt.buffer<f32, [2]>
  %dx = hrt.output "dx" : !hrt.buffer<f32, [2, 8]>
  // expected-error @+1 {{logits and result element types differ ('bf16' vs 'f32')}}
  hrt.label_log_probs_grad %x : !hrt.buffer<bf16, [2, 8]>, %l : !hrt.buffer<i64, [2]>, %g : !hrt.buffer<f32, [2]> into %dx : !hrt.buffer<f32, [2, 8]>
}

// -----

hrt.executable @embedding_grad_types symbols [] params read {
  %ids = hrt.input "ids" : !hrt.buffer<i64, [2]>
  %g = hrt.input "g" : !hrt.buffer<bf16, [2, 8]>
  %dt = hrt.output "dt" : !hrt.buffer<f32, [5, 8]>
  // expected-error @+1 {{grad_out and result element types differ ('bf16' vs 'f32')}}
  hrt.embedding_grad %ids : !hrt.buffer<i64, [2]>, %g : !hrt.buffer<bf16, [2, 8]> into %dt : !hrt.buffer<f32, [5, 8]>
}
