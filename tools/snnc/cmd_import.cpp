// snnc import MODEL.nir -o MODEL.snn.h5 [--dt S] [--input-shape C,H,W]: a NIR graph as a model file
// (snn/nir_import.hpp has the mapping and what is refused).
#include <cstdio>

#include "common.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"
#include "snn/nir_import.hpp"
#include "snn/path_checks.hpp"

namespace snnc {

namespace {
struct ImportArgs {
  std::string model, out;
  double dt = 1.0, if_dt = 0.0;
  std::vector<int64_t> input_shape;
  bool json = false, quiet = false;
};

void run_import(const ImportArgs& a) {
  snn::check_path_length(a.model, "NIR file");  // "too long", not "not found"
  check_output(a.out, {a.model});
  if (!a.input_shape.empty() && a.input_shape.size() != 3)
    throw snn::Error("--input-shape needs 3 values C,H,W, got " + std::to_string(a.input_shape.size()));
  for (int64_t d : a.input_shape)
    if (d <= 0) throw snn::Error("--input-shape values must be positive");
  snn::NirImportOptions o;
  o.dt = a.dt;
  o.if_dt = a.if_dt;
  o.input_shape = a.input_shape;
  snn::NirImportReport r;
  const snn::Network net = snn::import_nir(a.model, o, &r);
  snn::save_network(net, a.out);  // atomic: the old file or the new one, never a mixture
  if (a.json) {
    print_json({{"model", a.model}, {"output", a.out}, {"nodes", r.nodes}, {"edges", r.edges},
                {"layers", net.size()}, {"input_shape", net.input_shape()}, {"notes", r.notes}});
    return;
  }
  if (a.quiet) return;
  std::printf("wrote %s: %d layers from a NIR graph of %lld nodes, %lld edges (dt = %g)\n", a.out.c_str(), net.size(),
              (long long)r.nodes, (long long)r.edges, a.dt);
  for (const auto& s : r.notes) std::printf("  %s\n", s.c_str());
}
}  // namespace

void register_import(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand("import", "Read a NIR graph (Neuromorphic Intermediate Representation) as a model");
  cmd->add_option("model", args->model, "NIR file (HDF5, as nir.write or snnc export write it)")->required();
  cmd->add_option("-o,--out", args->out, "Output model file (.snn.h5)")->required();
  cmd->add_option("--dt", args->dt,
                  "The step NIR's IF (dv/dt = r·I) and LIF time constants are read with (default 1; snnTorch's and "
                  "SpikingJelly's files: 1e-4, Norse's LIFBox: 1e-6)");
  cmd->add_option("--if-dt", args->if_dt,
                  "IF nodes only: their step, where it is not --dt's (Norse writes IAF with r = 1 per step: --if-dt 1)");
  cmd->add_option("--input-shape", args->input_shape, "C,H,W of the images, where the graph's Input is flat")
      ->delimiter(',');
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No output on success");
  cmd->callback([args] {
    single_process_only("import");
    run_import(*args);
  });
}

}  // namespace snnc
