// The runtime that compiled kernels call: a process-wide thread pool for
// parallel loops.
//
// One pool per process, created on first use with one thread per target
// core (the calling thread included), a static partition of the
// iterations that balances work growing along them (runtime.cc), no
// thread creation per call. Idle workers spin briefly, then yield the
// core between looks, then sleep, so a kernel that runs a parallel loop
// every few microseconds does not pay a wake-up each time, and a machine
// with more runnable threads than cores still makes progress. Nested parallel loops never reach the pool: code
// generation runs a parallel loop inside another one serially.
#pragma once

#include <cstdint>

extern "C" {
// Runs task(closure, begin, end) over [0, extent), each thread over its
// parts of it (runtime.cc: threads^3 parts, spread so that work growing
// along the iterations is shared evenly; one chunk each for a shorter
// loop), and returns when every part is done.
void tunedb_parallel_for(void (*task)(void* closure, std::int64_t begin, std::int64_t end), void* closure,
                         std::int64_t extent);
}

namespace tunedb::measure {

// The number of threads parallel loops use (the pool is rebuilt if it
// changes). Default: the number of cores the process may run on.
void SetParallelThreads(int threads);
int ParallelThreads();

// Idle pool threads sleep now instead of spinning for a while. A measuring
// worker calls it when it hands the cores to another worker: threads
// spinning in one process take a core from the other's kernel, whose
// statically partitioned parallel loop then waits for its slowest thread
// (20 us matmuls measured 350 us that way, run after run).
void ParkParallelThreads();

}  // namespace tunedb::measure
