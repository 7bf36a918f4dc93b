// A program's parts: its stages grouped as TVM groups a model's operators
// into fused kernels, each group a program of its own that can be tuned as
// a task (`tunedb tune --split`).
//
// One task for a program of many stages spreads its trials over every
// stage's choices at once: a causal attention written as six stages (scores,
// masked max, exp, row sums, the product with V, the division) reached
// 0.70-1.57 ms in 64 trials, while its four parts, tuned alone and their
// best schedules applied one after another to the whole, ran in 0.45 ms
// (bench/RESULTS.md, session 80).
//
// The groups, over the stages of an unscheduled program in order:
//  - a reduction (a stage with reduction axes) starts a group;
//  - an elementwise stage that reads another stage joins the group of the
//    last stage it reads (an epilogue: a bias and a ReLU after a matmul,
//    the exp after a row maximum, a division after the sum it divides);
//  - an elementwise stage that reads only inputs joins its one reader (a
//    prologue: the padding of a convolution), or, read by several or none,
//    is a group of its own.
// A part's program computes its group's stages: what they read of other
// stages becomes inputs, what other stages read of them (or what the
// program returns) becomes outputs, the rest stays intermediate.
#pragma once

#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tunedb::ir {

// The names of the stages of each group, in program order, groups in the
// order of their first stage. One group for a program of one stage, or
// one that is already scheduled (its blocks are not one per loop nest).
std::vector<std::vector<std::string>> StageGroups(const PrimFunc& func);

// The program of `stages` of an unscheduled `func` (see the file comment).
// Parameters: the inputs read (func's own first, in its order, then other
// stages' results in program order), then the outputs in program order.
// Throws IrError naming a stage that `func` does not have, or when it has
// no such stages at all.
PrimFunc PartOf(const PrimFunc& func, const std::vector<std::string>& stages);

// "M+E" for the stages M and E: how a part is named after its workload
// ("attention.tw@M+E").
std::string PartName(const std::vector<std::string>& stages);

}  // namespace tunedb::ir
