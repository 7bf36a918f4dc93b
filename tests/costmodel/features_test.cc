#include "costmodel/features.h"

#include <cmath>

#include <gtest/gtest.h>

#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workloads.h"
#include "measure/lower.h"

namespace tunedb::costmodel {
namespace {

std::size_t Col(const std::string& name) { return FeatureIndex(name); }

float L(double x) { return static_cast<float>(std::log2(1 + x)); }

// The feature rows of a workload scheduled by a schedule script.
std::vector<FeatureRow> ScheduledRows(const std::string& workload, const std::string& script) {
  ir::Schedule sch(ir::BuildWorkload(workload).func, 0);
  ir::RunScheduleScript(sch, script);
  return ExtractFeatures(measure::Lower(sch.func()));
}

TEST(FeaturesTest, HandCheckedMatmul) {
  ir::PrimFunc f = measure::Lower(ir::BuildWorkload("matmul:M=4,N=4,K=4").func);
  std::vector<FeatureRow> rows = ExtractFeatures(f);
  ASSERT_EQ(rows.size(), 1u);  // one stored buffer: C
  const FeatureRow& r = rows[0];
  ASSERT_EQ(r.size(), NumFeatures());
  EXPECT_FLOAT_EQ(r[Col("float_mad")], L(64));    // C = C + A * B, 64 times
  EXPECT_FLOAT_EQ(r[Col("float_mul")], L(0));     // the multiply is part of the MAD
  EXPECT_FLOAT_EQ(r[Col("num_loops")], 3);
  EXPECT_FLOAT_EQ(r[Col("loop_prod")], L(64));
  EXPECT_FLOAT_EQ(r[Col("stores_in_row")], 2);    // the init and the update
  EXPECT_FLOAT_EQ(r[Col("vec_num")], 0);
  EXPECT_FLOAT_EQ(r[Col("vec_implicit")], 0);     // k, innermost, does not move C: a reduction
  // Buffers by bytes: C (two stores and a load per iteration), then A and B.
  EXPECT_FLOAT_EQ(r[Col("buf0_kind")], 3);
  EXPECT_FLOAT_EQ(r[Col("buf0_bytes")], L(3 * 4 * 64));
  EXPECT_FLOAT_EQ(r[Col("buf0_reuse_type")], 1);   // k does not move C[i, j]
  EXPECT_FLOAT_EQ(r[Col("buf0_reuse_count")], L(4));
  EXPECT_FLOAT_EQ(r[Col("buf0_unique_bytes")], L(16 * 4));
  // A[i * 4 + k]: read, 64 accesses, 16 distinct elements, reused across j,
  // walked contiguously by the innermost loop.
  EXPECT_FLOAT_EQ(r[Col("buf1_kind")], 1);
  EXPECT_FLOAT_EQ(r[Col("buf1_bytes")], L(4 * 64));
  EXPECT_FLOAT_EQ(r[Col("buf1_unique_bytes")], L(16 * 4));
  EXPECT_FLOAT_EQ(r[Col("buf1_reuse_distance")], L(4));  // j's reuse is 4 iterations (of k) apart
  EXPECT_FLOAT_EQ(r[Col("buf1_innermost_contiguous")], 1);
  EXPECT_FLOAT_EQ(r[Col("buf2_stride")], L(4));          // B[k * 4 + j]: k strides by a row
  EXPECT_FLOAT_EQ(r[Col("buf3_kind")], 0);               // no fourth buffer
  EXPECT_FLOAT_EQ(r[Col("total_flops")], L(128));
  EXPECT_FLOAT_EQ(r[Col("work_per_lane")], L(64));       // nothing vectorized or parallel
}

TEST(FeaturesTest, ScheduleChangesTheFeatures) {
  ir::PrimFunc f = ir::BuildWorkload("matmul:M=32,N=32,K=32").func;
  ir::Schedule sch(f, 0);
  ir::RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(i, j0, k, j1)
sch.vectorize(j1)
sch.parallel(i)
c = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(c, j0)
)");
  std::vector<FeatureRow> rows = ExtractFeatures(measure::Lower(sch.func()));
  ASSERT_EQ(rows.size(), 2u);  // C_local and C
  EXPECT_FLOAT_EQ(rows[0][Col("vec_num")], 1);
  EXPECT_FLOAT_EQ(rows[0][Col("vec_len")], L(16));
  EXPECT_FLOAT_EQ(rows[0][Col("vec_pos")], 1);
  EXPECT_FLOAT_EQ(rows[0][Col("parallel_num")], 1);
  EXPECT_FLOAT_EQ(rows[0][Col("alloc_local")], 1);  // the accumulator was compacted inside a loop
  // 32 x 32 x 32 updates over 16 lanes and 32 parallel iterations of i.
  EXPECT_FLOAT_EQ(rows[0][Col("work_per_lane")], L(32.0 * 32 * 32 / (16 * 32)));
}

// i1 (unrolled, 4) x j1 (vectorized, 16) under k: the register tile of a
// 4 x 16 block of C, accumulated across k.
TEST(FeaturesTest, RegisterTileOfAnUnrolledVectorizedBlock) {
  std::vector<FeatureRow> rows = ScheduledRows("matmul:M=32,N=32,K=32", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[None, 4])
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(i0, j0, k, i1, j1)
sch.unroll(i1)
sch.vectorize(j1)
)");
  ASSERT_EQ(rows.size(), 1u);
  const FeatureRow& r = rows[0];
  EXPECT_FLOAT_EQ(r[Col("tile_steps")], L(64));
  EXPECT_FLOAT_EQ(r[Col("tile_ops")], L(4));         // one multiply-add per element, 16 lanes a vector
  EXPECT_FLOAT_EQ(r[Col("tile_registers")], L(4));   // C's 4 vectors stay across k (its load shares them)
  EXPECT_FLOAT_EQ(r[Col("tile_stores")], L(0));
  EXPECT_FLOAT_EQ(r[Col("tile_loads")], L(4 + 1));   // A: a broadcast per row of the block; B: one vector
  EXPECT_FLOAT_EQ(r[Col("tile_memory_per_op")], 5.0f / 4);
  EXPECT_FLOAT_EQ(r[Col("tile_outer_extent")], L(32));

  // With k inside the tile (unrolled too), nothing stays across the loop
  // around it (j0 moves C): every access is loaded or stored.
  const FeatureRow r2 = ScheduledRows("matmul:M=32,N=32,K=32", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 16])
k0, k1 = sch.split(k, factors=[None, 2])
sch.reorder(i, j0, k0, k1, j1)
sch.unroll(k1)
sch.vectorize(j1)
)").at(0);
  EXPECT_FLOAT_EQ(r2[Col("tile_steps")], L(32));
  EXPECT_FLOAT_EQ(r2[Col("tile_registers")], L(1));  // C[i, j1] is the same across k0
  EXPECT_FLOAT_EQ(r2[Col("tile_loads")], L(2 + 2));  // A: two broadcasts (k1), B: two vectors
}

// A serial innermost loop that walks the stored buffer contiguously is
// vectorized by LLVM's loop vectorizer (codegen_test checks that it is):
// the features count it as vectorized, and say it is LLVM's doing.
TEST(FeaturesTest, AnInnermostLoopThatMovesTheStoreIsVectorizedByLlvm) {
  const FeatureRow r = ScheduledRows("matmul:M=32,N=32,K=32", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
sch.reorder(i, k, j)
)").at(0);
  EXPECT_FLOAT_EQ(r[Col("vec_implicit")], 1);
  EXPECT_FLOAT_EQ(r[Col("vec_num")], 1);
  EXPECT_FLOAT_EQ(r[Col("vec_len")], L(32));
  EXPECT_FLOAT_EQ(r[Col("vec_pos")], 1);
  EXPECT_FLOAT_EQ(r[Col("serial_prod")], L(32 * 32));  // i and k
  EXPECT_FLOAT_EQ(r[Col("work_per_lane")], L(32 * 32));
  // The tile is j: 32 multiply-adds in 2 vectors; A broadcast, B two
  // vectors; C's two vectors are not moved by k, around the tile.
  EXPECT_FLOAT_EQ(r[Col("tile_ops")], L(2));
  EXPECT_FLOAT_EQ(r[Col("tile_loads")], L(1 + 2));
  EXPECT_FLOAT_EQ(r[Col("tile_registers")], L(2));

  // The rule leaves out loops shorter than 4 (LLVM may still make 2-lane
  // vectors of them; counting them ranked no better), and every loop when
  // the schedule vectorized one itself.
  const FeatureRow short_loop = ScheduledRows("matmul:M=32,N=32,K=32", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 2])
sch.reorder(i, j0, k, j1)
)").at(0);
  EXPECT_FLOAT_EQ(short_loop[Col("vec_implicit")], 0);
  EXPECT_FLOAT_EQ(short_loop[Col("vec_num")], 0);
  const FeatureRow explicit_loop = ScheduledRows("matmul:M=32,N=32,K=32", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(i, k, j0, j1)
sch.vectorize(j1)
)").at(0);
  EXPECT_FLOAT_EQ(explicit_loop[Col("vec_implicit")], 0);
  EXPECT_FLOAT_EQ(explicit_loop[Col("vec_len")], L(16));
}

// A fused loop makes an index non-linear in that loop only: the other
// loops keep their coefficients (strides, reuse), as without the fusion.
TEST(FeaturesTest, AFusedLoopLeavesTheOtherLoopsStrides) {
  const FeatureRow r = ScheduledRows("matmul:M=16,N=16,K=16", R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
ij = sch.fuse(i, j)
sch.parallel(ij)
)").at(0);
  // Buffers by bytes: C, then A[(ij // 16) * 16 + k], then B[k * 16 + ij % 16].
  EXPECT_FLOAT_EQ(r[Col("buf1_stride")], L(1));
  EXPECT_FLOAT_EQ(r[Col("buf1_innermost_contiguous")], 1);
  EXPECT_FLOAT_EQ(r[Col("buf2_stride")], L(16));
  EXPECT_FLOAT_EQ(r[Col("buf2_reuse_type")], 0);  // ij moves it (as a non-linear part), k too
  EXPECT_FLOAT_EQ(r[Col("buf0_reuse_type")], 1);  // k does not move C
}

TEST(FeaturesTest, ColumnsAreDocumentedAndUnique) {
  std::set<std::string> names;
  for (const FeatureColumn& c : FeatureColumns()) {
    EXPECT_FALSE(c.meaning.empty()) << c.name;
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
  }
  EXPECT_EQ(kFeatureVersion, 4);
  EXPECT_THROW(FeatureIndex("no_such_column"), std::out_of_range);
}

}  // namespace
}  // namespace tunedb::costmodel
