// snnc.Network: a converted spiking network, and what is done with it (save, calibrate, sweep, ann,
// simulate, export to NIR). The long calls release the GIL and stop on Ctrl-C between batches.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "arguments.hpp"
#include "arrays.hpp"
#include "bindings.hpp"
#include "python_progress.hpp"
#include "results.hpp"
#include "snn/error.hpp"
#include "snn/limits.hpp"
#include "snn/memory.hpp"
#include "snn/model_file.hpp"
#include "snn/nir_export.hpp"
#include "snn/nir_import.hpp"
#include "snn/output_file.hpp"
#include "snn/sweep.hpp"
#ifdef SNN_HAVE_CONVERSION
#include "snn/conversion/calibration.hpp"
#endif

namespace snnc_py {

namespace {

// An output path as the CLI checks its -o (a directory, a read-only file, a missing directory: said so),
// then never an existing file unless overwrite=True.
std::string output_argument(const py::handle& path, const py::handle& overwrite, const char* what) {
  const std::string out = path_argument(path, "path");
  const bool replace = bool_argument(overwrite, "overwrite");
  snn::check_output_path(out, {}, std::string(what) + " path");
  if (!replace && std::filesystem::exists(out)) {
    PyErr_SetString(PyExc_FileExistsError,
                    (std::string(what) + ": " + out + " exists (pass overwrite=True to replace it)").c_str());
    throw py::error_already_set();
  }
  return out;
}

// The options every long call takes, checked as the CLI checks --device, --threads and --batch-size.
struct RunArguments {
  std::string device;
  int threads = 0;
  int64_t batch_size = 0;
};
RunArguments run_arguments(const py::handle& device, const py::handle& threads, const py::handle& batch_size) {
  RunArguments a;
  a.device = choice_argument(device, {"cpu", "cuda", "auto"}, "device");
  a.threads = int(whole_argument(threads, snn::limits::threads(), "threads"));
  a.batch_size = whole_argument(batch_size, snn::limits::kBatchSize, "batch_size");
  return a;
}

// Refuses up front a simulation whose memory exceeds what is available (as the CLI does).
void check_simulation_memory(const snn::Network& net, int64_t batch, int64_t T) {
  snn::require_memory(snn::simulation_memory_bytes(net, batch, T),
                      "simulating " + std::to_string(T) + " steps on batches of " + std::to_string(batch) + " images",
                      "lower T or batch_size");
}

py::dict to_dict(const std::map<std::string, std::string>& m) {
  py::dict d;
  for (const auto& kv : m) d[py::str(kv.first)] = kv.second;
  return d;
}

snn::SweepResult sweep(const snn::Network& net, const py::handle& data, const py::handle& T_arg,
                       const py::handle& device, const py::handle& threads, const py::handle& batch_size,
                       const py::handle& encoding, const py::handle& seed, const py::handle& limit,
                       const py::handle& ann, const py::object& progress) {
  snn::SweepOptions o;
  o.sim.timesteps = whole_argument(T_arg, snn::limits::kTimesteps, "T");
  const RunArguments run = run_arguments(device, threads, batch_size);
  const std::string encoding_name = choice_argument(encoding, {"direct", "poisson"}, "encoding");
  o.sim.encoding = snn::parse_encoding(encoding_name);
  o.sim.seed = encoding_seed_argument(seed, encoding_name);
  o.batch_size = run.batch_size;
  o.with_ann = bool_argument(ann, "ann");
  const int64_t first = whole_argument(limit, snn::limits::kImageLimit, "limit");
  const auto dataset = dataset_argument(data, first, "data");
  warn_about_pixel_range(dataset->images.data(), dataset->images.numel(), net.preprocessing(), "data");
  check_simulation_memory(net, std::min(o.batch_size, dataset->size()), o.sim.timesteps);
  const PythonProgress bar = PythonProgress::from_argument(progress, "sweep");
  o.progress = bar.fn("sweep");
  py::gil_scoped_release no_gil;
  auto backend = open_backend(run.device, run.threads);
  snn::SweepResult r = snn::run_sweep(*backend, net, *dataset, o);
  r.method = net.metadata().count("calibration") ? net.metadata().at("calibration") : "none";
  return r;
}

py::array_t<float> ann(const snn::Network& net, const py::handle& images, const py::handle& device,
                       const py::handle& threads, const py::handle& batch_size_arg) {
  const RunArguments run = run_arguments(device, threads, batch_size_arg);
  const int64_t batch_size = run.batch_size;
  const ImageArray in(images, net.input_shape(), "images");
  in.warn_about_range(net.preprocessing());
  const PythonProgress interrupt{py::none()};  // Ctrl-C between batches
  snn::Tensor scores;
  {
    py::gil_scoped_release no_gil;
    auto backend = open_backend(run.device, run.threads);
    auto program = backend->prepare(net);
    for (int64_t b0 = 0; b0 < in.size(); b0 += batch_size) {
      const int64_t n = std::min(batch_size, in.size() - b0);
      const snn::Tensor s = backend->forward_ann(*program, in.batch(b0, n));
      if (scores.empty()) scores = snn::Tensor({in.size(), s.dim(1)});
      std::copy(s.data(), s.data() + s.numel(), scores.data() + b0 * s.dim(1));
      interrupt("ann", b0 + n, in.size());
    }
  }
  return to_numpy(std::move(scores));
}

Simulation simulate(const snn::Network& net, const py::handle& images, const py::handle& T_arg,
                    const py::handle& encoding_arg, const py::handle& seed_arg, const py::handle& device,
                    const py::handle& threads, const py::handle& batch_size_arg, const py::object& progress) {
  const int64_t T = whole_argument(T_arg, snn::limits::kTimesteps, "T");
  const RunArguments run = run_arguments(device, threads, batch_size_arg);
  const int64_t batch_size = run.batch_size;
  const std::string encoding = choice_argument(encoding_arg, {"direct", "poisson"}, "encoding");
  const uint64_t seed = encoding_seed_argument(seed_arg, encoding);
  const ImageArray in(images, net.input_shape(), "images");
  in.warn_about_range(net.preprocessing());
  check_simulation_memory(net, std::min(batch_size, in.size()), T);
  snn::require_memory(4.0 * double(T) * double(in.size()),
                      "the predictions of " + std::to_string(in.size()) + " images at " + std::to_string(T) + " steps",
                      "lower T or simulate fewer images at a time");
  const PythonProgress bar = PythonProgress::from_argument(progress, "simulate");
  Simulation r;
  r.timesteps = T;
  r.images = in.size();
  r.predictions.resize(size_t(T * in.size()));
  {
    py::gil_scoped_release no_gil;
    auto backend = open_backend(run.device, run.threads);
    auto program = backend->prepare(net);
    snn::SimulationOptions o;
    o.timesteps = T;
    o.encoding = snn::parse_encoding(encoding);
    for (int64_t b0 = 0; b0 < in.size(); b0 += batch_size) {
      const int64_t n = std::min(batch_size, in.size() - b0);
      o.seed = seed + uint64_t(b0);  // as a sweep seeds its batches: the same spikes for the same images
      const snn::BatchSimulation s = backend->simulate(*program, in.batch(b0, n), o);
      for (int64_t t = 0; t < T; ++t)
        std::copy_n(s.predictions.begin() + t * n, n, r.predictions.begin() + t * in.size() + b0);
      const int64_t k = s.readout.dim(1);
      if (r.readout.empty()) {
        r.readout = snn::Tensor({in.size(), k});
        r.spikes.assign(s.spikes.size(), std::vector<double>(size_t(T), 0.0));
        r.synaptic_ops.assign(s.synaptic_ops.size(), std::vector<double>(size_t(T), 0.0));
        r.dense_macs.assign(s.dense_macs.size(), std::vector<double>(size_t(T), 0.0));
      }
      std::copy(s.readout.data(), s.readout.data() + n * k, r.readout.data() + b0 * k);
      for (size_t l = 0; l < s.spikes.size(); ++l)
        for (int64_t t = 0; t < T; ++t) r.spikes[l][size_t(t)] += s.spikes[l][size_t(t)];
      for (size_t w = 0; w < s.synaptic_ops.size(); ++w)
        for (int64_t t = 0; t < T; ++t) {
          r.synaptic_ops[w][size_t(t)] += s.synaptic_ops[w][size_t(t)];
          r.dense_macs[w][size_t(t)] += s.dense_macs[w][size_t(t)];
        }
      if (r.weight_layers.empty())
        for (int w : s.weight_nodes) r.weight_layers.push_back(net.layer(w).name());
      bar("simulate", b0 + n, in.size());
    }
  }
  for (int i : net.neuron_nodes()) r.neuron_layers.push_back(net.layer(i).name());
  return r;
}

#ifdef SNN_HAVE_CONVERSION
py::dict calibrate(snn::Network& net, const py::handle& method_arg, const py::handle& data, const py::handle& T,
                   const py::handle& alpha, const py::handle& batches, const py::handle& batch_size,
                   const py::handle& iters, const py::handle& seed, const py::handle& variant,
                   const py::handle& device, const py::handle& threads, const py::object& progress) {
  namespace conv = snn::conversion;
  const std::string method = text_argument(method_arg, "method");
  auto calibrator = conv::make_calibrator(method);
  conv::CalibrationOptions o;  // its defaults stand for the arguments left at None
  std::map<std::string, std::string> given;  // as the CLI: an argument the method does not use is an error
  const auto set = [&](const py::handle& h, const char* option, const char* name) {
    if (!h.is_none()) given[option] = name;
    return !h.is_none();
  };
  o.timesteps = whole_argument(T, snn::limits::kTimesteps, "T");
  if (set(alpha, "--alpha", "alpha")) o.alpha = real_argument(alpha, snn::limits::kAlpha, "alpha");
  if (set(batches, "--batches", "batches")) o.batches = whole_argument(batches, snn::limits::kCalibrationBatches, "batches");
  const RunArguments run = run_arguments(device, threads, batch_size);
  o.batch_size = run.batch_size;
  if (set(iters, "--iters", "iters")) o.iters = whole_argument(iters, snn::limits::kCalibrationIters, "iters");
  if (set(seed, "--seed", "seed")) o.seed = seed_argument(seed, "seed");
  if (set(variant, "--variant", "variant")) o.variant = choice_argument(variant, {"fixed", "paper", "exact"}, "variant");
  set(data, "--data", "data");
  conv::require_options_used({method}, given);
  conv::check_calibration_options(o, nullptr);
  calibrator->check_applicable(net, o);
  std::shared_ptr<const snn::Dataset> dataset;
  if (calibrator->needs_data()) {
    dataset = dataset_argument(data.is_none() ? py::str("fashion-mnist:train") : data, 0, "data");
    warn_about_pixel_range(dataset->images.data(), dataset->images.numel(), net.preprocessing(), "data");
  }
  const PythonProgress bar = PythonProgress::from_argument(progress, "calibrate " + method);
  o.progress = [&bar](const std::string& stage, int64_t done, int64_t total) { bar(stage, done, total); };
  conv::CalibrationReport report;
  {
    py::gil_scoped_release no_gil;
    auto backend = open_backend(run.device, run.threads);
    // On a copy: an interrupted or failed calibration leaves the network as it was.
    snn::Network calibrated = net;
    report = calibrator->calibrate(calibrated, *backend, dataset ? *dataset : snn::Dataset(), o);
    conv::record_calibration(calibrated, report);
    net = std::move(calibrated);
  }
  py::dict d;
  d["method"] = report.method;
  d["seconds"] = report.seconds;
  d["images"] = report.images;
  d["parameters"] = to_dict(report.parameters);
  return d;
}
#endif

py::list layers_of(const snn::Network& net) {
  py::list out;
  for (int i = 0; i < net.size(); ++i) {
    py::dict d;
    d["name"] = net.layer(i).name();
    d["type"] = net.layer(i).type();
    d["inputs"] = net.inputs(i);
    d["output_shape"] = py::tuple(py::cast(net.output_shape(i)));
    out.append(d);
  }
  return out;
}

}  // namespace

std::unique_ptr<snn::Backend> open_backend(const std::string& device, int threads) {
  return snn::make_backend(device, threads, /*quiet=*/true);
}

void bind_network(py::module_& m) {
  using snn::Network;
  py::class_<Network>(m, "Network", R"doc(
A converted spiking network (the contents of a .snn.h5 file): layers, neuron thresholds, calibration
biases, the input normalisation, and provenance metadata.

    net = snnc.load('model.snn.h5')          # or snnc.convert(...)
    net.calibrate('ftbc', 'fashion-mnist:train', T=8)
    result = net.sweep('fashion-mnist:test', T=8)
    result.accuracy                           # NumPy [T], percent
    net.save('model.ftbc.snn.h5')

Devices: 'cpu', 'cuda' (when built with CUDA and a GPU is present) or 'auto'. threads: 0 (all cores) up
to 8 per core. Arguments are checked before any work starts, with the CLI's limits and words: a wrong
type raises snnc.ArgumentTypeError (a TypeError), a value out of range snnc.ArgumentError (a
ValueError); both are snnc.Error.)doc")
      .def("save", [](const Network& net, const py::handle& path_arg, const py::handle& overwrite) {
             const std::string path = output_argument(path_arg, overwrite, "save");
             py::gil_scoped_release no_gil;
             snn::save_network(net, path);
           },
           py::arg("path"), py::arg("overwrite") = false,
           "Writes the network (.snn.h5) atomically: a temporary file beside it, then renamed. An existing file "
           "is replaced only with overwrite=True.")
      .def_property_readonly("input_shape", [](const Network& n) { return py::tuple(py::cast(n.input_shape())); },
                             "(C, H, W) of one image")
      .def_property_readonly("num_outputs", [](const Network& n) { return snn::numel_of(n.output_shape(n.output_node())); },
                             "classes the readout scores")
      .def_property_readonly("layers", &layers_of, "one dict per node: name, type, inputs (node indices; -1 = the image), output_shape")
      .def_property_readonly("neuron_layers", [](const Network& n) {
        std::vector<std::string> names;
        for (int i : n.neuron_nodes()) names.push_back(n.layer(i).name());
        return names;
      })
      .def_property_readonly("thresholds", [](const Network& n) {
        py::dict d;
        for (int i : n.neuron_nodes()) {
          std::vector<float> th = n.neuron(i).threshold();
          d[py::str(n.layer(i).name())] = to_numpy(std::move(th), {py::ssize_t(n.neuron(i).threshold().size())});
        }
        return d;
      }, "per neuron layer: θ (one value, or one per channel)")
      .def_property_readonly("metadata", [](const Network& n) { return to_dict(n.metadata()); },
                             "provenance: source model, conversion, calibration (a copy)")
      .def_property_readonly("calibration", [](const Network& n) -> py::object {
        auto it = n.metadata().find("calibration");
        return it == n.metadata().end() ? py::object(py::none()) : py::object(py::str(it->second));
      }, "the calibration method it carries, or None")
      .def_property_readonly("preprocessing", [](const Network& n) {
        py::dict d;
        d["mean"] = n.preprocessing().mean;
        d["std"] = n.preprocessing().std;
        return d;
      }, "the input normalisation the CNN was trained with")
      .def_property_readonly("parameter_count", &Network::parameter_count)
      .def_property_readonly("macs_per_image", &Network::macs_per_sample, "the CNN's multiply-accumulates per image")
      .def("copy", [](const Network& n) { return Network(n); }, "An independent copy.")
      .def("__copy__", [](const Network& n) { return Network(n); })
      .def("__deepcopy__", [](const Network& n, py::dict) { return Network(n); })
      .def("sweep", &sweep, py::arg("data") = "fashion-mnist:test", py::arg("T") = 32, py::kw_only(),
           py::arg("device") = "auto", py::arg("threads") = 0, py::arg("batch_size") = 128,
           py::arg("encoding") = "direct", py::arg("seed") = py::none(), py::arg("limit") = 0, py::arg("ann") = true,
           py::arg("progress") = py::none(), R"doc(
Accuracy at every t <= T from one simulation over `data` (a spec such as 'fashion-mnist:test', a file,
an snnc.Dataset, or (images, labels) arrays), with firing rates and operation counts: a SweepResult.
encoding: 'direct' (the analog image every step) or 'poisson' (seeded by seed; None: 0; a seed with
'direct' is an error, as it would do nothing). limit > 0: the first images
only. ann: also the CNN's accuracy on the same images. progress: None (a bar when stderr is a terminal),
True, False, or a callable(done, total, stage). Ctrl-C stops it between batches (KeyboardInterrupt).)doc")
      .def("ann", &ann, py::arg("images"), py::kw_only(), py::arg("device") = "auto", py::arg("threads") = 0,
           py::arg("batch_size") = 256, R"doc(
The CNN (ANN view) of the network on images: uint8 or float32 NumPy [N, C, H, W] (raw pixels, as in a
dataset: uint8 scaled to [0, 1], normalisation applied here). Returns float32 class scores [N, K].)doc")
      .def("simulate", &simulate, py::arg("images"), py::arg("T") = 32, py::kw_only(), py::arg("encoding") = "direct",
           py::arg("seed") = py::none(), py::arg("device") = "auto", py::arg("threads") = 0, py::arg("batch_size") = 128,
           py::arg("progress") = py::none(), R"doc(
Simulates the SNN on images (uint8 or float32 NumPy [N, C, H, W], read in place) for T steps: an
snnc.Simulation with the prediction after every step ([T, N]), the summed readout ([N, K]) and spike /
operation counts per layer and step. Poisson spikes are seeded per batch as a sweep seeds them (seed:
None is 0; given with encoding 'direct', an error).)doc")
      .def("export_nir", [](const Network& net, const py::handle& path_arg, const py::handle& mean_bias,
                            const py::handle& overwrite) {
             const std::string path = output_argument(path_arg, overwrite, "export_nir");
             snn::NirExportOptions o;
             o.mean_bias = bool_argument(mean_bias, "mean_bias");
             snn::NirExportReport r;
             {
               py::gil_scoped_release no_gil;
               r = snn::export_nir(net, path, o);
             }
             py::dict d;
             d["nodes"] = r.nodes;
             d["edges"] = r.edges;
             d["approximations"] = r.approximations;
             return d;
           },
           py::arg("path"), py::kw_only(), py::arg("mean_bias") = false, py::arg("overwrite") = false, R"doc(
Writes the network as a NIR graph (HDF5, NIR 1.0: Input, Conv2d, Affine, IF/LIF + Scale, AvgPool2d,
Flatten, Output). What NIR cannot express (reset by subtraction, v_init != 0, max pooling, per-step
calibration biases) raises snnc.Error naming the layer; mean_bias=True approximates per-step biases by
their mean over steps (recorded in the file).)doc")
      .def("__repr__", [](const Network& n) {
        return "<snnc.Network " + std::to_string(n.size()) + " layers, " + std::to_string(n.neuron_nodes().size()) +
               " spiking, input " + snn::to_string(n.input_shape()) +
               (n.metadata().count("calibration") ? ", calibrated: " + n.metadata().at("calibration") : "") + ">";
      });
#ifdef SNN_HAVE_CONVERSION
  m.attr("Network").cast<py::class_<Network>>()
      .def("calibrate", &calibrate, py::arg("method") = "ftbc-auto", py::arg("data") = py::none(),
           py::arg("T") = 32, py::kw_only(), py::arg("alpha") = py::none(), py::arg("batches") = py::none(),
           py::arg("batch_size") = 128, py::arg("iters") = py::none(), py::arg("seed") = py::none(),
           py::arg("variant") = py::none(),
           py::arg("device") = "auto", py::arg("threads") = 0, py::arg("progress") = py::none(), R"doc(
Calibrates the network in place for T steps (every t <= T is served) with `method`: 'ftbc-auto' (the
default: thresholds and Forward Temporal Bias Correction chosen on held-out calibration images, no
tuning), 'ftbc', 'ftbc-paper', 'ftbc-exact', 'light' or 'rts' (snnc.calibration_methods()). data: the
calibration images (training data, never the evaluation set; default 'fashion-mnist:train'). alpha
(0.5), batches (3), iters (1), seed (0), variant ('fixed'): left at None, the default in brackets; given
to a method that does not use it (e.g. alpha for 'levels'), an error, as on the CLI. Returns a report
dict. An interrupted or failed calibration leaves the network unchanged.)doc")
      .def("clear_calibration", [](Network& n) { snn::conversion::clear_calibration(n); },
           "Removes every calibration bias (the uncalibrated network).");
  m.def("calibration_methods", &snn::conversion::calibrator_names, "The registered calibration methods.");
#endif

  m.def("load", [](const py::handle& path_arg) {
          const std::string path = path_argument(path_arg, "path");
          py::gil_scoped_release no_gil;
          return snn::load_network(path);
        },
        py::arg("path"), "Reads a network file (.snn.h5). Errors (snnc.Error) name the file and the layer.");
  m.def("import_nir", [](const py::handle& path_arg, const py::handle& dt_arg, const py::handle& shape_arg,
                         const py::handle& if_dt_arg) {
          const std::string path = path_argument(path_arg, "path");
          constexpr snn::RealRange positive{0.0, 1e300, true};
          const double dt = real_argument(dt_arg, positive, "import_nir: dt");
          const double if_dt = if_dt_arg.is_none() ? 0.0 : real_argument(if_dt_arg, positive, "import_nir: if_dt");
          const std::vector<int64_t> input_shape =
              whole_list_argument(shape_arg, snn::limits::kInputExtent, "import_nir: input_shape");
          if (!input_shape.empty() && input_shape.size() != 3)
            raise_argument_error("import_nir: input_shape must be (C, H, W)");
          snn::NirImportOptions o;
          o.dt = dt;
          o.if_dt = if_dt;
          o.input_shape = input_shape;
          py::gil_scoped_release no_gil;
          return snn::import_nir(path, o);
        },
        py::arg("path"), py::kw_only(), py::arg("dt") = 1.0, py::arg("input_shape") = py::tuple(),
        py::arg("if_dt") = py::none(),
        "Reads a NIR graph (nir.write's HDF5, from snnTorch, Norse, Sinabs, SpikingJelly or snnc export) as a "
        "Network, as `snnc import` does. dt: the step NIR's IF (dv/dt = r·I) and LIF dynamics are read with (NIR "
        "files do not record it: snnc's 1, snnTorch's and SpikingJelly's 1e-4); if_dt: IF nodes' own step where a "
        "writer meant r per step (Norse: 1). input_shape: (C, H, W) where the graph's Input is flat. What "
        "snnc cannot run (node types, nested graphs, cycles, v_reset != 0) raises snnc.Error naming the node.");
}

}  // namespace snnc_py
