// tunedb-worker: builds, verifies and times candidates for a Runner in
// another process (see runner.h). Not meant to be run by hand.
#include <cstdio>

#include "measure/worker.h"

int main() { return tunedb::measure::RunWorker(stdin, stdout); }
