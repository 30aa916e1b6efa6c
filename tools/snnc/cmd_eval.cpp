// snnc eval MODEL.snn.h5 --data DATA [--ann] [--T N]: accuracy of the ANN view (the CNN the SNN was
// converted from, computed by snnc itself) and, unless --ann, of the SNN after T steps.
#include <cstdio>

#include "common.hpp"
#include "job_keys.hpp"
#include "option_checks.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"

namespace snnc {

namespace {
struct EvalArgs {
  std::string model, data;
  bool ann_only = false;
  int64_t timesteps = 32;
  std::string encoding = "direct";
  RunOptions run;
};

void run_eval(const EvalArgs& a) {
  snn::Network net;
  snn::Dataset data;
  std::unique_ptr<snn::Backend> backend;
  snn::JobKey job;
  collectively([&] {
    net = snn::load_network(a.model);
    check_run_memory(net, a.run.batch_size, a.ann_only ? 1 : a.timesteps);
    data = open_dataset(a.data, a.run);
    check_readout(net, data, a.data);
    backend = open_backend(a.run);
    if (world().size() > 1)  // digests of the model and data: every rank must read the same bytes
      job = run_job_key(a.model, "--data", a.data, a.run)
                .add("--T", std::to_string(a.timesteps))
                .add("--encoding", a.encoding)
                .add("--ann-only", a.ann_only ? "yes" : "no");
  });
  agree_on_job(job);
  nlohmann::json j = {{"model", a.model}, {"data", a.data}, {"images", data.size()}, {"device", backend->name()}};
  if (world().size() > 1) j["processes"] = world().size();
  {
    Progress p("ANN view", progress_enabled(a.run));
    j["ann_accuracy"] = snn::evaluate_ann(*backend, net, data, a.run.batch_size, p.fn(), &world());
  }
  if (!a.ann_only) {
    snn::SweepOptions o;
    o.sim.timesteps = a.timesteps;
    o.sim.encoding = snn::parse_encoding(a.encoding);
    o.batch_size = a.run.batch_size;
    o.with_ann = false;
    o.comm = &world();
    Progress p("SNN T=" + std::to_string(a.timesteps), progress_enabled(a.run));
    o.progress = p.fn();
    const snn::SweepResult r = snn::run_sweep(*backend, net, data, o);
    j["timesteps"] = a.timesteps;
    j["snn_accuracy"] = r.accuracy.back();
  }
  if (!is_root()) return;
  if (a.run.json) {
    print_json(j);
    return;
  }
  std::printf("%s on %s (%lld images)\n", a.model.c_str(), a.data.c_str(), (long long)data.size());
  std::printf("  ANN view accuracy   %.2f %%\n", j["ann_accuracy"].get<double>());
  if (!a.ann_only) std::printf("  SNN accuracy, T=%-3lld %.2f %%\n", (long long)a.timesteps, j["snn_accuracy"].get<double>());
}
}  // namespace

void register_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Accuracy of a model's ANN view (and SNN at T steps)");
  cmd->add_option("model", args->model, "Model file (.snn.h5)")->required();
  cmd->add_option("--data", args->data, "Dataset: fashion-mnist:test, IDX/CIFAR/HDF5 file")->required();
  cmd->add_flag("--ann", args->ann_only, "Only the ANN view (the source CNN)");
  cmd->add_option("--T", args->timesteps, "Timesteps for the SNN accuracy")
      ->check(whole_in(1, kMaxTimesteps))
      ->capture_default_str();
  cmd->add_option("--encoding", args->encoding, "Input encoding: direct or poisson")
      ->check(CLI::IsMember({"direct", "poisson"}))
      ->capture_default_str();
  add_run_options(cmd, args->run);
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace snnc
