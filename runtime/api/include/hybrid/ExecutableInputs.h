// An executable call's inputs, read by name from a safetensors file.
//
// Every input the executable declares, converted to its dtype; those with a
// default value may be absent.
#pragma once

#include "hybrid/Executable.h"
#include "hybrid/HostTensor.h"
#include "hybrid/SafeTensors.h"

namespace hybrid {

/// The tensors of `file` that `exe` takes, by name; tensors it does not
/// take are ignored, inputs with a default may be absent (the call fills
/// them). Throws hybrid::Error naming the file, the tensor and what the
/// executable takes: a missing input, or one whose dtype does not convert.
NamedTensors readExecutableInputs(const Executable &exe,
                                  const SafeTensorsFile &file);

} // namespace hybrid
