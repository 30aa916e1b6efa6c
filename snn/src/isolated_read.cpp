#include "snn/isolated_read.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>

#include "snn/error.hpp"

namespace snn {
namespace {

std::atomic<bool> g_isolation{true};

// The child's message: one status byte, then the value's bytes or the error's text.
constexpr char kValue = 'V', kError = 'E';

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, size_t(n));
  }
}

[[noreturn]] void run_child(int fd, const std::function<std::string()>& read) {
  // Dies with its parent, and dies of Ctrl-C at once: the parent handles interruption.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
  // A crash ends the child quietly: the parent reports it. (Handlers inherited from the host, such as a
  // test framework's or Python's faulthandler, would report it as the host's own.)
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
  std::string message;
  try {
    message = kValue + read();
  } catch (const Error& e) {
    message = std::string(1, kError) + e.what();
  } catch (const std::exception& e) {
    message = std::string(1, kError) + "internal error while reading: " + e.what();
  }
  const bool ok = write_all(fd, message.data(), message.size());
  ::_exit(ok ? 0 : 3);  // no atexit handlers, no destructors of the parent's objects
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string death_of(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
      return std::string("reading it was interrupted (") + strsignal(sig) + ")";
    return std::string("reading it crashed the HDF5 library (signal ") + std::to_string(sig) + ", " + strsignal(sig) +
           "): the file is damaged or crafted";
  }
  return "reading it failed inside the HDF5 library (the reader exited with status " +
         std::to_string(WEXITSTATUS(status)) + "): the file is damaged or crafted";
}

}  // namespace

void set_read_isolation(bool on) { g_isolation = on; }
bool read_isolation() { return g_isolation; }

std::string read_isolated(const std::string& name, const std::function<std::string()>& read) {
  if (!g_isolation) return read();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return read();  // out of descriptors: read unprotected rather than not at all
  std::fflush(nullptr);  // buffered output must not be written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return read();  // cannot fork (process limit): the same
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], read);
  }
  ::close(fds[1]);
  std::string message = read_all(fds[0]);
  ::close(fds[0]);
  const int status = wait_for(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || message.empty()) throw Error(name + ": " + death_of(status));
  if (message[0] == kError) throw Error(message.substr(1));
  message.erase(0, 1);
  return message;
}

}  // namespace snn
