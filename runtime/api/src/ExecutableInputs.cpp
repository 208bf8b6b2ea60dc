// Reading an executable's inputs from a safetensors file.
#include "hybrid/ExecutableInputs.h"

namespace hybrid {

NamedTensors readExecutableInputs(const Executable &exe,
                                  const SafeTensorsFile &file) {
  NamedTensors inputs;
  for (size_t i = 0; i < exe.inputNames().size(); ++i) {
    const std::string &name = exe.inputNames()[i];
    const SafeTensorsEntry *e = file.find(name);
    if (!e && exe.desc().inputs[i].defaultValue)
      continue; // filled with its default (e.g. a mask of ones)
    if (!e)
      throw Error(file.path() + ": no tensor '" + name + "' (the bundle's " +
                  exe.name() + " takes " + exe.describeInput(i) + ")");
    std::optional<DType> dt = toDType(e->dtype);
    if (!dt)
      throw Error(file.path() + ": tensor '" + name + "' is " +
                  safeTensorsDTypeName(e->dtype) + "; " + exe.name() +
                  " takes " + exe.describeInput(i));
    inputs.emplace(name, file.toHost(*e, *dt));
  }
  return inputs;
}

} // namespace hybrid
