// lower_graph: OpGraph (op_graph.hpp) -> snn::Network, once for every format.
//
// Canonical ops map to layers as the TorchScript importer maps ATen ops (torch_import.hpp): batch norm
// folds into the conv/linear before it when that is its only reader (else a per-channel affine layer),
// a constant added right after a conv/linear becomes its bias, channel-only ops (cat, split, slice,
// channel shuffle) become ChannelGather layers. Activations are found by what they compute, not by how
// they are spelled: every run of elementwise ops hanging off one activation (relu, clamp, add/sub/mul/div
// by constants, floor, ...) is evaluated as a function of its input per channel and recognised as ReLU,
// clip(0, θ), QCFS (θ, L) — so QCFS arrives in any spelling, with its module path when the file has one —
// or a per-channel affine map (folded); anything else is refused naming the ops.
#pragma once
#include <string>
#include <vector>

#include "snn/conversion/import/op_graph.hpp"
#include "snn/conversion/torch_import.hpp"
#include "snn/network.hpp"

namespace snn::conversion {

// Builds the network for per-image input options.input_shape. The report gets the notes, counts and,
// per network node, the graph value whose runtime value the node's output must equal
// (report->reference_names; "" where none), for the faithfulness check. Throws snn::Error naming `file`,
// the format and the node.
snn::Network lower_graph(const OpGraph& graph, const std::string& file, const ImportOptions& options,
                         ImportReport* report);

}  // namespace snn::conversion
