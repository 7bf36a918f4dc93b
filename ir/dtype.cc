#include "ir/dtype.h"

#include <cmath>

#include "ir/error.h"

namespace tunedb::ir {

std::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kBool: return "bool";
  }
  return "?";
}

DataType ParseDataType(std::string_view text) {
  if (text == "float32" || text == "f32") return DataType::kFloat32;
  if (text == "float64" || text == "f64") return DataType::kFloat64;
  if (text == "int32" || text == "i32") return DataType::kInt32;
  if (text == "int64" || text == "i64") return DataType::kInt64;
  if (text == "bool") return DataType::kBool;
  throw IrError("unknown data type '" + std::string(text) +
                "' (expected float32, float64, int32, int64 or bool)");
}

int DataTypeBytes(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: case DataType::kInt32: return 4;
    case DataType::kFloat64: case DataType::kInt64: return 8;
    case DataType::kBool: return 1;
  }
  return 0;
}

bool Float32Holds(double value) {
  const float f = static_cast<float>(value);
  return !std::isinf(f) && (f != 0 || value == 0);
}

}  // namespace tunedb::ir
