// Host copies of an engine's state buffers, by what they hold.
//
// The gradient accumulators, the f32 master weights and the optimizer state
// a checkpoint keeps; and putting saved state back.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/HostTensor.h"

#include <string>

namespace hybrid {

// Every function waits for the device (the copies cross the API edge) and
// uses the engine as its one thread at a time must.

/// State `name`, copied to the host. Throws hybrid::Error when the bundle
/// has no such state or it is not allocated.
HostTensor copyStateToHost(Engine &engine, const std::string &name);

/// Allocates state `name` with `value`'s shape and copies `value` into it.
/// Throws hybrid::Error for a state the bundle does not have or a value of
/// another dtype.
void copyStateFromHost(Engine &engine, const std::string &name,
                       const HostTensor &value);

/// The gradient accumulators as "grad.<parameter>" (f32; with f16 weights,
/// times the loss scale, as step() reads them): what the (forward)backward
/// calls since the last step added up.
NamedTensors accumulatedGradients(Engine &engine);

/// The f32 master copies of bf16 / f16 weights, "opt.master.<parameter>";
/// empty for f32 weights or before the optimizer started.
NamedTensors masterWeights(Engine &engine);

/// The moving average of the weights (Engine::enableEma) under the
/// parameters' names, f32; empty when it is not enabled.
NamedTensors emaWeights(Engine &engine);
/// What resuming the optimizer needs, by state name: every allocated
/// "opt." state but the gradient accumulators (moments, masters, loss
/// scale, step count).
NamedTensors optimizerState(Engine &engine);

} // namespace hybrid
