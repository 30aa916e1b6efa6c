// torch.export reader: an ExportedProgram archive as torch.export.save writes it (.pt2) -> OpGraph.
//
// Native: the archive is read with snnc's bounded ZIP reader (zip_archive.hpp), the program from its
// JSON (nlohmann), the weights from their raw little-endian files as model_weights_config.json
// describes them. The graph is ATen IR as torch.export.export gives it (and Core ATen IR after
// run_decompositions()); module paths and classes come from each node's nn_module_stack metadata.
// Accepted archive and schema versions are listed in pt2_reader.cpp; others are refused by name.
#pragma once
#include <string>

#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion {

// Throws snn::Error naming the file (and the node or weight at fault).
OpGraph read_exported_program(const std::string& path);

// True when the file is a ZIP archive holding a torch.export program (…/models/*.json or
// serialized_exported_program.json), checked from the central directory only.
bool looks_like_exported_program(const std::string& path);

}  // namespace snn::conversion
