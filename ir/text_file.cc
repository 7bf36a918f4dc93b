#include "ir/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tunedb::ir {

bool ReadWholeFile(const std::string& path, std::string* text, std::string* why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *why = "it is a directory";
    return false;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = errno != 0 ? std::strerror(errno) : "it cannot be opened";
    return false;
  }
  std::stringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    *why = "reading it failed";
    return false;
  }
  *text = content.str();
  return true;
}

std::string_view WithoutByteOrderMark(std::string_view text) {
  constexpr std::string_view kMark = "\xEF\xBB\xBF";
  if (text.substr(0, kMark.size()) == kMark) text.remove_prefix(kMark.size());
  return text;
}

}  // namespace tunedb::ir
