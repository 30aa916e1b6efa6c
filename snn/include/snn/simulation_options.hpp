// Options of one SNN simulation, shared by every backend.
#pragma once
#include <cstdint>
#include <string>

namespace snn {

enum class Encoding {
  Direct,   // the analog image at every step (default)
  Poisson,  // each pixel fires with probability = its raw intensity in [0, 1], then is normalised
};
std::string to_string(Encoding e);
Encoding parse_encoding(const std::string& s);  // "direct" | "poisson"

struct SimulationOptions {
  int64_t timesteps = 32;
  Encoding encoding = Encoding::Direct;
  uint64_t seed = 0;                 // Poisson encoding: same seed, same spikes (on every backend)
  int64_t max_chunk_steps = 0;       // timesteps per chunk; 0 = as many as the memory budget allows
  int64_t memory_budget = int64_t(1) << 30;  // bytes of activations per chunk (the chunk bound)
};

// The timestep a chunk starts at, how many steps it holds, and the batch size (tensors hold steps·batch
// samples, sample index = t·batch + b).
struct StepChunk {
  int64_t t0 = 0;
  int64_t steps = 1;
  int64_t batch = 1;
};

}  // namespace snn
