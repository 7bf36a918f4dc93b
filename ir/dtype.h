// Scalar data types of the tensor IR.
//
// The set is deliberately small: float32 is the type every workload uses and
// every later stage (codegen, features) must support; the others exist for
// index arithmetic (int32/int64), double-precision references (float64) and
// conditions (bool).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tunedb::ir {

// The numeric values are part of the structural hash: add types at the end.
enum class DataType : std::uint8_t { kFloat32, kFloat64, kInt32, kInt64, kBool };

// TVM's spelling: "float32", "float64", "int32", "int64", "bool".
std::string_view DataTypeName(DataType dtype);

// Accepts TVM's names and the short forms f32, f64, i32, i64.
// Throws IrError naming the text when it is not a data type.
DataType ParseDataType(std::string_view text);

inline bool IsFloat(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat64; }
inline bool IsInt(DataType t) { return t == DataType::kInt32 || t == DataType::kInt64; }

// Bytes one element occupies in a buffer (bool takes one byte).
int DataTypeBytes(DataType dtype);

// Whether a finite double rounds to a float32 that is neither infinite nor,
// for a value other than 0, zero: what the readers of written constants
// check, since FloatImm rounds without a word.
bool Float32Holds(double value);

}  // namespace tunedb::ir
