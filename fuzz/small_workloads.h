// The programs the schedule fuzz targets schedule: small shapes of the
// library's kinds of computation (a reduction, a fused layer, padded and
// strided convolutions, a softmax's chain of stages, a batch, and five
// written ones whose vector lanes code generation loads in its own ways: an
// upsampling's repeated lanes, a pooling window's strided ones, rows read
// backwards, an operand read transposed, whose unrolled blocks go through
// registers, and a concatenation, whose seam versioning copies three
// ways; and a written product divided by row sums computed before it, whose
// division reads two intermediates, as attention's O / Z does), so that
// the interpreter checks every accepted schedule in well under a
// millisecond.
#pragma once

#include <string>
#include <vector>

#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::fuzz {

struct SmallWorkload {
  std::string spec;
  ir::PrimFunc func;
};

inline const std::vector<SmallWorkload>& SmallWorkloads() {
  static const std::vector<SmallWorkload> workloads = [] {
    std::vector<SmallWorkload> w;
    for (const char* spec : {"matmul:M=12,N=10,K=8", "dense_bias_relu:B=6,IN=10,OUT=4",
                             "conv2d_nhwc:N=1,H=6,W=5,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1", "softmax:M=4,N=12",
                             "depthwise_conv2d_nhwc:N=1,H=6,W=6,C=3,KH=3,KW=3,stride=2,pad=1", "reduce_sum:M=6,N=16",
                             "batch_matmul:B=2,M=6,N=4,K=5"}) {
      w.push_back({spec, ir::BuildWorkload(spec).func});
    }
    const char* upsample = "input X: f32[2, 3, 5]\nY[c, h in 6, w in 15] = X[c, h / 2, w / 3]\n";
    w.push_back({"upsample (written)", ir::ParseWorkloadText(upsample, "upsample")});
    const char* pool =
        "input X: f32[2, 6, 12]\n"
        "M[c, h in 3, w in 6] = max(r in 2, s in 2) X[c, 2 * h + r, 2 * w + s]\n"
        "Y[c, h, w] = M[c, h, w] * 0.5\n";
    w.push_back({"max_pool (written)", ir::ParseWorkloadText(pool, "max_pool")});
    const char* reversed = "input X: f32[3, 23]\nY[c, w in 12] = X[c, 11 - w] - X[c, 22 - 2 * w]\n";
    w.push_back({"reversed rows (written)", ir::ParseWorkloadText(reversed, "reversed_rows")});
    const char* concatenated = "input A: f32[3, 5]\ninput B: f32[3, 9]\nY[c, j in 14] = j < 5 ? A[c, j] : B[c, j - 5]\n";
    w.push_back({"concatenation (written)", ir::ParseWorkloadText(concatenated, "concatenation")});
    const char* transposed = "input A: f32[8, 12]\ninput B: f32[12, 8]\nC[i, j] = A[i, j] - B[j, i] * 2.0\n";
    w.push_back({"A - B^T (written)", ir::ParseWorkloadText(transposed, "a_minus_bt")});
    const char* divided =
        "input X: f32[4, 6]\ninput W: f32[5, 6]\n"
        "Z[i] = sum(k in 6) X[i, k]\n"
        "O[i, j] = sum(k in 6) X[i, k] * W[j, k]\n"
        "Y[i, j] = O[i, j] / (Z[i] + 8.0)\n";
    w.push_back({"product over row sums (written)", ir::ParseWorkloadText(divided, "product_over_row_sums")});
    return w;
  }();
  return workloads;
}

}  // namespace tunedb::fuzz
