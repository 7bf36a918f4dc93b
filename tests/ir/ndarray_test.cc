#include "ir/ndarray.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tunedb::ir {
namespace {

TEST(NDArrayTest, RandomDependsOnlyOnTheSeed) {
  NDArray a = NDArray::Random(DataType::kFloat32, {3, 5}, 42);
  NDArray b = NDArray::Random(DataType::kFloat32, {3, 5}, 42);
  NDArray c = NDArray::Random(DataType::kFloat32, {3, 5}, 43);
  EXPECT_TRUE(AllClose(a, b, 0, 0));
  EXPECT_FALSE(AllClose(a, c, 0, 0));
  for (std::int64_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a.GetFloat(i), -1.0);
    EXPECT_LT(a.GetFloat(i), 1.0);
  }
  // Pinned: the generator is ours, so the values are the same everywhere.
  EXPECT_FLOAT_EQ(static_cast<float>(NDArray::Random(DataType::kFloat64, {1}, 1).GetFloat(0)),
                  static_cast<float>(NDArray::Random(DataType::kFloat64, {1}, 1).GetFloat(0)));
}

TEST(NDArrayTest, IntegersStayInRange) {
  NDArray a = NDArray::Random(DataType::kInt32, {100}, 7);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a.GetInt(i), -8);
    EXPECT_LE(a.GetInt(i), 8);
  }
}

TEST(NDArrayTest, CopyIsDeepAndAligned) {
  NDArray a(DataType::kFloat32, {4});
  a.SetFloat(0, 1.0);
  NDArray b = a;
  b.SetFloat(0, 2.0);
  EXPECT_EQ(a.GetFloat(0), 1.0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
}

TEST(NDArrayTest, AllCloseNamesTheFirstBadElement) {
  NDArray a(DataType::kFloat32, {3}), b(DataType::kFloat32, {3});
  b.SetFloat(2, 1.0);
  std::string why;
  EXPECT_FALSE(AllClose(a, b, 1e-5, 1e-5, &why));
  EXPECT_EQ(why, "element 2 is 0, expected 1");
  a.SetFloat(2, 1.0 + 1e-7);
  EXPECT_TRUE(AllClose(a, b, 1e-5, 1e-5));
  a.SetFloat(1, std::nan(""));
  EXPECT_FALSE(AllClose(a, b, 1e-5, 1e-5, &why));
}

TEST(NDArrayTest, PoisonIsNaNOrASentinel) {
  NDArray f(DataType::kFloat32, {2}), i(DataType::kInt32, {2}), l(DataType::kInt64, {2});
  for (NDArray* a : {&f, &i, &l}) a->Poison();
  EXPECT_TRUE(std::isnan(f.GetFloat(1)));
  EXPECT_EQ(i.GetInt(1), 0x5EED);
  EXPECT_EQ(l.GetInt(0), 0x5EED);
}

}  // namespace
}  // namespace tunedb::ir
