#include "snn/event_policy.hpp"

#include "snn/error.hpp"

namespace snn {

std::string to_string(EventPolicy p) {
  switch (p) {
    case EventPolicy::Dense: return "off";
    case EventPolicy::Events: return "on";
    default: return "auto";
  }
}

EventPolicy parse_event_policy(const std::string& s, const std::string& what) {
  if (s == "auto") return EventPolicy::Auto;
  if (s == "off" || s == "dense") return EventPolicy::Dense;
  if (s == "on" || s == "events") return EventPolicy::Events;
  throw Error(what + " must be auto, off or on, got '" + s + "'");
}

}  // namespace snn
