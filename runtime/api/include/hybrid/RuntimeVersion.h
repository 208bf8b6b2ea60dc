// The hybridc release this library was built as.
//
// CMake's project version, the one the installed package
// (find_package(hybridc)) declares.
#pragma once

namespace hybrid {

/// "MAJOR.MINOR.PATCH".
const char *runtimeVersion();

} // namespace hybrid
