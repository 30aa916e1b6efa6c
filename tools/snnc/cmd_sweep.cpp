// snnc sweep MODEL.snn.h5 --data DATA --T N: accuracy at every t ≤ N from one simulation, with firing
// rates, synaptic operations and energy; a table on stdout (or --json), and optionally sweep.h5.
#include <cmath>
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

namespace {
struct SweepArgs {
  std::string model, data, out, checkpoint;
  int64_t timesteps = 32;
  std::string encoding = "direct";
  uint64_t seed = 0;
  bool all_steps = false;
  std::vector<std::string> compare;  // methods; empty = the model as it is
  std::string calib_data = "fashion-mnist:train";
  int64_t calib_batch_size = 128;
#ifdef SNN_HAVE_CONVERSION
  snn::conversion::CalibrationOptions calib;
#endif
  RunOptions run;
  bool poisson_seed_given = false;
  std::map<std::string, std::string> given;  // calibration options set on the command line (calibrate's names)
};

// Whether the model's own calibration serves `method` for T steps (then it is not calibrated again).
bool model_has_calibration(const snn::Network& model, const std::string& method, int64_t T) {
  const auto& meta = model.metadata();
  return meta.count("calibration") && meta.at("calibration") == method && meta.count("calibration.T") &&
         std::stoll(meta.at("calibration.T")) >= T;
}

// The network a method label stands for: "none" = biases removed; the model's own calibration when it
// has that method for at least T steps; otherwise calibrated here on --calib-data.
snn::Network variant_for(const std::string& method, const snn::Network& model, const SweepArgs& a,
                         const snn::Dataset* calib_data, snn::Backend& backend, double* seconds) {
  snn::Network net = model;
  *seconds = 0.0;
  if (method == "model") return net;
#ifdef SNN_HAVE_CONVERSION
  snn::conversion::clear_calibration(net);
  if (method == "none") return net;
  if (model_has_calibration(model, method, a.timesteps)) return model;
  auto calibrator = snn::conversion::make_calibrator(method);
  snn::conversion::CalibrationOptions o = a.calib;
  o.timesteps = a.timesteps;
  o.batch_size = a.calib_batch_size;
  o.comm = &world();
  if (calibrator->needs_data() && !calib_data)
    throw snn::Error("--compare " + method + ": needs calibration data (--calib-data)");
  Progress p("calibrate " + method, progress_enabled(a.run));
  o.progress = [&](const std::string&, int64_t d, int64_t t) { p.update(d, t); };
  const snn::conversion::CalibrationReport r = calibrator->calibrate(net, backend, calib_data ? *calib_data : snn::Dataset(), o);
  snn::conversion::record_calibration(net, r);
  *seconds = r.seconds;
  return net;
#else
  (void)a, (void)calib_data, (void)backend;
  throw snn::Error("--compare " + method + ": snnc was built without the calibration library");
#endif
}

bool needs_calibration_data(const std::vector<std::string>& methods, const snn::Network& model, int64_t T) {
#ifdef SNN_HAVE_CONVERSION
  for (const auto& m : methods) {
    if (m == "none" || m == "model") continue;
    if (!model_has_calibration(model, m, T) && snn::conversion::make_calibrator(m)->needs_data()) return true;
  }
#else
  (void)methods, (void)model, (void)T;
#endif
  return false;
}

// Steps shown in the table: 1, 2, 4, ... and T itself (every step with --all-steps).
std::vector<int64_t> table_steps(int64_t T, bool all) {
  std::vector<int64_t> s;
  for (int64_t t = 1; t <= T; t = all ? t + 1 : t * 2) s.push_back(t);
  if (s.back() != T) s.push_back(T);
  return s;
}

nlohmann::json to_json(const snn::SweepResult& r) {
  nlohmann::json fr = nlohmann::json::object();
  for (size_t l = 0; l < r.neuron_layers.size(); ++l) fr[r.neuron_layers[l]] = r.mean_firing_rate(l);
  double acs = 0, macs = 0;
  for (size_t l = 0; l < r.synaptic_ops.size(); ++l)
    for (int64_t t = 0; t < r.timesteps; ++t) acs += r.synaptic_ops[l][size_t(t)], macs += r.dense_macs[l][size_t(t)];
  return {{"method", r.method},
          {"ann_accuracy", r.ann_accuracy},
          {"accuracy", r.accuracy},
          {"images", r.images},
          {"timesteps", r.timesteps},
          {"seconds", r.seconds},
          {"calibration_seconds", r.calibration_seconds},
          {"image_timesteps_per_second", double(r.images * r.timesteps) / std::max(r.seconds, 1e-9)},
          {"firing_rate", fr},
          {"synaptic_ops_per_image", acs},
          {"dense_macs_per_image", macs},
          {"ann_macs_per_image", r.ann_macs},
          {"snn_energy_uj_per_image", r.snn_energy_uj(r.timesteps)},
          {"ann_energy_uj_per_image", r.ann_energy_uj()}};
}

void print_table(const std::vector<snn::SweepResult>& results, bool all_steps) {
  const snn::SweepResult& first = results.front();
  std::printf("%lld images, T = %lld, ANN (CNN) accuracy %.2f %%\n\n", (long long)first.images,
              (long long)first.timesteps, first.ann_accuracy);
  std::printf("  %6s", "T");
  for (const auto& r : results) std::printf("  %10s", r.method.c_str());
  std::printf("  %12s\n", "energy uJ");
  for (int64_t t : table_steps(first.timesteps, all_steps)) {
    std::printf("  %6lld", (long long)t);
    for (const auto& r : results) std::printf("  %9.2f%%", r.accuracy[size_t(t - 1)]);
    std::printf("  %12.3f\n", first.snn_energy_uj(t));
  }
  std::printf("  %6s", "ANN");
  for (size_t i = 0; i < results.size(); ++i) std::printf("  %9.2f%%", first.ann_accuracy);
  std::printf("  %12.3f\n", first.ann_energy_uj());
  std::printf("\n  energy: 45 nm estimate, %.1f pJ/MAC, %.1f pJ/AC, per image, cumulative to T\n",
              snn::EnergyModel{}.pj_per_mac, snn::EnergyModel{}.pj_per_ac);
  std::printf("\n  firing rate (spikes per neuron per step, mean over T):\n");
  for (size_t l = 0; l < first.neuron_layers.size(); ++l) {
    std::printf("    %-28s", first.neuron_layers[l].c_str());
    for (const auto& r : results) std::printf("  %8.4f", r.mean_firing_rate(l));
    std::printf("\n");
  }
  std::printf("\n");
  for (const auto& r : results) {
    std::printf("  %-10s simulation %.1f s (%.0f image-timesteps/s)", r.method.c_str(), r.seconds,
                double(r.images * r.timesteps) / std::max(r.seconds, 1e-9));
    if (r.calibration_seconds > 0) std::printf(", calibration %.1f s", r.calibration_seconds);
    std::printf(", energy %.3f uJ/image at T\n", r.snn_energy_uj(r.timesteps));
  }
}

// Everything the sweep's numbers depend on (for agree_on_job and the checkpoint), the contents of every
// file it reads included (--calib-data's when a method is calibrated here).
snn::JobKey sweep_job(const SweepArgs& a, bool need_calib) {
  snn::JobKey job = run_job_key(a.model, "--data", a.data, a.run);
  job.add("--T", std::to_string(a.timesteps)).add("--encoding", a.encoding).add("--seed", std::to_string(a.seed));
  std::string compare;
  for (const auto& m : a.compare) compare += (compare.empty() ? "" : ",") + m;
  job.add("--compare", compare);
  if (a.compare.empty()) return job;
  if (need_calib) add_data_fields(job, "--calib-data", a.calib_data);
  else job.add("--calib-data", a.calib_data);
  job.add("--calib-batch-size", std::to_string(a.calib_batch_size));
#ifdef SNN_HAVE_CONVERSION
  job.add("--alpha", exact_number(a.calib.alpha)).add("--batches", std::to_string(a.calib.batches));
  job.add("--iters", std::to_string(a.calib.iters)).add("--calib-seed", std::to_string(a.calib.seed));
  job.add("--variant", a.calib.variant);
#endif
  return job;
}

// Refused before any work: an option no run of this sweep uses, and a --compare method that cannot act on
// this network at this T (levels at T < L).
void check_methods(const SweepArgs& a, const snn::Network& net) {
  if (a.poisson_seed_given && a.encoding == "direct")
    throw snn::Error("--seed has no effect with --encoding direct (it seeds Poisson encoding)");
  if (a.compare.empty() && !a.given.empty())
    throw snn::Error(a.given.begin()->second + " has no effect without --compare (it sets how --compare's methods calibrate)");
#ifdef SNN_HAVE_CONVERSION
  snn::conversion::require_options_used(a.compare, a.given);
  snn::conversion::CalibrationOptions o = a.calib;
  o.timesteps = a.timesteps;
  for (const auto& m : a.compare)
    if (m != "none" && m != "model" && !model_has_calibration(net, m, a.timesteps))
      snn::conversion::make_calibrator(m)->check_applicable(net, o);
#else
  (void)net;
#endif
}

// What a sweep runs on, everything checked that can be before the long work: output paths, options,
// memory, labels; and, with several processes or a checkpoint, the job they must agree on.
struct SweepSetup {
  snn::Network net;
  snn::Dataset data, calib;
  std::unique_ptr<snn::Backend> backend;
  bool need_calib = false;
  snn::JobKey job;
};

SweepSetup prepare_sweep(const SweepArgs& a) {
  SweepSetup u;
  collectively([&] {
    std::vector<std::string> inputs = {a.model};
    for (const auto& f : dataset_inputs(a.data)) inputs.push_back(f);
    if (!a.compare.empty())
      for (const auto& f : dataset_inputs(a.calib_data)) inputs.push_back(f);
    if (!a.out.empty()) check_output(a.out, inputs);
    if (!a.checkpoint.empty()) {
      if (!a.out.empty()) inputs.push_back(a.out);
      require_distinct_paths(a.checkpoint, a.out, "--checkpoint", "-o");
      check_output(a.checkpoint, inputs, "--checkpoint");
    }
    u.net = snn::load_network(a.model);
    check_methods(a, u.net);
    check_run_memory(u.net, std::max(a.run.batch_size, a.calib_batch_size), a.timesteps);
    u.data = open_dataset(a.data, a.run);
    check_readout(u.net, u.data, a.data);
    u.need_calib = !a.compare.empty() && needs_calibration_data(a.compare, u.net, a.timesteps);
    if (u.need_calib) {
      require_batch_per_process(a.calib_batch_size, "--calib-batch-size");
      u.calib = snn::load_dataset(a.calib_data);
      check_readout(u.net, u.calib, a.calib_data);
    }
    u.backend = open_backend(a.run);
    if (world().size() > 1 || !a.checkpoint.empty()) u.job = sweep_job(a, u.need_calib);  // digests: only to compare
  });
  agree_on_job(u.job);
  return u;
}

// The results: the sweep file (-o), then a table or JSON on rank 0.
void report_sweep(const SweepArgs& a, const std::vector<snn::SweepResult>& results, const std::string& device) {
  if (!a.out.empty()) {
    std::map<std::string, std::string> info = {{"command_line", command_line()}, {"model", a.model},
                                               {"data", a.data},                 {"encoding", a.encoding},
                                               {"device", device}};
    collectively([&] {
      if (is_root()) snn::write_sweep_file(a.out, results, info);
    });
  }
  if (!is_root()) return;
  if (a.run.json) {
    nlohmann::json j = to_json(results.front());
    if (results.size() > 1) {
      nlohmann::json methods = nlohmann::json::object();
      for (const auto& r : results) methods[r.method] = to_json(r);
      j["methods"] = methods;
    }
    j["model"] = a.model;
    j["data"] = a.data;
    j["device"] = device;
    if (world().size() > 1) j["processes"] = world().size();
    if (!a.out.empty()) j["output"] = a.out;
    print_json(j);
  } else {
    print_table(results, a.all_steps);
    if (!a.out.empty()) std::printf("\n  wrote %s\n", a.out.c_str());
  }
}

void run_sweep_cmd(const SweepArgs& a) {
  const SweepSetup u = prepare_sweep(a);
  std::unique_ptr<snn::SweepCheckpoint> checkpoint;
  if (!a.checkpoint.empty()) checkpoint = std::make_unique<snn::SweepCheckpoint>(a.checkpoint, u.job, world());

  snn::SweepOptions o;
  o.sim.timesteps = a.timesteps;
  o.sim.encoding = snn::parse_encoding(a.encoding);
  o.sim.seed = a.seed;
  o.batch_size = a.run.batch_size;
  o.comm = &world();
  o.checkpoint = checkpoint.get();
  std::vector<snn::SweepResult> results;
  if (a.compare.empty()) {
    Progress progress("sweep", progress_enabled(a.run));
    o.progress = progress.fn();
    o.checkpoint_key = "model";
    results.push_back(snn::run_sweep(*u.backend, u.net, u.data, o));
    results.back().method = u.net.metadata().count("calibration") ? u.net.metadata().at("calibration") : "none";
  } else {
    for (size_t m = 0; m < a.compare.size(); ++m) {
      o.checkpoint_key = a.compare[m];
      // A method the checkpoint holds complete needs no calibration: its numbers are all there.
      const auto saved = checkpoint ? checkpoint->find(o.checkpoint_key) : std::nullopt;
      const bool complete = saved && saved->next_block == saved->blocks;
      double calib_seconds = 0;
      const snn::Network variant = complete ? u.net
                                            : variant_for(a.compare[m], u.net, a, u.need_calib ? &u.calib : nullptr,
                                                          *u.backend, &calib_seconds);
      Progress progress("sweep " + a.compare[m], progress_enabled(a.run));
      o.progress = progress.fn();
      o.with_ann = m == 0;  // the ANN view does not depend on calibration
      results.push_back(snn::run_sweep(*u.backend, variant, u.data, o));
      results.back().method = a.compare[m];
      results.back().calibration_seconds = calib_seconds;
      if (m > 0) results.back().ann_accuracy = results.front().ann_accuracy;
    }
  }
  report_sweep(a, results, u.backend->name());
  if (checkpoint) checkpoint->remove();  // the results are out: nothing is left to resume
}
}  // namespace

void register_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Accuracy at every timestep t <= T from one simulation");
  cmd->add_option("model", args->model, "Model file (.snn.h5)")->required();
  cmd->add_option("--data", args->data, "Dataset: fashion-mnist:test, IDX/CIFAR/HDF5 file")->required();
  cmd->add_option("--T", args->timesteps, "Timesteps to simulate (accuracy is reported for every t <= T)")
      ->check(whole_in(1, kMaxTimesteps))
      ->capture_default_str();
  cmd->add_option("--encoding", args->encoding, "Input encoding: direct or poisson")
      ->check(CLI::IsMember({"direct", "poisson"}))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for Poisson encoding");
  cmd->add_option("-o,--out", args->out, "Write the results to this HDF5 file (sweep.h5)");
  cmd->add_option("--checkpoint", args->checkpoint,
                  "Record finished batches here; the same command started again resumes from it (any number of "
                  "processes) and deletes it when done")
      ->check(CLI::Validator(
          [](std::string& path) { return path.empty() ? std::string("the file name is empty") : std::string(); },
          "FILE"));
  cmd->add_flag("--all-steps", args->all_steps, "Show every timestep in the table, not only powers of two");
  cmd->add_option("--compare", args->compare,
                  "Methods to compare on the same images: none, model, ftbc, ftbc-paper, ftbc-exact, ftbc-auto, light, rts")
      ->delimiter(',');
  cmd->add_option("--calib-data", args->calib_data, "Calibration images for --compare methods")->capture_default_str();
  cmd->add_option("--calib-batch-size", args->calib_batch_size, "Calibration batch size")->capture_default_str()
      ->check(whole_in(1, 1 << 20));
#ifdef SNN_HAVE_CONVERSION
  cmd->add_option("--alpha", args->calib.alpha, "FTBC step size")->capture_default_str()->check(real_in(0, 1e6, true));
  cmd->add_option("--batches", args->calib.batches, "Calibration batches")->capture_default_str()
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--iters", args->calib.iters, "Calibration passes over the batches")->capture_default_str()
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--calib-seed", args->calib.seed, "Seed choosing the calibration images")->capture_default_str();
  cmd->add_option("--variant", args->calib.variant, "FTBC variant for 'ftbc': fixed, paper or exact")
      ->check(CLI::IsMember({"fixed", "paper", "exact"}));
#endif
  add_run_options(cmd, args->run);
  cmd->callback([args, cmd] {
    args->poisson_seed_given = cmd->get_option("--seed")->count() > 0;
    args->given = options_given(*cmd, {{"--data", "--calib-data"}, {"--batch-size", "--calib-batch-size"},
                                       {"--alpha", "--alpha"}, {"--batches", "--batches"}, {"--iters", "--iters"},
                                       {"--seed", "--calib-seed"}, {"--variant", "--variant"}});
    run_sweep_cmd(*args);
  });
}

}  // namespace snnc
