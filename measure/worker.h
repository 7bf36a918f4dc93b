// The measuring worker: the process side of runner.h. Reads one JSON
// request per line on `in`, answers one JSON line per request on `out`.
// Internal to measure.
#pragma once

#include <cstdio>

namespace tunedb::measure {

// Returns the process exit code.
int RunWorker(std::FILE* in, std::FILE* out);

}  // namespace tunedb::measure
