// *.snn.h5 round trip and the errors for damaged files.
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"
#include "test_util.hpp"

using namespace snn;
namespace fs = std::filesystem;

namespace {
Network calibrated_network() {
  std::mt19937 rng(20);
  Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 8, true, true);
  net.set_preprocessing({{0.25f, 0.5f}, {0.3f, 0.4f}});
  net.neuron(net.neuron_nodes()[0]).set_bias(snn_test::random_tensor({5, 4}, rng));
  NeuronConfig cfg;
  cfg.model = NeuronModel::LIF;
  cfg.beta = 0.9f;
  cfg.reset = Reset::Zero;
  cfg.v_init = 0.25f;
  net.neuron(net.neuron_nodes()[1]).set_config(cfg);
  net.metadata()["source"] = "unit test";
  return net;
}
}  // namespace

TEST_CASE("model file round trip is bit-identical", "[model_file]") {
  const Network net = calibrated_network();
  const std::string path = snn_test::temp_path("roundtrip.snn.h5");
  save_network(net, path);
  const Network back = load_network(path);
  REQUIRE(back.size() == net.size());
  REQUIRE(back.input_shape() == net.input_shape());
  REQUIRE(back.preprocessing().mean == net.preprocessing().mean);
  REQUIRE(back.preprocessing().std == net.preprocessing().std);
  REQUIRE(back.metadata() == net.metadata());
  for (int i = 0; i < net.size(); ++i) {
    REQUIRE(back.inputs(i) == net.inputs(i));
    const LayerRecord a = net.layer(i).to_record(), b = back.layer(i).to_record();
    REQUIRE(a.type == b.type);
    REQUIRE(a.name == b.name);
    REQUIRE(a.numbers == b.numbers);
    REQUIRE(a.strings == b.strings);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [k, t] : a.tensors) {
      REQUIRE(b.tensors.at(k).shape() == t.shape());
      REQUIRE(b.tensors.at(k).values() == t.values());  // bit-identical floats
    }
  }
  // No temporary files left beside the model.
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    REQUIRE(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("damaged model files give clear errors", "[model_file]") {
  const Network net = calibrated_network();
  const std::string good = snn_test::temp_path("good.snn.h5");
  save_network(net, good);

  SECTION("truncated file") {
    const std::string bad = snn_test::temp_path("truncated.snn.h5");
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(bad, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("truncated.snn.h5"));
  }
  SECTION("not HDF5 at all") {
    const std::string bad = snn_test::temp_path("text.snn.h5");
    std::ofstream(bad) << "hello";
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("text.snn.h5") && Catch::Contains("not an HDF5"));
  }
  SECTION("missing file") {
    REQUIRE_THROWS_WITH(load_network(snn_test::temp_path("nope.snn.h5")), Catch::Contains("not found"));
  }
  SECTION("wrong format version") {
    const std::string bad = snn_test::temp_path("version.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.removeAttr("format_version");
      int64_t v = 99;
      f.createAttribute("format_version", H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
          .write(H5::PredType::NATIVE_INT64, &v);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("version 99") && Catch::Contains("version.snn.h5"));
  }
  SECTION("weight with the wrong shape") {
    const std::string bad = snn_test::temp_path("shape.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::Group g = f.openGroup("layers/0000");
      g.removeAttr("crc32");  // edited on purpose: the digest would refuse it first
      g.unlink("weight");
      hsize_t dims[4] = {4, 2, 2, 2};
      std::vector<float> zeros(32, 0.0f);
      g.createDataSet("weight", H5::PredType::NATIVE_FLOAT, H5::DataSpace(4, dims))
          .write(zeros.data(), H5::PredType::NATIVE_FLOAT);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("conv1") && Catch::Contains("weight shape"));
  }
  SECTION("unknown layer type") {
    const std::string bad = snn_test::temp_path("type.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::Group g = f.openGroup("layers/0001");
      g.removeAttr("crc32");
      g.removeAttr("type");
      H5::StrType st(H5::PredType::C_S1, 7);
      g.createAttribute("type", st, H5::DataSpace(H5S_SCALAR)).write(st, std::string("mystery"));
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("mystery"));
  }
}

TEST_CASE("saving into a missing directory fails and leaves nothing", "[model_file]") {
  const Network net = calibrated_network();
  REQUIRE_THROWS_WITH(save_network(net, snn_test::temp_path("no_such_dir/x.snn.h5")), Catch::Contains("No such file or directory"));
  REQUIRE_FALSE(fs::exists(snn_test::temp_path("no_such_dir")));
}

namespace {
// Every layer type and attribute added in format version 2.
Network version2_network() {
  std::mt19937 rng(21);
  using snn_test::random_tensor;
  Network net({2, 7, 7});
  net.add(std::make_unique<Conv2d>("conv1", Conv2dSpec{2, 4, 3, 3, 1, 1, 1, 1, 1}, random_tensor({4, 2, 3, 3}, rng)));
  const int if1 = net.add(std::make_unique<NeuronLayer>("if1", 4, std::vector<float>{1.0f}));
  PoolSpec avg{3, 3, 2, 2, 1, 1};
  avg.ceil_mode = true;
  avg.count_include_pad = false;
  const int a = net.add(std::make_unique<AvgPool2d>("avg", avg), {if1});
  PoolSpec mx{2, 2, 2, 2, 0, 0};
  mx.ceil_mode = true;
  const int m = net.add(std::make_unique<MaxPool2d>("max", mx), {if1});
  net.add(std::make_unique<ChannelGather>("mix", 2, std::vector<int64_t>{0, 1, 0, 1, 1, 0},
                                          std::vector<int64_t>{0, 0, 3, 2, 1, 2}),
          {a, m});
  // A scale that is not a short decimal: the float must come back bit for bit.
  net.add(std::make_unique<UpsampleNearest>("up", UpsampleSpec{9, 7, float(4.0 / 9.0), float(1.0 / 1.7), true}));
  const std::vector<float> mean = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, var = {1.1f, 0.9f, 0.3f, 2.0f, 1.0f, 0.7f},
                           beta = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  net.add(std::make_unique<ChannelAffine>(ChannelAffine::from_batch_norm("bn", mean, var, {}, beta, 1e-5)));
  net.add(std::make_unique<AdaptiveAvgPool2d>("gap", 3, 2));
  net.add(std::make_unique<Flatten>("flat"));
  net.add(std::make_unique<Linear>("fc", random_tensor({5, 36}, rng), random_tensor({5}, rng)));
  return net;
}

void require_same_records(const Network& a, const Network& b) {
  REQUIRE(a.size() == b.size());
  for (int i = 0; i < a.size(); ++i) {
    INFO("layer " << a.layer(i).name());
    REQUIRE(a.inputs(i) == b.inputs(i));
    REQUIRE(a.output_shape(i) == b.output_shape(i));
    REQUIRE(a.layer(i).summary() == b.layer(i).summary());
    const LayerRecord ra = a.layer(i).to_record(), rb = b.layer(i).to_record();
    REQUIRE(ra.type == rb.type);
    REQUIRE(ra.numbers == rb.numbers);
    REQUIRE(ra.strings == rb.strings);
    REQUIRE(ra.tensors.size() == rb.tensors.size());
    for (const auto& [k, t] : ra.tensors) {
      REQUIRE(rb.tensors.at(k).shape() == t.shape());
      REQUIRE(rb.tensors.at(k).values() == t.values());
    }
  }
}

int64_t file_version(const std::string& path) {
  H5::H5File f(path, H5F_ACC_RDONLY);
  int64_t v = 0;
  f.openAttribute("format_version").read(H5::PredType::NATIVE_INT64, &v);
  return v;
}

void set_file_version(const std::string& path, int64_t v) {
  H5::H5File f(path, H5F_ACC_RDWR);
  f.removeAttr("format_version");
  f.createAttribute("format_version", H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_INT64, &v);
}
}  // namespace

TEST_CASE("model file round trip of the version-2 layers is bit-identical", "[model_file]") {
  const Network net = version2_network();
  const std::string path = snn_test::temp_path("v2.snn.h5");
  save_network(net, path);
  REQUIRE(file_version(path) == 2);  // binary neurons only: still readable by version-2 readers
  REQUIRE(kModelFormatVersion == 3);
  const Network back = load_network(path);
  require_same_records(net, back);
  const auto& up = static_cast<const UpsampleNearest&>(back.layer(back.find("up")));
  REQUIRE(up.spec().scale_w == float(1.0 / 1.7));
  REQUIRE(up.spec().exact);
  const auto& avg = static_cast<const AvgPool2d&>(back.layer(back.find("avg")));
  REQUIRE((avg.spec().ceil_mode && !avg.spec().count_include_pad));
  REQUIRE(static_cast<const MaxPool2d&>(back.layer(back.find("max"))).spec().ceil_mode);
  REQUIRE(static_cast<const ChannelGather&>(back.layer(back.find("mix"))).source_channel() ==
          std::vector<int64_t>{0, 0, 3, 2, 1, 2});
  // The same network: the same numbers.
  std::mt19937 rng(22);
  const Tensor x = snn_test::random_tensor({3, 2, 7, 7}, rng, 0.0f, 1.0f);
  CpuBackend cpu(2);
  REQUIRE(cpu.forward_ann(back, x).values() == cpu.forward_ann(net, x).values());
}

TEST_CASE("a version-1 model file still loads, with PyTorch's pooling defaults", "[model_file]") {
  const Network net = calibrated_network();  // avg and max pooling, floor mode, padding counted
  const std::string path = snn_test::temp_path("v1.snn.h5");
  save_network(net, path);
  {  // What version 1 wrote: no ceil_mode / count_include_pad attributes, no digests, no key lists.
    set_file_version(path, 1);
    H5::H5File f(path, H5F_ACC_RDWR);
    f.removeAttr("crc32");
    f.openGroup("metadata").removeAttr("snnc:keys");
    H5::Group layers = f.openGroup("layers");
    int stripped = 0;
    for (hsize_t i = 0; i < layers.getNumObjs(); ++i) {
      H5::Group g = layers.openGroup(layers.getObjnameByIdx(i));
      g.removeAttr("crc32");
      g.removeAttr("snnc:keys");
      for (const char* key : {"n:ceil_mode", "n:count_include_pad"})
        if (g.attrExists(key)) {
          g.removeAttr(key);
          ++stripped;
        }
    }
    REQUIRE(stripped == 2);  // the one max pooling layer of calibrated_network
  }
  const Network back = load_network(path);
  require_same_records(net, back);
  SECTION("a future version is refused, naming both") {
    set_file_version(path, 4);
    REQUIRE_THROWS_WITH(load_network(path), Catch::Contains("version 4") && Catch::Contains("versions 1 to 3"));
  }
  SECTION("version 0 is refused") {
    set_file_version(path, 0);
    REQUIRE_THROWS_WITH(load_network(path), Catch::Contains("version 0"));
  }
}

TEST_CASE("damaged version-2 records give clear errors", "[model_file]") {
  const Network net = version2_network();
  const std::string path = snn_test::temp_path("v2bad.snn.h5");
  save_network(net, path);
  {
    H5::H5File f(path, H5F_ACC_RDWR);
    H5::Group g = f.openGroup("layers/0004");  // the gather
    g.removeAttr("crc32");  // a deliberate edit; the digest would refuse it before the record's own checks
    g.unlink("source_channel");
    hsize_t dims[1] = {6};
    const float bad[6] = {0, 0, 3, 2, 1.5f, 2};
    g.createDataSet("source_channel", H5::PredType::NATIVE_FLOAT, H5::DataSpace(1, dims))
        .write(bad, H5::PredType::NATIVE_FLOAT);
  }
  REQUIRE_THROWS_WITH(load_network(path), Catch::Contains("mix") && Catch::Contains("non-integer"));
}

TEST_CASE("model files carry checksums: damage and edits are refused, naming the layer", "[model_file]") {
  const Network net = calibrated_network();
  const std::string good = snn_test::temp_path("sums.snn.h5");
  save_network(net, good);

  SECTION("a flipped bit in a weight tensor fails its Fletcher-32 checksum") {
    const std::string bad = snn_test::temp_path("flipped.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    haddr_t offset = 0;
    {
      H5::H5File f(bad, H5F_ACC_RDONLY);
      H5::DataSet ds = f.openDataSet("layers/0000/weight");
      const hsize_t origin[4] = {0, 0, 0, 0};
      unsigned mask = 0;
      hsize_t size = 0;
      REQUIRE(H5Dget_chunk_info_by_coord(ds.getId(), origin, &mask, &offset, &size) >= 0);
      REQUIRE(size > 6);
    }
    std::fstream io(bad, std::ios::binary | std::ios::in | std::ios::out);
    io.seekg(std::streamoff(offset + 6));
    char c = 0;
    io.read(&c, 1);
    c ^= 0x04;
    io.seekp(std::streamoff(offset + 6));
    io.write(&c, 1);
    io.close();
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("conv1") && Catch::Contains("weight") &&
                                               Catch::Contains("checksum"));
  }
  SECTION("an edited threshold fails the layer's CRC-32") {
    const std::string bad = snn_test::temp_path("edited.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    const int node = net.neuron_nodes()[0];
    char group[32];
    std::snprintf(group, sizeof group, "layers/%04d", node);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::DataSet ds = f.openDataSet(std::string(group) + "/threshold");
      std::vector<float> th(size_t(ds.getSpace().getSimpleExtentNpoints()));
      ds.read(th.data(), H5::PredType::NATIVE_FLOAT);
      th[0] *= 2.0f;
      ds.write(th.data(), H5::PredType::NATIVE_FLOAT);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains(net.layer(node).name()) && Catch::Contains("CRC-32"));
  }
  SECTION("an edited provenance string fails the header's CRC-32") {
    const std::string bad = snn_test::temp_path("meta.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::Group g = f.openGroup("metadata");
      g.removeAttr("source");
      H5::StrType st(H5::PredType::C_S1, 5);
      g.createAttribute("source", st, H5::DataSpace(H5S_SCALAR)).write(st, std::string("forge"));
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("header") && Catch::Contains("CRC-32"));
  }
  SECTION("NaN in a weight is refused with the layer, tensor and element named") {
    const std::string bad = snn_test::temp_path("nan.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.openGroup("layers/0000").removeAttr("crc32");  // as a hand edit would leave it
      H5::DataSet ds = f.openDataSet("layers/0000/weight");
      std::vector<float> w(size_t(ds.getSpace().getSimpleExtentNpoints()));
      ds.read(w.data(), H5::PredType::NATIVE_FLOAT);
      w[3] = std::numeric_limits<float>::quiet_NaN();
      ds.write(w.data(), H5::PredType::NATIVE_FLOAT);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("conv1") && Catch::Contains("'weight'") &&
                                               Catch::Contains("NaN") && Catch::Contains("element 3"));
  }
  SECTION("a layer whose attribute list is gone is refused without enumerating its attributes") {
    const std::string bad = snn_test::temp_path("nokeys.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.openGroup("layers/0001").removeAttr("snnc:keys");
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("snnc:keys") && Catch::Contains("act1"));
  }
  SECTION("a missing attribute is named") {
    const std::string bad = snn_test::temp_path("noattr.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.openGroup("layers/0001").removeAttr("name");
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("missing attribute 'name'") && Catch::Contains("#1"));
  }
  SECTION("an input shape too large to count is refused, not wrapped around") {
    const std::string bad = snn_test::temp_path("huge.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.removeAttr("crc32");
      f.removeAttr("input_shape");
      hsize_t n = 3;
      const int64_t dims[3] = {2000000000, 2000000000, 2000000000};
      f.createAttribute("input_shape", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n))
          .write(H5::PredType::NATIVE_INT64, dims);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("2^40"));
  }
  SECTION("saving a network with an infinite parameter is refused and writes nothing") {
    Network broken({4});
    Tensor weight({3, 4}, 0.5f);
    weight[7] = std::numeric_limits<float>::infinity();
    broken.add(std::make_unique<Linear>("fc", weight, Tensor({3}, 0.0f)));
    const std::string out = snn_test::temp_path("inf.snn.h5");
    fs::remove(out);
    REQUIRE_THROWS_WITH(save_network(broken, out), Catch::Contains("Inf") && Catch::Contains("'weight'") &&
                                                   Catch::Contains("fc"));
    REQUIRE_FALSE(fs::exists(out));
  }
}

TEST_CASE("signed neurons round-trip and raise the file's format version to 3", "[model_file]") {
  std::mt19937 rng(23);
  Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 4);
  const std::string plain = snn_test::temp_path("binary_v2.snn.h5"), path = snn_test::temp_path("signed_v3.snn.h5");
  save_network(net, plain);
  REQUIRE(file_version(plain) == 2);
  for (int i : net.neuron_nodes()) {
    NeuronConfig cfg = net.neuron(i).config();
    cfg.spikes = Spikes::Signed;
    cfg.max_spikes = 4.0f;
    cfg.threshold_scale = 2.5f;
    net.neuron(i).set_config(cfg);
  }
  save_network(net, path);
  REQUIRE(file_version(path) == 3);
  const Network back = load_network(path);
  require_same_records(net, back);
  for (int i : back.neuron_nodes()) {
    REQUIRE(back.neuron(i).config().spikes == Spikes::Signed);
    REQUIRE(back.neuron(i).config().max_spikes == 4.0f);
    REQUIRE(back.neuron(i).config().threshold_scale == 2.5f);
  }
  std::remove(plain.c_str());
  std::remove(path.c_str());
}
