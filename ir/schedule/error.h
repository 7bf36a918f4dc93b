// The error of schedule primitives, traces and schedule scripts.
#pragma once

#include "ir/error.h"

namespace tunedb::ir {

class ScheduleError : public IrError {
 public:
  using IrError::IrError;
};

}  // namespace tunedb::ir
