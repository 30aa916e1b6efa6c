#include "common.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <unistd.h>

#include "option_checks.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/file_kind.hpp"
#include "snn/image_checks.hpp"
#include "snn/limits.hpp"
#include "snn/memory.hpp"
#include "snn/output_file.hpp"
#include "snn/path_checks.hpp"

namespace snnc {

namespace {
std::string g_command_line;
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Set while parsing: the command being run (its -o holds one kind of file) and its --overwrite.
std::string g_command;
bool g_overwrite = false;

snn::FileKind output_kind(const std::string& command) {
  if (command == "export") return snn::FileKind::NirGraph;
  if (command == "sweep") return snn::FileKind::SweepResults;
  return snn::FileKind::SnncModel;  // convert, calibrate, import
}

CLI::Validator seed_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          snn::parse_seed(s, "");
        } catch (const snn::Error& e) {
          return std::string(e.what()).substr(1);  // "must be ..." after CLI11's "--seed: "
        }
        return {};
      },
      "", "seed");
}
}  // namespace

void add_common_checks(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    const std::string name = sub->get_name();
    sub->preparse_callback([name](size_t) { g_command = name; });
    if (sub->get_option_no_throw("-o"))
      sub->add_flag("--overwrite", g_overwrite, "Replace an existing -o file even when it holds another kind of file");
    for (const char* seed : {"--seed", "--calib-seed"})
      if (CLI::Option* opt = sub->get_option_no_throw(seed)) opt->check(seed_check());
  }
}

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--device", o.device, "Backend: cpu, cuda or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--threads", o.threads, "CPU threads (0 = all cores)")->check(whole_in(0, max_threads()));
  cmd->add_option("--limit", o.limit, "Use only the first N images (0 = all)")->check(whole_at_least(0));
  cmd->add_option("--batch-size", o.batch_size, "Images per batch")->check(whole_in(1, 1 << 20));
  cmd->add_flag("--quiet,-q", o.quiet, "No progress output");
  cmd->add_flag("--json", o.json, "Print one JSON object on stdout");
}

std::map<std::string, std::string> options_given(const CLI::App& cmd, const std::map<std::string, std::string>& spelled) {
  std::map<std::string, std::string> given;
  for (const auto& [name, option] : spelled)
    if (const CLI::Option* o = cmd.get_option_no_throw(option); o && o->count() > 0) given[name] = option;
  return given;
}

void check_output(const std::string& out, const std::vector<std::string>& inputs, const std::string& option) {
  if (!is_root()) return;  // rank 0 alone writes
  snn::check_output_path(out, inputs, option);
  // A checkpoint is also read back: its reader refuses, with the reason, a file that is not one.
  if (option == "-o") snn::check_replaceable(out, output_kind(g_command), g_overwrite, option);
}

void require_distinct_paths(const std::string& a, const std::string& b, const std::string& option_a,
                            const std::string& option_b) {
  if (a.empty() || b.empty()) return;
  std::error_code ea, eb;
  if (std::filesystem::weakly_canonical(a, ea) == std::filesystem::weakly_canonical(b, eb))
    throw snn::Error(option_a + " '" + a + "' and " + option_b + " '" + b + "' name the same file");
}

std::vector<std::string> dataset_inputs(const std::string& spec) {
  if (spec.empty()) return {};
  std::vector<std::string> files = snn::dataset_files(spec);
  for (const auto& f : files) snn::check_path_length(f, "dataset file");  // "too long", not "not found"
  return files;
}

namespace {
// Once per dataset: the same data checked for calibration and for the sweep is one warning.
void warn_pixel_range(const snn::Network& net, const snn::Dataset& data, const std::string& spec) {
  static std::set<std::string> warned;
  if (!is_root() || !warned.insert(spec).second) return;
  const std::string w = snn::pixel_range_warning(data.images.data(), data.images.numel(), net.preprocessing(),
                                                 "dataset '" + spec + "'");
  if (!w.empty()) std::fprintf(stderr, "snnc: warning: %s\n", w.c_str());
}
}  // namespace

void check_readout(const snn::Network& net, const snn::Dataset& data, const std::string& spec) {
  const int out = net.output_node();
  const int64_t outputs = snn::numel_of(net.output_shape(out));
  const std::string readout = "the model's readout '" + net.layer(out).name() + "' has " + std::to_string(outputs) +
                              " output" + (outputs == 1 ? "" : "s");
  if (data.num_classes > outputs)
    throw snn::Error("dataset '" + spec + "' has labels up to " + std::to_string(data.num_classes - 1) + " but " +
                     readout + ": those images can never be classified correctly (wrong model or dataset?)");
  if (data.num_classes < outputs && is_root())
    std::fprintf(stderr, "snnc: warning: %s but dataset '%s' has %d classes (labels 0..%d): is this the model for "
                 "this data?\n", readout.c_str(), spec.c_str(), data.num_classes, data.num_classes - 1);
  warn_pixel_range(net, data, spec);
}

void check_run_memory(const snn::Network& net, int64_t batch, int64_t timesteps) {
  snn::require_memory(snn::simulation_memory_bytes(net, batch, timesteps),
                      "simulating " + std::to_string(timesteps) + " steps on batches of " + std::to_string(batch) +
                          " images",
                      "lower --T or --batch-size");
}

std::unique_ptr<snn::Backend> open_backend(const RunOptions& o) {
  // Under mpirun: one GPU per process on a host (its local rank), and only rank 0 says which backend.
  const bool many = world().size() > 1;
  return snn::make_backend(o.device, o.threads, o.quiet || o.json || !is_root(), many ? world().local_rank() : -1);
}

snn::Dataset open_dataset(const std::string& spec, const RunOptions& o) {
  dataset_inputs(spec);  // an over-long path is "too long", not "not found"
  return snn::load_dataset(spec, o.limit);
}

bool progress_enabled(const RunOptions& o) { return !o.quiet && !o.json && is_root() && ::isatty(STDERR_FILENO); }

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled), start_(now()) {}

Progress::~Progress() {
  if (drawn_) std::fprintf(stderr, "\n");
}

void Progress::update(int64_t done, int64_t total) {
  if (!enabled_ || total <= 0) return;
  const double frac = double(done) / double(total);
  const int width = 30, filled = int(frac * width);
  const double elapsed = now() - start_;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld  %.0fs elapsed, ~%.0fs left ", label_.c_str(), filled,
               "##############################", width - filled, "", (long long)done, (long long)total, elapsed, eta);
  std::fflush(stderr);
  drawn_ = true;
}

std::string command_line() { return g_command_line; }

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.find_first_of(" \t\"'") != std::string::npos) a = "'" + a + "'";
    g_command_line += (i ? " " : "") + a;
  }
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << std::endl; }

}  // namespace snnc
