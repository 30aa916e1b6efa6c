// snnc.SweepResult and snnc.Simulation: results as NumPy arrays.
#include <pybind11/stl.h>

#include "arrays.hpp"
#include "bindings.hpp"
#include "results.hpp"
#include "snn/sweep.hpp"

namespace snnc_py {

void bind_results(py::module_& m) {
  using R = snn::SweepResult;
  py::class_<R>(m, "SweepResult", R"doc(
The numbers of one sweep: accuracy after every step t = 1..T (one simulation gives them all, since the
prediction at t is the argmax of the readout summed over steps 1..t), firing rates and operation counts.
Arrays are NumPy; layers are listed in neuron_layers / weight_layers order.)doc")
      .def_readonly("method", &R::method, "the network variant (its calibration, or 'none')")
      .def_readonly("images", &R::images)
      .def_readonly("timesteps", &R::timesteps)
      .def_readonly("ann_accuracy", &R::ann_accuracy, "the CNN (ANN view) accuracy in percent (NaN if not measured)")
      .def_property_readonly("accuracy", [](const R& r) { return to_numpy(std::vector<double>(r.accuracy), {py::ssize_t(r.accuracy.size())}); },
                             "[T] percent; entry t-1 uses steps 1..t")
      .def_readonly("neuron_layers", &R::neuron_layers)
      .def_property_readonly("neurons", [](const R& r) { return to_numpy(std::vector<int64_t>(r.neurons), {py::ssize_t(r.neurons.size())}); },
                             "[L] neurons per image of each neuron layer")
      .def_property_readonly("firing_rate", [](const R& r) { return rows_to_numpy(r.firing_rate, r.timesteps); },
                             "[L, T] spikes per neuron at each step")
      .def_readonly("weight_layers", &R::weight_layers)
      .def_property_readonly("layer_macs", [](const R& r) { return to_numpy(std::vector<int64_t>(r.layer_macs), {py::ssize_t(r.layer_macs.size())}); },
                             "[W] the CNN's MACs per image of each weight layer")
      .def_property_readonly("synaptic_ops", [](const R& r) { return rows_to_numpy(r.synaptic_ops, r.timesteps); },
                             "[W, T] accumulates per image at each step (driven by spikes)")
      .def_property_readonly("dense_macs", [](const R& r) { return rows_to_numpy(r.dense_macs, r.timesteps); },
                             "[W, T] multiply-accumulates per image at each step (analog inputs)")
      .def_readonly("ann_macs", &R::ann_macs, "the CNN's MACs per image")
      .def_readonly("seconds", &R::seconds, "simulation wall time")
      .def_readonly("ann_seconds", &R::ann_seconds)
      .def_property_readonly(
          "energy_uj",
          [](const R& r) {
            std::vector<double> e;
            for (int64_t t = 1; t <= r.timesteps; ++t) e.push_back(r.snn_energy_uj(t));
            return to_numpy(std::move(e), {py::ssize_t(r.timesteps)});
          },
          "[T] µJ per image up to step t (45 nm: 4.6 pJ/MAC, 0.9 pJ/AC)")
      .def_property_readonly("ann_energy_uj", [](const R& r) { return r.ann_energy_uj(); })
      .def_property_readonly("mean_firing_rate",
                             [](const R& r) {
                               std::vector<double> v;
                               for (size_t l = 0; l < r.neuron_layers.size(); ++l) v.push_back(r.mean_firing_rate(l));
                               return to_numpy(std::move(v), {py::ssize_t(v.size())});
                             },
                             "[L] spikes per neuron per step, over all steps")
      .def("__repr__", [](const R& r) {
        char b[160];
        std::snprintf(b, sizeof b, "<snnc.SweepResult %s: %lld images, T = %lld, accuracy at T %.2f %%, ANN %.2f %%>",
                      r.method.c_str(), (long long)r.images, (long long)r.timesteps,
                      r.accuracy.empty() ? 0.0 : r.accuracy.back(), r.ann_accuracy);
        return std::string(b);
      });

  using S = Simulation;
  py::class_<S>(m, "Simulation", "One simulation of N images over T steps (net.simulate).")
      .def_readonly("timesteps", &S::timesteps)
      .def_readonly("images", &S::images)
      .def_property_readonly("predictions", [](const S& s) { return to_numpy(std::vector<int32_t>(s.predictions), {py::ssize_t(s.timesteps), py::ssize_t(s.images)}); },
                             "int32 [T, N]: row t-1 is the prediction from steps 1..t")
      .def_property_readonly("readout", [](const S& s) { return to_numpy(snn::Tensor(s.readout)); },
                             "float32 [N, K]: the readout summed over all T steps")
      .def_readonly("neuron_layers", &S::neuron_layers)
      .def_readonly("weight_layers", &S::weight_layers)
      .def_property_readonly("spikes", [](const S& s) { return rows_to_numpy(s.spikes, s.timesteps); },
                             "[L, T] spikes emitted at each step, all images together")
      .def_property_readonly("synaptic_ops", [](const S& s) { return rows_to_numpy(s.synaptic_ops, s.timesteps); },
                             "[W, T] accumulates at each step, all images together")
      .def_property_readonly("dense_macs", [](const S& s) { return rows_to_numpy(s.dense_macs, s.timesteps); },
                             "[W, T] multiply-accumulates at each step, all images together")
      .def("__repr__", [](const S& s) {
        return "<snnc.Simulation " + std::to_string(s.images) + " images, T = " + std::to_string(s.timesteps) + ">";
      });
}

}  // namespace snnc_py
