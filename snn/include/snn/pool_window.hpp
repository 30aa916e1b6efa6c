// The pooling window rule shared by the pooling kernels of every backend, exactly as PyTorch computes
// it: visits the in-bounds input elements of output (oy, ox) in row-major order, and gives the divisor
// of average pooling.
//
// Regular windows (kernel k, stride s, padding p, floor or ceil output size), per axis:
//   start = o·s − p, end = min(start + k, in + p); span = end − start (counts padding);
//   then clipped to [0, in). The divisor is span_h·span_w (count_include_pad) or the clipped area.
// Adaptive windows (adaptive pooling to out_h × out_w), per axis:
//   start = floor(o·in / out), end = ceil((o + 1)·in / out); the divisor is the window's area.
#pragma once
#include <cstdint>

#include "snn/hd.hpp"

namespace snn {

struct PoolGeometry {
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t h = 0, w = 0;          // input plane
  int64_t out_h = 0, out_w = 0;  // output plane
  bool adaptive = false;         // adaptive windows; kernel, stride and padding unused
  bool count_include_pad = true;
};

// One output's window: input rows [y0, y1), columns [x0, x1) (in bounds), and the averaging divisor.
struct PoolWindow {
  int64_t y0, y1, x0, x1;
  int64_t divisor;
};

SNN_HD PoolWindow pool_window(const PoolGeometry& g, int64_t oy, int64_t ox) {
  PoolWindow r;
  if (g.adaptive) {
    r.y0 = (oy * g.h) / g.out_h;
    r.y1 = ((oy + 1) * g.h + g.out_h - 1) / g.out_h;
    r.x0 = (ox * g.w) / g.out_w;
    r.x1 = ((ox + 1) * g.w + g.out_w - 1) / g.out_w;
    r.divisor = (r.y1 - r.y0) * (r.x1 - r.x0);
    return r;
  }
  int64_t y0 = oy * g.stride_h - g.pad_h, x0 = ox * g.stride_w - g.pad_w;
  int64_t y1 = y0 + g.kernel_h < g.h + g.pad_h ? y0 + g.kernel_h : g.h + g.pad_h;
  int64_t x1 = x0 + g.kernel_w < g.w + g.pad_w ? x0 + g.kernel_w : g.w + g.pad_w;
  const int64_t span = (y1 - y0) * (x1 - x0);
  r.y0 = y0 < 0 ? 0 : y0;
  r.x0 = x0 < 0 ? 0 : x0;
  r.y1 = y1 > g.h ? g.h : y1;
  r.x1 = x1 > g.w ? g.w : x1;
  r.divisor = g.count_include_pad ? span : (r.y1 - r.y0) * (r.x1 - r.x0);
  return r;
}

template <class Visit>
SNN_HD void for_each_in_window(const PoolWindow& win, int64_t w, Visit visit) {
  for (int64_t iy = win.y0; iy < win.y1; ++iy)
    for (int64_t ix = win.x0; ix < win.x1; ++ix) visit(iy * w + ix);
}

template <class Visit>
SNN_HD void for_each_in_window(const PoolGeometry& g, int64_t oy, int64_t ox, Visit visit) {
  for_each_in_window(pool_window(g, oy, ox), g.w, visit);
}

}  // namespace snn
