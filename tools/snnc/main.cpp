// snnc: convert trained CNNs to spiking networks, calibrate them, and measure them. A thin layer over
// the library: each subcommand lives in its own cmd_*.cpp; errors become "snnc: error: ..." + exit 1.
#include <CLI/CLI.hpp>
#include <H5Cpp.h>
#include <cstdio>

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const snn::Error& e) {
    std::fprintf(stderr, "snnc: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "snnc: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
