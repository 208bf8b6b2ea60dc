// The version CMake passes in (HYBRIDC_RUNTIME_VERSION, from project()).
#include "hybrid/RuntimeVersion.h"

namespace hybrid {

const char *runtimeVersion() { return HYBRIDC_RUNTIME_VERSION; }

} // namespace hybrid
