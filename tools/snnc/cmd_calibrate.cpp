// snnc calibrate IN.snn.h5 -o OUT.snn.h5 --data DATA --T N [--method ftbc-auto] ...: writes calibration
// biases (and their provenance) into a copy of the model.
#include <cstdio>

#include "common.hpp"
#include "job_keys.hpp"
#include "option_checks.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"
#ifdef SNN_HAVE_CONVERSION
#include "snn/conversion/calibration.hpp"
#endif

namespace snnc {

#ifdef SNN_HAVE_CONVERSION
namespace {
struct CalibrateArgs {
  std::string model, out, data = "fashion-mnist:train", method = "ftbc-auto";
  snn::conversion::CalibrationOptions opts;
  RunOptions run;
  std::map<std::string, std::string> given;  // calibration options set on the command line
};

// What the biases depend on, the contents of the model and of every --data file included (every MPI rank
// must read the same bytes).
snn::JobKey calibrate_job(const CalibrateArgs& a, bool reads_data) {
  snn::JobKey job = run_job_key(a.model, "--data", reads_data ? a.data : "", a.run);
  job.add("--method", a.method).add("--T", std::to_string(a.opts.timesteps)).add("--alpha", exact_number(a.opts.alpha));
  job.add("--batches", std::to_string(a.opts.batches)).add("--iters", std::to_string(a.opts.iters));
  return job.add("--seed", std::to_string(a.opts.seed)).add("--variant", a.opts.variant);
}

void run_calibrate(CalibrateArgs& a) {
  // Everything that can be checked before the long work is: options, output path, memory.
  std::unique_ptr<snn::conversion::Calibrator> method;
  snn::Network net;
  snn::Dataset data;
  std::unique_ptr<snn::Backend> backend;
  snn::JobKey job;
  collectively([&] {
    method = snn::conversion::make_calibrator(a.method);
    snn::conversion::require_options_used({a.method}, a.given);
    a.opts.batch_size = a.run.batch_size;
    snn::conversion::check_calibration_options(a.opts, nullptr);
    std::vector<std::string> inputs = {a.model};
    if (method->needs_data()) for (const auto& f : dataset_inputs(a.data)) inputs.push_back(f);
    check_output(a.out, inputs);
    net = snn::load_network(a.model);
    method->check_applicable(net, a.opts);
    check_run_memory(net, a.run.batch_size, a.opts.timesteps);
    if (method->needs_data()) {
      require_batch_per_process(a.run.batch_size, "--batch-size");
      data = open_dataset(a.data, a.run);
      check_readout(net, data, a.data);
    }
    backend = open_backend(a.run);
    if (world().size() > 1) job = calibrate_job(a, method->needs_data());  // digests: only to compare
  });
  agree_on_job(job);
  a.opts.comm = &world();
  Progress progress("calibrate " + a.method, progress_enabled(a.run));
  std::string last_stage;
  a.opts.progress = [&](const std::string& stage, int64_t done, int64_t total) {
    progress.update(done, total);
    last_stage = stage;
  };
  const snn::conversion::CalibrationReport r = method->calibrate(net, *backend, data, a.opts);
  snn::conversion::record_calibration(net, r);
  net.metadata()["calibration.command_line"] = command_line();
  collectively([&] {
    if (is_root()) snn::save_network(net, a.out);  // every process holds the same biases
  });
  if (!is_root()) return;
  if (a.run.json) {
    print_json({{"model", a.out}, {"method", r.method}, {"seconds", r.seconds}, {"images", r.images},
                {"parameters", r.parameters}});
  } else {
    std::printf("calibrated %s with %s for T = %lld in %.1f s (%lld images); wrote %s\n", a.model.c_str(),
                r.method.c_str(), (long long)a.opts.timesteps, r.seconds, (long long)r.images, a.out.c_str());
  }
}
}  // namespace

void register_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Calibrate a converted SNN (FTBC and others) for T steps");
  cmd->add_option("model", a->model, "Model file (.snn.h5)")->required();
  cmd->add_option("-o,--out", a->out, "Output model file")->required();
  cmd->add_option("--data", a->data, "Calibration images (training set)")->capture_default_str();
  cmd->add_option("--T", a->opts.timesteps, "Timesteps to calibrate for (serves every t <= T)")->required()->check(whole_in(1, kMaxTimesteps));
  cmd->add_option("--method", a->method, "ftbc-auto (the default: no tuning), ftbc, ftbc-paper, ftbc-exact, light or rts")->capture_default_str();
  cmd->add_option("--alpha", a->opts.alpha, "FTBC step size")->capture_default_str()->check(real_in(0, 1e6, true));
  cmd->add_option("--batches", a->opts.batches, "Calibration batches")->capture_default_str()->check(whole_in(1, 1 << 20));
  cmd->add_option("--iters", a->opts.iters, "Passes over the batches")->capture_default_str()->check(whole_in(1, 1 << 20));
  cmd->add_option("--seed", a->opts.seed, "Seed choosing the calibration images")->capture_default_str();
  cmd->add_option("--variant", a->opts.variant, "FTBC variant: fixed, paper or exact")->capture_default_str()
      ->check(CLI::IsMember({"fixed", "paper", "exact"}));
  add_run_options(cmd, a->run);
  cmd->callback([a, cmd] {
    a->given = options_given(*cmd, {{"--data", "--data"}, {"--alpha", "--alpha"}, {"--batches", "--batches"},
                                    {"--batch-size", "--batch-size"}, {"--iters", "--iters"}, {"--seed", "--seed"},
                                    {"--variant", "--variant"}});
    run_calibrate(*a);
  });
}
#else
void register_calibrate(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("calibrate", "Calibrate a converted SNN (unavailable in this build)");
  cmd->allow_extras();
  cmd->callback([] { throw snn::Error("snnc was built without the conversion library"); });
}
#endif

}  // namespace snnc
