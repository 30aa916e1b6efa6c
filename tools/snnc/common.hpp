// Shared pieces of the snnc subcommands: options every command takes, terminal progress, JSON output.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "snn/backend.hpp"
#include "snn/dataset.hpp"
#include "snn/network.hpp"
#include "snn/sweep.hpp"

namespace snnc {

// Options shared by the commands that run a network.
struct RunOptions {
  std::string device = "auto";
  int threads = 0;
  bool quiet = false;
  bool json = false;
  int64_t limit = 0;
  int64_t batch_size = 128;
};

// --device, --threads, --quiet, --json, --limit, --batch-size.
void add_run_options(CLI::App* cmd, RunOptions& o);
std::unique_ptr<snn::Backend> open_backend(const RunOptions& o);

// Before any long work: refuses an output (-o) that is, or links to, an input, and checks that its
// directory exists and is writable; refuses to replace an existing -o of another kind than the command
// writes (a TorchScript model under `export -o`: snn/file_kind.hpp) unless --overwrite was given. Under
// mpirun only rank 0 checks (it alone writes).
void check_output(const std::string& out, const std::vector<std::string>& inputs, const std::string& option = "-o");

// Of `spelled` (a name -> this command's option), the options given on cmd's command line.
std::map<std::string, std::string> options_given(const CLI::App& cmd, const std::map<std::string, std::string>& spelled);
// Gives every command that writes -o the --overwrite flag (check_output reads it), and every --seed /
// --calib-seed the seed check (snn::parse_seed: a whole number in [0, 2^64 - 1], nothing clamped).
void add_common_checks(CLI::App& app);
// Refuses two output options that name the same file (e.g. --checkpoint and -o).
void require_distinct_paths(const std::string& a, const std::string& b, const std::string& option_a,
                            const std::string& option_b);
// The files a --data spec reads (for check_output).
std::vector<std::string> dataset_inputs(const std::string& spec);
// The dataset's labels against the model's readout: labels the readout cannot produce are an error; a
// readout with more outputs than the dataset has classes is a warning naming both. Float pixels far
// outside what the model's normalisation expects (0..255 given as float) are a warning, once per dataset.
void check_readout(const snn::Network& net, const snn::Dataset& data, const std::string& spec);
// Refuses up front a simulation whose memory (for --T and --batch-size) exceeds what is available.
void check_run_memory(const snn::Network& net, int64_t batch, int64_t timesteps);
snn::Dataset open_dataset(const std::string& spec, const RunOptions& o);

// A progress line on stderr, only when stderr is a terminal and not --quiet/--json (logs stay clean).
class Progress {
 public:
  Progress(std::string label, bool enabled);
  ~Progress();
  void update(int64_t done, int64_t total);
  snn::ProgressFn fn() { return [this](int64_t d, int64_t t) { update(d, t); }; }

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  double start_;
};
bool progress_enabled(const RunOptions& o);

// The command line as typed, for provenance.
std::string command_line();
void set_command_line(int argc, char** argv);

// Prints one JSON object on stdout.
void print_json(const nlohmann::json& j);

// Each subcommand registers itself on the app.
void register_info(CLI::App& app);
void register_sweep(CLI::App& app);
void register_eval(CLI::App& app);
void register_convert(CLI::App& app);    // needs the TorchScript importer; says so when built without
void register_calibrate(CLI::App& app);
void register_export(CLI::App& app);
void register_import(CLI::App& app);

}  // namespace snnc
