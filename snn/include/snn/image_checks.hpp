// Checks of image pixels, shared by the dataset readers and the Python bindings (NumPy arrays, (images,
// labels) pairs, snnc.Dataset): the same input is refused, or warned about, with the same words whichever
// way it arrives.
#pragma once
#include <cstdint>
#include <string>

#include "snn/network.hpp"

namespace snn {

// Throws snn::Error("<what>: image I has a NaN pixel (element E)") at the first NaN or infinite value of
// `count` floats, `per_image` to an image: a NaN would flow through every membrane and give a silently
// wrong prediction.
void check_finite_pixels(const float* values, int64_t count, int64_t per_image, const std::string& what);

// Float pixels are raw intensities in [0, 1] (uint8 0..255 is scaled on reading); the model's
// normalisation is applied on top. A warning, without "snnc: warning: ", when float images reach far
// beyond that range for a model normalised for [0, 1] pixels (the likely cause: 0..255 floats, or images
// normalised twice); "" when nothing looks wrong.
std::string pixel_range_warning(const float* values, int64_t count, const Preprocessing& model,
                                const std::string& what);

}  // namespace snn
