// The range of every numeric field a model file's layer record may hold, checked on load (and on save)
// before a layer is built from it: a count must be a whole number in its range (kernel sizes >= 1,
// padding >= 0, QCFS levels <= 2^24), a flag 0 or 1, a neuron's v_init a fraction of θ in [0, 1], β in
// (0, 1]; no tensor is empty (an empty bias is not "no bias": a layer without one has no 'bias' dataset);
// a linear layer's weight is [out, in] with out = the bias's length (a transposed weight is named as
// such). Errors name the layer, its type and the field: "layer 'fc' (linear): field 'weight' ...".
#pragma once
#include "snn/layer.hpp"
#include "snn/network.hpp"

namespace snn {

void check_record_fields(const LayerRecord& r);
// A linear layer given `features` inputs whose weight is [features, out] instead of [out, features]:
// "transposed", not the input-size error the layer would give.
void check_linear_input(const LayerRecord& r, int64_t features);

// The file header's preprocessing: mean finite in [-1e6, 1e6], std in (0, 1e6], one value per channel.
void check_preprocessing_fields(const Preprocessing& p);

}  // namespace snn
