// Writing labelled image sets as HDF5 files that snnc (`--data file.h5`) and bench/torch_reference.py
// read: dataset `images` float32 N x C x H x W, dataset `labels` int64 N, a `source` string attribute.
// Written atomically (temporary file beside the target, then renamed) through the core's HDF5 helpers.
// Header-only; the including target needs the HDF5 C++ headers and libraries (bench/CMakeLists.txt).
#pragma once
#include <H5Cpp.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "snn/hdf5_util.hpp"
#include "snn/tensor.hpp"

namespace snn::bench {

inline void write_dataset_h5(const std::string& path, const Tensor& images, const std::vector<int64_t>& labels,
                             const std::string& source) {
  if (images.rank() != 4) throw std::runtime_error("write_dataset_h5: images must be N x C x H x W");
  if (images.dim(0) != int64_t(labels.size()))
    throw std::runtime_error("write_dataset_h5: " + std::to_string(images.dim(0)) + " images but " +
                             std::to_string(labels.size()) + " labels");
  H5::Exception::dontPrint();
  h5::write_atomically(path, [&](H5::H5File& file) {
    std::vector<hsize_t> dims(images.shape().begin(), images.shape().end());
    H5::DataSpace ispace(4, dims.data());
    H5::DataSet iset = file.createDataSet("images", H5::PredType::IEEE_F32LE, ispace);
    if (images.numel() > 0) iset.write(images.data(), H5::PredType::NATIVE_FLOAT);
    hsize_t n = labels.size();
    H5::DataSpace lspace(1, &n);
    H5::DataSet lset = file.createDataSet("labels", H5::PredType::STD_I64LE, lspace);
    if (n > 0) lset.write(labels.data(), H5::PredType::NATIVE_INT64);
    h5::write_attr(file, "source", source);
  });
}

}  // namespace snn::bench
