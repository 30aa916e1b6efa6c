// The parameters of one NIR node as snnc values, checked: shapes, integer pairs, per-channel vectors,
// and the discrete-time reading of NIR's IF and LIF neurons (nir_import.hpp has the mapping). Each
// function throws snn::Error starting with `where` (the file and node). Internal to the core.
#pragma once
#include <string>
#include <vector>

#include "snn/layers/conv2d.hpp"
#include "snn/layers/pooling.hpp"
#include "snn/network.hpp"
#include "snn/nir_graph.hpp"

namespace snn {

// A shape or size list: positive whole numbers.
Shape nir_shape(const NirNodeData& n, const std::string& key, const std::string& where);
Tensor nir_tensor(const NirNodeData& n, const std::string& key, const std::string& where);
// normalise_mean/std metadata (snnc's export) as preprocessing for an input of `input_shape`.
Preprocessing nir_normalisation(const NirNodeData& n, const Shape& input_shape, const std::string& where);

// Parameter `key`, one value per channel (dim 0) of a value of `shape`: a scalar, a [C] vector, or a full
// array that is constant within each channel.
std::vector<float> nir_per_channel(const NirNodeData& n, const std::string& key, const Shape& shape,
                                   const std::string& where);

struct NirConv {
  Conv2dSpec spec;
  Tensor weight, bias;
};
NirConv nir_conv2d(const NirNodeData& n, const Shape& input, const std::string& where);
PoolSpec nir_pool(const NirNodeData& n, const std::string& where);
void nir_check_flatten(const NirNodeData& n, const Shape& input, const std::string& where);

// An IF or LIF node read with step dt: v ← β·v + gain·I − bias; fire when v > θ; reset to 0.
struct NirNeuron {
  bool leaky = false;
  float beta = 1.0f;
  std::vector<float> theta;   // per channel
  std::vector<double> gain;   // per channel: dt·r (IF), dt·r/τ (LIF)
  std::vector<float> bias;    // per channel, empty when zero: −dt/τ·v_leak
};
NirNeuron nir_neuron(const NirNodeData& n, const Shape& shape, double dt, const std::string& where);

}  // namespace snn
