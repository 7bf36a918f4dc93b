// The subcommands of the `tunedb` executable. Each Add*Command registers a
// subcommand with its options and the callback that runs it. Callbacks
// throw on failure; main() turns exceptions into one-line messages and exit
// codes (2 for bad input, 1 for other failures).
#pragma once

#include <CLI/CLI.hpp>

namespace tunedb::cli {

// Bad input from the user (spec, file, option value): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void AddWorkloadsCommand(CLI::App& app);
void AddShowCommand(CLI::App& app);

}  // namespace tunedb::cli
