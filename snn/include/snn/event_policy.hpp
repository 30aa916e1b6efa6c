// Whether the CPU backend's weight kernels (conv, linear) run event-driven in the SNN view: chosen per
// chunk from the input's measured density (Auto, the default), or forced, for benchmarks and for the
// tests that compare the two paths. Environment: SNNC_CPU_EVENTS=auto|off|on sets a backend's default.
#pragma once
#include <string>

namespace snn {

enum class EventPolicy { Auto, Dense, Events };

std::string to_string(EventPolicy p);        // "auto" | "off" | "on"
EventPolicy parse_event_policy(const std::string& s, const std::string& what);  // error names `what`

}  // namespace snn
