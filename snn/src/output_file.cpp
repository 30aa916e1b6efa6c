#include "snn/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "snn/error.hpp"
#include "snn/path_checks.hpp"

namespace fs = std::filesystem;

namespace snn {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string directory_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// An anonymous file in `dir` (O_TMPFILE), or -1 with errno set. EOPNOTSUPP/EISDIR/EINVAL mean the file
// system (or kernel) cannot do it and a named temp file must be used instead.
int open_anonymous(const std::string& dir) { return ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666); }
bool anonymous_unsupported(int err) { return err == EOPNOTSUPP || err == EISDIR || err == EINVAL; }

// The named temp file being written, for the signal handler. One write at a time (a mutex): the handler
// only reads a fixed buffer, which is async-signal-safe.
char g_temp_path[4096];
std::atomic<bool> g_temp_armed{false};
std::mutex g_write_mutex;

extern "C" void remove_temp_and_die(int sig) {
  if (g_temp_armed.load()) ::unlink(g_temp_path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// While alive: SIGINT/SIGTERM/SIGHUP remove the temp file before the process dies (unless the process
// had chosen to ignore or handle them itself), and SIGXFSZ is ignored so that a file-size limit shows up
// as EFBIG from write() instead of killing the process with the file half-written.
class SignalCleanup {
 public:
  SignalCleanup() {
    struct sigaction sa {};
    sa.sa_handler = remove_temp_and_die;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction old {};
      ::sigaction(kSignals[i], nullptr, &old);
      installed_[i] = old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
      if (installed_[i]) ::sigaction(kSignals[i], &sa, &old_[i]);
    }
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ign, &old_xfsz_);
  }
  ~SignalCleanup() {
    for (size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i]) ::sigaction(kSignals[i], &old_[i], nullptr);
    ::sigaction(SIGXFSZ, &old_xfsz_, nullptr);
  }
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<bool, 3> installed_{};
  std::array<struct sigaction, 3> old_{};
  struct sigaction old_xfsz_ {};
};

void arm_temp(const std::string& tmp) {
  require(tmp.size() < sizeof g_temp_path, "output path too long: " + tmp);
  std::memcpy(g_temp_path, tmp.c_str(), tmp.size() + 1);
  g_temp_armed.store(true);
}

void disarm_temp() { g_temp_armed.store(false); }

// ".NAME.tmp-PID-RANDOM" beside the target; NAME is cut so that a legal long target name (up to the
// file system's 255 bytes) still leaves room for the suffix.
std::string temp_name_for(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (name.size() > 200) name.resize(200);
  std::random_device rd;
  return (fs::path(directory_of(path)) /
          ("." + name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd() & 0xffffff)))
      .string();
}

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write '" + path + "': " + errno_text(n < 0 ? errno : ENOSPC));
    p += n;
    size -= size_t(n);
  }
}

}  // namespace

void check_output_path(const std::string& output, const std::vector<std::string>& inputs, const std::string& option) {
  require(!output.empty(), option + ": the output path is empty");
  check_path_length(output, option);  // "too long" up front, not after the work at write time
  const std::string what = option + " '" + output + "'";
  struct stat st {}, lst {};
  const bool exists = ::stat(output.c_str(), &st) == 0;  // follows links: a link to an input is the input
  const bool is_link = ::lstat(output.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  if (exists) {
    for (const std::string& in : inputs) {
      struct stat ist {};
      if (!in.empty() && ::stat(in.c_str(), &ist) == 0 && same_file(st, ist))
        throw Error("refusing to write " + what + ": it is the input file '" + in + "'" +
                    (is_link ? " (through a symbolic link)" : "") + "; choose another output path");
    }
    require(!S_ISDIR(st.st_mode), what + " is a directory; give a file name for the output");
    require(S_ISREG(st.st_mode), "refusing to write " + what + ": it exists and is not a regular file");
    require(is_link || (st.st_mode & 0222) != 0, "refusing to replace " + what + ": the file is read-only");
  }
  const std::string dir = directory_of(output);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0)
    throw Error("cannot write " + what + ": directory '" + dir + "': " + errno_text(errno));
  require(S_ISDIR(dst.st_mode), "cannot write " + what + ": '" + dir + "' is not a directory");
  // Probe: can a file be created there (permissions, read-only file system, no inodes)?
  int fd = open_anonymous(dir);
  if (fd < 0 && anonymous_unsupported(errno)) {
    const std::string probe = temp_name_for(output);
    fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::unlink(probe.c_str());
  }
  if (fd < 0) throw Error("cannot write " + what + ": directory '" + dir + "': " + errno_text(errno));
  ::close(fd);
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  check_path_length(path, "output file");
  // rename() over a directory fails with EISDIR, or EBUSY for '.': say what is wrong instead.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("cannot write '" + path + "': it is a directory; give a file name for the output");
  std::lock_guard<std::mutex> lock(g_write_mutex);
  SignalCleanup cleanup;
  const std::string dir = directory_of(path);
  const std::string tmp = temp_name_for(path);
  int fd = open_anonymous(dir);
  const bool anonymous = fd >= 0;
  if (!anonymous) {
    if (!anonymous_unsupported(errno)) throw Error("cannot write '" + path + "': " + errno_text(errno));
    arm_temp(tmp);
    fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) {
      const int err = errno;
      disarm_temp();
      throw Error("cannot write '" + path + "': " + errno_text(err));
    }
  }
  auto fail = [&](const std::string& msg) {
    ::close(fd);
    if (g_temp_armed.load()) ::unlink(tmp.c_str());
    disarm_temp();
    throw Error(msg);
  };
  try {
    write_all(fd, data, size, path);
  } catch (const Error& e) {
    fail(e.what());
  }
  if (::fsync(fd) != 0) fail("cannot write '" + path + "': " + errno_text(errno));
  if (anonymous) {
    // Give the anonymous file a (hidden) name, then rename it over the target.
    arm_temp(tmp);
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0)
      fail("cannot write '" + path + "': " + errno_text(errno));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    disarm_temp();
    throw Error("cannot write '" + path + "': " + errno_text(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    disarm_temp();
    throw Error("cannot write '" + path + "': " + errno_text(err));
  }
  disarm_temp();
  // Make the rename durable; a failure here cannot undo it, so it is not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace snn
