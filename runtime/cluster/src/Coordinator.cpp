// The coordinator: ROUTER socket, worker registry (placement rules: ReplicaPlacement), batch
// dispatch with pipelining, heartbeats both ways, lost-worker recovery and local worker processes.
#include "orch/runtime/cluster/Coordinator.h"

#include "ConnectionGuard.h"
#include "KeptValueRoutes.h"
#include "LocalWorkerProcesses.h"
#include "MessagePieces.h"
#include "MessageSocket.h"
#include "NetworkAddresses.h"
#include "orch/runtime/cluster/ReplicaPlacement.h"
#include "orch/runtime/execution/GpuPlacement.h"
#include "orch/runtime/execution/MemorySize.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <zmq.h>

namespace orch::runtime {
namespace {

using Clock = SteadyClock;

/// Messages a connection may queue before ZeroMQ stops reading it: its default, and on an
/// endpoint anyone may reach (with messages of at most 64 KiB: 4 MiB a connection).
constexpr int kDefaultQueue = 1000;
constexpr int kOpenEndpointQueue = 64;

/// Whether `endpoint` is an ipc:// socket in the file system (whose directory's permissions
/// decide who may connect), not an abstract one ("ipc://@name": anyone on the host may).
bool isFileSocket(const std::string &endpoint) {
  return endpoint.rfind("ipc://", 0) == 0 && endpoint.size() > 6 && endpoint[6] != '@';
}

/// Why a socket bound at `bound` (its ZMQ_LAST_ENDPOINT) for `requested` may not listen
/// without keys: only tcp:// on a loopback address and ipc:// may (ws://, tipc://, ... reach
/// other hosts). Nullopt when it may.
std::optional<std::string> keylessRefusal(const std::string &requested, const std::string &bound) {
  const std::string advice =
      ", so anyone who can reach it could join as a worker, read the inputs and forge results. "
      "Make keys with `orch keygen coordinator` and `orch keygen WORKER` and run with --key "
      "coordinator.key --authorized-keys workers.pub (the workers' .pub files, one per line); "
      "workers get --key WORKER.key --server-key coordinator.pub. On a trusted network, "
      "--insecure listens without keys";
  if (bound.rfind("ipc://", 0) == 0)
    return std::nullopt;
  if (bound.rfind("tcp://", 0) != 0)
    return "refusing to listen on " + requested +
           " without keys: only tcp:// on a loopback address and ipc:// may go without them" +
           advice;
  if (isLoopbackAddress(tcpHost(bound)))
    return std::nullopt;
  return "refusing to listen on " + requested + " without keys: it binds " + tcpHost(bound) +
         ", not a loopback address" + advice;
}

/// IPv6 endpoints ("tcp://[::1]:7700") need ZeroMQ's IPv6 option.
void allowIpv6For(zmq::socket_t &socket, const std::string &endpoint) {
  if (tcpHost(endpoint).find(':') != std::string::npos)
    socket.set(zmq::sockopt::ipv6, 1);
}

/// A private directory for this run's ipc socket ($TMPDIR/orch-PID-XXXXXX), removed at the
/// end. Directories left by runs that were killed (their PID is gone) are removed first.
std::filesystem::path makeSocketDirectory() {
  namespace fs = std::filesystem;
  const fs::path temp = fs::temp_directory_path();
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(temp, error)) {
    const std::string name = entry.path().filename().string();
    long pid = 0;
    char rest[64] = {};
    if (std::sscanf(name.c_str(), "orch-%ld-%63s", &pid, rest) != 2 || pid <= 0)
      continue;
    // Only this user's own directories (never a link, never another user's: in a shared /tmp
    // anyone may name a directory so).
    struct stat info {};
    if (::lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != ::geteuid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove_all(entry.path(), error);
  }
  std::string pattern = (temp / ("orch-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    return {};
  return pattern;
}

/// "4", "0.5": a worker's CPUs as people write them.
std::string formatCpus(double cpus) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", cpus);
  return text;
}

class Coordinator : public BatchExecutor, private RouteTarget {
public:
  explicit Coordinator(CoordinatorOptions options)
      : options_(std::move(options)), context_(1), router_(context_, zmq::socket_type::router) {
    router_.set(zmq::sockopt::linger, 0);
    // A worker that restarts (same name) takes over its routing identity at once.
    router_.set(zmq::sockopt::router_handover, 1);
  }

  ~Coordinator() override { stop(); }

  std::optional<std::string>
  start(const plan::Plan &plan, const std::vector<std::vector<std::string>> &inputLabels) override {
    plan_ = &plan;
    inputLabels_ = inputLabels;
    encodedPlan_ = plan::encodePlan(plan);
    encodedPositions_ = plan::encodePlanPositions(plan, encodedPlan_);
    routes_.start(plan, options_.keepValuesOver);
    if (options_.endpoint.empty()) {
      socketDirectory_ = makeSocketDirectory();
      if (socketDirectory_.empty())
        return std::string("cannot create a private directory for the workers' socket in ") +
               std::filesystem::temp_directory_path().string();
      options_.endpoint = "ipc://" + (socketDirectory_ / "coordinator.sock").string();
    }
    // Hostile peers: no message beyond the protocol's size, no handshake left half done.
    // Where anyone may connect (no keys, tcp://), messages are small (large ones come in
    // pieces, PieceMessage) and each connection queues few: what strangers make this process
    // hold stays bounded. ZeroMQ copies these options into each endpoint as it binds.
    const bool open = !options_.curveKey && !isFileSocket(options_.endpoint);
    router_.set(zmq::sockopt::maxmsgsize,
                int64_t(open ? ProtocolLimits::kUnauthenticatedMessageBytes
                             : ProtocolLimits::kMessageBytes));
    router_.set(zmq::sockopt::rcvhwm, open ? kOpenEndpointQueue : kDefaultQueue);
    // A ROUTER drops what it cannot queue for a peer, silently: a batch sent to a worker busy
    // for a moment must wait instead. What is queued is bounded by the batches in flight (their
    // depth; a concurrent Call's in_flight, which may be a thousand), which this process holds
    // anyway.
    router_.set(zmq::sockopt::sndhwm, 0);
    // (The guard's hello deadline comes first and counts them; this is the backstop.)
    router_.set(zmq::sockopt::handshake_ivl,
                int(2 * options_.connectionLimits.helloDeadline.count()));
    std::optional<AuthorizedKeys> admitted;
    std::vector<std::string> workerEnvironment;
    if (options_.curveKey) {
      admitted = options_.authorizedKeys;
      if (options_.localWorkers > 0) {
        // Local workers authenticate with a key made for this run, handed to them in their
        // environment (readable only by this user).
        const CurveKeyPair local = generateCurveKeyPair("local");
        (*admitted)[local.publicKey] = local.name;
        peerKeys_.push_back(local.publicKey);
        workerEnvironment.push_back(std::string(kWorkerCurveEnvironment) + "=" + local.publicKey +
                                    " " + local.secretKey + " " + options_.curveKey->publicKey);
      }
      for (const auto &[key, name] : options_.authorizedKeys)
        peerKeys_.push_back(key);
      router_.set(zmq::sockopt::curve_server, 1);
      router_.set(zmq::sockopt::curve_secretkey, options_.curveKey->secretKey);
      router_.set(zmq::sockopt::zap_domain, "orch");
    }
    allowIpv6For(router_, options_.endpoint);
    try {
      guard_ = std::make_unique<ConnectionGuard>(context_, router_, std::move(admitted),
                                                 options_.connectionLimits,
                                                 [this](const std::string &line) { log(line); });
      router_.bind(options_.endpoint);
    } catch (const zmq::error_t &error) {
      return "cannot listen on " + options_.endpoint + ": " + error.what();
    }
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    if (std::optional<std::string> refused = refuseKeylessNetworkAddress())
      return refused;
    // Local workers of a run without keys connect to a private socket of their own, where
    // they know who their coordinator is (a worker serves a tcp:// one only with its key).
    std::string localEndpoint = endpoint_;
    if (!options_.curveKey && options_.localWorkers > 0 && !isFileSocket(endpoint_)) {
      socketDirectory_ = makeSocketDirectory();
      if (socketDirectory_.empty())
        return std::string("cannot create a private directory for the workers' socket in ") +
               std::filesystem::temp_directory_path().string();
      try {
        router_.set(zmq::sockopt::maxmsgsize, int64_t(ProtocolLimits::kMessageBytes));
        router_.set(zmq::sockopt::rcvhwm, kDefaultQueue);
        router_.bind("ipc://" + (socketDirectory_ / "coordinator.sock").string());
      } catch (const zmq::error_t &error) {
        return "cannot listen on a private socket for local workers: " + std::string(error.what());
      }
      localEndpoint = router_.get(zmq::sockopt::last_endpoint);
    }
    placement_ = std::make_unique<ReplicaPlacement>(plan);
    startedAt_ = Clock::now();
    if (options_.localWorkers > 0) {
      processes_ = std::make_unique<LocalWorkerProcesses>(
          options_.workerProgram, localEndpoint, options_.localWorkers, options_.localGpuDevices,
          std::move(workerEnvironment), [this](const std::string &line) { log(line); });
      processes_->startAll();
    } else if (placement_->replicaCount() > 0) {
      log("listening on " + endpoint_ + "; waiting for workers (orch worker --connect " +
          endpoint_ + ")");
    }
    return std::nullopt;
  }

  std::optional<std::string> awaitStarted(const std::atomic<bool> *stop) override {
    if (std::optional<std::string> problem = awaitWorkers(stop))
      return problem;
    std::vector<bool> waiting(plan_->calls.size(), false);
    for (uint32_t c = 0; c < plan_->calls.size(); ++c)
      waiting[c] = plan_->externalOperator(plan_->calls[c].op) != nullptr;
    for (;;) {
      if (startFailure_)
        return startFailure_;
      bool ready = true;
      for (uint32_t c = 0; c < waiting.size(); ++c)
        ready = ready && (!waiting[c] || startedCalls_.count(c));
      if (ready) {
        warmedUp_ = true;
        return std::nullopt;
      }
      if (stop && stop->load())
        return std::string("interrupted while the operators' processes started");
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      pollForInput(&item, 1, std::chrono::milliseconds(100));
      receiveForAWhile();
      tick();
    }
  }

  bool canRun(uint32_t call) const override { return placement_->canRun(call, depthOf(call)); }

  uint32_t batchSlots(uint32_t call) const override {
    return placement_->replicasOf(call) * depthOf(call);
  }

  void keepAlive() override {
    const Clock::time_point now = Clock::now();
    if (now - keptAliveAt_ < std::chrono::milliseconds(options_.heartbeatMs / 4))
      return;
    keptAliveAt_ = now;
    receiveForAWhile();
    tick();
  }

  /// Batches sent ahead to one replica of `call`: the depth; a concurrent Call's replica as
  /// many as it keeps open at once (`in_flight`), so that none waits there, its time limit
  /// running, for a request to end.
  uint32_t depthOf(uint32_t call) const {
    const int64_t inFlight = plan_->calls[call].options.inFlight;
    return inFlight > 1 ? uint32_t(inFlight) : options_.depth;
  }

  /// --wait-workers: until that many joined (or the timeout passed), nothing is placed.
  std::optional<std::string> awaitWorkers(const std::atomic<bool> *stop) {
    if (options_.waitWorkers == 0)
      return std::nullopt;
    const Clock::time_point deadline = Clock::now() + options_.waitWorkersTimeout;
    log("waiting for " + std::to_string(options_.waitWorkers) + " workers to join");
    while (placement_->liveWorkers() < options_.waitWorkers) {
      if (stop && stop->load())
        return std::string("interrupted while waiting for workers");
      if (Clock::now() >= deadline) {
        char within[32];
        std::snprintf(within, sizeof within, "%g s",
                      double(options_.waitWorkersTimeout.count()) / 1000);
        log("only " + std::to_string(placement_->liveWorkers()) + " of " +
            std::to_string(options_.waitWorkers) + " workers joined within " + within +
            " (--wait-workers); the run starts with them");
        break;
      }
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      pollForInput(&item, 1, std::chrono::milliseconds(100));
      receiveForAWhile();
      tick();
    }
    placingFrom_ = Clock::now();
    place();
    return std::nullopt;
  }

  ReplicaCapacity replicaCapacity() const override {
    return ReplicaCapacity{placement_->liveCpus(), double(placement_->liveGpus()),
                           std::max(1u, placement_->liveWorkers()), placement_->liveMemory(),
                           placement_->liveGpuMemory()};
  }

  std::optional<uint32_t> setReplicas(uint32_t call, uint32_t count) override {
    if (startFailedCalls_.count(call))
      count = std::min(count, placement_->replicasOf(call));
    while (placement_->replicasOf(call) < count)
      placement_->addReplica(call);
    while (placement_->replicasOf(call) > count) {
      std::optional<ReplicaPlacement::Move> retired = placement_->retireReplica(call);
      if (!retired)
        break;
      release(*retired);
    }
    if (placing())
      place();
    return placement_->replicasOf(call);
  }

  std::optional<uint32_t> replicaCount(uint32_t call) const override {
    // A move's successor still starting counts as the replica it replaces.
    uint32_t successors = 0;
    for (const auto &[successor, replaced] : drainOnceStarted_)
      successors += placement_->replica(successor).call == call;
    return placement_->replicasOf(call) - successors;
  }

  std::optional<LocalityWanted> localityWanted(uint32_t call) override {
    std::optional<ReplicaPlacement::LocalityWish> wish = placement_->takeLocalityWish(call);
    if (!wish)
      return std::nullopt;
    if (wish->feeds)
      return LocalityWanted{std::to_string(wish->batches) +
                                " batches of the Calls it feeds ran on " + "worker " +
                                workers_[wish->worker].name +
                                ", which had no replica of it, and fetched their inputs",
                            false, true};
    return LocalityWanted{std::to_string(wish->batches) +
                              " batches found their inputs kept on worker " +
                              workers_[wish->worker].name + ", which had no replica of it",
                          wish->dominant, false};
  }

  bool moveReplicaToInputs(uint32_t call) override {
    if (startFailedCalls_.count(call))
      return false;
    // The replica that goes: one of the Call's not yet going, the least busy.
    uint32_t leaving = kNoIndex;
    for (uint32_t r = 0; r < placement_->replicaCount(); ++r) {
      const ReplicaPlacement::Replica &replica = placement_->replica(r);
      if (replica.call == call && !replica.retired && !replica.draining &&
          replica.worker != kNoIndex &&
          (leaving == kNoIndex ||
           replica.queued.size() < placement_->replica(leaving).queued.size()))
        leaving = r;
    }
    if (leaving == kNoIndex)
      return false;
    // Its successor goes where the inputs were kept (placement's affinity); the leaving one
    // serves until the successor is ready (a model loads first), then drains.
    const uint32_t successor = placement_->addReplica(call, placement_->replica(leaving).number);
    place();
    if (placement_->replica(successor).worker == kNoIndex) {
      // Nowhere to put it (a GPU Call with no GPU left): no move.
      placement_->drain(successor);
      return false;
    }
    if (placement_->replica(successor).ready)
      drainReplica(leaving);
    else
      drainOnceStarted_[successor] = leaving;
    return true;
  }

  void drainReplica(uint32_t replica) {
    if (std::optional<ReplicaPlacement::Move> retired = placement_->drain(replica))
      release(*retired);
  }

  void release(const ReplicaPlacement::Move &retired) {
    if (retired.from != kNoIndex && workers_[retired.from].alive)
      sendTo(retired.from, ReleaseMessage{retired.replica});
  }

  double startupSeconds(uint32_t call) const override {
    auto found = startupSeconds_.find(call);
    return found == startupSeconds_.end() ? 0 : found->second;
  }

  void submit(Batch batch) override {
    forgetDroppedValues();
    if (std::optional<std::string> problem = batchExceedsProtocolLimits(batch)) {
      // No worker could read it: a batch error, as in-process (runOperatorBatch).
      endWithError(batch, std::move(*problem));
      return;
    }
    routes_.route(std::move(batch));
  }

  void abandon(uint64_t batchId, const std::string &why) override {
    auto sent = outstanding_.find(batchId);
    if (sent == outstanding_.end())
      return;
    const uint32_t w = sent->second.worker;
    outstanding_.erase(sent);
    // The worker's process is killed (a local one) or told to restart (a remote one); the
    // batches it held come back as lost, and its replicas move to the other workers.
    lose(w, why, ErrorCode::Restart);
  }

  std::string placeOf(uint64_t batchId) const override {
    auto sent = outstanding_.find(batchId);
    if (sent == outstanding_.end() || sent->second.worker >= workers_.size())
      return {};
    return workers_[sent->second.worker].name + "/replica " +
           std::to_string(placement_->replica(sent->second.replica).number);
  }

  // A batch whose end (a result, a loss, a refusal) waits in pending_, or that waits for a
  // value being computed again, is still in flight; recomputations are not the engine's.
  size_t inFlight() const override {
    return outstanding_.size() - recomputesOut_ + pendingEnds_ + routes_.waitingBatches();
  }

  std::vector<ExecutorEvent> wait(Clock::time_point deadline) override {
    const auto interval = std::chrono::milliseconds(options_.heartbeatMs);
    for (;;) {
      Clock::time_point now = Clock::now();
      auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(deadline, now + interval) - now);
      if (!pending_.empty() || timeout.count() < 0)
        timeout = std::chrono::milliseconds(0);
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      pollForInput(&item, 1, timeout);
      receiveForAWhile();
      tick();
      forgetDroppedValues();
      routes_.retryWaiting();
      if (!pending_.empty() || Clock::now() >= deadline) {
        std::vector<ExecutorEvent> events;
        events.swap(pending_);
        pendingEnds_ = 0;
        return events;
      }
    }
  }

  void stop() override {
    if (stopped_)
      return;
    stopped_ = true;
    for (uint32_t w = 0; w < workers_.size(); ++w)
      if (workers_[w].alive)
        sendTo(w, ByeMessage{"the run is over"});
    if (processes_)
      processes_->stopAll(std::chrono::milliseconds(2000));
    if (guard_)
      guardCounts_ = guard_->counts();
    guard_.reset();
    router_.close();
    std::error_code ignored;
    if (!socketDirectory_.empty())
      std::filesystem::remove_all(socketDirectory_, ignored);
    else if (endpoint_.rfind("ipc://", 0) == 0)
      std::filesystem::remove(endpoint_.substr(6), ignored);
  }

  std::string describe() const override {
    std::string text = std::to_string(joined_) + " worker(s) joined at " + endpoint_;
    if (options_.localWorkers)
      text += " (" + std::to_string(options_.localWorkers) + " local processes)";
    text += ", " + std::to_string(lost_) + " lost";
    if (processes_ && processes_->replaced())
      text += ", " + std::to_string(processes_->replaced()) + " replaced";
    if (options_.curveKey) {
      std::set<std::string> keys;
      for (const Worker &worker : workers_)
        keys.insert(worker.key);
      text += "; CURVE keys:";
      for (const std::string &key : keys)
        text += " " + key;
    }
    if (malformed_ || strangers_)
      text += "; " + std::to_string(malformed_) + " malformed and " + std::to_string(strangers_) +
              " unexpected message(s) answered with errors";
    const ConnectionGuardCounts counts = guard_ ? guard_->counts() : guardCounts_;
    if (counts.refusedKeys)
      text += "; " + std::to_string(counts.refusedKeys) + " unlisted key(s) refused";
    const uint64_t closed = counts.closedLate + counts.closedCrowded + counts.closedViolations;
    if (closed)
      text += "; " + std::to_string(closed) + " connection(s) closed (" +
              std::to_string(counts.closedViolations) + " broke the protocol, " +
              std::to_string(counts.closedLate) + " said no hello in time, " +
              std::to_string(counts.closedCrowded) + " over the limits)";
    if (counts.failedHandshakes)
      text += "; " + std::to_string(counts.failedHandshakes) + " failed handshake(s)";
    text += "; " + formatMemory(batchBytes_ + resultBytes_) + " through the coordinator";
    if (routes_.ledger().valuesKept())
      text += ", " + std::to_string(routes_.ledger().valuesKept()) + " value(s) (" +
              formatMemory(routes_.ledger().bytesKept()) + ") kept on workers, " +
              std::to_string(routes_.fetchedFromPeers()) + " fetched by another worker" +
              (routes_.valuesRelayed() ? ", " + std::to_string(routes_.valuesRelayed()) + " relayed"
                                       : std::string());
    if (routes_.ledger().valuesRecomputed())
      text += ", " + std::to_string(routes_.ledger().valuesRecomputed()) +
              " computed again after their worker was lost";
    return text;
  }

  std::vector<std::pair<std::string, uint64_t>> counters() const override {
    return {{"batch_bytes_sent", batchBytes_},
            {"result_bytes_received", resultBytes_},
            {"values_kept_on_workers", routes_.ledger().valuesKept()},
            {"values_fetched_between_workers", routes_.fetchedFromPeers()},
            {"values_relayed_by_coordinator", routes_.valuesRelayed()},
            {"bytes_kept_on_workers", routes_.ledger().bytesKept()},
            {"values_recomputed", routes_.ledger().valuesRecomputed()}};
  }

  std::vector<WorkerIdentity> workers() const override {
    std::vector<WorkerIdentity> identities;
    for (const Worker &worker : workers_)
      identities.push_back({worker.name, worker.host, worker.key, worker.joinedAt, worker.lostAt,
                            worker.lostReason});
    return identities;
  }

private:
  struct Worker {
    std::string identity;
    std::string name;
    std::string host;
    /// The name of the CURVE key it authenticated with ("" without CURVE).
    std::string key;
    Clock::time_point joinedAt = Clock::now();
    std::optional<Clock::time_point> lostAt;
    std::string lostReason;
    int64_t pid = 0;
    bool alive = true;
    Clock::time_point lastHeard, lastSent;
    /// Where other workers fetch the values it keeps ("": it keeps none).
    PeerAddress peer;
  };
  using KeptKey = KeptValueLedger::Key;
  struct Sent {
    uint32_t replica;
    uint32_t worker;
    uint32_t call;
    /// For a Call whose results may be kept: its grains and inputs, the recipe to compute a
    /// kept result again.
    std::vector<BatchGrain> grains;
    std::vector<Value> inputs;
    /// Set for a recomputation of that kept value (not the engine's batch).
    std::optional<KeptKey> recomputes;
    /// It runs alone on its worker (Batch::alone).
    bool alone = false;
  };

  /// Handles the messages waiting, for at most a few milliseconds: a flood of messages (a
  /// hostile peer's, or a lost worker's that keeps talking) must not keep the coordinator from
  /// its heartbeats and deadlines (tick), or its workers would lose it.
  void receiveForAWhile() {
    const Clock::time_point until = Clock::now() + std::chrono::milliseconds(20);
    for (unsigned handled = 0; auto frames = receiveFrames(router_); ++handled) {
      receive(*frames);
      if (handled % 64 == 63 && Clock::now() >= until)
        return;
    }
  }

  /// Without keys, a tcp:// socket that bound anything but a loopback address is refused
  /// (unbound before a message is read: the address bound decides, as an interface may be
  /// named like one); on loopback, a note says who may join.
  std::optional<std::string> refuseKeylessNetworkAddress() {
    if (!options_.loopbackOnly || isFileSocket(endpoint_))
      return std::nullopt;
    if (std::optional<std::string> refused = keylessRefusal(options_.endpoint, endpoint_)) {
      router_.unbind(endpoint_);
      return refused;
    }
    log("note: " + endpoint_ +
        " admits any process on this machine as a worker; where other users log in, use keys "
        "(orch keygen; docs/cluster.md)");
    return std::nullopt;
  }

  void log(const std::string &line) override {
    if (options_.log)
      options_.log(line);
  }

  /// Logs the first problems of a kind, then every thousandth, so a flood cannot flood the log.
  void logProblem(uint64_t count, const std::string &line) {
    if (count <= 5 || count % 1000 == 0)
      log(line + (count > 5 ? " (" + std::to_string(count) + " so far)" : ""));
  }

  void sendTo(uint32_t w, const Message &message) {
    const size_t bytes = sendRaw(workers_[w].identity, message);
    if (std::holds_alternative<BatchMessage>(message))
      batchBytes_ += bytes;
    workers_[w].lastSent = Clock::now();
  }

  size_t sendRaw(const std::string &identity, const Message &message) {
    try {
      return sendMessageTo(router_, identity, message);
    } catch (const zmq::error_t &) {
      // A peer that cannot take a message is handled by the heartbeat.
      return 0;
    }
  }

  void receive(std::vector<zmq::message_t> &frames) {
    const std::string identity = frames.front().to_string();
    // The connection it came on, and the key name ZAP gave it (CURVE only).
    const int fd = ::zmq_msg_get(frames.back().handle(), ZMQ_SRCFD);
    const char *keyName = ::zmq_msg_gets(frames.back().handle(), "User-Id");
    auto known = byIdentity_.find(identity);
    const bool member = known != byIdentity_.end() && workers_[known->second].alive;
    if (member)
      workers_[known->second].lastHeard = Clock::now();
    if (frames.size() != 2) {
      ++malformed_;
      logProblem(malformed_, "a message of " + std::to_string(frames.size()) +
                                 " frames (expected 2) was refused");
      sendRaw(identity, ErrorMessage{"expected one body frame"});
      violated(fd, member ? known->second : kNoIndex, "it sent a message of several frames");
      return;
    }
    auto decoded = decodeMessage(frames.back().to_string_view());
    if (auto *problem = std::get_if<std::string>(&decoded)) {
      ++malformed_;
      logProblem(malformed_, "malformed message refused: " + *problem);
      sendRaw(identity, ErrorMessage{"malformed message: " + *problem});
      // A worker whose message cannot be read may have sent a result: rather than wait for it
      // forever, its batches run elsewhere.
      violated(fd, member ? known->second : kNoIndex,
               "it sent a message that cannot be read (" + *problem + ")");
      return;
    }
    Message &message = std::get<Message>(decoded);
    if (auto *hello = std::get_if<HelloMessage>(&message)) {
      welcome(identity, *hello, fd, keyName ? keyName : "");
      return;
    }
    if (known == byIdentity_.end() || !workers_[known->second].alive) {
      ++strangers_;
      const std::string why = known == byIdentity_.end()
                                  ? "unknown worker: say hello first"
                                  : "this worker was declared lost; exit and start again";
      logProblem(strangers_,
                 std::string(messageTypeName(message)) + " from " +
                     (known == byIdentity_.end() ? "an unknown peer" : "a lost worker") +
                     " refused");
      sendRaw(identity, ErrorMessage{why, known == byIdentity_.end() ? ErrorCode::Unspecified
                                                                     : ErrorCode::DeclaredLost});
      // A worker declared lost may still be sending what it had; a stranger is not a worker.
      if (known == byIdentity_.end())
        violated(fd, kNoIndex, "");
      return;
    }
    const uint32_t w = known->second;
    size_t bytes = frames.back().size();
    if (auto *piece = std::get_if<PieceMessage>(&message)) {
      std::optional<std::string> whole = takePiece(w, fd, *piece);
      if (!whole)
        return;
      auto assembled = decodeMessage(*whole);
      auto *inside = std::get_if<Message>(&assembled);
      if (!inside || std::holds_alternative<HelloMessage>(*inside) ||
          std::holds_alternative<PieceMessage>(*inside)) {
        ++malformed_;
        const std::string why =
            inside
                ? std::string("a message in pieces held a ") + messageTypeName(*inside)
                : "a message in pieces cannot be read (" + std::get<std::string>(assembled) + ")";
        logProblem(malformed_, why + ": refused");
        sendTo(w, ErrorMessage{why});
        violated(fd, w, "it sent " + why);
        return;
      }
      message = std::move(*inside);
      bytes = whole->size();
    }
    if (auto *result = std::get_if<ResultMessage>(&message)) {
      resultBytes_ += bytes;
      finish(w, std::move(*result));
    } else if (auto *started = std::get_if<StartedMessage>(&message)) {
      noteStarted(w, *started);
    } else if (auto *bye = std::get_if<ByeMessage>(&message)) {
      lose(w, "it said goodbye (" + bye->reason + ")");
    } else if (auto *blobs = std::get_if<BlobsMessage>(&message)) {
      resultBytes_ += bytes;
      routes_.relayed(w, workers_[w].name, blobs->ids, blobs->values);
    } else if (auto *error = std::get_if<ErrorMessage>(&message)) {
      log("worker " + workers_[w].name + " reported: " + error->message);
    } else if (!std::holds_alternative<HeartbeatMessage>(message)) {
      ++strangers_;
      logProblem(strangers_, std::string("a worker sent a coordinator's message (") +
                                 messageTypeName(message) + ")");
      sendTo(w, ErrorMessage{std::string("workers do not send ") + messageTypeName(message)});
      violated(fd, w,
               std::string("it sent a coordinator's message (") + messageTypeName(message) + ")");
    }
  }

  /// Takes a piece of a message worker `w` sends in pieces (MessagePieces); the whole message
  /// once its last piece came. A piece out of turn breaks the protocol.
  std::optional<std::string> takePiece(uint32_t w, int fd, PieceMessage &piece) {
    MessagePieces::Taken taken = pieces_.take(w, piece, Clock::now());
    tellMore(taken.granted);
    if (taken.broken) {
      ++malformed_;
      logProblem(malformed_, "a piece refused: " + *taken.broken);
      sendTo(w, ErrorMessage{*taken.broken});
      violated(fd, w, *taken.broken);
      return std::nullopt;
    }
    return std::move(taken.whole);
  }

  /// Tells these workers to send the rest of their messages in pieces (their bytes are
  /// reserved).
  void tellMore(const std::vector<uint32_t> &workers) {
    for (uint32_t w : workers)
      sendTo(w, MoreMessage{});
  }

  /// A worker told MORE that sends no piece for as long as a worker may be silent, or trickles,
  /// holds the budget of the others: it is lost (its heartbeats do not count).
  void expireStalledPieces() {
    for (const auto &[w, why] : pieces_.stalled(Clock::now()))
      lose(w, why);
  }

  /// A peer broke the protocol: its connection is closed (after its error answer went out),
  /// and a worker `w` among it is lost first (its batches run elsewhere).
  void violated(int fd, uint32_t w, const std::string &why) {
    if (w != kNoIndex)
      lose(w, why);
    if (guard_)
      guard_->disconnect(fd);
  }

  void welcome(const std::string &identity, const HelloMessage &hello, int fd,
               const std::string &key) {
    if (hello.version != kProtocolVersion) {
      ++strangers_;
      logProblem(strangers_, "worker " + hello.worker + " speaks protocol " +
                                 std::to_string(hello.version) + "; refused");
      sendRaw(identity, ErrorMessage{"protocol version " + std::to_string(hello.version) +
                                     " is not supported; this coordinator speaks " +
                                     std::to_string(kProtocolVersion)});
      if (guard_)
        guard_->disconnect(fd);
      return;
    }
    if (guard_)
      guard_->joined(fd);
    auto known = byIdentity_.find(identity);
    if (known != byIdentity_.end() && workers_[known->second].alive)
      lose(known->second, "it said hello again");
    Worker worker;
    worker.identity = identity;
    worker.name = hello.worker;
    worker.pid = hello.pid;
    worker.host = hello.host;
    worker.key = key;
    worker.lastHeard = worker.lastSent = Clock::now();
    worker.peer = PeerAddress{hello.worker, hello.peerEndpoint, hello.peerKey};
    const uint32_t w = static_cast<uint32_t>(workers_.size());
    // The GPUs' memory counts when each of them said how much it has.
    const uint64_t gpuMemory = knownGpuMemory(hello.gpuMemory, hello.gpus.size());
    const uint64_t largestGpuMemory =
        gpuMemory > 0 ? *std::max_element(hello.gpuMemory.begin(), hello.gpuMemory.end()) : 0;
    // Both number workers in the order they join.
    if (placement_->addWorker(hello.cpus, !hello.gpus.empty(), hello.memoryBytes,
                              uint32_t(hello.gpus.size()), gpuMemory, largestGpuMemory) != w)
      throw std::logic_error("orch: the coordinator and its placement disagree on workers");
    workers_.push_back(std::move(worker));
    byIdentity_[identity] = w;
    byName_[hello.worker] = w;
    ++joined_;
    WelcomeMessage welcomeMessage;
    welcomeMessage.heartbeatMs = options_.heartbeatMs;
    welcomeMessage.liveness = options_.liveness;
    welcomeMessage.plan = encodedPlan_;
    welcomeMessage.planPositions = encodedPositions_;
    welcomeMessage.peerKeys = peerKeys_;
    sendTo(w, welcomeMessage);
    if (key.empty() ? !options_.localWorkers : key != "local")
      log("worker " + hello.worker + " joined (" + (key.empty() ? "" : "key " + key + ", ") +
          formatCpus(hello.cpus) + " cpus, " + std::to_string(hello.gpus.size()) + " gpus)");
    if (!placing()) {
      // Local workers start together: replicas wait for all of them rather than start on the
      // first and move (a model would load twice); so do the workers --wait-workers names.
      if (joined_ < uint64_t(options_.localWorkers) ||
          placement_->liveWorkers() < options_.waitWorkers)
        return;
      placingFrom_ = Clock::now();
    }
    place();
    // A replacement would otherwise sit idle next to workers that took over the lost one's
    // replicas; and so would any worker that joins while every replica is busy.
    init(placement_->rebalance(w));
    handOverBusyReplicas(w);
  }

  /// Replicas rebalance could not move (they were busy) are handed to `newcomer` as a replica
  /// moved to its inputs is: a successor starts there, and the old one serves until the
  /// successor started, then drains.
  void handOverBusyReplicas(uint32_t newcomer) {
    for (const ReplicaPlacement::HandOver &handOver : placement_->handOverBusy(newcomer)) {
      init({handOver.successor});
      if (placement_->replica(handOver.successor.replica).ready)
        drainReplica(handOver.leaving);
      else
        drainOnceStarted_[handOver.successor.replica] = handOver.leaving;
    }
  }

  /// Sends INIT for each replica that moved to a worker.
  void init(const std::vector<ReplicaPlacement::Move> &moves) {
    for (const ReplicaPlacement::Move &move : moves) {
      const uint32_t call = placement_->replica(move.replica).call;
      // The worker it leaves stops hosting it (a declared operator's process would idle).
      if (move.from != kNoIndex && workers_[move.from].alive)
        sendTo(move.from, ReleaseMessage{move.replica});
      const uint64_t keepOver =
          workers_[move.worker].peer.endpoint.empty() ? 0 : routes_.keepOver(call);
      sendTo(move.worker, InitMessage{move.replica, call, inputLabels_[call], keepOver,
                                      placement_->replica(move.replica).number});
      initSentAt_[move.replica] = Clock::now();
      // A declared operator's replica takes batches once its process said it started.
      placement_->replica(move.replica).ready =
          plan_->externalOperator(plan_->calls[call].op) == nullptr;
    }
  }

  void finish(uint32_t w, ResultMessage result) {
    ExecutorEvent event;
    auto sent = outstanding_.find(result.report.batchId);
    std::optional<Sent> recipe;
    if (sent != outstanding_.end()) {
      if (sent->second.worker != w) {
        ++strangers_;
        logProblem(strangers_, "worker " + workers_[w].name + " reported a batch it was not sent");
        sendTo(w, ErrorMessage{"batch " + std::to_string(result.report.batchId) +
                               " was not sent to this worker"});
        return;
      }
      ReplicaPlacement::Replica &replica = placement_->replica(sent->second.replica);
      event.call = sent->second.call;
      recipe = std::move(sent->second);
      outstanding_.erase(sent);
      const bool wasRunning =
          !replica.queued.empty() && replica.queued.front() == result.report.batchId;
      std::erase(replica.queued, result.report.batchId);
      if (wasRunning && !replica.queued.empty() &&
          !KeptValueRoutes::isRecomputation(replica.queued.front()))
        started(replica.queued.front());
      if (std::optional<ReplicaPlacement::Move> retired =
              placement_->retireIfDrained(recipe->replica))
        release(*retired);
    }
    if (result.report.loss != BatchLoss::None && !result.unreachable.empty())
      noteUnreachable(w, result.unreachable);
    std::optional<KeptValueLedger::Recipe> madeFrom;
    if (recipe)
      madeFrom.emplace(KeptValueLedger::Recipe{recipe->call, recipe->grains, recipe->inputs});
    routes_.ledger().track(w, workers_[w].name, result.report, madeFrom);
    if (recipe && recipe->recomputes) {
      --recomputesOut_;
      routes_.recomputed(*recipe->recomputes, result.report);
      return;
    }
    // A report for a batch no longer outstanding still goes to the engine, which counts it as
    // stale.
    event.kind = ExecutorEvent::Kind::Finished;
    event.report = std::move(result.report);
    event.seconds = result.seconds;
    // Numbered within the Call, as people count its replicas.
    event.place = workers_[w].name + "/replica " +
                  std::to_string(result.replica < placement_->replicaCount()
                                     ? placement_->replica(result.replica).number
                                     : result.replica);
    pending_.push_back(std::move(event));
    ++pendingEnds_;
  }

  /// Worker `reader` could not reach `owner`'s peer socket: from now on the coordinator relays
  /// that owner's values to it.
  void noteUnreachable(uint32_t reader, const std::string &owner) {
    auto found = byName_.find(owner);
    if (found == byName_.end() || !workers_[found->second].alive ||
        !routes_.markUnreachable(reader, found->second))
      return;
    log("worker " + workers_[reader].name + " cannot reach the values worker " + owner +
        " keeps (its peer socket " + workers_[found->second].peer.endpoint +
        "): the coordinator passes them on (docs/cluster.md)");
  }

  /// A declared operator's replica started on worker `w`, or could not: before the run
  /// begins that stops it; later (a replacement worker) the replica's batches fail instead.
  void noteStarted(uint32_t w, const StartedMessage &started) {
    if (started.replica >= placement_->replicaCount())
      return;
    const uint32_t call = placement_->replica(started.replica).call;
    if (placement_->replica(started.replica).worker == w) {
      // A replica moved to its inputs: the one it replaces drains once it started, and stays
      // if it could not.
      auto moved = drainOnceStarted_.find(started.replica);
      const uint32_t replaced = moved == drainOnceStarted_.end() ? kNoIndex : moved->second;
      if (moved != drainOnceStarted_.end())
        drainOnceStarted_.erase(moved);
      if (!started.error) {
        placement_->replica(started.replica).ready = true;
        if (replaced != kNoIndex)
          drainReplica(replaced);
      } else if (replaced != kNoIndex) {
        // A move whose new replica could not start: it goes, the old one stays; if the old
        // one went with its worker meanwhile, the Call gets a replica in its place.
        drainReplica(started.replica);
        placement_->replica(replaced).handedOver = false;
        if (placement_->replica(replaced).retired) {
          placement_->addReplica(call, placement_->replica(replaced).number);
          place();
        }
        startFailedCalls_.insert(call);
      } else if (warmedUp_ && placement_->replicasOf(call) > 1) {
        // Its Call has others: it goes (the next count the run loop reads says so), and the
        // Call gets no more new replicas in this run (a start that fails fails again).
        drainReplica(started.replica);
        startFailedCalls_.insert(call);
      } else {
        // The Call's only replica: batches go to it and fail with the cause, as before.
        placement_->replica(started.replica).ready = true;
      }
    }
    if (!started.error) {
      startedCalls_.insert(call);
      if (auto sent = initSentAt_.find(started.replica); sent != initSentAt_.end())
        startupSeconds_[call] =
            std::max(startupSeconds_[call],
                     std::chrono::duration<double>(Clock::now() - sent->second).count());
      return;
    }
    if (!warmedUp_ && !startFailure_)
      startFailure_ = *started.error;
    else
      log("worker " + workers_[w].name + ": replica " +
          std::to_string(placement_->replica(started.replica).number) + " of call '" +
          plan_->calls[call].name + "' could not start: " + *started.error);
  }

  void started(uint64_t batchId) {
    ExecutorEvent event;
    event.kind = ExecutorEvent::Kind::Started;
    event.batchId = batchId;
    event.startedAt = Clock::now();
    pending_.push_back(std::move(event));
  }

  /// `crashed`: its process died of a signal (a crash, an OOM kill): a batch it ran alone
  /// is to blame (BatchLoss::Crash), the others went down with it.
  void lose(uint32_t w, const std::string &why, ErrorCode tell = ErrorCode::DeclaredLost,
            bool crashed = false) {
    Worker &worker = workers_[w];
    if (!worker.alive)
      return;
    worker.alive = false;
    tellMore(pieces_.drop(w, Clock::now()));
    worker.lostAt = Clock::now();
    worker.lostReason = why;
    ++lost_;
    log("worker " + worker.name + " lost: " + why);
    // A worker that can still hear us learns it at once (a remote one reconnects or restarts).
    sendTo(w, ErrorMessage{"this worker was declared lost: " + why, tell});
    // The others stop waiting for its values (a fetch would wait out its time limit, 10 s by
    // default, and its replica with it).
    for (uint32_t other = 0; other < workers_.size(); ++other)
      if (workers_[other].alive)
        sendTo(other, LostMessage{worker.name});
    // A successor that was starting there will not: the replica it was to replace stays (a
    // model is not loaded again beside it).
    for (auto it = drainOnceStarted_.begin(); it != drainOnceStarted_.end();) {
      if (placement_->replica(it->first).worker == w) {
        placement_->abandonSuccessor(it->first, it->second);
        it = drainOnceStarted_.erase(it);
      } else {
        ++it;
      }
    }
    placement_->removeWorker(w);
    // Its kept values are gone: each is computed again from its recipe once the replicas
    // have moved, with the recomputations that ran on it.
    std::vector<KeptKey> lostValues = routes_.workerLost(w);
    for (auto it = outstanding_.begin(); it != outstanding_.end();) {
      if (it->second.worker != w) {
        ++it;
        continue;
      }
      if (it->second.recomputes) {
        lostValues.push_back(*it->second.recomputes);
        --recomputesOut_;
        it = outstanding_.erase(it);
        continue;
      }
      ExecutorEvent event;
      event.kind = ExecutorEvent::Kind::Lost;
      event.call = it->second.call;
      event.batchId = it->first;
      event.reason = "worker " + worker.name + " lost: " + why;
      event.bystander = tell == ErrorCode::Restart;
      event.crash = crashed && it->second.alone;
      pending_.push_back(std::move(event));
      ++pendingEnds_;
      it = outstanding_.erase(it);
    }
    if (processes_ && worker.pid > 0) {
      // A hung local worker must not linger; its replacement takes over.
      processes_->kill(static_cast<pid_t>(worker.pid));
    }
    place();
    routes_.recompute(lostValues);
  }

  /// Ends `batch` with a batch error without sending it.
  void endWithError(const Batch &batch, std::string message) override {
    ExecutorEvent event;
    event.call = batch.call;
    event.report.batchId = batch.id;
    event.report.batchError = std::move(message);
    pending_.push_back(std::move(event));
    ++pendingEnds_;
  }

  // RouteTarget: what the kept-value routes decide, carried out with the sockets.
  uint32_t pickReplica(uint32_t call, uint32_t preferred, bool alone) override {
    // A batch lost with its worker before runs alone there, and nothing joins it (Batch::alone).
    std::vector<uint32_t> inFlight(workers_.size(), 0);
    std::vector<bool> holdsAlone(workers_.size(), false);
    for (const auto &[id, sent] : outstanding_)
      if (sent.worker < workers_.size()) {
        ++inFlight[sent.worker];
        holdsAlone[sent.worker] = holdsAlone[sent.worker] || sent.alone;
      }
    auto allowed = [&](uint32_t w) {
      return w < workers_.size() && !holdsAlone[w] && (!alone || inFlight[w] == 0);
    };
    const uint32_t replica = placement_->pick(call, depthOf(call), preferred, allowed);
    if (replica != kNoIndex)
      placement_->noteBatchSent(call, preferred, placement_->replica(replica).worker);
    return replica;
  }

  uint32_t workerOfReplica(uint32_t replica) const override {
    return placement_->replica(replica).worker;
  }

  void send(uint32_t r, Batch batch, std::vector<uint32_t> peerWorkers,
            std::optional<KeptKey> recomputes) override {
    ReplicaPlacement::Replica &replica = placement_->replica(r);
    std::vector<PeerAddress> peers;
    for (uint32_t w : peerWorkers)
      peers.push_back(workers_[w].peer);
    Sent sent{r, replica.worker, batch.call, {}, {}, recomputes, batch.alone};
    if (routes_.keepOver(batch.call) > 0) {
      sent.grains = batch.grains;
      sent.inputs = batch.inputs;
    }
    placement_->queue(r, batch.id);
    outstanding_[batch.id] = std::move(sent);
    if (recomputes)
      ++recomputesOut_;
    const uint64_t id = batch.id;
    sendTo(replica.worker, BatchMessage{r, std::move(batch), std::move(peers)});
    // A recomputation is not the engine's batch: its start is nobody's business but the
    // replica's next batch starts after it.
    if (replica.queued.size() == 1 && !recomputes)
      started(id);
  }

  void askForValues(uint32_t owner, std::vector<uint64_t> ids) override {
    sendTo(owner, FetchMessage{std::move(ids)});
  }

  /// Forgets the kept values the engine let go of and tells their owners to drop them.
  void forgetDroppedValues() {
    std::map<uint32_t, std::vector<uint64_t>> byWorker;
    for (const KeptKey &key : routes_.ledger().takeDropped()) {
      auto owner = byName_.find(key.first);
      if (owner != byName_.end() && workers_[owner->second].alive)
        byWorker[owner->second].push_back(key.second);
    }
    for (auto &[w, ids] : byWorker)
      sendTo(w, DropMessage{std::move(ids)});
  }

  /// Places the replicas that have no worker (a Call that requires a GPU waits for a worker
  /// with one).
  void place() {
    uint32_t waitingForGpu = kNoIndex;
    init(placement_->place(&waitingForGpu));
    if (waitingForGpu != kNoIndex && !warnedGpu_) {
      warnedGpu_ = true;
      log("call '" + plan_->calls[waitingForGpu].name +
          "' requires a GPU: waiting for a worker with --gpus");
    }
  }

  /// Whether replicas are placed yet: at once with remote workers; with local ones when all
  /// joined or kLocalWorkersGrace passed.
  bool placing() const {
    return (!options_.localWorkers && !options_.waitWorkers) || placingFrom_ <= Clock::now();
  }

  void tick() {
    expireStalledPieces();
    const Clock::time_point now = Clock::now();
    if (options_.localWorkers && placingFrom_ > now && now - startedAt_ > kLocalWorkersGrace) {
      placingFrom_ = now;
      place();
    }
    // A worker that joined when no Call had a batch queued (the value budget holding them
    // back) was handed nothing: it is offered a share again once a second while it idles.
    if (placement_ && placing() && !stopped_ &&
        now - idleWorkersOfferedAt_ >= std::chrono::seconds(1)) {
      idleWorkersOfferedAt_ = now;
      for (uint32_t w = 0; w < workers_.size(); ++w)
        if (workers_[w].alive && placement_->idleOfWork(w))
          handOverBusyReplicas(w);
    }
    const auto interval = std::chrono::milliseconds(options_.heartbeatMs);
    for (uint32_t w = 0; w < workers_.size(); ++w) {
      Worker &worker = workers_[w];
      if (!worker.alive)
        continue;
      if (now - worker.lastHeard > interval * options_.liveness) {
        lose(w, "silent for more than " + std::to_string(options_.heartbeatMs * options_.liveness) +
                    " ms");
        continue;
      }
      if (now - worker.lastSent >= interval)
        sendTo(w, HeartbeatMessage{});
    }
    if (!processes_ || stopped_)
      return;
    for (const LocalWorkerProcesses::Exited &child : processes_->reapAndReplace())
      for (uint32_t w = 0; w < workers_.size(); ++w)
        if (workers_[w].pid == child.pid)
          lose(w, "its process " + child.how, ErrorCode::DeclaredLost, child.killedBySignal);
  }

  CoordinatorOptions options_;
  zmq::context_t context_;
  zmq::socket_t router_;
  std::string endpoint_;
  const plan::Plan *plan_ = nullptr;
  std::vector<std::vector<std::string>> inputLabels_;
  std::string encodedPlan_;
  /// Its source positions, for the messages of workers (PlanPositions.h).
  std::string encodedPositions_;
  std::vector<Worker> workers_;
  std::map<std::string, uint32_t> byIdentity_;
  std::unique_ptr<ReplicaPlacement> placement_;
  std::unordered_map<uint64_t, Sent> outstanding_;
  std::map<std::string, uint32_t> byName_;
  /// With CURVE: the worker keys that may fetch from each other.
  std::vector<std::string> peerKeys_;
  KeptValueRoutes routes_{*this};
  /// Recomputations in outstanding_ (they are not the engine's batches).
  size_t recomputesOut_ = 0;
  uint64_t batchBytes_ = 0, resultBytes_ = 0;
  /// Messages in pieces, by worker: as long as a worker may be silent between pieces.
  MessagePieces pieces_{
      std::chrono::milliseconds(uint64_t(options_.heartbeatMs) * options_.liveness)};
  std::vector<ExecutorEvent> pending_;
  /// Finished and lost events waiting in pending_.
  size_t pendingEnds_ = 0;
  std::filesystem::path socketDirectory_;
  std::unique_ptr<LocalWorkerProcesses> processes_;
  std::unique_ptr<ConnectionGuard> guard_;
  /// The guard's counts when it stopped.
  ConnectionGuardCounts guardCounts_;
  uint64_t joined_ = 0, lost_ = 0, malformed_ = 0, strangers_ = 0;
  bool stopped_ = false;
  bool warnedGpu_ = false;
  Clock::time_point keptAliveAt_;
  /// Calls of declared operators with a replica that started, and the first start failure
  /// before the run began.
  std::set<uint32_t> startedCalls_;
  /// When each replica's INIT went out, and per Call the longest a replica took to say it
  /// started (a declared operator's process and model): automatic replicas' hysteresis.
  std::unordered_map<uint32_t, Clock::time_point> initSentAt_;
  std::map<uint32_t, double> startupSeconds_;
  /// Replicas moved to their inputs or handed to a newcomer that load a model first: the
  /// replica each replaces, which drains once it started.
  std::unordered_map<uint32_t, uint32_t> drainOnceStarted_;
  /// Calls a replica of which could not start during the run: they get no new replicas.
  std::set<uint32_t> startFailedCalls_;
  Clock::time_point startedAt_ = Clock::now();
  /// When idle workers were last offered a share of the Calls with work (tick).
  Clock::time_point idleWorkersOfferedAt_ = Clock::now();
  /// When replicas began to be placed (the far future until then, with local workers).
  Clock::time_point placingFrom_ = Clock::time_point::max();
  static constexpr std::chrono::seconds kLocalWorkersGrace{3};
  std::optional<std::string> startFailure_;
  bool warmedUp_ = false;
};

} // namespace

std::optional<std::string> keylessEndpointProblem(const std::string &endpoint) {
  if (endpoint.empty() || isFileSocket(endpoint))
    return std::nullopt;
  zmq::context_t context(1);
  zmq::socket_t probe(context, zmq::socket_type::router);
  probe.set(zmq::sockopt::linger, 0);
  allowIpv6For(probe, endpoint);
  try {
    probe.bind(endpoint);
  } catch (const zmq::error_t &) {
    return std::nullopt; // the coordinator's own bind reports why it cannot
  }
  const std::string bound = probe.get(zmq::sockopt::last_endpoint);
  probe.close();
  return keylessRefusal(endpoint, bound);
}

std::unique_ptr<BatchExecutor> makeCoordinator(CoordinatorOptions options) {
  return std::make_unique<Coordinator>(std::move(options));
}

} // namespace orch::runtime
