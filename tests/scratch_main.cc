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
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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

}  // namespace

int main(int argc, char** argv) {
  std::string pattern = ScratchParent() + "/tunedb-test-XXXXXX";
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
      std::fprintf(stderr, "tests: kept the test files in %s\n", dir.c_str());
    } else {
      std::error_code ignored;  // a file still open elsewhere must not fail a passing run
      std::filesystem::remove_all(dir, ignored);
    }
  }
  return result;
}
