// snnc._core._convert_file: the conversion of a model file (snn/conversion/convert.hpp: .pt2, ONNX, or
// TorchScript when the importer is linked in) for snnc.convert, which exports a torch.nn.Module with
// torch.export first. Built with snn_conversion.
#include <pybind11/stl.h>

#include "arguments.hpp"
#include "bindings.hpp"
#include "python_progress.hpp"
#include "snn/conversion/convert.hpp"

namespace snnc_py {

namespace {

// snnc.convert's arguments after the model and the data, in its order (a macro: three functions take them).
#define SNNC_CONVERT_PARAMETERS                                                                                  \
  const py::handle &limit, const py::handle &mean, const py::handle &std, const py::handle &input_shape,        \
      const py::handle &norm, const py::handle &percentile, const py::handle &channelwise,                      \
      const py::handle &neuron, const py::handle &beta, const py::handle &reset, const py::handle &v_init,       \
      const py::handle &spikes, const py::handle &check, const py::handle &check_tolerance,                     \
      const py::handle &check_moved, const py::handle &check_images, const py::handle &batch_size,              \
      const py::handle &device, const py::handle &threads
#define SNNC_CONVERT_ARGUMENTS                                                                                 \
  limit, mean, std, input_shape, norm, percentile, channelwise, neuron, beta, reset, v_init, spikes, check,    \
      check_tolerance, check_moved, check_images, batch_size, device, threads

// snnc.convert's options, checked (before any work: also before a torch.nn.Module is exported).
struct ConvertArguments {
  snn::conversion::ConvertOptions options;
  int64_t limit = 0;
  std::string device;
  int threads = 0;
};

ConvertArguments convert_arguments(SNNC_CONVERT_PARAMETERS) {
  namespace conv = snn::conversion;
  namespace lim = snn::limits;
  ConvertArguments a;
  a.limit = whole_argument(limit, lim::kImageLimit, "limit");
  const int64_t batch = whole_argument(batch_size, lim::kBatchSize, "batch_size");
  a.device = choice_argument(device, {"cpu", "cuda", "auto"}, "device");
  a.threads = int(whole_argument(threads, lim::threads(), "threads"));
  conv::ConvertOptions& o = a.options;
  o.input_shape = whole_list_argument(input_shape, lim::kInputExtent, "input_shape");
  if (!o.input_shape.empty() && o.input_shape.size() != 3) raise_argument_error("input_shape must be (C, H, W)");
  o.preprocessing = {real_list_argument(mean, lim::kMean, "mean"), real_list_argument(std, lim::kStd, "std")};
  o.neuron.model = snn::parse_neuron_model(choice_argument(neuron, {"if", "lif"}, "neuron"));
  o.neuron.beta = float(real_argument(beta, lim::kBeta, "beta"));
  o.neuron.reset = snn::parse_reset(choice_argument(reset, {"subtract", "zero"}, "reset"));
  o.neuron.v_init = float(real_argument(v_init, lim::kVInit, "v_init"));
  o.neuron.spikes =
      snn::resolve_spikes(choice_argument(spikes, {"auto", "binary", "signed"}, "spikes"), o.neuron.reset, "spikes=");
  o.norm.method = conv::parse_norm_method(choice_argument(norm, {"max", "percentile", "error"}, "norm"));
  o.norm.percentile = real_argument(percentile, lim::kPercentile, "percentile");
  o.norm.channelwise = bool_argument(channelwise, "channelwise");
  o.norm.batch_size = batch;
  o.norm.max_images = 0;  // the data is limited below
  o.check = bool_argument(check, "check");
  o.faithfulness.tolerance = real_argument(check_tolerance, lim::kCheckTolerance, "check_tolerance");
  o.faithfulness.max_moved_fraction = real_argument(check_moved, lim::kCheckMoved, "check_moved");
  o.check_images = whole_argument(check_images, lim::kCheckImages, "check_images");
  o.data_option = "data=";
  return a;
}

void check_convert_arguments(const py::object& data, SNNC_CONVERT_PARAMETERS) {
  convert_arguments(SNNC_CONVERT_ARGUMENTS);
  if (!data.is_none() && !py::isinstance<py::str>(data) && !py::isinstance<snn::Dataset>(data) &&
      !py::isinstance<py::tuple>(data) && !py::hasattr(data, "__fspath__"))
    raise_argument_type_error("data: expected a dataset spec (e.g. 'fashion-mnist:train' or a file), an "
                              "snnc.Dataset, or a pair (images, labels) of NumPy arrays");
}

snn::Network convert_file(const py::handle& path_arg, const py::object& data, SNNC_CONVERT_PARAMETERS,
                          const py::object& progress) {
  namespace conv = snn::conversion;
  const std::string path = path_argument(path_arg, "model");
  ConvertArguments a = convert_arguments(SNNC_CONVERT_ARGUMENTS);
  conv::ConvertOptions& o = a.options;
  std::shared_ptr<const snn::Dataset> dataset;
  if (!data.is_none()) {
    dataset = dataset_argument(data, a.limit, "data");
    warn_about_pixel_range(dataset->images.data(), dataset->images.numel(), o.preprocessing, "data");
    o.data_label = py::isinstance<py::str>(data) ? data.cast<std::string>() : dataset->source;
  }
  const PythonProgress bar = PythonProgress::from_argument(progress, "thresholds");
  o.norm.progress = bar.fn("thresholds");
  py::gil_scoped_release no_gil;
  auto backend = open_backend(a.device, a.threads);
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
        "The C++ side of snnc.convert (use that): converts a model file.");
  m.def("_check_convert_arguments", &check_convert_arguments, py::arg("data"), py::arg("limit"), py::arg("mean"),
        py::arg("std"), py::arg("input_shape"), py::arg("norm"), py::arg("percentile"), py::arg("channelwise"),
        py::arg("neuron"), py::arg("beta"), py::arg("reset"), py::arg("v_init"), py::arg("spikes"), py::arg("check"),
        py::arg("check_tolerance"), py::arg("check_moved"), py::arg("check_images"), py::arg("batch_size"),
        py::arg("device"), py::arg("threads"),
        "snnc.convert's argument checks alone (before a torch.nn.Module is exported).");
}

}  // namespace snnc_py
