#include "ir/dtype.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

TEST(DtypeTest, NamesRoundTrip) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    EXPECT_EQ(ParseDataType(DataTypeName(t)), t);
  }
  EXPECT_EQ(ParseDataType("f32"), DataType::kFloat32);
  EXPECT_EQ(ParseDataType("i64"), DataType::kInt64);
  EXPECT_THROW(ParseDataType("float16"), IrError);
}

TEST(DtypeTest, Sizes) {
  EXPECT_EQ(DataTypeBytes(DataType::kFloat32), 4);
  EXPECT_EQ(DataTypeBytes(DataType::kFloat64), 8);
  EXPECT_EQ(DataTypeBytes(DataType::kBool), 1);
  EXPECT_TRUE(IsFloat(DataType::kFloat64));
  EXPECT_TRUE(IsInt(DataType::kInt32));
  EXPECT_FALSE(IsInt(DataType::kBool));
}

}  // namespace
}  // namespace tunedb::ir
