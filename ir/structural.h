// Structural equality and the 64-bit structural hash of programs.
//
// Both are defined through one canonical encoding of the program: a byte
// string in which every variable and buffer is replaced by the order of its
// first appearance (a de Bruijn-like numbering) and every other part is
// written out (kinds, dtypes, constants bit for bit, shapes, extents, loop
// kinds, annotations, block names, iteration kinds). Names of variables,
// buffers and the function are left out, so renaming changes neither the
// hash nor equality; any other change changes the encoding.
//
//   StructuralEqual(a, b)  <=>  Canonical(a) == Canonical(b)
//   StructuralHash(f)      =    mix(FNV-1a-64(Canonical(f)))
//
// where mix is the splitmix64 finalizer. The encoding uses fixed-width
// little-endian integers and no pointer values, so the hash is the same
// across runs, builds and machines; tests pin a few values. A change to the
// encoding changes every workload hash and must be treated as a format
// change of the database.
//
// Block names are part of the structure on purpose: traces address blocks
// by name, so two programs that differ only in a block name do not share
// schedules.
#pragma once

#include <cstdint>
#include <string>

#include "ir/stmt.h"

namespace tunedb::ir {

std::string CanonicalEncoding(const PrimFunc& func);
bool StructuralEqual(const PrimFunc& a, const PrimFunc& b);
std::uint64_t StructuralHash(const PrimFunc& func);

// The workload hash: the structural hash of the unscheduled program, as
// decimal text.
std::string WorkloadHash(const PrimFunc& func);

}  // namespace tunedb::ir
