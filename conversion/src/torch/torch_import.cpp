// The public TorchScript API: loading (with clear errors for files that are not TorchScript),
// import through the interpreter, and LibTorch's own forward for the faithfulness check.
#include "snn/conversion/torch_import.hpp"

#include <torch/script.h>
#include <torch/version.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "interpreter.hpp"
#include "snn/conversion/torchscript_archive.hpp"

namespace snn::conversion {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

torch::jit::Module load_module(const std::string& path) {
  // LibTorch does not verify CRCs: a damaged archive would load and convert silently.
  check_torchscript_archive(path);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw snn::Error(path + ": cannot open the model file (" + std::strerror(errno) + ")");
  char magic[2] = {0, 0};
  f.read(magic, 2);
  const bool zip = f.gcount() == 2 && magic[0] == 'P' && magic[1] == 'K';
  f.close();
  if (!zip)
    throw snn::Error(path + ": not a TorchScript archive (not a zip file; a legacy torch.save pickle or not a "
                            "PyTorch file at all). Export the model with torch.jit.script or torch.jit.trace and .save() it");
  try {
    torch::jit::Module m = torch::jit::load(path, torch::kCPU);
    // Scripted code branches on self.training: eval mode gives the network that is converted.
    m.eval();
    return m;
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    if (msg.find("constants.pkl") != std::string::npos || msg.find("code/") != std::string::npos)
      throw snn::Error(path + ": not a TorchScript archive (saved with torch.save? export with torch.jit.script or "
                              "torch.jit.trace and save that)");
    if (msg.find("central directory") != std::string::npos || msg.find("corrupt") != std::string::npos ||
        msg.find("zip archive") != std::string::npos || msg.find("failed reading") != std::string::npos)
      throw snn::Error(path + ": the TorchScript archive is truncated or corrupted (" + first_line(msg) + ")");
    throw snn::Error(path + ": cannot load the TorchScript model: " + first_line(msg));
  } catch (const std::exception& e) {
    throw snn::Error(path + ": cannot load the TorchScript model: " + first_line(e.what()));
  }
}

}  // namespace

snn::Network import_torchscript(const std::string& path, const ImportOptions& options, ImportReport* report) {
  require(options.input_shape.size() == 3,
          path + ": the input shape must be [C, H, W], got " + snn::to_string(options.input_shape));
  torch::jit::Module module = load_module(path);
  torch::NoGradGuard no_grad;
  ImportReport local;
  ImportReport* rep = report ? report : &local;
  *rep = ImportReport{};
  snn::Network net;
  try {
    net = detail::Interpreter(path, options, rep).run(module);
  } catch (const snn::Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw snn::Error(path + ": " + first_line(e.what_without_backtrace()));
  }
  if (rep->relu_layers > 0)
    rep->notes.push_back(std::to_string(rep->relu_layers) +
                         " ReLU layer(s) have the provisional threshold 1: set thresholds from data "
                         "(snn::conversion::set_thresholds, snnc convert --data)");
  net.metadata()["source_model"] = path;
  return net;
}

snn::Tensor torchscript_forward(const std::string& path, const snn::Tensor& input) {
  require(input.rank() == 4, "torchscript_forward: input must be [N, C, H, W], got " + snn::to_string(input.shape()));
  torch::jit::Module module = load_module(path);
  torch::NoGradGuard no_grad;
  at::Tensor x = torch::from_blob(const_cast<float*>(input.data()), input.shape(), torch::kFloat).clone();
  c10::IValue out;
  try {
    out = module.forward({x});
  } catch (const c10::Error& e) {
    throw snn::Error(path + ": LibTorch's forward failed: " + first_line(e.what_without_backtrace()));
  }
  while (out.isTuple() && !out.toTupleRef().elements().empty()) out = out.toTupleRef().elements()[0];
  if (!out.isTensor()) throw snn::Error(path + ": the model's forward does not return a tensor");
  at::Tensor y = out.toTensor().detach().to(at::kCPU).to(at::kFloat).contiguous();
  snn::Shape shape(y.sizes().begin(), y.sizes().end());
  const float* p = y.data_ptr<float>();
  return snn::Tensor(shape, std::vector<float>(p, p + y.numel()));
}

std::string libtorch_version() { return TORCH_VERSION; }

}  // namespace snn::conversion
