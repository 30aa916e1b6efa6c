// What a child process that parsed an untrusted file hands back (isolated_read.hpp), as bytes: datasets
// and NIR graphs. (Networks travel as a file image of snnc's own writing: model_file.cpp.)
// Internal to the core (included by .cpp files only).
#pragma once
#include <string>

#include "snn/dataset.hpp"
#include "snn/nir_graph.hpp"

namespace snn {

std::string encode_dataset(const Dataset& d);
Dataset decode_dataset(const std::string& bytes);

std::string encode_nir_graph(const NirGraphData& g);
NirGraphData decode_nir_graph(const std::string& bytes);

}  // namespace snn
