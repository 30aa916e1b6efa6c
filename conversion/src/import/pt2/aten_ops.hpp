// The ATen op mappings: serialized target ("aten.conv2d.default") -> a function that emits the
// canonical op(s) through a NodeContext. Targets not in the table keep their own name (unmapped).
// Covered: ATen as torch.export.export gives it (training IR) and Core ATen after run_decompositions().
#pragma once
#include <string>
#include <unordered_map>

#include "import/pt2/graph_builder.hpp"

namespace snn::conversion::pt2 {

using Mapper = void (*)(NodeContext&);
using MapperTable = std::unordered_map<std::string, Mapper>;

const MapperTable& aten_mappers();
void add_layer_ops(MapperTable& table);   // aten_layer_ops.cpp: conv, batch norm, linear, pools, activations
void add_tensor_ops(MapperTable& table);  // aten_tensor_ops.cpp: arithmetic, identities, shapes, cat/split

}  // namespace snn::conversion::pt2
