// *.snn.h5: one self-describing HDF5 file per network.
//   /                 attributes: format = "snnc-network", format_version, snnc_version,
//                     input_shape, layer_count; group /metadata holds provenance strings
//   /preprocessing    datasets mean, std (absent: none)
//   /layers/NNNN      one group per node in order: attributes type, name, inputs (int array), number
//                     and string attributes; datasets for the layer's tensors (weight, bias, threshold…)
// Written to a temporary file beside the target, then renamed: a failed save leaves nothing behind.
// Reading checks format, version, types and shapes, and fails with the file and layer named.
#pragma once
#include <string>

#include "snn/network.hpp"

namespace snn {

// Version 2 added channel_gather, upsample_nearest, channel_affine, adaptive_avgpool2d and the pooling
// attributes ceil_mode / count_include_pad (a version-1 reader would misread them). A version-1 file is
// a valid version-2 file: load_network reads both and writes 2.
// Version 3 added signed spikes (a neuron string attribute "spikes"): a network with signed neurons is
// written as version 3, so a version-2 reader refuses it instead of running binary neurons; every
// other network is still written as version 2.
constexpr int kModelFormatVersion = 3;
constexpr int kOldestModelFormatVersion = 1;
// The version save_network writes for net: the oldest that can hold it.
int required_format_version(const Network& net);

void save_network(const Network& net, const std::string& path);
Network load_network(const std::string& path);

const char* snnc_version();

}  // namespace snn
