// Convenience: every built-in layer type.
#pragma once
#include "snn/layers/add.hpp"
#include "snn/layers/channel_affine.hpp"
#include "snn/layers/channel_gather.hpp"
#include "snn/layers/conv2d.hpp"
#include "snn/layers/flatten.hpp"
#include "snn/layers/linear.hpp"
#include "snn/layers/neuron.hpp"
#include "snn/layers/pooling.hpp"
#include "snn/layers/upsample.hpp"
