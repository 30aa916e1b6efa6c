// The CUDA backend's engine: snn/cpu_backend.cpp step for step, on device tensors (see cuda_backend.hpp).
#include "snn/cuda/cuda_backend.hpp"

#include <algorithm>

#include "cuda_program.hpp"
#include "neuron_access.hpp"
#include "snn/accountant.hpp"
#include "snn/backend_registry.hpp"
#include "snn/cuda/check.hpp"
#include "snn/cuda/device.hpp"
#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"
#include "snn/simulation_plan.hpp"

namespace snn::cuda {

namespace {

CudaProgram& cuda_program(Program& program) {
  auto* p = dynamic_cast<CudaProgram*>(&program);
  require(p != nullptr, "cuda backend: the program was prepared by another backend");
  return *p;
}

// Runs node i's kernel call f; an error that does not name the layer yet gets the layer's name. With
// SNN_CUDA_SYNC=1, also waits for the node's work, so device-side errors are blamed on the right layer.
template <class F>
void at_layer(const Network& net, int i, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("layer '" + net.layer(i).name() + "'") != std::string::npos) throw;
    throw Error(where(net.layer(i)) + ": " + what);
  }
  if (sync_each_launch()) synchronize(where(net.layer(i)));
}

// The ANN view through the kernels; every node's output stays in prog.ann_out.
const DeviceTensor& run_ann(CudaProgram& prog, const Tensor& images) {
  const Network& net = prog.network();
  const DeviceTensor& x = upload_input(prog, images);
  for (int i = 0; i < net.size(); ++i) {
    std::vector<const DeviceTensor*> ins;
    for (int j : net.inputs(i)) ins.push_back(j == Network::kInput ? &x : &prog.ann_out[size_t(j)]);
    at_layer(net, i, [&] { prog.kernels[size_t(i)]->forward(ins, prog.ann_out[size_t(i)]); });
  }
  return prog.ann_out.back();
}

}  // namespace

CudaBackend::CudaBackend(int gpu) {
  std::string why;
  if (!device_available(&why)) throw Error("cuda backend: no usable GPU: " + why);
  if (gpu >= 0) select_device(gpu);
  device_ = device_name();
  context_ = std::make_shared<Context>();
}

std::string CudaBackend::description() const { return "cuda: " + device_; }

std::unique_ptr<Program> CudaBackend::prepare(const Network& net) {
  return std::make_unique<CudaProgram>(net, context_);
}

Tensor CudaBackend::forward_ann(Program& program, const Tensor& images, std::vector<Tensor>* node_outputs) {
  CudaProgram& prog = cuda_program(program);
  const Tensor result = run_ann(prog, images).to_host();
  if (node_outputs) {
    node_outputs->clear();
    for (const DeviceTensor& o : prog.ann_out) node_outputs->push_back(o.to_host());
  }
  return result;
}

BatchSimulation CudaBackend::simulate(Program& program, const Tensor& images, const SimulationOptions& opts,
                                      NeuronProbe* probe) {
  CudaProgram& prog = cuda_program(program);
  Context& ctx = *prog.context;
  const Network& net = prog.network();
  require(images.rank() >= 1 && images.dim(0) > 0, "simulate: empty batch");
  const SimulationPlan plan = make_simulation_plan(net, opts, images.dim(0));
  const int64_t T = plan.timesteps, B = plan.batch;
  const int N = net.size();

  // The probe's ANN reference stays on the device (prog.ann_out); only per-sample channel sums come back.
  CudaNeuronAccess::Shared probe_data;
  if (probe && probe->wants_ann_reference()) {
    run_ann(prog, images);
    for (int i : plan.neuron_nodes) {
      if (!probe->observes(i)) continue;
      const DeviceTensor& a = prog.ann_out[size_t(i)];
      const int64_t C = net.output_shape(i)[0], inner = a.numel() / (a.dim(0) * C);
      probe_data.ann_sums[i] = channel_sums(a.data(), a.dim(0), 1, C, inner, ctx);  // [B · C]
      probe_data.ann[i] = &a;
    }
  }
  const DeviceTensor& x_static = upload_input(prog, images, plan.direct);

  Accountant accountant(plan);
  BatchSimulation r;
  r.timesteps = T;
  r.batch = B;
  const int out_node = plan.output_node;
  const int64_t K = plan.classes;
  prog.readout.resize({B, K});
  prog.readout.fill_zero();
  prog.predictions.resize(size_t(T * B));
  prog.predictions.zero();

  // Rows of the per-chunk count table: spikes of every neuron layer, input events of weight layers
  // whose synaptic operations follow them.
  std::vector<int> count_row(size_t(N), -1);
  int rows = 0;
  for (int i = 0; i < N; ++i) {
    const size_t si = size_t(i);
    if (!plan.is_static[si] && (plan.neuron_slot[si] >= 0 || (plan.weight_slot[si] >= 0 && plan.counts_events[si])))
      count_row[si] = rows++;
  }
  std::vector<unsigned long long> counts;
  std::vector<int64_t> counted_per_step(size_t(N), 0);

  std::vector<std::unique_ptr<KernelState>> states(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i)
    if (net.layer(i).stateful()) at_layer(net, i, [&] { states[size_t(i)] = prog.kernels[size_t(i)]->make_state(B); });

  std::vector<int64_t> repeated_steps(static_cast<size_t>(N) + 1, 0);
  const int64_t in_n = images.numel(), in_C = images.dim(1), in_inner = in_n / (B * in_C);
  for (int64_t t0 = 0; t0 < T; t0 += plan.chunk_steps) {
    const StepChunk chunk{t0, std::min(plan.chunk_steps, T - t0), B};
    const int64_t steps = chunk.steps;
    if (!plan.direct) {
      Shape s = images.shape();
      s[0] *= steps;
      prog.encoded.resize(s);
      const bool pre = !net.preprocessing().identity();
      poisson_encode(prog.images.data(), in_n, in_C, in_inner, pre ? prog.mean.data() : nullptr,
                     pre ? prog.std.data() : nullptr, opts.seed, t0, steps, prog.encoded.data());
    }
    prog.counts.resize(size_t(rows * steps));
    prog.counts.zero();

    for (int i = 0; i < N; ++i) {
      const size_t si = size_t(i);
      if (plan.is_static[si] && t0 > 0) continue;  // computed in the first chunk, valid for every step
      std::vector<const DeviceTensor*> ins;
      for (int j : net.inputs(i)) {
        const bool j_static = plan.node_static(j);
        const DeviceTensor& src = j == Network::kInput ? (plan.direct ? x_static : prog.encoded)
                                                       : (j_static ? prog.static_out[size_t(j)] : prog.outs[size_t(j)]);
        if (j_static && !plan.is_static[si]) {
          const size_t slot = j == Network::kInput ? size_t(N) : size_t(j);
          if (repeated_steps[slot] != steps) {
            Shape s = src.shape();
            s[0] *= steps;
            prog.repeated[slot].resize(s);
            repeat_steps(src.data(), src.numel(), steps, prog.repeated[slot].data());
            repeated_steps[slot] = steps;
          }
          ins.push_back(&prog.repeated[slot]);
        } else {
          ins.push_back(&src);
        }
      }

      Kernel& kernel = *prog.kernels[si];
      if (plan.is_static[si]) {
        at_layer(net, i, [&] { kernel.forward(ins, prog.static_out[si]); });
        if (plan.weight_slot[si] >= 0) accountant.static_weight(i);
        continue;
      }
      const bool probed = probe && plan.neuron_slot[si] >= 0 && probe->observes(i);
      std::unique_ptr<CudaNeuronAccess> access;
      if (probed) {
        access = std::make_unique<CudaNeuronAccess>(prog, probe_data, i, chunk, *ins[0]);
        probe->before_layer(*access);
      }
      at_layer(net, i, [&] { kernel.forward_snn(ins, prog.outs[si], states[si].get(), chunk); });
      if (probed) {
        access->set_output(&prog.outs[si]);
        probe->after_layer(*access);
      }
      if (count_row[si] >= 0) {
        const DeviceTensor& counted = plan.neuron_slot[si] >= 0 ? prog.outs[si] : *ins[0];
        counted_per_step[si] = counted.numel() / steps;
        count_nonzero_steps(counted.data(), counted_per_step[si], steps,
                            prog.counts.data() + size_t(count_row[si]) * size_t(steps));
      }
    }

    // Anytime readout: running sum of the readout over steps; prediction = its argmax after each step.
    const bool out_static = plan.is_static[size_t(out_node)];
    const DeviceTensor& y = out_static ? prog.static_out[size_t(out_node)] : prog.outs[size_t(out_node)];
    readout_chunk(y.data(), out_static, steps, B, K, prog.readout.data(), prog.predictions.data() + t0 * B);

    // One download of the chunk's counts, then the accountant (as the CPU backend calls it).
    counts.resize(size_t(rows * steps));
    prog.counts.download(counts.data(), counts.size());
    for (int i = 0; i < N; ++i) {
      const size_t si = size_t(i);
      if (plan.is_static[si]) continue;
      const unsigned long long* c =
          count_row[si] >= 0 ? counts.data() + size_t(count_row[si]) * size_t(steps) : nullptr;
      if (plan.weight_slot[si] >= 0)
        for (int64_t t = 0; t < steps; ++t) {
          if (plan.counts_events[si])
            accountant.weight_step(i, t0 + t, double(c[t]), double(counted_per_step[si]));
          else
            accountant.weight_step(i, t0 + t);
        }
      if (plan.neuron_slot[si] >= 0)
        for (int64_t t = 0; t < steps; ++t) accountant.spikes(i, t0 + t, double(c[t]));
    }
  }
  r.predictions.resize(size_t(T * B));
  prog.predictions.download(r.predictions.data(), r.predictions.size());
  r.readout = prog.readout.to_host();
  accountant.finish(r);
  return r;
}

namespace {
const bool registered = register_backend(
    "cuda",
    [](int /*threads: the CUDA backend's work is on the GPU*/, int gpu) -> std::unique_ptr<Backend> {
      return std::make_unique<CudaBackend>(gpu);
    },
    [](std::string* why) { return device_available(why); });
}  // namespace

}  // namespace snn::cuda
