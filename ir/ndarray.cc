#include "ir/ndarray.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "ir/error.h"
#include "ir/mix.h"

namespace tunedb::ir {

void NDArray::Free::operator()(void* p) const { std::free(p); }

NDArray::NDArray(DataType dtype, std::vector<std::int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(1) {
  for (std::int64_t d : shape_) {
    if (d < 0) throw IrError("NDArray: negative dimension");
    size_ *= d;
  }
  std::size_t n = (bytes() + 63) / 64 * 64;
  data_.reset(std::aligned_alloc(64, n == 0 ? 64 : n));
  if (!data_) throw IrError("NDArray: out of memory allocating " + std::to_string(n) + " bytes");
  std::memset(data_.get(), 0, n == 0 ? 64 : n);
}

NDArray::NDArray(const NDArray& other) : NDArray(other.dtype_, other.shape_) {
  std::memcpy(data_.get(), other.data_.get(), bytes());
}

NDArray& NDArray::operator=(const NDArray& other) {
  if (this != &other) *this = NDArray(other);
  return *this;
}

NDArray NDArray::Random(DataType dtype, std::vector<std::int64_t> shape, std::uint64_t seed) {
  NDArray a(dtype, std::move(shape));
  // splitmix64: a tiny generator whose sequence is fixed by the seed alone,
  // on every platform and standard library.
  std::uint64_t state = seed;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::int64_t i = 0; i < a.size_; ++i) {
    std::uint64_t r = next();
    if (IsFloat(dtype)) {
      a.SetFloat(i, static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    } else if (dtype == DataType::kBool) {
      a.SetInt(i, static_cast<std::int64_t>(r & 1));
    } else {
      a.SetInt(i, static_cast<std::int64_t>(r % 17) - 8);
    }
  }
  return a;
}

NDArray NDArray::RandomIndices(DataType dtype, std::vector<std::int64_t> shape, std::uint64_t seed, std::int64_t lo,
                               std::int64_t hi) {
  NDArray a(dtype, std::move(shape));
  // hi - lo + 1 in unsigned arithmetic: 0 stands for all 2^64 values.
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < a.size_; ++i) {
    state += kGoldenGamma;
    const std::uint64_t r = span == 0 ? Mix64(state) : Mix64(state) % span;
    a.SetInt(i, static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + r));
  }
  return a;
}

double NDArray::GetFloat(std::int64_t i) const {
  switch (dtype_) {
    case DataType::kFloat32: return static_cast<const float*>(data_.get())[i];
    case DataType::kFloat64: return static_cast<const double*>(data_.get())[i];
    default: return static_cast<double>(GetInt(i));
  }
}

void NDArray::SetFloat(std::int64_t i, double v) {
  switch (dtype_) {
    case DataType::kFloat32: static_cast<float*>(data_.get())[i] = static_cast<float>(v); return;
    case DataType::kFloat64: static_cast<double*>(data_.get())[i] = v; return;
    default: SetInt(i, static_cast<std::int64_t>(v));
  }
}

std::int64_t NDArray::GetInt(std::int64_t i) const {
  switch (dtype_) {
    case DataType::kInt32: return static_cast<const std::int32_t*>(data_.get())[i];
    case DataType::kInt64: return static_cast<const std::int64_t*>(data_.get())[i];
    case DataType::kBool: return static_cast<const std::uint8_t*>(data_.get())[i];
    default: return static_cast<std::int64_t>(GetFloat(i));
  }
}

void NDArray::SetInt(std::int64_t i, std::int64_t v) {
  switch (dtype_) {
    case DataType::kInt32: static_cast<std::int32_t*>(data_.get())[i] = static_cast<std::int32_t>(v); return;
    case DataType::kInt64: static_cast<std::int64_t*>(data_.get())[i] = v; return;
    case DataType::kBool: static_cast<std::uint8_t*>(data_.get())[i] = v != 0; return;
    default: SetFloat(i, static_cast<double>(v));
  }
}

void NDArray::Fill(double v) {
  for (std::int64_t i = 0; i < size_; ++i) SetFloat(i, v);
}

void NDArray::Poison() {
  if (IsFloat(dtype_)) {
    Fill(std::numeric_limits<double>::quiet_NaN());
  } else {
    for (std::int64_t i = 0; i < size_; ++i) SetInt(i, 0x5EED);
  }
}

bool AllClose(const NDArray& actual, const NDArray& expected, double rtol, double atol,
              std::string* why) {
  auto fail = [&](const std::string& message) {
    if (why) *why = message;
    return false;
  };
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return fail("shape or dtype differs");
  }
  for (std::int64_t i = 0; i < actual.size(); ++i) {
    double a = actual.GetFloat(i), e = expected.GetFloat(i);
    bool ok = std::isnan(e) ? std::isnan(a)
              : std::isinf(e) ? a == e
                              : std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok) {
      std::ostringstream m;
      m.precision(9);
      m << "element " << i << " is " << a << ", expected " << e;
      return fail(m.str());
    }
  }
  return true;
}

}  // namespace tunedb::ir
