// Folding of canonical ops whose inputs are all constants: what torch.export leaves around weights
// (permute/t of a linear weight before addmm, a view or expand of a parameter, arithmetic on scalars).
// Float constants only; results are bounded by kMaxFoldElements.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::pt2 {

// The folded constant, or nullopt when `op` does not fold here. `out_shape` is the output's declared
// shape (empty and !out_known when unknown).
std::optional<OpConstant> fold_constant(const std::string& op, const std::vector<const OpConstant*>& inputs,
                                        const std::map<std::string, OpAttr>& attrs, const snn::Shape& out_shape,
                                        bool out_known);

}  // namespace snn::conversion::pt2
