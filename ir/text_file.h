// Reading a whole file that a user named (a workload, a schedule script, a
// design space, a token), with the reason when it cannot be read.
#pragma once

#include <string>
#include <string_view>

namespace tunedb::ir {

// Returns false, with why (such as "it is a directory" or "No such file or
// directory"), where the file cannot be read. An ifstream opens a
// directory on Linux and reads it as empty, which made a directory given
// for a schedule script an empty schedule.
bool ReadWholeFile(const std::string& path, std::string* text, std::string* why);

// `text` without the UTF-8 byte-order mark that some editors (Windows
// Notepad) put first: the readers of workload texts and schedule scripts
// would take it for a character they do not know, at 1:1.
std::string_view WithoutByteOrderMark(std::string_view text);

}  // namespace tunedb::ir
