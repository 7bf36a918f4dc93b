// The one exception type of the IR module. Messages are written for users:
// they name the construct that is wrong and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace tunedb::ir {

class IrError : public std::runtime_error {
 public:
  explicit IrError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tunedb::ir
