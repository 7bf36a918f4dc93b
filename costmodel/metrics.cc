#include "costmodel/metrics.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace tunedb::costmodel {

double PairwiseAccuracy(const std::vector<double>& scores, const std::vector<double>& labels,
                        const std::vector<int>& groups, std::size_t* pairs_out) {
  std::map<int, std::vector<std::size_t>> by_group;
  for (std::size_t i = 0; i < groups.size(); ++i) by_group[groups[i]].push_back(i);
  double right = 0, pairs = 0;
  for (const auto& [g, idx] : by_group) {
    (void)g;
    for (std::size_t a = 0; a < idx.size(); ++a) {
      for (std::size_t b = a + 1; b < idx.size(); ++b) {
        double dl = labels[idx[a]] - labels[idx[b]];
        if (dl == 0) continue;
        double ds = scores[idx[a]] - scores[idx[b]];
        pairs += 1;
        if ((dl > 0 && ds > 0) || (dl < 0 && ds < 0)) right += 1;
        else if (ds == 0) right += 0.5;
      }
    }
  }
  if (pairs_out) *pairs_out = static_cast<std::size_t>(pairs);
  return pairs > 0 ? right / pairs : 0.5;
}

double TopKScore(const std::vector<double>& scores, const std::vector<double>& labels, const std::vector<int>& groups,
                 int k) {
  std::map<int, std::vector<std::size_t>> by_group;
  for (std::size_t i = 0; i < groups.size(); ++i) by_group[groups[i]].push_back(i);
  double total = 0;
  int counted = 0;
  for (auto& [g, idx] : by_group) {
    (void)g;
    double best = 0;
    for (std::size_t i : idx) best = std::max(best, labels[i]);
    if (best <= 0) continue;
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
    double found = 0;
    for (std::size_t i = 0; i < idx.size() && static_cast<int>(i) < k; ++i) found = std::max(found, labels[idx[i]]);
    total += found / best;
    ++counted;
  }
  return counted ? total / counted : 0;
}

RankingMetrics EvaluateScores(const std::vector<double>& scores, const std::vector<Sample>& samples) {
  RankingMetrics m;
  m.samples = samples.size();
  if (samples.empty()) return m;
  std::vector<double> labels;
  std::vector<int> groups;
  for (const Sample& s : samples) {
    labels.push_back(s.label);
    groups.push_back(s.group);
  }
  m.pairwise = PairwiseAccuracy(scores, labels, groups, &m.pairs);
  m.top1 = TopKScore(scores, labels, groups, 1);
  m.top5 = TopKScore(scores, labels, groups, 5);
  m.apeak32 = APeak32(scores, labels, groups);
  return m;
}

RankingMetrics Evaluate(const CostModel& model, const std::vector<Sample>& samples) {
  if (samples.empty()) return RankingMetrics{};
  std::vector<std::vector<FeatureRow>> rows;
  for (const Sample& s : samples) rows.push_back(s.rows);
  return EvaluateScores(model.Predict(rows), samples);
}

}  // namespace tunedb::costmodel
