#include "common.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "option_checks.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/memory.hpp"
#include "snn/output_file.hpp"

namespace snnc {

namespace {
std::string g_command_line;
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--device", o.device, "Backend: cpu, cuda or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--threads", o.threads, "CPU threads (0 = all cores)")->check(whole_in(0, max_threads()));
  cmd->add_option("--limit", o.limit, "Use only the first N images (0 = all)")->check(whole_at_least(0));
  cmd->add_option("--batch-size", o.batch_size, "Images per batch")->check(whole_in(1, 1 << 20));
  cmd->add_flag("--quiet,-q", o.quiet, "No progress output");
  cmd->add_flag("--json", o.json, "Print one JSON object on stdout");
}

void check_output(const std::string& out, const std::vector<std::string>& inputs, const std::string& option) {
  if (is_root()) snn::check_output_path(out, inputs, option);  // rank 0 alone writes
}

void require_distinct_paths(const std::string& a, const std::string& b, const std::string& option_a,
                            const std::string& option_b) {
  if (a.empty() || b.empty()) return;
  std::error_code ea, eb;
  if (std::filesystem::weakly_canonical(a, ea) == std::filesystem::weakly_canonical(b, eb))
    throw snn::Error(option_a + " '" + a + "' and " + option_b + " '" + b + "' name the same file");
}

std::vector<std::string> dataset_inputs(const std::string& spec) {
  return spec.empty() ? std::vector<std::string>{} : snn::dataset_files(spec);
}

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

snn::Dataset open_dataset(const std::string& spec, const RunOptions& o) { return snn::load_dataset(spec, o.limit); }

namespace {
// A file's identity for a job: its size and FNV-1a of its first and last MiB. Not a security hash, and
// not the modification time (copies of the data on each node's local disk are the same data); reading
// all of a 30 GB image set on every process of every run would not be worth it.
std::string file_fingerprint(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  uint64_t h = 1469598103934665603ull;
  std::vector<char> buf(size_t(1) << 20);
  const uintmax_t piece = buf.size();
  for (uintmax_t at : {uintmax_t(0), size > piece ? size - piece : uintmax_t(0)}) {
    in.clear();
    in.seekg(std::streamoff(at));
    in.read(buf.data(), std::streamsize(buf.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ uint8_t(buf[size_t(i)])) * 1099511628211ull;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%llu:%016llx", (unsigned long long)size, (unsigned long long)h);
  return text;
}
}  // namespace

std::string job_description(const std::string& model, const std::string& data, const RunOptions& o) {
  std::string d = "model=" + model + "#" + file_fingerprint(model) + " data=" + data;
  for (const auto& f : dataset_inputs(data)) d += "#" + file_fingerprint(f);
  return d + " limit=" + std::to_string(o.limit) + " batch=" + std::to_string(o.batch_size) + " device=" + o.device;
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
