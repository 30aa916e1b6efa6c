// snnc export MODEL.snn.h5 -o MODEL.nir [--mean-bias]: the network as a NIR graph (snn/nir_export.hpp).
#include <cstdio>

#include "common.hpp"
#include "parallel.hpp"
#include "snn/model_file.hpp"
#include "snn/nir_export.hpp"

namespace snnc {

namespace {
struct ExportArgs {
  std::string model, out;
  bool mean_bias = false, json = false;
};

void run_export(const ExportArgs& a) {
  check_output(a.out, {a.model});
  const snn::Network net = snn::load_network(a.model);
  snn::NirExportOptions o;
  o.mean_bias = a.mean_bias;
  const snn::NirExportReport r = snn::export_nir(net, a.out, o);
  if (a.json) {
    print_json({{"model", a.model}, {"output", a.out}, {"nodes", r.nodes}, {"edges", r.edges},
                {"approximations", r.approximations}});
    return;
  }
  std::printf("wrote %s: NIR graph of %lld nodes, %lld edges\n", a.out.c_str(), (long long)r.nodes, (long long)r.edges);
  for (const auto& s : r.approximations) std::printf("  approximation: %s\n", s.c_str());
}
}  // namespace

void register_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Write a model as a NIR graph (Neuromorphic Intermediate Representation)");
  cmd->add_option("model", args->model, "Model file (.snn.h5)")->required();
  cmd->add_option("-o,--out", args->out, "Output NIR file (.nir, HDF5)")->required();
  cmd->add_flag("--mean-bias", args->mean_bias,
                "Calibration biases: use their mean over steps (an approximation, recorded in the file)");
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->callback([args] {
    single_process_only("export");
    run_export(*args);
  });
}

}  // namespace snnc
