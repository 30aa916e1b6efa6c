// snnc info MODEL.snn.h5: what is in a model file — layers, shapes, neurons, thresholds, biases, sizes.
#include <cstdio>

#include "common.hpp"
#include "parallel.hpp"
#include "snn/layers/neuron.hpp"
#include "snn/model_file.hpp"

namespace snnc {

namespace {
struct InfoArgs {
  std::string model;
  bool json = false;
};

void run_info(const InfoArgs& a) {
  const snn::Network net = snn::load_network(a.model);
  int64_t neurons = 0;
  for (int i : net.neuron_nodes()) neurons += snn::numel_of(net.output_shape(i));
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["input_shape"] = net.input_shape();
    j["parameters"] = net.parameter_count();
    j["neurons"] = neurons;
    j["macs_per_image"] = net.macs_per_sample();
    j["metadata"] = net.metadata();
    j["preprocessing"] = {{"mean", net.preprocessing().mean}, {"std", net.preprocessing().std}};
    for (int i = 0; i < net.size(); ++i) {
      const snn::Layer& l = net.layer(i);
      nlohmann::json lj = {{"name", l.name()},         {"type", l.type()},
                           {"inputs", net.inputs(i)},  {"output_shape", net.output_shape(i)},
                           {"summary", l.summary()},   {"parameters", l.parameter_count()}};
      if (auto* n = dynamic_cast<const snn::NeuronLayer*>(&l)) {
        lj["threshold"] = n->threshold();
        lj["bias_steps"] = n->bias_steps();
        lj["bias_constant"] = n->bias_constant();
      }
      j["layers"].push_back(lj);
    }
    print_json(j);
    return;
  }
  std::printf("%s\n", a.model.c_str());
  std::printf("  input %s", snn::to_string(net.input_shape()).c_str());
  if (!net.preprocessing().identity()) {
    std::printf("  normalised: mean");
    for (float m : net.preprocessing().mean) std::printf(" %g", m);
    std::printf(", std");
    for (float s : net.preprocessing().std) std::printf(" %g", s);
  }
  std::printf("\n\n  %-4s %-28s %-18s %-18s %s\n", "#", "layer", "type", "output", "attributes");
  for (int i = 0; i < net.size(); ++i) {
    const snn::Layer& l = net.layer(i);
    std::string inputs;
    if (net.inputs(i).size() > 1 || (net.inputs(i)[0] != i - 1))
      for (int j : net.inputs(i)) inputs += (inputs.empty() ? " <- " : ", ") + (j < 0 ? std::string("input") : net.layer(j).name());
    std::printf("  %-4d %-28s %-18s %-18s %s%s\n", i, l.name().c_str(), l.type().c_str(),
                snn::to_string(net.output_shape(i)).c_str(), l.summary().c_str(), inputs.c_str());
  }
  std::printf("\n  parameters %lld, spiking neurons %lld, CNN MACs per image %lld\n", (long long)net.parameter_count(),
              (long long)neurons, (long long)net.macs_per_sample());
  if (!net.metadata().empty()) {
    std::printf("\n  provenance\n");
    for (const auto& [k, v] : net.metadata()) std::printf("    %-22s %s\n", k.c_str(), v.c_str());
  }
}
}  // namespace

void register_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Show a model file's layers, thresholds, biases and sizes");
  cmd->add_option("model", args->model, "Model file (.snn.h5)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->callback([args] {
    single_process_only("info");
    run_info(*args);
  });
}

}  // namespace snnc
