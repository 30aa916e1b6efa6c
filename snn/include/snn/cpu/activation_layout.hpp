// Which activations of a CPU simulation are channels-last (each sample [H, W, C]; kernel.hpp), and the
// conversions where a reader takes the other layout.
//
// The event convolution works per position on all its channels (it lists a sample's spikes by position
// and gathers [position][channel] partial sums), so an NCHW input is transposed before listing and
// its result transposed back into NCHW: on ResNet-18 those transposes were ~9 % of a simulation. The
// chain event convolution → neuron layer → event convolution runs channels-last instead, with neither
// transpose; the layouts only move numbers in memory, so results are the same bit for bit.
#pragma once
#include <memory>
#include <vector>

#include "snn/cpu/kernel.hpp"
#include "snn/network.hpp"
#include "snn/simulation_plan.hpp"

namespace snn::cpu {

// Per node: 1 where it runs and writes its output channels-last. Neuron layers (not pooling-staged, not
// the readout, not reading the network's input) whose inputs include a channels-last-capable
// convolution or a static producer (converted once for all steps) and whose readers include such a
// convolution (or an add fused into a neuron layer); convolutions whose every reader is such a neuron
// layer (directly or through a fused add). fused_into and staged_by: the backend's fusions
// (cpu_backend.cpp), -1 where none.
std::vector<char> plan_channels_last(const Network& net, const std::vector<std::unique_ptr<Kernel>>& kernels,
                                     const SimulationPlan& plan, const std::vector<int>& fused_into,
                                     const std::vector<int>& staged_by);

// Whether `reader` (itself running channels-last where reader_channels_last) takes an input that its
// producer wrote channels-last (producer_channels_last) as it is laid out: convolutions that support it
// read either layout, neuron layers read their own, every other kernel NCHW.
bool reads_channels_last(const Kernel& reader, bool reader_channels_last, bool producer_channels_last);

// t ([N, C, ...], each sample laid out channels-last where `channels_last`) in the other layout, into out.
void convert_layout(const Tensor& t, bool channels_last, Tensor& out);

}  // namespace snn::cpu
