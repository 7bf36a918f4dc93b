#include "ir/parts.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

// A stage of an unscheduled program: one block, alone in its loop nest
// under the root.
struct Stage {
  const BlockNode* block = nullptr;
  Stmt nest;
  std::set<const BufferNode*> reads;  // buffers it loads, its own output excepted
  const BufferNode* output = nullptr;
};

// The stages in program order; empty when the program is not one block per
// nest writing one buffer (scheduled, or built by hand some other way).
std::vector<Stage> StagesOf(const PrimFunc& func) {
  const Stmt& body = func.root().body;
  std::vector<Stmt> nests;
  if (body && body->kind == StmtKind::kSeq) {
    nests = static_cast<const SeqNode&>(*body).stmts;
  } else if (body) {
    nests.push_back(body);
  }
  std::vector<Stage> stages;
  for (const Stmt& nest : nests) {
    Stage s;
    s.nest = nest;
    int blocks = 0;
    VisitStmt(nest, [&](const Stmt& st) {
      if (st->kind == StmtKind::kBlock) {
        ++blocks;
        s.block = static_cast<const BlockNode*>(st.get());
      }
    });
    if (blocks != 1 || s.block->writes.size() != 1) return {};
    s.output = s.block->writes[0].buffer.get();
    for (const BufferRegion& r : s.block->reads) {
      if (r.buffer.get() != s.output) s.reads.insert(r.buffer.get());
    }
    stages.push_back(std::move(s));
  }
  return stages;
}

bool IsReduction(const BlockNode& b) {
  return std::any_of(b.iter_vars.begin(), b.iter_vars.end(),
                     [](const IterVar& iv) { return iv.kind == IterKind::kReduce; });
}

}  // namespace

std::vector<std::vector<std::string>> StageGroups(const PrimFunc& func) {
  std::vector<Stage> stages = StagesOf(func);
  if (stages.empty()) return {};
  const std::size_t n = stages.size();
  std::map<const BufferNode*, std::size_t> writer;
  for (std::size_t i = 0; i < n; ++i) writer[stages[i].output] = i;
  std::vector<std::vector<std::size_t>> readers(n);
  std::vector<std::size_t> last_producer(n, n);  // n: reads no stage
  for (std::size_t i = 0; i < n; ++i) {
    for (const BufferNode* b : stages[i].reads) {
      auto it = writer.find(b);
      if (it == writer.end() || it->second == i) continue;
      readers[it->second].push_back(i);
      if (last_producer[i] == n || it->second > last_producer[i]) last_producer[i] = it->second;
    }
  }
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto join = [&](std::size_t a, std::size_t b) { parent[find(a)] = find(b); };
  for (std::size_t i = 0; i < n; ++i) {
    if (IsReduction(*stages[i].block)) continue;
    if (last_producer[i] != n) {
      join(i, last_producer[i]);
    } else if (readers[i].size() == 1) {
      join(i, readers[i][0]);
    }
  }
  std::vector<std::vector<std::string>> groups;
  std::map<std::size_t, std::size_t> group_of_root;
  for (std::size_t i = 0; i < n; ++i) {
    auto [it, fresh] = group_of_root.emplace(find(i), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(stages[i].block->name);
  }
  return groups;
}

PrimFunc PartOf(const PrimFunc& func, const std::vector<std::string>& stage_names) {
  std::vector<Stage> stages = StagesOf(func);
  if (stages.empty()) throw IrError("only an unscheduled program (one stage per loop nest) has parts");
  std::set<std::string> wanted(stage_names.begin(), stage_names.end());
  if (wanted.empty()) throw IrError("a part needs at least one stage");
  for (const std::string& name : wanted) {
    bool known = std::any_of(stages.begin(), stages.end(), [&](const Stage& s) { return s.block->name == name; });
    if (!known) {
      std::string list;
      for (const Stage& s : stages) list += (list.empty() ? "" : ", ") + s.block->name;
      throw IrError("the program has no stage '" + name + "' (stages: " + list + ")");
    }
  }
  std::set<const BufferNode*> params, written_inside, read_outside;
  for (const Buffer& p : func.params) params.insert(p.get());
  std::map<const BufferNode*, Buffer> buffers;  // the shared handles, by node
  for (const Buffer& p : func.params) buffers[p.get()] = p;
  for (const Buffer& b : func.root().alloc_buffers) buffers[b.get()] = b;
  for (const Stage& s : stages) {
    if (wanted.count(s.block->name)) {
      written_inside.insert(s.output);
    } else {
      read_outside.insert(s.reads.begin(), s.reads.end());
    }
  }
  // Inputs: the function's own parameters the part reads, in their order,
  // then what earlier stages outside the part computed, in program order.
  std::set<const BufferNode*> read_inside;
  for (const Stage& s : stages) {
    if (wanted.count(s.block->name)) read_inside.insert(s.reads.begin(), s.reads.end());
  }
  PrimFunc part;
  part.name = func.name;
  for (const Buffer& p : func.params) {
    if (read_inside.count(p.get()) && !written_inside.count(p.get())) part.params.push_back(p);
  }
  for (const Stage& s : stages) {
    if (!wanted.count(s.block->name) && read_inside.count(s.output) && !params.count(s.output)) {
      part.params.push_back(buffers.at(s.output));
    }
  }
  auto root = std::make_shared<BlockNode>();
  root->name = func.root().name;
  root->annotations = func.root().annotations;
  std::vector<Stmt> nests;
  for (const Stage& s : stages) {
    if (!wanted.count(s.block->name)) continue;
    bool output = params.count(s.output) || read_outside.count(s.output);
    if (output) {
      part.params.push_back(buffers.at(s.output));
    } else {
      root->alloc_buffers.push_back(buffers.at(s.output));
    }
    nests.push_back(Clone(s.nest));
  }
  root->body = nests.size() == 1 ? nests[0] : MakeSeq(std::move(nests));
  part.body = root;
  return part;
}

std::string PartName(const std::vector<std::string>& stages) {
  std::string name;
  for (const std::string& s : stages) name += (name.empty() ? "" : "+") + s;
  return name;
}

}  // namespace tunedb::ir
