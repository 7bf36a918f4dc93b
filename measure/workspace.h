// Workspace for compiled kernels: the intermediate buffers too large for
// the stack (code generation keeps up to 1 MiB there) come from a cache of
// this thread's freed blocks, as TVM's kernels take theirs from its
// workspace pool.
//
// Why: a kernel runs many times (timing repeats, a model's every call),
// and each run allocates and frees the same buffers. glibc's malloc hands
// a freed block of megabytes back to the system once the free space at the
// top of its heap passes its trim threshold, and the next run faults every
// page of it in again, zeroed. An elementwise chain with three 4 MiB
// intermediates took 3.9-5.1 ms a run so, 0.29-0.34 ms from this cache
// (bench/RESULTS.md, session 80): timings that ranked kernels keeping an
// intermediate buffer behind ones that recompute it.
//
// Each thread has its own cache (a buffer is allocated and freed by the
// thread that runs its scope), so no lock is taken. A request takes the
// smallest cached block that holds it and is at most twice its size; a
// freed block joins the cache, and the oldest cached blocks are released
// while the cache holds more than kWorkspaceCacheBytes.
#pragma once

#include <cstdint>

extern "C" {
// A block of at least `bytes` bytes, aligned to 64 bytes, or null when the
// system has no memory left even after this thread's cache is released.
void* tunedb_workspace_alloc(std::int64_t bytes);
// Returns a block of tunedb_workspace_alloc to this thread's cache.
void tunedb_workspace_free(void* block);
}

namespace tunedb::measure {

inline constexpr std::int64_t kWorkspaceCacheBytes = std::int64_t{256} << 20;

// This thread's cache: the bytes it holds (freed blocks kept for reuse),
// and since the thread started, the blocks asked of it and those of them
// it took from the system.
struct WorkspaceStats {
  std::int64_t cached_bytes = 0;
  std::int64_t requests = 0;
  std::int64_t system_allocations = 0;
};
WorkspaceStats ThisThreadWorkspace();

}  // namespace tunedb::measure
