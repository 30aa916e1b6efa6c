// snnc: convert trained CNNs to spiking networks, calibrate them, and measure them. A thin layer over
// the library: each subcommand lives in its own cmd_*.cpp; errors become "snnc: error: ..." + exit 1.
#include <CLI/CLI.hpp>
#include <H5Cpp.h>
#include <cstdio>
#include <cstdlib>
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common.hpp"
#include "parallel.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"

namespace {
// Freed memory is kept for the next batch instead of going back to the system. A simulation allocates
// its neuron states per batch (per slice), and glibc's defaults return large freed blocks at once, so
// every batch page-faulted them in again (bench/README.md, compare_torch.sh's MALLOC). Settings the
// user gave glibc through the environment are left alone.
void keep_freed_memory() {
#if defined(__GLIBC__)
  for (const char* v : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"})
    if (std::getenv(v)) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; blocks below it come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}
}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  snnc::set_command_line(argc, argv);
  H5::Exception::dontPrint();
  snnc::world();  // under mpirun: joins the job (MPI_Init) before anything can fail
  CLI::App app{"snnc " + std::string(snn::snnc_version()) +
               ": convert trained CNNs to spiking neural networks, calibrate and simulate them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("snnc ") + snn::snnc_version());
  snnc::register_info(app);
  snnc::register_convert(app);
  snnc::register_eval(app);
  snnc::register_calibrate(app);
  snnc::register_sweep(app);
  snnc::register_export(app);
  snnc::register_import(app);
  snnc::add_common_checks(app);
  std::string commands;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
  if (argc > 1 && argv[1][0] != '-' && !app.get_subcommands([&](CLI::App* s) { return s->get_name() == argv[1]; }).size()) {
    return snnc::exit_with_agreed_error("unknown command '" + std::string(argv[1]) + "' (commands: " + commands +
                                        "; see snnc --help)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return snnc::is_root() ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return snnc::is_root() ? app.exit(e) : 0;
  } catch (const CLI::CallForVersion& e) {
    return snnc::is_root() ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    // Every other parse error (range, missing or unknown option, bad value) in snnc's format, exit 1.
    std::string msg = e.what();
    if (msg == "A subcommand is required") msg = "a command is required (" + commands + "; see snnc --help)";
    const size_t colon = msg.find(": must ");
    if (colon != std::string::npos) msg.erase(colon, 1);  // "--T: must be…" -> "--T must be…"
    return snnc::exit_with_agreed_error(msg);
  } catch (const snnc::AgreedError& e) {
    // Every process has this error (see parallel.hpp); rank 0 says it once.
    if (snnc::is_root()) std::fprintf(stderr, "snnc: error: %s\n", e.what());
    return 1;
  } catch (const snn::Error& e) {
    snnc::abort_with_error(std::string("error: ") + e.what(), 1);
  } catch (const std::bad_alloc&) {
    // The up-front estimates (snn/memory.hpp) should have refused first; this is the last line.
    snnc::abort_with_error("error: out of memory; try a smaller --batch-size, --T or --limit", 1);
  } catch (const std::exception& e) {
    snnc::abort_with_error(std::string("internal error: ") + e.what(), 2);
  }
  return 0;
}
