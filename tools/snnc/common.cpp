#include "common.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "snn/error.hpp"

namespace snnc {

namespace {
std::string g_command_line;
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--device", o.device, "Backend: cpu, cuda or auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--threads", o.threads, "CPU threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--limit", o.limit, "Use only the first N images (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-size", o.batch_size, "Images per batch")->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", o.quiet, "No progress output");
  cmd->add_flag("--json", o.json, "Print one JSON object on stdout");
}

std::unique_ptr<snn::Backend> open_backend(const RunOptions& o) { return snn::make_backend(o.device, o.threads, o.quiet || o.json); }

snn::Dataset open_dataset(const std::string& spec, const RunOptions& o) { return snn::load_dataset(spec, o.limit); }

bool progress_enabled(const RunOptions& o) { return !o.quiet && !o.json && ::isatty(STDERR_FILENO); }

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
