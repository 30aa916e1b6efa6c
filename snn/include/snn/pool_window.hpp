// The pooling window rule shared by the pooling kernels of every backend (zero/−∞ padding, floor output
// size, as PyTorch by default): visits the in-bounds input elements of output (oy, ox) in row-major order.
#pragma once
#include <cstdint>

#include "snn/hd.hpp"

namespace snn {

struct PoolGeometry {
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int64_t h, w;  // input plane
};

template <class Visit>
SNN_HD void for_each_in_window(const PoolGeometry& g, int64_t oy, int64_t ox, Visit visit) {
  for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
    const int64_t iy = oy * g.stride_h - g.pad_h + ky;
    if (iy < 0 || iy >= g.h) continue;
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      const int64_t ix = ox * g.stride_w - g.pad_w + kx;
      if (ix >= 0 && ix < g.w) visit(iy * g.w + ix);
    }
  }
}

}  // namespace snn
