// snnc._core._convert_file: the conversion of a model file (snn/conversion/convert.hpp: .pt2, ONNX, or
// TorchScript when the importer is linked in) for snnc.convert, which exports a torch.nn.Module with
// torch.export first. Built with snn_conversion.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "python_progress.hpp"
#include "snn/conversion/convert.hpp"

namespace snnc_py {

namespace {

snn::Network convert_file(const std::string& path, const py::object& data, int64_t limit,
                          const std::vector<float>& mean, const std::vector<float>& std,
                          const std::vector<int64_t>& input_shape, const std::string& norm, double percentile,
                          bool channelwise, const std::string& neuron, float beta, const std::string& reset,
                          float v_init, const std::string& spikes, bool check, double check_tolerance, double check_moved, int64_t check_images,
                          int64_t batch_size, const std::string& device, int threads, const py::object& progress) {
  namespace conv = snn::conversion;
  if (batch_size <= 0) throw py::value_error("batch_size must be positive, got " + std::to_string(batch_size));
  conv::ConvertOptions o;
  o.input_shape = input_shape;
  o.preprocessing = {mean, std};
  o.neuron.model = snn::parse_neuron_model(neuron);
  o.neuron.beta = beta;
  o.neuron.reset = snn::parse_reset(reset);
  o.neuron.v_init = v_init;
  o.neuron.spikes = snn::resolve_spikes(spikes, o.neuron.reset, "spikes=");
  o.norm.method = conv::parse_norm_method(norm);
  o.norm.percentile = percentile;
  o.norm.channelwise = channelwise;
  o.norm.batch_size = batch_size;
  o.norm.max_images = 0;  // the data is limited below
  o.check = check;
  o.faithfulness.tolerance = check_tolerance;
  o.faithfulness.max_moved_fraction = check_moved;
  o.check_images = check_images;
  o.data_option = "data=";
  std::shared_ptr<const snn::Dataset> dataset;
  if (!data.is_none()) {
    dataset = dataset_argument(data, limit, "data");
    o.data_label = py::isinstance<py::str>(data) ? data.cast<std::string>() : dataset->source;
  }
  const PythonProgress bar = PythonProgress::from_argument(progress, "thresholds");
  o.norm.progress = bar.fn("thresholds");
  py::gil_scoped_release no_gil;
  auto backend = open_backend(device, threads);
  conv::ConversionResult r = conv::convert_model(path, dataset.get(), *backend, o);
  r.network.metadata()["command_line"] = "snnc.convert (Python)";
  return std::move(r.network);
}

}  // namespace

void bind_convert(py::module_& m) {
  m.def("_convert_file", &convert_file, py::arg("path"), py::arg("data"), py::arg("limit"), py::arg("mean"),
        py::arg("std"), py::arg("input_shape"), py::arg("norm"), py::arg("percentile"), py::arg("channelwise"),
        py::arg("neuron"), py::arg("beta"), py::arg("reset"), py::arg("v_init"), py::arg("spikes"), py::arg("check"),
        py::arg("check_tolerance"), py::arg("check_moved"), py::arg("check_images"), py::arg("batch_size"),
        py::arg("device"), py::arg("threads"), py::arg("progress"),
        "The C++ side of snnc.convert (use that): converts a TorchScript file.");
}

}  // namespace snnc_py
