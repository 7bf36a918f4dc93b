#include "ir/structural.h"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/te.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

using te::ReduceOp;
using te::Vars;

// The same program with every variable and buffer renamed.
PrimFunc Renamed(const PrimFunc& f) {
  nlohmann::json j = nlohmann::json::parse(ProgramToJson(f));
  int n = 0;
  for (auto& v : j["vars"]) v["name"] = "renamed_var_" + std::to_string(n++);
  for (auto& b : j["buffers"]) b["name"] = "renamed_buf_" + std::to_string(n++);
  j["name"] = "other_name";
  return ProgramFromJson(j.dump());
}

TEST(StructuralTest, HashesArePinned) {
  // These values must never change: they key every stored tuning record.
  // A change here is a database format change.
  EXPECT_EQ(WorkloadHash(BuildWorkload("matmul:M=512,N=512,K=512").func), "5619735522150682802");
  EXPECT_EQ(WorkloadHash(BuildWorkload("matmul:M=128,N=128,K=128").func), "10585040584529532313");
  EXPECT_EQ(WorkloadHash(BuildWorkload("dense_bias_relu").func), "10577439279814215460");
  EXPECT_EQ(WorkloadHash(BuildWorkload("conv2d_nhwc").func), "16623182432388230610");
}

TEST(StructuralTest, RenamingChangesNothing) {
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    PrimFunc f = BuildWorkload(def.name).func;
    PrimFunc g = Renamed(f);
    EXPECT_TRUE(StructuralEqual(f, g)) << def.name;
    EXPECT_EQ(StructuralHash(f), StructuralHash(g)) << def.name;
  }
}

TEST(StructuralTest, BuildingTwiceGivesEqualPrograms) {
  EXPECT_TRUE(StructuralEqual(BuildWorkload("conv2d_nhwc").func, BuildWorkload("conv2d_nhwc").func));
}

TEST(StructuralTest, AllBuiltinsAreDistinct) {
  std::set<std::uint64_t> hashes;
  for (const WorkloadDef& def : BuiltinWorkloads()) hashes.insert(StructuralHash(BuildWorkload(def.name).func));
  EXPECT_EQ(hashes.size(), BuiltinWorkloads().size());
}

// A matmul-like program with one aspect changed at a time.
struct Variant {
  std::int64_t m = 8;
  DataType dtype = DataType::kFloat32;
  bool transpose_a = false;
  bool add_instead_of_mul = false;
  ReduceOp op = ReduceOp::kSum;
  std::string block = "C";
};

PrimFunc Build(const Variant& v) {
  te::Builder b;
  auto A = b.Placeholder("A", {v.m, 8}, v.dtype);
  auto B = b.Placeholder("B", {8, 8}, v.dtype);
  auto C = b.Reduce(v.block, {{"i", v.m}, {"j", 8}}, v.op, {{"k", 8}}, [&](const Vars& s, const Vars& r) {
    Expr a = v.transpose_a && v.m == 8 ? A(r[0], s[0]) : A(s[0], r[0]);
    return v.add_instead_of_mul ? a + B(r[0], s[1]) : a * B(r[0], s[1]);
  });
  return b.Build({A, B, C});
}

TEST(StructuralTest, EveryRealChangeChangesTheHash) {
  PrimFunc base = Build({});
  std::vector<std::pair<std::string, Variant>> changes;
  Variant v;
  v.m = 16;
  changes.push_back({"shape", v});
  v = {};
  v.dtype = DataType::kFloat64;
  changes.push_back({"dtype", v});
  v = {};
  v.transpose_a = true;
  changes.push_back({"index expression", v});
  v = {};
  v.add_instead_of_mul = true;
  changes.push_back({"operator", v});
  v = {};
  v.op = ReduceOp::kMax;
  changes.push_back({"reduction kind", v});
  v = {};
  v.block = "D";
  changes.push_back({"block name", v});
  for (const auto& [what, variant] : changes) {
    PrimFunc changed = Build(variant);
    EXPECT_FALSE(StructuralEqual(base, changed)) << what;
    EXPECT_NE(StructuralHash(base), StructuralHash(changed)) << what;
  }
}

TEST(StructuralTest, ScheduleLevelChangesChangeTheHash) {
  PrimFunc base = BuildWorkload("matmul:M=8,N=8,K=8").func;
  PrimFunc parallel = Clone(base);
  static_cast<ForNode&>(*parallel.root().body).for_kind = ForKind::kParallel;
  EXPECT_NE(StructuralHash(base), StructuralHash(parallel));
  PrimFunc annotated = Clone(base);
  static_cast<ForNode&>(*annotated.root().body).annotations["pragma_auto_unroll_max_step"] = std::int64_t{16};
  EXPECT_NE(StructuralHash(base), StructuralHash(annotated));
}

TEST(StructuralTest, SharingStructureMatters) {
  // X[i] * X[i] vs X[i] * Y[i]: same shapes, different buffer identity.
  te::Builder b1;
  auto X1 = b1.Placeholder("X", {4});
  auto Y1 = b1.Placeholder("Y", {4});
  auto Z1 = b1.Compute("Z", {{"i", 4}}, [&](const Vars& s) { return X1(s[0]) * X1(s[0]); });
  te::Builder b2;
  auto X2 = b2.Placeholder("X", {4});
  auto Y2 = b2.Placeholder("Y", {4});
  auto Z2 = b2.Compute("Z", {{"i", 4}}, [&](const Vars& s) { return X2(s[0]) * Y2(s[0]); });
  EXPECT_FALSE(StructuralEqual(b1.Build({X1, Y1, Z1}), b2.Build({X2, Y2, Z2})));
}

}  // namespace
}  // namespace tunedb::ir
