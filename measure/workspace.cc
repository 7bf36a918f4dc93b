#include "measure/workspace.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <vector>

namespace tunedb::measure {
namespace {

struct Block {
  void* data;
  std::int64_t bytes;
};

class WorkspaceCache {
 public:
  ~WorkspaceCache() {
    for (const Block& b : cached_) std::free(b.data);
  }

  void* Allocate(std::int64_t bytes) {
    ++requests_;
    const std::int64_t rounded = (std::max<std::int64_t>(bytes, 1) + 63) / 64 * 64;
    std::size_t best = cached_.size();
    for (std::size_t i = 0; i < cached_.size(); ++i) {
      const std::int64_t have = cached_[i].bytes;
      if (have >= rounded && have / 2 <= rounded && (best == cached_.size() || have < cached_[best].bytes)) best = i;
    }
    Block b;
    if (best < cached_.size()) {
      b = cached_[best];
      cached_.erase(cached_.begin() + static_cast<std::ptrdiff_t>(best));
      cached_bytes_ -= b.bytes;
    } else {
      b = {std::aligned_alloc(64, static_cast<std::size_t>(rounded)), rounded};
      if (!b.data && !cached_.empty()) {
        Release(0);  // what this thread keeps may be what the system lacks
        b.data = std::aligned_alloc(64, static_cast<std::size_t>(rounded));
      }
      if (!b.data) return nullptr;
      ++system_allocations_;
    }
    in_use_[b.data] = b.bytes;
    return b.data;
  }

  void Free(void* data) {
    if (!data) return;
    auto it = in_use_.find(data);
    if (it == in_use_.end()) {
      std::free(data);  // not from this thread's cache; never happens in generated code
      return;
    }
    cached_.push_back({data, it->second});
    cached_bytes_ += it->second;
    in_use_.erase(it);
    Release(kWorkspaceCacheBytes);
  }

  WorkspaceStats Stats() const { return {cached_bytes_, requests_, system_allocations_}; }

 private:
  // Frees the oldest cached blocks until the cache holds at most `limit`.
  void Release(std::int64_t limit) {
    std::size_t n = 0;
    while (n < cached_.size() && cached_bytes_ > limit) {
      std::free(cached_[n].data);
      cached_bytes_ -= cached_[n].bytes;
      ++n;
    }
    cached_.erase(cached_.begin(), cached_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  std::vector<Block> cached_;  // oldest first
  std::unordered_map<void*, std::int64_t> in_use_;
  std::int64_t cached_bytes_ = 0;
  std::int64_t requests_ = 0;
  std::int64_t system_allocations_ = 0;
};

thread_local WorkspaceCache workspace;

}  // namespace

WorkspaceStats ThisThreadWorkspace() { return workspace.Stats(); }

}  // namespace tunedb::measure

extern "C" void* tunedb_workspace_alloc(std::int64_t bytes) { return tunedb::measure::workspace.Allocate(bytes); }

extern "C" void tunedb_workspace_free(void* block) { tunedb::measure::workspace.Free(block); }
