#include "cuda_program.hpp"

#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

CudaProgram::CudaProgram(const Network& net, std::shared_ptr<Context> ctx) : Program(net), context(std::move(ctx)) {
  net.validate();
  const size_t N = size_t(net.size());
  for (int i = 0; i < net.size(); ++i) kernels.push_back(make_kernel(net.layer(i), net.input_shapes(i), *context));
  ann_out.resize(N);
  static_out.resize(N);
  outs.resize(N);
  repeated.resize(N + 1);
  const Preprocessing& p = net.preprocessing();
  if (!p.identity()) {
    mean.upload(p.mean);
    std.upload(p.std);
  }
}

SpikingKernel& CudaProgram::spiking(int node) const {
  auto* k = dynamic_cast<SpikingKernel*>(kernels.at(size_t(node)).get());
  if (!k)
    throw Error("layer '" + network().layer(node).name() + "' (" + network().layer(node).type() +
                "): its cuda kernel is not a spiking kernel (no bias, no calibration replay)");
  return *k;
}

Tensor CudaProgram::neuron_bias(int node, bool* constant) const {
  const auto& k = spiking(node);
  if (constant) *constant = k.bias_constant();
  return k.bias();
}

void CudaProgram::set_neuron_bias(int node, const Tensor& bias, bool constant) {
  spiking(node).set_bias(bias, constant);
}

const DeviceTensor& upload_input(CudaProgram& prog, const Tensor& images, bool preprocessed) {
  const Network& net = prog.network();
  check_input_shape(net, images);
  prog.images.upload(images);
  if (!preprocessed || net.preprocessing().identity()) return prog.images;
  const int64_t n = images.dim(0), C = images.dim(1), inner = images.numel() / std::max<int64_t>(1, n * C);
  prog.input.resize(images.shape());
  preprocess(prog.images.data(), images.numel(), C, inner, prog.mean.data(), prog.std.data(), prog.input.data());
  return prog.input;
}

}  // namespace snn::cuda
