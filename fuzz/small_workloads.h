// The programs the schedule fuzz targets schedule: small shapes of the
// library's kinds of computation (a reduction, a fused layer, padded and
// strided convolutions, a softmax's chain of stages, a batch), so that the
// interpreter checks every accepted schedule in well under a millisecond.
#pragma once

#include <string>
#include <vector>

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
    return w;
  }();
  return workloads;
}

}  // namespace tunedb::fuzz
