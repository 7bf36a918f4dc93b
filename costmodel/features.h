// Features of a lowered program for the cost model, in the spirit of TVM's
// PerStoreFeature: one row per buffer the program stores to, describing the
// computation that produces it, its loop context and its memory accesses.
//
// The columns are listed, with their meaning, by FeatureColumns() and in
// docs/COSTMODEL.md. kFeatureVersion changes whenever a column does; a
// saved model records the version it was trained with and refuses others.
//
// Counts are log2(1 + x) transformed, x being a count weighted by the number
// of times the statement runs (the product of its enclosing loop extents).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/stmt.h"

namespace tunedb::costmodel {

inline constexpr int kFeatureVersion = 4;

struct FeatureColumn {
  std::string name;
  std::string meaning;
};
const std::vector<FeatureColumn>& FeatureColumns();
std::size_t NumFeatures();
// The position of a column by name; throws std::out_of_range for no such column.
std::size_t FeatureIndex(std::string_view name);

using FeatureRow = std::vector<float>;

// `lowered` is the output of measure::Lower().
std::vector<FeatureRow> ExtractFeatures(const ir::PrimFunc& lowered);

}  // namespace tunedb::costmodel
