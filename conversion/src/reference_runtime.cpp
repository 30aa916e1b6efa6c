// run_reference: the framework's own run of a .pt2 / ONNX model, in a Python subprocess
// (reference_runtime.hpp).
#include "snn/conversion/reference_runtime.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"

extern char** environ;

namespace snn::conversion {

namespace {

namespace fs = std::filesystem;

bool exists(const std::string& p) { return !p.empty() && ::access(p.c_str(), R_OK) == 0; }

// The folder of the running executable ("" when /proc/self/exe cannot be read).
fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// A venv's (or conda environment's) bin/ folder with its python3: not any prefix that has one (a
// `cmake --install --prefix /usr/local` beside an unrelated python3).
bool in_python_environment(const fs::path& bin) {
  const fs::path env = bin.parent_path();
  std::error_code ec;
  return exists((bin / "python3").string()) &&
         (fs::exists(env / "pyvenv.cfg", ec) || fs::is_directory(env / "conda-meta", ec));
}

// SNNC_PYTHON; else the Python of the environment snnc is installed in (`pip install .` puts the CLI in
// the venv's bin/, beside its python3); else the Python snnc was configured with; else python3 on PATH.
std::string interpreter() {
  if (const char* p = std::getenv("SNNC_PYTHON"); p && *p) return p;
  if (const fs::path dir = executable_dir(); !dir.empty() && in_python_environment(dir))
    return (dir / "python3").string();
#ifdef SNNC_DEFAULT_PYTHON
  if (exists(SNNC_DEFAULT_PYTHON)) return SNNC_DEFAULT_PYTHON;
#endif
  return "python3";
}

std::string script() {
  if (const char* p = std::getenv("SNNC_REFERENCE_SCRIPT"); p && *p) return p;
  // Installed: PREFIX/bin/snnc beside PREFIX/share/snnc/ (cmake --install, and pip's venv layout).
  if (const fs::path dir = executable_dir(); !dir.empty()) {
    const fs::path installed = dir.parent_path() / "share" / "snnc" / "snnc_reference.py";
    if (exists(installed.string())) return installed.string();
  }
#ifdef SNNC_REFERENCE_SCRIPT_SOURCE
  if (exists(SNNC_REFERENCE_SCRIPT_SOURCE)) return SNNC_REFERENCE_SCRIPT_SOURCE;
#endif
  return "";
}

// A private temporary folder, removed with everything in it when this goes out of scope.
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/snnc-reference-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw snn::Error("cannot create a temporary folder for the reference runtime (" + std::string(std::strerror(errno)) + ")");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string last_lines(const std::string& file, size_t max_chars) {
  std::ifstream f(file);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > max_chars) s = "..." + s.substr(s.size() - max_chars);
  return s;
}

// Runs argv with stdout and stderr into `log`; returns the exit status (127: could not start).
int run_process(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void write_inputs(const std::string& dir, const snn::Tensor& inputs, const std::vector<std::string>& names) {
  H5::H5File f(dir + "/inputs.h5", H5F_ACC_TRUNC);
  H5::Group root = f.openGroup("/");
  snn::h5::write_tensor(root, "inputs", inputs);
  std::ofstream n(dir + "/names.txt");
  for (const auto& s : names) n << s << "\n";
  if (!n) throw snn::Error("cannot write the reference runtime's input files in " + dir);
}

void read_outputs(const std::string& file, const std::vector<int>& index, ReferenceRun& r) {
  H5::H5File f(file, H5F_ACC_RDONLY);
  H5::Group root = f.openGroup("/");
  r.runtime = snn::h5::read_string_attr(root, "runtime");
  r.output = snn::h5::read_tensor(root, "output");
  H5::Group values = f.openGroup("values");
  const std::vector<std::string> present = snn::h5::child_names(values);
  for (size_t i = 0; i < index.size(); ++i) {
    const std::string key = std::to_string(i);
    if (std::find(present.begin(), present.end(), key) != present.end())
      r.values[size_t(index[i])] = snn::h5::read_tensor(values, key);
  }
}

}  // namespace

ReferenceRun run_reference(const std::string& model, ModelFormat format, const snn::Tensor& inputs,
                           int64_t layer_images, const std::vector<std::string>& names) {
  ReferenceRun r;
  r.values.resize(names.size());
  const std::string py = interpreter(), sc = script();
  if (sc.empty()) {
    r.why_not = "the reference script snnc_reference.py was not found (set SNNC_REFERENCE_SCRIPT)";
    return r;
  }
  TempDir dir;
  std::vector<std::string> asked;
  std::vector<int> index;
  for (size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty()) {
      asked.push_back(names[i]);
      index.push_back(int(i));
    }
  write_inputs(dir.path, inputs, asked);
  const std::string log = dir.path + "/log.txt";
  const std::string fmt = format == ModelFormat::Onnx ? "onnx" : "pt2";
  const int rc = run_process({py, sc, "--format", fmt, "--model", model, "--inputs", dir.path + "/inputs.h5", "--names",
                              dir.path + "/names.txt", "--layer-images", std::to_string(layer_images), "--out",
                              dir.path + "/out.h5"},
                             log);
  if (rc == 127) {
    r.why_not = "no Python interpreter '" + py + "' (set SNNC_PYTHON to a Python with " +
                (format == ModelFormat::Onnx ? "onnxruntime" : "torch") + ")";
    return r;
  }
  if (rc != 0) {
    r.why_not = (rc == 3 ? std::string("") : "the reference runtime failed: ") + last_lines(log, 600) + " (" + py + ")";
    return r;
  }
  try {
    read_outputs(dir.path + "/out.h5", index, r);
  } catch (const std::exception& e) {
    r.why_not = std::string("the reference runtime's output could not be read: ") + e.what();
    return r;
  }
  r.ran = true;
  return r;
}

}  // namespace snn::conversion
