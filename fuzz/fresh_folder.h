// A folder of a fuzz target's own for the files it writes, in /dev/shm
// where there is one (a target that writes a database per input would
// otherwise spend its time on the disk).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace tunedb::fuzz {

// An empty folder named for the target and this process.
inline std::filesystem::path FreshFolder(const std::string& target) {
  namespace fs = std::filesystem;
  const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path dir = base / ("tunedb-fuzz-" + target + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Removes a folder when it is destroyed: at exit, for a static. A static
// is destroyed before the statics built ahead of it, so a target builds
// this after what must outlive the folder's files and before what must
// be gone first (a server serving a file there).
struct RemovedAtExit {
  std::filesystem::path dir;
  ~RemovedAtExit() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace tunedb::fuzz
