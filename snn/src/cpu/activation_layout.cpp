#include "snn/cpu/activation_layout.hpp"

#include <algorithm>

#include "snn/cpu/neuron_kernel.hpp"
#include "snn/cpu/transpose.hpp"
#include "snn/error.hpp"

namespace snn::cpu {

namespace {
bool is_neuron(const Kernel& k) { return dynamic_cast<const NeuronKernel*>(&k) != nullptr; }
}  // namespace

std::vector<char> plan_channels_last(const Network& net, const std::vector<std::unique_ptr<Kernel>>& kernels,
                                     const SimulationPlan& plan, const std::vector<int>& fused_into,
                                     const std::vector<int>& staged_by) {
  const int N = net.size();
  std::vector<std::vector<int>> readers(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i)
    for (int j : net.inputs(i))
      if (j >= 0) readers[size_t(j)].push_back(i);
  auto kernel = [&](int i) -> const Kernel& { return *kernels[size_t(i)]; };
  auto dynamic = [&](int i) { return i >= 0 && !plan.is_static[size_t(i)]; };
  // A convolution that can read and write channels-last (neuron layers support it too: excluded here).
  auto capable_conv = [&](int i) { return dynamic(i) && kernel(i).supports_channels_last() && !is_neuron(kernel(i)); };
  auto fused_add = [&](int i) { return net.layer(i).type() == "add" && fused_into[size_t(i)] >= 0; };

  std::vector<char> cl(static_cast<size_t>(N), 0);
  for (int i = 0; i < N; ++i) {
    if (!is_neuron(kernel(i)) || !dynamic(i) || staged_by[size_t(i)] >= 0 || i == plan.output_node) continue;
    const Shape shape = net.output_shape(i);
    if (shape.size() < 2 || numel_of(shape) / shape[0] < 2) continue;  // no positions: one layout
    std::vector<int> producers = net.inputs(i);
    if (producers.size() == 1 && producers[0] >= 0 && fused_into[size_t(producers[0])] == i)
      producers = net.inputs(producers[0]);  // a residual add fused into this layer: its two inputs
    // A static input (computed once for all steps) is converted once; the network's own input never.
    bool network_input = false, static_input = false, from_conv = false, to_conv = false;
    for (int j : producers) {
      network_input |= j < 0;
      static_input |= j >= 0 && !dynamic(j);
      from_conv |= capable_conv(j);
    }
    for (int r : readers[size_t(i)]) to_conv |= capable_conv(r) || fused_add(r);
    cl[size_t(i)] = !network_input && (from_conv || static_input) && to_conv;
  }
  for (int i = 0; i < N; ++i) {
    if (!capable_conv(i) || fused_into[size_t(i)] >= 0 || i == plan.output_node || readers[size_t(i)].empty()) continue;
    bool all = true;
    for (int r : readers[size_t(i)]) {
      const int neuron = fused_add(r) ? fused_into[size_t(r)] : r;
      all &= is_neuron(kernel(neuron)) && cl[size_t(neuron)];
    }
    cl[size_t(i)] = all;
  }
  return cl;
}

bool reads_channels_last(const Kernel& reader, bool reader_channels_last, bool producer_channels_last) {
  if (!reader.supports_channels_last()) return false;
  return is_neuron(reader) ? reader_channels_last : producer_channels_last;
}

void convert_layout(const Tensor& t, bool channels_last, Tensor& out) {
  require(t.rank() >= 2 && t.dim(0) > 0, "convert_layout: a tensor of shape " + to_string(t.shape()));
  const int64_t n = t.dim(0), c = t.dim(1), positions = t.numel() / std::max<int64_t>(1, n * c);
  out.resize(t.shape());
  if (channels_last)
    to_channels_first(t.data(), n, c, positions, out.data());
  else
    to_channels_last(t.data(), n, c, positions, out.data());
}

}  // namespace snn::cpu
