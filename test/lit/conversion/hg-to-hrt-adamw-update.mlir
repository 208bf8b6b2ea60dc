// convert-hg-to-hrt of hg.adamw_update: one hrt.adamw_update whose moments
// and master are their state buffers (updated in place: no alloc, no copy)
// unless an old value is read later; a parameter's new value is copied
// into it after the command, as every parameter write is.
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// A bf16 parameter's f32 master and moments updated in place; a cast
// (hg-sgd's, or IR written so) writes the working weight.
// CHECK-LABEL: hrt.executable @step
// CHECK-DAG: %[[W:.+]] = hrt.param "w" : <bf16, [3, 5]>
// CHECK-DAG: %[[MASTER:.+]] = hrt.state "opt.master.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <f32, [3, 5]>
// CHECK-DAG: %[[B1:.+]] = hrt.input "beta1" : <f32, [1]>
// CHECK-DAG: %[[B2:.+]] = hrt.input "beta2" : <f32, [1]>
// CHECK-DAG: %[[EPS:.+]] = hrt.input "eps" : <f32, [1]>
// CHECK-DAG: %[[SIZE:.+]] = hrt.input "step_size" : <f32, [1]>
// CHECK-DAG: %[[ROOT:.+]] = hrt.input "root" : <f32, [1]>
// CHECK-DAG: %[[DECAY:.+]] = hrt.input "decay" : <f32, [1]>
// CHECK-NOT: hrt.alloc {{.*}}<f32
// CHECK: hrt.adamw_update %[[MASTER]] : <f32, [3, 5]>, %[[G]] : <f32, [3, 5]> moments %[[M]] : <f32, [3, 5]>, %[[V]] : <f32, [3, 5]> betas %[[B1]] : <f32, [1]>, %[[B2]] : <f32, [1]> eps %[[EPS]] : <f32, [1]> step_size %[[SIZE]] : <f32, [1]> bias_correction2_sqrt %[[ROOT]] : <f32, [1]> decay_factor %[[DECAY]] : <f32, [1]> into %[[MASTER]] : <f32, [3, 5]>, %[[M]] : <f32, [3, 5]>, %[[V]] : <f32, [3, 5]>
// CHECK: %[[WORKING:.+]] = hrt.alloc : <bf16, [3, 5]>
// CHECK: hrt.cast %[[MASTER]] : <f32, [3, 5]> into %[[WORKING]]
// CHECK: hrt.copy %[[WORKING]] : <bf16, [3, 5]> into %[[W]]
// CHECK-NOT: hrt.copy
module {
  func.func @step(%w: tensor<3x5xbf16> {hg.param = "w"},
                  %master: tensor<3x5xf32> {hg.state = "opt.master.w"},
                  %m: tensor<3x5xf32> {hg.state = "opt.exp_avg.w"},
                  %v: tensor<3x5xf32> {hg.state = "opt.exp_avg_sq.w"},
                  %g: tensor<3x5xf32> {hg.name = "g"},
                  %b1: tensor<1xf32> {hg.name = "beta1"},
                  %b2: tensor<1xf32> {hg.name = "beta2"},
                  %eps: tensor<1xf32> {hg.name = "eps"},
                  %size: tensor<1xf32> {hg.name = "step_size"},
                  %root: tensor<1xf32> {hg.name = "root"},
                  %decay: tensor<1xf32> {hg.name = "decay"})
      -> (tensor<3x5xf32> {hg.state = "opt.exp_avg.w"},
          tensor<3x5xf32> {hg.state = "opt.exp_avg_sq.w"},
          tensor<3x5xf32> {hg.state = "opt.master.w"},
          tensor<3x5xbf16> {hg.param = "w"}) {
    %p2, %m2, %v2 = hg.adamw_update %master, %g moments %m, %v betas %b1, %b2 eps %eps step_size %size bias_correction2_sqrt %root decay_factor %decay : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
    %w2 = hg.cast %p2 : tensor<3x5xf32> -> tensor<3x5xbf16>
    return %m2, %v2, %p2, %w2 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>
  }
}

// -----

// Mixed precision as hg-adamw emits it: the update reads the bf16 gradient
// as it is and writes the working weight (a buffer of its own, as a cast's
// result was, copied into the parameter); no cast before or after it.
// CHECK-LABEL: hrt.executable @train_step
// CHECK-DAG: %[[W:.+]] = hrt.param "w" : <bf16, [3, 5]>
// CHECK-DAG: %[[MASTER:.+]] = hrt.state "opt.master.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write : <f32, [3, 5]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <bf16, [3, 5]>
// CHECK-NOT: hrt.cast
// CHECK: %[[WORKING:.+]] = hrt.alloc : <bf16, [3, 5]>
// CHECK-NOT: hrt.cast
// CHECK: hrt.adamw_update %[[MASTER]] : <f32, [3, 5]>, %[[G]] : <bf16, [3, 5]> moments %[[M]] : <f32, [3, 5]>, %[[V]] : <f32, [3, 5]> {{.+}} into %[[MASTER]] : <f32, [3, 5]>, %[[M]] : <f32, [3, 5]>, %[[V]] : <f32, [3, 5]> working %[[WORKING]] : !hrt.buffer<bf16, [3, 5]>
// CHECK-NOT: hrt.cast
// CHECK: hrt.copy %[[WORKING]] : <bf16, [3, 5]> into %[[W]]
// CHECK-NOT: hrt.copy
module {
  func.func @train_step(%w: tensor<3x5xbf16> {hg.param = "w"},
                        %master: tensor<3x5xf32> {hg.state = "opt.master.w"},
                        %m: tensor<3x5xf32> {hg.state = "opt.exp_avg.w"},
                        %v: tensor<3x5xf32> {hg.state = "opt.exp_avg_sq.w"},
                        %g: tensor<3x5xbf16> {hg.name = "g"},
                        %s: tensor<1xf32> {hg.name = "s"})
      -> (tensor<3x5xf32> {hg.state = "opt.exp_avg.w"},
          tensor<3x5xf32> {hg.state = "opt.exp_avg_sq.w"},
          tensor<3x5xf32> {hg.state = "opt.master.w"},
          tensor<3x5xbf16> {hg.param = "w"}) {
    %p2, %m2, %v2, %w2 = hg.adamw_update %master, %g moments %m, %v betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working bf16 : (tensor<3x5xf32>, tensor<3x5xbf16>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>)
    return %m2, %v2, %p2, %w2 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>
  }
}

// -----

// An f32 parameter: the update reads it and writes a workspace buffer,
// copied into the parameter at the end. A moment whose old value is read
// after the update (here: returned) is not updated in place.
// CHECK-LABEL: hrt.executable @step
// CHECK-DAG: %[[W:.+]] = hrt.param "w" : <f32, [7]>
// CHECK-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write : <f32, [7]>
// CHECK-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write : <f32, [7]>
// CHECK: %[[NEXT:.+]] = hrt.alloc : <f32, [7]>
// CHECK: %[[M2:.+]] = hrt.alloc : <f32, [7]>
// CHECK: hrt.adamw_update %[[W]] : <f32, [7]>, %{{.+}} moments %[[M]] : <f32, [7]>, %[[V]] : <f32, [7]> {{.+}} into %[[NEXT]] : <f32, [7]>, %[[M2]] : <f32, [7]>, %[[V]] : <f32, [7]>
// CHECK: hrt.copy %[[M]] : <f32, [7]> into %{{.+}}
// CHECK: hrt.copy %[[M2]] : <f32, [7]> into %[[M]]
// CHECK: hrt.copy %[[NEXT]] : <f32, [7]> into %[[W]]
module {
  func.func @step(%w: tensor<7xf32> {hg.param = "w"},
                  %m: tensor<7xf32> {hg.state = "opt.exp_avg.w"},
                  %v: tensor<7xf32> {hg.state = "opt.exp_avg_sq.w"},
                  %g: tensor<7xf32> {hg.name = "g"},
                  %s: tensor<1xf32> {hg.name = "s"})
      -> (tensor<7xf32> {hg.state = "opt.exp_avg.w"},
          tensor<7xf32> {hg.state = "opt.exp_avg_sq.w"},
          tensor<7xf32> {hg.param = "w"},
          tensor<7xf32> {hg.name = "old_exp_avg"}) {
    %p2, %m2, %v2 = hg.adamw_update %w, %g moments %m, %v betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>)
    return %m2, %v2, %p2, %m : tensor<7xf32>, tensor<7xf32>, tensor<7xf32>, tensor<7xf32>
  }
}
