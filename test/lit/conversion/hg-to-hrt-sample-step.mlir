// convert-hg-to-hrt of hg.sample_step: one hrt.sample_step whose state
// results are the state buffers themselves (no alloc, no copy), unless an
// old value is read later (then tokens / logprobs start as a copy).
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// A decode step: every state result written in place.
// CHECK-LABEL: hrt.executable @decode
// CHECK-DAG: %[[LOGITS:.+]] = hrt.input "logits" : <bf16, [batch, 16]>
// CHECK-DAG: %[[TOKEN:.+]] = hrt.state "gen.token" read_write
// CHECK-DAG: %[[COUNT:.+]] = hrt.state "gen.count" read_write
// CHECK-DAG: %[[FIN:.+]] = hrt.state "gen.finished" read_write
// CHECK-DAG: %[[LEN:.+]] = hrt.state "gen.lengths" read_write
// CHECK-DAG: %[[CFG:.+]] = hrt.state "gen.config" read
// CHECK-DAG: %[[SMP:.+]] = hrt.state "gen.sampling" read
// CHECK-DAG: %[[RNG:.+]] = hrt.state "gen.rng" read_write
// CHECK-DAG: %[[TOKS:.+]] = hrt.state "gen.tokens" read_write
// CHECK-DAG: %[[LPS:.+]] = hrt.state "gen.logprobs" read_write
// CHECK-NOT: hrt.alloc
// CHECK: hrt.sample_step %[[LOGITS]] : <bf16, [batch, 16]>, %[[CFG]] : <i64, [4]>, %[[SMP]] : <f32, [3]>, %[[RNG]] : <i64, [2]> count %[[COUNT]] : <i64, [1]> finished %[[FIN]] : <i1, [batch]> lengths %[[LEN]] : <i64, [batch]> into %[[TOKEN]] : <i64, [batch]>, %[[TOKS]] : <i64, [batch, nmax]>, %[[LPS]] : <f32, [batch, nmax]>, %[[LEN]] : <i64, [batch]>, %[[FIN]] : <i1, [batch]>, %[[COUNT]] : <i64, [1]>, %[[RNG]] : <i64, [2]>
// CHECK-NOT: hrt.copy
module {
  func.func @decode(%logits: tensor<?x16xbf16> {hg.name = "logits", hg.dims = ["batch", ""]},
                    %token: tensor<?xi64> {hg.state = "gen.token", hg.dims = ["batch"]},
                    %count: tensor<1xi64> {hg.state = "gen.count"},
                    %finished: tensor<?xi1> {hg.state = "gen.finished", hg.dims = ["batch"]},
                    %lengths: tensor<?xi64> {hg.state = "gen.lengths", hg.dims = ["batch"]},
                    %config: tensor<4xi64> {hg.state = "gen.config"},
                    %sampling: tensor<3xf32> {hg.state = "gen.sampling"},
                    %rng: tensor<2xi64> {hg.state = "gen.rng"},
                    %tokens: tensor<?x?xi64> {hg.state = "gen.tokens", hg.dims = ["batch", "nmax"]},
                    %logprobs: tensor<?x?xf32> {hg.state = "gen.logprobs", hg.dims = ["batch", "nmax"]})
      -> (tensor<?x?xi64> {hg.state = "gen.tokens"}, tensor<?x?xf32> {hg.state = "gen.logprobs"},
          tensor<?xi64> {hg.state = "gen.lengths"}, tensor<?xi1> {hg.state = "gen.finished"},
          tensor<?xi64> {hg.state = "gen.token"}, tensor<1xi64> {hg.state = "gen.count"},
          tensor<2xi64> {hg.state = "gen.rng"}) {
    %t, %ts, %lp, %len, %fin, %c, %r = hg.sample_step %logits, %config, %sampling, %rng count %count finished %finished lengths %lengths tokens %tokens logprobs %logprobs : (tensor<?x16xbf16>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<?xi1>, tensor<?xi64>, tensor<?x?xi64>, tensor<?x?xf32>) -> (tensor<?xi64>, tensor<?x?xi64>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xi1>, tensor<1xi64>, tensor<2xi64>)
    return %ts, %lp, %len, %fin, %t, %c, %r : tensor<?x?xi64>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xi1>, tensor<?xi64>, tensor<1xi64>, tensor<2xi64>
  }
}

// -----

// A new generation (prefill): count, finished and lengths start from
// constants; their new values still go straight into the state.
// CHECK-LABEL: hrt.executable @prefill
// CHECK-DAG: %[[COUNT:.+]] = hrt.state "gen.count" read_write
// CHECK-DAG: %[[FIN:.+]] = hrt.state "gen.finished" read_write
// CHECK-DAG: %[[LEN:.+]] = hrt.state "gen.lengths" read_write
// CHECK-DAG: %[[ZERO:.+]] = hrt.constant dense<0> : tensor<1xi64> : <i64, [1]>
// CHECK: hrt.sample_step {{.+}} count %[[ZERO]] : <i64, [1]> finished %{{.+}} into {{.+}}, %[[LEN]] : <i64, [batch]>, %[[FIN]] : <i1, [batch]>, %[[COUNT]] : <i64, [1]>, %{{.+}}
// CHECK-NOT: hrt.copy
module {
  func.func @prefill(%logits: tensor<?x16xf32> {hg.name = "logits", hg.dims = ["batch", ""]},
                     %token: tensor<?xi64> {hg.state = "gen.token", hg.dims = ["batch"]},
                     %count: tensor<1xi64> {hg.state = "gen.count"},
                     %finished: tensor<?xi1> {hg.state = "gen.finished", hg.dims = ["batch"]},
                     %lengths: tensor<?xi64> {hg.state = "gen.lengths", hg.dims = ["batch"]},
                     %config: tensor<4xi64> {hg.state = "gen.config"},
                     %sampling: tensor<3xf32> {hg.state = "gen.sampling"},
                     %rng: tensor<2xi64> {hg.state = "gen.rng"},
                     %tokens: tensor<?x?xi64> {hg.state = "gen.tokens", hg.dims = ["batch", "nmax"]},
                     %logprobs: tensor<?x?xf32> {hg.state = "gen.logprobs", hg.dims = ["batch", "nmax"]})
      -> (tensor<?x?xi64> {hg.state = "gen.tokens"}, tensor<?x?xf32> {hg.state = "gen.logprobs"},
          tensor<?xi64> {hg.state = "gen.lengths"}, tensor<?xi1> {hg.state = "gen.finished"},
          tensor<?xi64> {hg.state = "gen.token"}, tensor<1xi64> {hg.state = "gen.count"},
          tensor<2xi64> {hg.state = "gen.rng"}) {
    %zero = hg.constant dense<0> : tensor<1xi64>
    %no = hg.constant dense<false> : tensor<1xi1>
    %none = hg.broadcast_to %no ["batch"] : tensor<1xi1> -> tensor<?xi1>
    %empty = hg.broadcast_to %zero ["batch"] : tensor<1xi64> -> tensor<?xi64>
    %t, %ts, %lp, %len, %fin, %c, %r = hg.sample_step %logits, %config, %sampling, %rng count %zero finished %none lengths %empty tokens %tokens logprobs %logprobs : (tensor<?x16xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<?xi1>, tensor<?xi64>, tensor<?x?xi64>, tensor<?x?xf32>) -> (tensor<?xi64>, tensor<?x?xi64>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xi1>, tensor<1xi64>, tensor<2xi64>)
    return %ts, %lp, %len, %fin, %t, %c, %r : tensor<?x?xi64>, tensor<?x?xf32>, tensor<?xi64>, tensor<?xi1>, tensor<?xi64>, tensor<1xi64>, tensor<2xi64>
  }
}

// -----

// The old tokens are also an output: the new ones start as their copy in
// a buffer of their own, copied into the state after the output took the
// old ones.
// CHECK-LABEL: hrt.executable @shown
// CHECK: %[[TOKS:.+]] = hrt.state "gen.tokens" read_write
// CHECK: %[[OUT:.+]] = hrt.output "before"
// CHECK: %[[NEW:.+]] = hrt.alloc : <i64, [batch, nmax]>
// CHECK: hrt.copy %[[TOKS]] : <i64, [batch, nmax]> into %[[NEW]]
// CHECK: hrt.sample_step {{.+}} into %{{.+}}, %[[NEW]] : <i64, [batch, nmax]>,
// CHECK: hrt.copy %[[TOKS]] : <i64, [batch, nmax]> into %[[OUT]]
// CHECK: hrt.copy %[[NEW]] : <i64, [batch, nmax]> into %[[TOKS]]
module {
  func.func @shown(%logits: tensor<2x16xf32> {hg.name = "logits"},
                   %count: tensor<1xi64> {hg.state = "gen.count"},
                   %finished: tensor<2xi1> {hg.state = "gen.finished"},
                   %lengths: tensor<2xi64> {hg.state = "gen.lengths"},
                   %config: tensor<4xi64> {hg.state = "gen.config"},
                   %sampling: tensor<3xf32> {hg.state = "gen.sampling"},
                   %rng: tensor<2xi64> {hg.state = "gen.rng"},
                   %tokens: tensor<?x?xi64> {hg.state = "gen.tokens", hg.dims = ["batch", "nmax"]},
                   %logprobs: tensor<?x?xf32> {hg.state = "gen.logprobs", hg.dims = ["batch", "nmax"]})
      -> (tensor<?x?xi64> {hg.state = "gen.tokens"}, tensor<?x?xi64> {hg.name = "before"}) {
    %t, %ts, %lp, %len, %fin, %c, %r = hg.sample_step %logits, %config, %sampling, %rng count %count finished %finished lengths %lengths tokens %tokens logprobs %logprobs : (tensor<2x16xf32>, tensor<4xi64>, tensor<3xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi1>, tensor<2xi64>, tensor<?x?xi64>, tensor<?x?xf32>) -> (tensor<2xi64>, tensor<?x?xi64>, tensor<?x?xf32>, tensor<2xi64>, tensor<2xi1>, tensor<1xi64>, tensor<2xi64>)
    return %ts, %tokens : tensor<?x?xi64>, tensor<?x?xi64>
  }
}
