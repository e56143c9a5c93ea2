#include "launch/launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "core/deadline.h"
#include "core/error.h"
#include "core/log.h"
#include "launch/cpu_binding.h"
#include "launch/line_buffer.h"
#include "launch/output_queue.h"
#include "store/local_secret.h"
#include "store/socket_util.h"
#include "store/store_secret.h"

extern char** environ;

namespace collie::launch {
namespace {

using Steady = std::chrono::steady_clock;

// Written by the signal handler, drained by the loop (the self-pipe trick).
int g_signal_pipe = -1;
// The signals run() handles (SignalGuard): blocked across fork, reset in the child.
sigset_t g_handled;

void on_signal(int sig) {
  const int saved = errno;
  const uint8_t b = static_cast<uint8_t>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe, &b, 1);
  errno = saved;
}

// Installs the handlers for the duration of run() and restores the previous ones.
class SignalGuard {
 public:
  SignalGuard() {
    if (g_signal_pipe >= 0) throw InvalidArgument("launch::run is already running in this process");
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw Error(fmt::format("launch: pipe: {}", std::strerror(errno)));
    }
    g_signal_pipe = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&g_handled);
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      // A hangup or quit that was ignored when the launcher started (nohup, a background job of
      // a script) stays ignored, for the launcher and its ranks.
      if ((kSignals[i] == SIGHUP || kSignals[i] == SIGQUIT) && old_[i].sa_handler == SIG_IGN)
        continue;
      sigaction(kSignals[i], &sa, nullptr);
      sigaddset(&g_handled, kSignals[i]);
    }
    // A reader that goes away (`collie launch ... | head`) must not kill the launcher and
    // orphan the ranks; the output queue drops the output instead.
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe_);
  }
  ~SignalGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    g_signal_pipe = -1;
    close(fds_[0]);
    close(fds_[1]);
  }
  int read_fd() const { return fds_[0]; }

 private:
  static constexpr std::array<int, 5> kSignals = {SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGQUIT};
  int fds_[2] = {-1, -1};
  std::array<struct sigaction, 5> old_{};
  struct sigaction old_pipe_ {};
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // read ends of the child's stdout and stderr pipes
  std::unique_ptr<LineBuffer> lines[2];
  OutputQueue* queues[2] = {nullptr, nullptr};  // where each stream's lines go
  bool running = false;
};

// Whether two descriptors are one open file (2>&1): their lines then share one queue, so they
// cannot interleave mid-line.
bool same_file(int a, int b) {
  struct stat x {};
  struct stat y {};
  return a == b || (::fstat(a, &x) == 0 && ::fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
                    x.st_ino == y.st_ino);
}

// The children form a new world; rank variables of an enclosing launcher would contradict ours.
constexpr const char* kForeignRankVars[] = {"OMPI_COMM_WORLD_RANK",
                                            "OMPI_COMM_WORLD_SIZE",
                                            "OMPI_COMM_WORLD_LOCAL_RANK",
                                            "OMPI_COMM_WORLD_LOCAL_SIZE",
                                            "PMI_RANK",
                                            "PMI_SIZE",
                                            "MPI_LOCALRANKID",
                                            "SLURM_PROCID",
                                            "SLURM_NTASKS",
                                            "SLURM_LOCALID"};

std::vector<std::string> child_env(const LaunchSpec& spec, int rank, uint16_t port,
                                   const std::string& secret) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  for (const char* v : kForeignRankVars) env.erase(v);
  env["RANK"] = env["LOCAL_RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(spec.nprocs);
  env["MASTER_ADDR"] = spec.master_addr;
  env["MASTER_PORT"] = std::to_string(port);
  env[kStoreSecretEnv] = secret;
  for (const auto& [k, v] : spec.extra_env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

class Launcher {
 public:
  Launcher(const LaunchSpec& spec, uint16_t port)
      : spec_(spec),
        port_(port),
        secret_(store_secret_from_env()),
        out_q_(std::make_unique<OutputQueue>(spec.out_fd)),
        err_own_(same_file(spec.out_fd, spec.err_fd) ? nullptr
                                                     : std::make_unique<OutputQueue>(spec.err_fd)),
        err_q_(err_own_ ? err_own_.get() : out_q_.get()) {
    // A secret the user exported (to attach `collie analyze --live` later) is the job's;
    // otherwise a new one per job.
    const bool exported = !secret_.empty();
    if (!exported) secret_ = new_store_secret();
    if (spec.announce_live) announce_live(exported);
    const std::vector<int> cpus = allowed_cpus();
    cpus_ = rank_cpus(spec.nprocs, cpus, spec.bind);
    if (!cpus.empty() && spec.nprocs > static_cast<int>(cpus.size())) {
      // Ranks that outnumber the cores take turns on them: times then include waiting for one.
      const std::string note = fmt::format(
          "{}: {} local ranks share {} CPU core{}, so ranks wait for a core and the times "
          "include that wait; -np {} gives each rank a core\n",
          spec.who, spec.nprocs, cpus.size(), cpus.size() == 1 ? "" : "s", cpus.size());
      err_q_->append(note);
    }
    if (const std::string b = describe_binding(cpus_, static_cast<int>(cpus.size())); !b.empty())
      log(LogLevel::Info, "launch: bound (--bind auto): {}", b);
    devnull_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull_ < 0) throw Error(fmt::format("launch: /dev/null: {}", std::strerror(errno)));
  }

  // LaunchSpec::announce_live.
  void announce_live(bool exported) {
    std::string note = fmt::format(
        "{}: to see where the ranks are, from another shell: collie analyze --live {}:{}",
        spec_.who, spec_.master_addr, port_);
    if (exported) {
      note += " (with the COLLIE_STORE_SECRET you exported)";
    } else {
      secret_file_ = std::make_unique<LocalSecretFile>(port_, secret_);
      if (!secret_file_->ok())
        note = fmt::format(
            "{}: collie analyze --live cannot find this job's store secret ({}); "
            "export COLLIE_STORE_SECRET before starting the job to attach it",
            spec_.who, secret_file_->why());
    }
    note += "\n";
    err_q_->append(note);
  }

  ~Launcher() {
    for (auto& c : children_) {
      if (c.running) {  // only reached when spawning failed part-way
        kill(-c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
      }
      for (int fd : c.fds) {
        if (fd >= 0) close(fd);
      }
    }
    close(devnull_);
    // What the launcher said before run() failed (a fork that failed): as far as it goes now.
    for (OutputQueue* q : queues()) q->write_ready();
  }

  // One event loop: the ranks' pipes are read only while their output queue has room, the
  // queues are written only as far as their readers take, so a signal, a deadline or a rank's
  // exit is acted on at once whoever reads (or does not read) the output.
  LaunchResult run(int signal_fd) {
    for (int r = 0; r < spec_.nprocs; ++r) spawn(r);
    if (spec_.timeout.count() > 0) job_deadline_ = Steady::now() + spec_.timeout;
    while (any_running() || any_open() || output_pending()) {
      std::vector<pollfd> pfds{{signal_fd, POLLIN, 0}};
      std::vector<std::pair<Child*, int>> owners{{nullptr, 0}};
      for (auto& c : children_) {
        for (int s = 0; s < 2; ++s) {
          if (c.fds[s] >= 0 && !c.queues[s]->full()) {
            pfds.push_back({c.fds[s], POLLIN, 0});
            owners.emplace_back(&c, s);
          }
        }
      }
      for (OutputQueue* q : queues()) {
        if (q->pending()) {
          pfds.push_back({q->fd(), POLLOUT, 0});
          owners.emplace_back(nullptr, 0);
        }
      }
      const int n = poll(pfds.data(), pfds.size(), next_timeout_ms());
      if (n < 0 && errno != EINTR)
        throw Error(fmt::format("launch: poll: {}", std::strerror(errno)));
      if (n > 0 && pfds[0].revents) drain_signals(signal_fd);
      for (size_t i = 1; i < pfds.size(); ++i) {
        if (pfds[i].revents && owners[i].first != nullptr)
          read_child(*owners[i].first, owners[i].second);
      }
      for (OutputQueue* q : queues()) q->write_ready();
      reap();
      on_deadlines();
    }
    if (gave_up_output_) {
      // Said only if stderr takes it at once: it may be the output nobody reads.
      OutputQueue note(spec_.err_fd);
      note.append(
          fmt::format("{}: {} bytes of the ranks' output were not written: nobody read "
                      "them before the job had to end\n",
                      spec_.who, out_q_->dropped() + (err_own_ ? err_own_->dropped() : 0)));
      note.write_ready();
    }
    result_.master_port = port_;
    if (result_.signal != 0) {
      result_.exit_code = 128 + result_.signal;
    } else if (result_.timed_out) {
      result_.exit_code = 124;
    }
    return result_;
  }

 private:
  void spawn(int rank) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
      throw Error(fmt::format("launch: pipe: {}", std::strerror(errno)));
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      throw Error(fmt::format("launch: pipe: {}", std::strerror(errno)));
    }
    // Everything the child needs is built before fork: only async-signal-safe calls after it.
    std::vector<std::string> env = child_env(spec_, rank, port_, secret_);
    std::vector<std::string> args = spec_.argv;
    std::vector<char*> envp = c_strings(env), argv = c_strings(args);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int c : cpus_[rank]) CPU_SET(c, &cpus);
    const bool bind = !cpus_[rank].empty();
    const std::string exec_fail =
        fmt::format("collie launch: rank {}: cannot run '{}': ", rank, spec_.argv[0]);
    // The child must not run our handlers (they write to our signal pipe) between fork and
    // exec: block the signals across fork, reset them in the child, then unblock.
    sigset_t old_mask;
    sigprocmask(SIG_BLOCK, &g_handled, &old_mask);
    const pid_t launcher_pid = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGQUIT})
        if (sigismember(&g_handled, sig)) signal(sig, SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      setpgid(0, 0);  // one group per rank: killing it also kills what the rank started
      // If the launcher itself dies (SIGKILL, OOM), the ranks must not run on unsupervised.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher_pid) _exit(128 + SIGKILL);
      // A failed binding leaves the rank unbound: it still runs, as it would without --bind.
      if (bind) sched_setaffinity(0, sizeof cpus, &cpus);
      // Ranks live in background process groups: reading the terminal would stop them
      // (SIGTTIN), so stdin is /dev/null, as mpirun gives every rank but rank 0.
      dup2(devnull_, STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      execvpe(argv[0], argv.data(), envp.data());
      const char* why = strerror(errno);
      [[maybe_unused]] ssize_t w1 = write(STDERR_FILENO, exec_fail.data(), exec_fail.size());
      [[maybe_unused]] ssize_t w2 = write(STDERR_FILENO, why, std::strlen(why));
      [[maybe_unused]] ssize_t w3 = write(STDERR_FILENO, "\n", 1);
      _exit(127);
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
      close(out[0]);
      close(err[0]);
      throw Error(fmt::format("launch: fork for rank {}: {}", rank, std::strerror(errno)));
    }
    setpgid(pid, pid);  // also here, so a kill right after fork reaches the group
    Child c;
    c.rank = rank;
    c.pid = pid;
    c.running = true;
    c.fds[0] = out[0];
    c.fds[1] = err[0];
    const std::string prefix = spec_.prefix_output ? fmt::format("[{}] ", rank) : "";
    c.queues[0] = out_q_.get();
    c.queues[1] = err_q_;
    c.lines[0] = std::make_unique<LineBuffer>(*c.queues[0], prefix);
    c.lines[1] = std::make_unique<LineBuffer>(*c.queues[1], prefix);
    for (int fd : c.fds) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    children_.push_back(std::move(c));
  }

  bool any_running() const {
    for (const auto& c : children_) {
      if (c.running) return true;
    }
    return false;
  }
  bool any_open() const {
    for (const auto& c : children_) {
      if (c.fds[0] >= 0 || c.fds[1] >= 0) return true;
    }
    return false;
  }

  std::vector<OutputQueue*> queues() const {
    if (err_own_) return {out_q_.get(), err_own_.get()};
    return {out_q_.get()};
  }
  bool output_pending() const { return out_q_->pending() || err_q_->pending(); }

  // The job had to end (a deadline or a signal) and the output is still not read: it is dropped,
  // with what the ranks have not yet written, so the launcher can exit.
  void give_up_output() {
    for (OutputQueue* q : queues()) q->drop();
    output_deadline_.reset();
    gave_up_output_ = true;
  }
  void arm_output_deadline(Millis grace) {
    const auto d = Steady::now() + grace;
    if (!output_deadline_ || d < *output_deadline_) output_deadline_ = d;
  }

  // Reads while the stream's queue has room (a full one leaves the rest in the pipe).
  void read_child(Child& c, int s) {
    char buf[65536];
    while (!c.queues[s]->full()) {
      const ssize_t n = read(c.fds[s], buf, sizeof(buf));
      if (n > 0) {
        c.lines[s]->feed(std::string_view(buf, static_cast<size_t>(n)));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close_stream(c, s);
      return;
    }
  }

  void close_stream(Child& c, int s) {
    c.lines[s]->flush();
    close(c.fds[s]);
    c.fds[s] = -1;
  }

  void drain_signals(int fd) {
    uint8_t sigs[64];
    ssize_t n;
    while ((n = read(fd, sigs, sizeof(sigs))) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        // A hangup (the terminal closed, the ssh session dropped) or a quit stops the job as
        // SIGTERM does: the ranks get SIGTERM, so what they started is stopped with them and the
        // launcher's own files (the store secret) are removed on the way out.
        if (sigs[i] == SIGINT || sigs[i] == SIGTERM) forward(sigs[i], sigs[i]);
        if (sigs[i] == SIGHUP || sigs[i] == SIGQUIT) forward(sigs[i], SIGTERM);
      }
    }
  }

  // `got` received; `send` is what the ranks get.
  void forward(int got, int send) {
    if (result_.signal != 0) {  // a second interrupt: stop waiting politely
      signal_all(SIGKILL);
      give_up_output();
      return;
    }
    result_.signal = got;
    say(got == send
            ? fmt::format("received {}; forwarding it to every rank", strsignal(got))
            : fmt::format("received {}; sending every rank {}", strsignal(got), strsignal(send)));
    signal_all(send);
    arm_kill_deadline(spec_.kill_grace);
    arm_output_deadline(spec_.kill_grace);
  }

  void reap() {
    for (auto& c : children_) {
      if (!c.running) continue;
      int st = 0;
      if (waitpid(c.pid, &st, WNOHANG) != c.pid) continue;
      c.running = false;
      const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (code == 0 || stopping()) continue;
      if (WIFEXITED(st) && is_verdict(code)) {
        // The rank printed its answer; the others finish on their own (bounded below).
        if (result_.exit_code == 0) result_.exit_code = code;
        if (verdict_rank_ < 0) {
          verdict_rank_ = c.rank;
          verdict_deadline_ = Steady::now() + spec_.verdict_grace;
        }
        continue;
      }
      result_.failed_rank = c.rank;
      result_.exit_code = code;
      say(WIFEXITED(st)
              ? fmt::format("rank {} exited with status {}; stopping the other ranks", c.rank, code)
              : fmt::format("rank {} was killed by {}; stopping the other ranks", c.rank,
                            strsignal(WTERMSIG(st))));
      signal_all(SIGTERM);
      arm_kill_deadline(spec_.failure_grace);
    }
    if (!any_running() && any_open() && !drain_deadline_) {
      // Every rank exited but something they started still holds the pipes.
      drain_deadline_ = Steady::now() + std::min<Millis>(spec_.kill_grace, std::chrono::seconds(1));
    }
  }

  bool stopping() const {
    return result_.failed_rank >= 0 || result_.signal || result_.timed_out || verdict_stopped_;
  }

  bool is_verdict(int code) const {
    const auto& v = spec_.verdict_statuses;
    return std::find(v.begin(), v.end(), code) != v.end();
  }

  void signal_all(int sig) {
    for (auto& c : children_) kill(-c.pid, sig);  // ESRCH for finished groups is fine
  }

  // An earlier deadline wins: a user's stop during a failure's short grace does not lengthen it.
  void arm_kill_deadline(Millis grace) {
    const auto d = Steady::now() + grace;
    if (!kill_deadline_ || d < *kill_deadline_) kill_deadline_ = d;
  }

  void on_deadlines() {
    const auto now = Steady::now();
    if (job_deadline_ && now >= *job_deadline_) {
      job_deadline_.reset();
      if (!stopping() && (any_running() || any_open())) {
        result_.timed_out = true;
        say(fmt::format("the job ran past its timeout of {} ms; stopping every rank",
                        spec_.timeout.count()));
        signal_all(SIGTERM);
        arm_kill_deadline(spec_.failure_grace);
      }
      // --timeout bounds the launcher too: output still unread then is dropped soon after.
      arm_output_deadline(spec_.failure_grace);
    }
    if (verdict_deadline_ && now >= *verdict_deadline_) {
      verdict_deadline_.reset();
      if (any_running() && !stopping()) {
        verdict_stopped_ = true;
        say(fmt::format(
            "rank {} gave its verdict (status {}) {} ms ago and some ranks are still running; "
            "stopping them",
            verdict_rank_, result_.exit_code, spec_.verdict_grace.count()));
        signal_all(SIGTERM);
        arm_kill_deadline(spec_.failure_grace);
      }
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
      kill_deadline_.reset();
      signal_all(SIGKILL);
    }
    if (output_deadline_ && now >= *output_deadline_) give_up_output();
    if (drain_deadline_ && now >= *drain_deadline_) {
      // What is left in a pipe whose queue is full is the ranks' output, waiting for the reader
      // (dropped instead once the job had to end).
      bool waiting = false;
      for (auto& c : children_)
        for (int s = 0; s < 2; ++s) waiting = waiting || (c.fds[s] >= 0 && c.queues[s]->full());
      if (waiting) {
        drain_deadline_ = now + std::chrono::milliseconds(100);
        return;
      }
      drain_deadline_.reset();
      signal_all(SIGKILL);
      for (auto& c : children_) {
        for (int s = 0; s < 2; ++s) {
          if (c.fds[s] >= 0) close_stream(c, s);
        }
      }
    }
  }

  int next_timeout_ms() const {
    std::optional<Steady::time_point> next;
    for (const auto& d :
         {job_deadline_, kill_deadline_, drain_deadline_, verdict_deadline_, output_deadline_}) {
      if (d && (!next || *d < *next)) next = d;
    }
    return next ? poll_timeout_ms(*next) : -1;
  }

  void say(const std::string& msg) { err_q_->append(spec_.who + ": " + msg + "\n"); }

  const LaunchSpec& spec_;
  uint16_t port_;
  std::string secret_;  // this job's COLLIE_STORE_SECRET, handed to every rank
  // Where the launcher's and the ranks' lines go (output_queue.h); err_q_ is out_q_ when stdout
  // and stderr are one file.
  std::unique_ptr<OutputQueue> out_q_, err_own_;
  OutputQueue* err_q_;
  std::unique_ptr<LocalSecretFile> secret_file_;  // announce_live: where analyze --live finds it
  std::vector<std::vector<int>> cpus_;  // each rank's CPUs (launch/cpu_binding.h); empty: unbound
  int devnull_ = -1;
  std::vector<Child> children_;
  LaunchResult result_;
  std::optional<Steady::time_point> job_deadline_, kill_deadline_, drain_deadline_,
      verdict_deadline_, output_deadline_;
  int verdict_rank_ = -1;         // the first rank that exited with a verdict status
  bool verdict_stopped_ = false;  // the others outlived verdict_grace and were stopped
  bool gave_up_output_ = false;   // output nobody read was dropped so that run() could return
};

}  // namespace

LaunchResult run(const LaunchSpec& spec) {
  if (spec.nprocs < 1) {
    throw InvalidArgument(fmt::format("launch: -np must be at least 1 (got {})", spec.nprocs));
  }
  if (spec.argv.empty() || spec.argv[0].empty()) {
    throw InvalidArgument("launch: no command given (usage: collie launch -np N -- CMD ARGS...)");
  }
  uint16_t port = spec.master_port;
  if (port == 0) close(net::listen_on(spec.master_addr, 0, &port));
  SignalGuard guard;
  Launcher launcher(spec, port);
  return launcher.run(guard.read_fd());
}

std::vector<std::string> self_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  char exe[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0 && !args.empty()) args[0] = std::string(exe, static_cast<size_t>(n));
  return args;
}

}  // namespace collie::launch
