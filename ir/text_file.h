// Reading a whole file that a user named (a workload, a schedule script, a
// design space, a token), with the reason when it cannot be read.
#pragma once

#include <string>

namespace tunedb::ir {

// Returns false, with why (such as "it is a directory" or "No such file or
// directory"), where the file cannot be read. An ifstream opens a
// directory on Linux and reads it as empty, which made a directory given
// for a schedule script an empty schedule.
bool ReadWholeFile(const std::string& path, std::string* text, std::string* why);

}  // namespace tunedb::ir
