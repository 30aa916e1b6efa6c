// snnc: convert trained CNNs to spiking networks, calibrate them, and measure them. A thin layer over
// the library: each subcommand lives in its own cmd_*.cpp; errors become "snnc: error: ..." + exit 1.
#include <CLI/CLI.hpp>
#include <H5Cpp.h>
#include <cstdio>
#include <new>

#include "common.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"

int main(int argc, char** argv) {
  snnc::set_command_line(argc, argv);
  H5::Exception::dontPrint();
  CLI::App app{"snnc " + std::string(snn::snnc_version()) +
               ": convert trained CNNs to spiking neural networks, calibrate and simulate them"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("snnc ") + snn::snnc_version());
  snnc::register_info(app);
  snnc::register_convert(app);
  snnc::register_eval(app);
  snnc::register_calibrate(app);
  snnc::register_sweep(app);
  std::string commands;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
  if (argc > 1 && argv[1][0] != '-' && !app.get_subcommands([&](CLI::App* s) { return s->get_name() == argv[1]; }).size()) {
    std::fprintf(stderr, "snnc: error: unknown command '%s' (commands: %s; see snnc --help)\n", argv[1], commands.c_str());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every other parse error (range, missing or unknown option, bad value) in snnc's format, exit 1.
    std::string msg = e.what();
    if (msg == "A subcommand is required") msg = "a command is required (" + commands + "; see snnc --help)";
    const size_t colon = msg.find(": must ");
    if (colon != std::string::npos) msg.erase(colon, 1);  // "--T: must be…" -> "--T must be…"
    std::fprintf(stderr, "snnc: error: %s\n", msg.c_str());
    return 1;
  } catch (const snn::Error& e) {
    std::fprintf(stderr, "snnc: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // The up-front estimates (snn/memory.hpp) should have refused first; this is the last line.
    std::fprintf(stderr, "snnc: error: out of memory; try a smaller --batch-size, --T or --limit\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "snnc: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
