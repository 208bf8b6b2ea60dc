// Anchors the hg transforms library (passes register through Passes.h).
#include "dialects/hg/Transforms/Passes.h"
