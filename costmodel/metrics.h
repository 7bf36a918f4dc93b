// Ranking metrics of a cost model on held-out records.
#pragma once

#include <cstddef>
#include <vector>

#include "costmodel/model.h"

namespace tunedb::costmodel {

// Fraction of pairs within a group (with different labels) that the scores
// order like the labels; 0.5 when there is no such pair (their number in
// *pairs, if given).
double PairwiseAccuracy(const std::vector<double>& scores, const std::vector<double>& labels,
                        const std::vector<int>& groups, std::size_t* pairs = nullptr);

// TenSet's top-k score, averaged over groups: the best label among the k
// highest-scored candidates of a group, divided by the group's best label.
double TopKScore(const std::vector<double>& scores, const std::vector<double>& labels, const std::vector<int>& groups,
                 int k);

// a-peak@k (Ansor): the same with k = 32, averaged over groups.
inline double APeak32(const std::vector<double>& scores, const std::vector<double>& labels,
                      const std::vector<int>& groups) {
  return TopKScore(scores, labels, groups, 32);
}

// All four metrics of a model on labelled samples (zeros when there are none).
struct RankingMetrics {
  double pairwise = 0, top1 = 0, top5 = 0, apeak32 = 0;
  std::size_t samples = 0;
  std::size_t pairs = 0;  // behind `pairwise`: with none, it says nothing
};
RankingMetrics Evaluate(const CostModel& model, const std::vector<Sample>& samples);
// The same for given scores (one per sample), e.g. a heuristic's.
RankingMetrics EvaluateScores(const std::vector<double>& scores, const std::vector<Sample>& samples);

}  // namespace tunedb::costmodel
