// snnc.Dataset and snnc.load_dataset: labelled images held by snnc (float32 [N, C, H, W] + int32 labels).
#include <pybind11/stl.h>

#include "arguments.hpp"
#include "arrays.hpp"
#include "bindings.hpp"
#include "snn/image_checks.hpp"

namespace snnc_py {

namespace {

std::shared_ptr<snn::Dataset> from_arrays(const py::handle& images, const py::handle& labels, const std::string& arg) {
  const ImageArray array(images, {}, arg + " images");
  auto d = std::make_shared<snn::Dataset>();
  d->labels = labels_from(labels, array.size(), arg + " labels");
  d->images = array.batch(0, array.size());
  d->num_classes = 1;
  for (int32_t l : d->labels) d->num_classes = std::max(d->num_classes, l + 1);
  d->source = "NumPy arrays";
  return d;
}

std::shared_ptr<snn::Dataset> load_spec(const std::string& spec, int64_t limit) {
  py::gil_scoped_release no_gil;
  return std::make_shared<snn::Dataset>(snn::load_dataset(spec, limit));
}

std::shared_ptr<snn::Dataset> load(const py::handle& spec, const py::handle& limit) {
  const std::string path = path_argument(spec, "spec");
  return load_spec(path, whole_argument(limit, snn::limits::kImageLimit, "limit"));
}

bool is_spec(const py::handle& data) {
  return py::isinstance<py::str>(data) || py::isinstance<py::bytes>(data) || py::hasattr(data, "__fspath__");
}

}  // namespace

std::shared_ptr<const snn::Dataset> dataset_argument(const py::handle& data, int64_t limit, const std::string& argument) {
  snn::check_range(limit, snn::limits::kImageLimit, "limit");
  if (is_spec(data)) return load_spec(path_argument(data, argument), limit);
  std::shared_ptr<snn::Dataset> d;
  if (py::isinstance<snn::Dataset>(data)) {
    d = data.cast<std::shared_ptr<snn::Dataset>>();
    // Its images are a writable view: checked at every use, as a file is checked at every reading.
    snn::check_finite_pixels(d->images.data(), d->images.numel(), snn::numel_of(d->sample_shape()),
                             argument + " (snnc.Dataset from " + (d->source.empty() ? "?" : d->source) + ")");
  } else if (py::isinstance<py::tuple>(data) && py::len(data) == 2) {
    const py::tuple pair = data.cast<py::tuple>();
    d = from_arrays(pair[0], pair[1], argument);
  } else {
    raise_argument_type_error(argument + ": expected a dataset spec (e.g. 'fashion-mnist:test' or a file), an "
                              "snnc.Dataset, or a pair (images, labels) of NumPy arrays");
  }
  if (limit == 0 || limit >= d->size()) return d;
  auto part = std::make_shared<snn::Dataset>();
  part->images = d->batch_images(0, limit);
  part->labels = d->batch_labels(0, limit);
  part->num_classes = d->num_classes;
  part->source = d->source;
  return part;
}

void bind_dataset(py::module_& m) {
  py::class_<snn::Dataset, std::shared_ptr<snn::Dataset>>(m, "Dataset", R"doc(
Labelled images as snnc holds them: float32 images [N, C, H, W] (raw pixel values, before the
network's normalisation; uint8 pixels are scaled to [0, 1]) and int32 labels [N].

    Dataset(images, labels)      from NumPy arrays (images uint8 or float32 [N, C, H, W]; copied once)
    snnc.load_dataset(spec)      from a file or 'fashion-mnist:train' / 'fashion-mnist:test'
)doc")
      .def(py::init([](const py::handle& images, const py::handle& labels) { return from_arrays(images, labels, "Dataset"); }),
           py::arg("images"), py::arg("labels"))
      .def("__len__", &snn::Dataset::size)
      .def_property_readonly(
          "images",
          [](py::object self) {
            auto& d = self.cast<snn::Dataset&>();
            const snn::Shape& s = d.images.shape();
            return py::array_t<float>(std::vector<py::ssize_t>(s.begin(), s.end()), d.images.data(), self);
          },
          "float32 [N, C, H, W], a view of the dataset's memory (read it, do not resize it)")
      .def_property_readonly(
          "labels",
          [](py::object self) {
            auto& d = self.cast<snn::Dataset&>();
            return py::array_t<int32_t>({py::ssize_t(d.labels.size())}, d.labels.data(), self);
          },
          "int32 [N]")
      .def_readonly("num_classes", &snn::Dataset::num_classes, "largest label + 1")
      .def_readonly("source", &snn::Dataset::source, "where the images came from")
      .def_property_readonly("image_shape",
                             [](const snn::Dataset& d) { return py::tuple(py::cast(d.sample_shape())); })
      .def("__repr__", [](const snn::Dataset& d) {
        return "<snnc.Dataset " + std::to_string(d.size()) + " images " + snn::to_string(d.sample_shape()) + ", " +
               std::to_string(d.num_classes) + " classes, from " + (d.source.empty() ? "?" : d.source) + ">";
      });

  m.def("load_dataset", &load, py::arg("spec"), py::arg("limit") = 0, R"doc(
Reads a dataset: 'fashion-mnist:train' | 'fashion-mnist:test' (Debian's dataset-fashion-mnist), an IDX
images file (labels found beside it), a CIFAR-10/100 binary batch (.bin, or cifar10:DIR / cifar100:DIR),
or an HDF5 file with datasets `images` (N×C×H×W uint8 or float32) and `labels`. limit > 0 keeps the
first `limit` images. Errors (snnc.Error) name the file and what is wrong.)doc");
}

}  // namespace snnc_py
