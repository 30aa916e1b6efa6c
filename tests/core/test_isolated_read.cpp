// Untrusted files are parsed in a child process (isolated_read.hpp): what crosses back, what a crash
// becomes, and that every reader gives the same values isolated as in-process.
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>

#include "snn/dataset.hpp"
#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/isolated_codecs.hpp"
#include "snn/isolated_read.hpp"
#include "snn/model_file.hpp"
#include "snn/nir_export.hpp"
#include "snn/nir_graph.hpp"
#include "test_util.hpp"

using namespace snn;

namespace {
// Restores isolation (on by default) however a test ends.
struct InProcess {
  InProcess() { set_read_isolation(false); }
  ~InProcess() { set_read_isolation(true); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("read_isolated hands back the child's bytes exactly, however many", "[isolated_read]") {
  std::string big(size_t(48) << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char((i * 2654435761u) >> 13);
  CHECK(read_isolated("x", [&] { return big; }) == big);
  CHECK(read_isolated("x", [] { return std::string(); }).empty());
}

TEST_CASE("read_isolated rethrows the child's error and names the file when the child dies", "[isolated_read]") {
  CHECK(error_of([] { read_isolated("f.h5", [] () -> std::string { throw Error("f.h5: no 'labels'"); }); }) ==
        "f.h5: no 'labels'");
  const std::string crash = error_of([] {
    read_isolated("evil.h5", []() -> std::string {
      std::raise(SIGSEGV);
      return "";
    });
  });
  CHECK(crash.rfind("evil.h5: reading it crashed the HDF5 library (signal 11", 0) == 0);
  CHECK(error_of([] { read_isolated("f", []() -> std::string { std::_Exit(7); }); }).find("status 7") != std::string::npos);
}

TEST_CASE("with isolation off the reader runs in this process", "[isolated_read]") {
  InProcess off;
  int calls = 0;
  read_isolated("x", [&] { return std::to_string(++calls); });
  CHECK(calls == 1);  // a child's increment would not be seen here
}

TEST_CASE("a model, a dataset and a NIR graph read the same isolated as in-process", "[isolated_read]") {
  std::mt19937 rng(3);
  Network net = snn_test::small_cnn(rng);
  for (int i : net.neuron_nodes()) {  // as NIR can hold them
    NeuronConfig cfg = net.neuron(i).config();
    cfg.reset = Reset::Zero;
    cfg.v_init = 0.0f;
    net.neuron(i).set_config(cfg);
  }
  const std::string model = snn_test::temp_path("isolated.snn.h5"), data = snn_test::temp_path("isolated.h5"),
                    nir = snn_test::temp_path("isolated.nir");
  save_network(net, model);
  Dataset d;
  d.images = snn_test::random_tensor({6, 1, 8, 8}, rng, 0.0f, 1.0f);
  d.labels = {0, 1, 2, 1, 0, 2};
  h5::write_atomically(data, [&](H5::H5File& f) {
    h5::write_tensor(f, "images", d.images);
    const int64_t labels[] = {0, 1, 2, 1, 0, 2};
    const hsize_t n = 6;
    f.createDataSet("labels", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n)).write(labels, H5::PredType::NATIVE_INT64);
  });
  export_nir(net, nir);
  auto records = [](const Network& n) {  // every tensor's name, shape and values, in order
    std::vector<std::pair<std::string, std::vector<float>>> r;
    for (int i = 0; i < n.size(); ++i)
      for (const auto& [name, t] : n.layer(i).to_record().tensors) {
        r.emplace_back(name + to_string(t.shape()), t.values());
      }
    return r;
  };
  const Network isolated = load_network(model);
  const Dataset isolated_data = load_hdf5_dataset(data, 4);
  const NirGraphData isolated_graph = read_nir_graph(nir);
  InProcess off;
  const Network direct = load_network(model);
  const Dataset direct_data = load_hdf5_dataset(data, 4);
  CHECK(isolated.size() == direct.size());
  CHECK(records(isolated) == records(direct));
  CHECK(isolated.metadata() == direct.metadata());
  CHECK(encode_dataset(isolated_data) == encode_dataset(direct_data));
  CHECK(isolated_data.size() == 4);
  CHECK(encode_nir_graph(isolated_graph) == encode_nir_graph(read_nir_graph(nir)));
  for (const auto& p : {model, data, nir}) std::filesystem::remove(p);
}

TEST_CASE("a file that crashes libhdf5 is an error, not a crash of snnc", "[isolated_read]") {
  // Enumerating this damaged model file's attributes segfaults inside libhdf5 1.10 (a fuzz finding,
  // tests/fuzz/regressions/README.md): in the child, that is an Error naming the file.
  const std::string path = std::string(SNN_TEST_DIR) + "/fuzz/regressions/fuzz_model_file/libhdf5_attr_table_segv_2.snn.h5";
  const std::string error = error_of([&] {
    read_isolated(path, [&] {
      H5::Exception::dontPrint();
      H5::H5File file(path, H5F_ACC_RDONLY);
      auto visit = [](hid_t object, const char* name, const H5O_info_t* info, void*) -> herr_t {
        if (info->type != H5O_TYPE_GROUP) return 0;
        H5::Group g(H5Oopen(object, name, H5P_DEFAULT));
        h5::attr_names(g);
        return 0;
      };
      H5Ovisit(file.getId(), H5_INDEX_NAME, H5_ITER_NATIVE, visit, nullptr);
      return std::string("read");
    });
  });
  INFO(error);
  CHECK(error.rfind(path + ": reading it ", 0) == 0);
  CHECK((error.find("crashed the HDF5 library") != std::string::npos ||
         error.find("failed inside the HDF5 library") != std::string::npos));  // a sanitizer's report: exit 1
}
