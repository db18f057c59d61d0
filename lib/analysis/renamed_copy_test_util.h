// Test helper shared by the graph matcher's and diff's tests: a copy of a model in which every
// node, tensor, initializer, graph input and output has a new name, so a matcher or a diff that
// leans on names shows it.
#pragma once

#include <string>

#include "lib/io/model.h"

namespace porttool::analysis {

inline io::Model RenamedCopy(const io::Model& m) {
  io::Model r = m;
  auto rename = [](std::string* s) {
    if (!s->empty()) *s = "renamed/" + *s + "/x";
  };
  auto* g = r.proto.mutable_graph();
  for (auto& n : *g->mutable_node()) {
    rename(n.mutable_name());
    for (auto& s : *n.mutable_input()) rename(&s);
    for (auto& s : *n.mutable_output()) rename(&s);
  }
  for (auto& t : *g->mutable_initializer()) rename(t.mutable_name());
  for (auto& v : *g->mutable_input()) rename(v.mutable_name());
  for (auto& v : *g->mutable_output()) rename(v.mutable_name());
  return r;
}

}  // namespace porttool::analysis
