#include "snn/simulation_plan.hpp"

#include <algorithm>

#include "snn/error.hpp"

namespace snn {

std::string to_string(Encoding e) { return e == Encoding::Direct ? "direct" : "poisson"; }

Encoding parse_encoding(const std::string& s) {
  if (s == "direct") return Encoding::Direct;
  if (s == "poisson") return Encoding::Poisson;
  throw Error("unknown input encoding '" + s + "' (expected direct or poisson)");
}

SimulationPlan make_simulation_plan(const Network& net, const SimulationOptions& opts, int64_t batch) {
  net.validate();
  require(opts.timesteps > 0, "timesteps must be at least 1, got " + std::to_string(opts.timesteps));
  require(batch > 0, "simulate: empty batch");
  SimulationPlan p;
  const int N = net.size();
  p.timesteps = opts.timesteps;
  p.batch = batch;
  p.direct = opts.encoding == Encoding::Direct;
  p.output_node = net.output_node();
  p.classes = net.output_shape(p.output_node)[0];
  p.is_static.assign(size_t(N), 0);
  p.events.assign(size_t(N), 0);
  p.macs.assign(size_t(N), 0);
  p.counts_events.assign(size_t(N), 0);
  p.neuron_slot.assign(size_t(N), -1);
  p.weight_slot.assign(size_t(N), -1);
  p.neuron_nodes = net.neuron_nodes();
  for (size_t k = 0; k < p.neuron_nodes.size(); ++k) p.neuron_slot[size_t(p.neuron_nodes[k])] = int(k);

  int64_t dynamic_floats_per_step = p.direct ? 0 : numel_of(net.input_shape());
  for (int i = 0; i < N; ++i) {
    const Layer& l = net.layer(i);
    bool all_static = true, all_events = true;
    for (int j : net.inputs(i)) {
      all_static &= p.node_static(j);
      all_events &= p.node_events(j);
    }
    p.is_static[size_t(i)] = !l.stateful() && all_static;
    p.events[size_t(i)] = l.emits_spikes() || (l.preserves_events() && all_events);
    p.macs[size_t(i)] = l.macs(net.input_shapes(i));
    if (p.macs[size_t(i)] > 0) {
      p.weight_slot[size_t(i)] = int(p.weight_nodes.size());
      p.weight_nodes.push_back(i);
    }
    p.counts_events[size_t(i)] = p.macs[size_t(i)] > 0 && !p.is_static[size_t(i)] && p.node_events(net.inputs(i)[0]);
    if (!p.is_static[size_t(i)]) dynamic_floats_per_step += numel_of(net.output_shape(i));
  }
  p.bytes_per_image_step = dynamic_floats_per_step * int64_t(sizeof(float));
  const int64_t per_step_bytes = std::max<int64_t>(1, dynamic_floats_per_step * batch * int64_t(sizeof(float)));
  int64_t chunk = opts.max_chunk_steps > 0 ? opts.max_chunk_steps : opts.memory_budget / per_step_bytes;
  p.chunk_steps = std::max<int64_t>(1, std::min(chunk, p.timesteps));
  return p;
}

}  // namespace snn
