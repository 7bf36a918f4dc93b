// The test executables' main: GoogleTest's, run inside a scratch directory
// of this process's own, removed when the tests end.
//
// Tests write databases, logs and exported files under
// ::testing::TempDir(). Written straight into /tmp, every ctest run left
// some thirty files behind (ctest runs each test in a process of its own,
// so names carry the pid and never meet again). GoogleTest reads
// TEST_TMPDIR on every TempDir() call, so pointing it at a private
// directory moves every file a test writes there, and the processes a test
// starts (the CLI, forked writers, servers) inherit it.
//
// TUNEDB_KEEP_TEST_FILES=1 keeps the directory and prints where it is.
//
// A process that crashes cannot remove its directory. Its name carries the
// pid, so a later test process removes the directories of processes that
// are gone, once they have been left alone for an hour (a pid seen from
// another pid namespace sharing /tmp may look gone while it runs).
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

std::string ScratchParent() {
  for (const char* name : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "/tmp";
}

constexpr const char* kPrefix = "tunedb-test-";
constexpr const char* kKeepMark = ".kept";  // TUNEDB_KEEP_TEST_FILES=1 asked for this one

// Directories "tunedb-test-PID-XXXXXX" under `parent` whose process has
// ended and that nothing touched for an hour, except those kept on purpose.
void RemoveLeftBehind(const std::string& parent) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !entry.is_directory(ec)) continue;
    const std::string rest = name.substr(std::char_traits<char>::length(kPrefix));
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789") != dash) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running, or not ours to ask about
    if (fs::exists(entry.path() / kKeepMark, ec) || entry.last_write_time(ec) > an_hour_ago || ec) continue;
    fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

int main(int argc, char** argv) {
  RemoveLeftBehind(ScratchParent());
  std::string pattern = ScratchParent() + "/" + kPrefix + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    std::perror(("tests: cannot make a scratch directory " + pattern).c_str());
    return 2;
  }
  const std::string dir = buffer.data();
  // mkdtemp makes it 0700; tests that drop to user nobody (permission
  // checks bind only there) must still reach their files inside, as they
  // did in /tmp.
  ::chmod(dir.c_str(), 0755);
  ::setenv("TEST_TMPDIR", dir.c_str(), 1);
  // A forked child that returns through here must not remove the directory
  // its parent is still using.
  const pid_t owner = ::getpid();

  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();

  if (::getpid() == owner) {
    const char* keep = std::getenv("TUNEDB_KEEP_TEST_FILES");
    if (keep != nullptr && std::string(keep) == "1") {
      std::ofstream(dir + "/" + kKeepMark) << "kept by TUNEDB_KEEP_TEST_FILES=1\n";
      std::fprintf(stderr, "tests: kept the test files in %s\n", dir.c_str());
    } else {
      std::error_code ignored;  // a file still open elsewhere must not fail a passing run
      std::filesystem::remove_all(dir, ignored);
    }
  }
  return result;
}
