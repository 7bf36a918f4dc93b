// NDArray: a dense, row-major, 64-byte aligned array of one data type.
//
// It is the value that flows in and out of programs: the interpreter and,
// later, compiled kernels read and write NDArrays. Copies are deep.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tunedb::ir {

class NDArray {
 public:
  NDArray() = default;
  NDArray(DataType dtype, std::vector<std::int64_t> shape);  // zero-filled
  NDArray(const NDArray& other);
  NDArray& operator=(const NDArray& other);
  NDArray(NDArray&&) noexcept = default;
  NDArray& operator=(NDArray&&) noexcept = default;

  // Uniform values from an explicit seed: floats in [-1, 1), integers in
  // [-8, 8], bools 0/1. The sequence depends only on the seed.
  static NDArray Random(DataType dtype, std::vector<std::int64_t> shape, std::uint64_t seed);
  // Uniform integers in lo..hi (inclusive) from an explicit seed: values
  // that keep an index into another tensor inside its dimension. `dtype` is
  // an integer type holding both ends.
  static NDArray RandomIndices(DataType dtype, std::vector<std::int64_t> shape, std::uint64_t seed, std::int64_t lo,
                               std::int64_t hi);

  DataType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t size() const { return size_; }
  std::size_t bytes() const { return static_cast<std::size_t>(size_) * DataTypeBytes(dtype_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }

  // Element access by flat index, converting to and from double / int64.
  double GetFloat(std::int64_t i) const;
  void SetFloat(std::int64_t i, double v);
  std::int64_t GetInt(std::int64_t i) const;
  void SetInt(std::int64_t i, std::int64_t v);

  // Every element v; for an integer array v must be a whole number in its
  // range (converting NaN to an integer is undefined behaviour).
  void Fill(double v);
  // Every element a value that no computation is expected to leave there:
  // NaN in a float array, 0x5EED in an integer one (0xED in a bool one).
  // Outputs start this way before a check, so that an element never
  // written shows up as a mismatch; NaN would do that for floats only.
  void Poison();

 private:
  struct Free {
    void operator()(void* p) const;
  };
  DataType dtype_ = DataType::kFloat32;
  std::vector<std::int64_t> shape_;
  std::int64_t size_ = 0;
  std::unique_ptr<void, Free> data_;
};

// True when every element satisfies |actual - expected| <= atol + rtol * |expected|
// (and NaN only where expected is NaN). Otherwise false, with `why` naming
// the first bad element and both values.
bool AllClose(const NDArray& actual, const NDArray& expected, double rtol, double atol,
              std::string* why = nullptr);

}  // namespace tunedb::ir
