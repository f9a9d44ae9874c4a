// `orch worker`: the DEALER side. The main thread owns the coordinator socket (messages,
// heartbeats); each hosted replica is a thread with its operator instance and a queue of
// batches, and hands results back over an inproc socket.
#include "orch/runtime/cluster/Worker.h"

#include "KeptValues.h"
#include "MessageSocket.h"
#include "PeerEndpoint.h"
#include "PeerFetcher.h"
#include "PeerServer.h"
#include "orch/runtime/execution/JobQueue.h"
#include "orch/runtime/operators/ChildProcess.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"
#include "orch/runtime/execution/GpuPlacement.h"
#include "orch/runtime/operators/ExternalOperator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <malloc.h>
#include <map>
#include <memory>
#include <pthread.h>
#include <thread>
#include <unistd.h>

namespace orch::runtime {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kResultsEndpoint = "inproc://orch-worker-results";

/// Unwinds a session whose coordinator asked for a restart.
struct RestartRequested {};

/// What replicas need to keep their results and fetch their inputs (docs/runtime.md, "Value
/// locality"): this worker's name and store, its CURVE pair for peers, how long a peer may
/// take, and the plan (a kept value is type-checked here, not by the coordinator).
struct Locality {
  std::string self;
  KeptValues &kept;
  std::optional<CurveKeyPair> key;
  std::chrono::milliseconds fetchTimeout{2500};
  const plan::Plan &plan;
  /// Workers the coordinator lost: fetches from them end at once.
  const LostPeers &lost;
};

struct QueuedBatch {
  Batch batch;
  std::vector<PeerAddress> peers;
  /// Its number among the batches this worker received (LostPeers).
  uint64_t arrival = 0;
};

/// A batch whose references are resolved, or why they could not be.
struct ResolvedBatch {
  Batch batch;
  std::optional<PeerFetcher::Missing> missing;
};

/// One Call replica: an operator instance kept for every batch, run on its own thread. A
/// second thread brings the queued batches' referenced inputs here ahead of their turn, so
/// that a fetch from another worker overlaps the batch running before it.
class HostedReplica {
public:
  /// `eager`: the instance (a declared operator's process) starts at once, and the coordinator
  /// hears when it is ready (StartedMessage). Results of at least `keepOver` bytes (0: none)
  /// stay in `locality.kept`.
  HostedReplica(zmq::context_t &context, uint32_t id, const OperatorFactory &factory,
                OperatorConfig config, bool eager, const Locality &locality, uint64_t keepOver)
      : id_(id), factory_(factory), config_(std::move(config)), eager_(eager), locality_(locality),
        keepOver_(keepOver), resolver_([this, &context] { resolveAhead(context); }),
        thread_([this, &context] { run(context); }) {
    if (config_.inFlight() > 1)
      answerer_ = std::thread([this, &context] { sendAnswers(context); });
  }

  ~HostedReplica() {
    queue_.close();
    resolver_.join();
    thread_.join();
    // A concurrent operator drops what it still waits for; then its answers are all sent.
    instance_.reset();
    answers_.close();
    if (answerer_.joinable())
      answerer_.join();
  }

  const OperatorConfig &config() const { return config_; }

  void enqueue(QueuedBatch batch) {
    // A batch with nothing to fetch goes straight to the replica when no batch is ahead of it
    // with the resolver: a hop between threads costs more than a batch of cheap grains.
    const bool fetches =
        std::any_of(batch.batch.inputs.begin(), batch.batch.inputs.end(),
                    [](const Value &input) { return input.kind() == Value::Kind::Ref; });
    if (!fetches && resolving_.load() == 0) {
      resolved_.push(ResolvedBatch{std::move(batch.batch), std::nullopt});
      return;
    }
    ++resolving_;
    queue_.push(std::move(batch));
  }
  /// Stops taking batches; the thread ends after what it is doing (a start, a batch).
  void close() { queue_.close(); }
  /// The thread has ended: destroying the replica will not wait.
  bool finished() const { return finished_.load(); }

private:
  /// Resolves the queued batches' references in order and hands them to run(); ends (and
  /// ends run()) when the queue is closed.
  void resolveAhead(zmq::context_t &context) {
    ::pthread_setname_np(::pthread_self(),
                         ("orch-fetch-" + std::to_string(id_)).substr(0, 15).c_str());
    PeerFetcher fetcher(context, locality_.self, locality_.kept, locality_.key,
                        locality_.fetchTimeout, &locality_.lost);
    while (std::optional<QueuedBatch> queued = queue_.pop()) {
      std::optional<PeerFetcher::Missing> missing =
          fetcher.resolve(queued->batch, queued->peers, queued->arrival);
      resolved_.push(ResolvedBatch{std::move(queued->batch), std::move(missing)});
      --resolving_; // after the push: a batch enqueued now cannot overtake this one
    }
    resolved_.close();
  }

  void run(zmq::context_t &context) {
    ::pthread_setname_np(::pthread_self(),
                         ("orch-replica-" + std::to_string(id_)).substr(0, 15).c_str());
    zmq::socket_t results(context, zmq::socket_type::push);
    results.set(zmq::sockopt::linger, 0);
    results.connect(kResultsEndpoint);
    if (eager_)
      start(results);
    while (std::optional<ResolvedBatch> resolved = resolved_.pop()) {
      Batch &batch = resolved->batch;
      const Clock::time_point start = Clock::now();
      ResultMessage result;
      result.replica = id_;
      if (resolved->missing) {
        // Not the rows' fault: the batch runs again once its inputs are there again.
        result.report.batchId = batch.id;
        result.report.batchError =
            "an input could not be brought here: " + resolved->missing->message;
        result.report.loss = BatchLoss::Infrastructure;
        result.unreachable = resolved->missing->unreachable;
      } else if (config_.inFlight() > 1) {
        // A concurrent operator takes the next batch at once; sendAnswers() reports this one.
        startOperatorBatch(
            instance_, factory_, config_, std::move(batch), [this, start](BatchReport report) {
              ResultMessage answer;
              answer.replica = id_;
              answer.report = std::move(report);
              answer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
              answers_.push(std::move(answer));
            });
        continue;
      } else {
        result.report = runOperatorBatch(instance_, factory_, config_, batch);
        keepLargeResults(result.report);
      }
      result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      sendMessage(results, result);
    }
    finished_.store(true);
  }

  /// A concurrent Call's replica: sends each batch's result as its operator answers.
  void sendAnswers(zmq::context_t &context) {
    ::pthread_setname_np(::pthread_self(),
                         ("orch-answer-" + std::to_string(id_)).substr(0, 15).c_str());
    zmq::socket_t results(context, zmq::socket_type::push);
    results.set(zmq::sockopt::linger, 0);
    results.connect(kResultsEndpoint);
    while (std::optional<ResultMessage> answer = answers_.pop()) {
      keepLargeResults(answer->report);
      sendMessage(results, *answer);
    }
  }

  /// Results of at least keepOver_ bytes stay here; the coordinator gets references. A value
  /// of the wrong type travels as it is, for the coordinator to report.
  void keepLargeResults(BatchReport &report) {
    if (keepOver_ == 0 || report.batchError)
      return;
    for (GrainReport &row : report.grains) {
      if (row.kind != RowResultKind::Value || row.value.kind() == Value::Kind::Ref)
        continue;
      const uint64_t bytes = approximateBytes(row.value);
      if (bytes < keepOver_ || row.grain.node.index >= locality_.plan.nodes.size() ||
          checkValueType(row.value, locality_.plan.nodes[row.grain.node.index].type))
        continue;
      const uint64_t id = locality_.kept.keep(std::move(row.value));
      row.value = Value::ref(std::make_shared<const ValueRef>(ValueRef{locality_.self, id, bytes}));
    }
  }

  /// Starts the instance and says how that went; a failure leaves it to the first batch to
  /// try again (and fail as a batch error).
  void start(zmq::socket_t &results) {
    const Clock::time_point begin = Clock::now();
    StartedMessage started;
    started.replica = id_;
    try {
      instance_ = factory_(config_);
      instance_->awaitStarted(nullptr);
    } catch (const std::exception &error) {
      instance_.reset();
      started.error = error.what();
    }
    started.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    sendMessage(results, started);
  }

  uint32_t id_;
  const OperatorFactory &factory_;
  OperatorConfig config_;
  bool eager_;
  const Locality &locality_;
  uint64_t keepOver_;
  std::atomic<bool> finished_{false};
  std::unique_ptr<Operator> instance_;
  JobQueue<QueuedBatch> queue_;
  /// Batches enqueued to the resolver and not yet handed to run() (only enqueue() adds).
  std::atomic<uint64_t> resolving_{0};
  JobQueue<ResolvedBatch> resolved_;
  JobQueue<ResultMessage> answers_;
  std::thread resolver_;
  std::thread thread_;
  std::thread answerer_;
};

std::string defaultName() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(::getpid());
}

class WorkerSession {
public:
  WorkerSession(const WorkerOptions &options, const OperatorRegistry &registry)
      : options_(options), registry_(registry),
        name_(options.name.empty() ? defaultName() : options.name), context_(1),
        coordinator_(context_, zmq::socket_type::dealer),
        results_(context_, zmq::socket_type::pull), handshakes_(context_, zmq::socket_type::pair) {
    coordinator_.set(zmq::sockopt::routing_id, name_);
    coordinator_.set(zmq::sockopt::linger, 0);
    coordinator_.set(zmq::sockopt::maxmsgsize, int64_t(ProtocolLimits::kMessageBytes));
    // Without keys, an ipc:// socket is trusted for the directory it was checked in just now
    // (WorkerOptions): ZeroMQ must not connect again on its own to whatever is there later.
    if (connectsOnce())
      coordinator_.set(zmq::sockopt::reconnect_ivl, -1);
    if (options_.curveKey) {
      coordinator_.set(zmq::sockopt::curve_serverkey, options_.coordinatorKey);
      coordinator_.set(zmq::sockopt::curve_publickey, options_.curveKey->publicKey);
      coordinator_.set(zmq::sockopt::curve_secretkey, options_.curveKey->secretKey);
    }
    // Handshake failures (a refused key, a wrong coordinator key) are otherwise silent.
    const std::string monitor = "inproc://orch-worker-handshakes";
    if (::zmq_socket_monitor(coordinator_.handle(), monitor.c_str(),
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0) {
      handshakes_.set(zmq::sockopt::linger, 0);
      handshakes_.connect(monitor);
    }
    results_.set(zmq::sockopt::linger, 0);
    results_.bind(kResultsEndpoint);
    openPeerSocket();
  }

  ~WorkerSession() {
    // Replica threads hold sockets of this context: stop them before the context goes.
    replicas_.clear();
    released_.clear();
    peers_.reset();
  }

  int run() {
    ::pthread_setname_np(::pthread_self(), "orch-worker");
    if (connectsOnce() && !awaitSocketFile()) {
      if (!options_.stopRequested || !options_.stopRequested->load())
        log("no answer from a coordinator at " + options_.endpoint);
      return kWorkerLost;
    }
    coordinator_.connect(options_.endpoint);
    HelloMessage hello;
    hello.worker = name_;
    hello.pid = ::getpid();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    hello.host = host;
    hello.cpus = options_.cpus;
    hello.memoryBytes = options_.memoryBytes;
    hello.gpus = options_.gpus;
    hello.gpuMemory = options_.gpuMemory;
    hello.operators = registry_.transformNames();
    if (peers_) {
      hello.peerEndpoint = peerEndpoint_;
      if (options_.curveKey)
        hello.peerKey = options_.curveKey->publicKey;
    }
    send(hello);
    if (!awaitWelcome())
      return 1;
    if (options_.verbose)
      log("connected to " + options_.endpoint + " as " + name_);
    const auto interval = std::chrono::milliseconds(heartbeatMs_);
    for (;;) {
      if (options_.stopRequested && options_.stopRequested->load()) {
        send(ByeMessage{"worker stopped"});
        return 0;
      }
      zmq::pollitem_t items[] = {{coordinator_.handle(), 0, ZMQ_POLLIN, 0},
                                 {results_.handle(), 0, ZMQ_POLLIN, 0}};
      pollForInput(items, 2, interval);
      while (auto frames = receiveFrames(results_))
        for (zmq::message_t &frame : *frames)
          forward(frame);
      while (auto frames = receiveFrames(coordinator_)) {
        lastHeard_ = Clock::now();
        if (std::optional<int> exit = handle(frames->back().to_string()))
          return *exit;
      }
      std::erase_if(released_, [](const std::unique_ptr<HostedReplica> &replica) {
        return replica->finished();
      });
      giveBackFreedMemory();
      const Clock::time_point now = Clock::now();
      if (now - lastSent_ >= interval) {
        // Not behind a message in pieces that waits for the coordinator's MORE.
        zmq::message_t heartbeat = messageFrame(HeartbeatMessage{});
        sendNow(heartbeat);
      }
      if (now - lastHeard_ > interval * liveness_) {
        log("lost the coordinator at " + options_.endpoint + " (silent for " +
            std::to_string(heartbeatMs_ * liveness_) + " ms)");
        return 1;
      }
      if (sendTimedOut_) {
        log("lost the coordinator at " + options_.endpoint + " (a message could not be sent " +
            "within " + std::to_string(heartbeatMs_ * liveness_) + " ms)");
        return 1;
      }
    }
  }

private:
  bool awaitWelcome() {
    const Clock::time_point giveUp =
        Clock::now() + std::chrono::milliseconds(options_.connectTimeoutMs);
    while (Clock::now() < giveUp) {
      if (options_.stopRequested && options_.stopRequested->load())
        return false;
      sendWhatWaitedForAConnection();
      zmq::pollitem_t items[] = {{coordinator_.handle(), 0, ZMQ_POLLIN, 0},
                                 {handshakes_.handle(), 0, ZMQ_POLLIN, 0}};
      pollForInput(items, 2, std::chrono::milliseconds(unsentBeforeWelcome_.empty() ? 100 : 10));
      if (std::optional<std::string> failure = handshakeFailure()) {
        log(*failure);
        return false;
      }
      while (auto frames = receiveFrames(coordinator_)) {
        auto decoded = decodeMessage(frames->back().to_string());
        if (auto *problem = std::get_if<std::string>(&decoded)) {
          log("ignoring a malformed message from the coordinator: " + *problem);
          continue;
        }
        Message &message = std::get<Message>(decoded);
        if (auto *error = std::get_if<ErrorMessage>(&message)) {
          log("the coordinator refused this worker: " + error->message);
          return false;
        }
        auto *welcome = std::get_if<WelcomeMessage>(&message);
        if (!welcome)
          continue;
        if (welcome->version != kProtocolVersion) {
          log("the coordinator speaks protocol " + std::to_string(welcome->version) +
              ", this worker " + std::to_string(kProtocolVersion));
          return false;
        }
        auto plan = plan::decodePlan(welcome->plan);
        if (auto *error = std::get_if<plan::PlanDecodeError>(&plan)) {
          log("the coordinator sent an unusable plan: " + error->message);
          return false;
        }
        plan_ = std::get<plan::Plan>(std::move(plan));
        plan::applyPlanPositions(plan_, welcome->plan, welcome->planPositions);
        factories_.emplace(plan_, registry_, &options_.programs);
        heartbeatMs_ = std::max<uint32_t>(1, welcome->heartbeatMs);
        liveness_ = std::max<uint32_t>(1, welcome->liveness);
        // A send waits at most as long as the coordinator may be silent: one that went away
        // (its socket closed at the end of a run, with no reconnect on ipc://) left a worker
        // blocked in a send for ever (DistributedRuntimeTest's flood, 1 run in 5 under load).
        coordinator_.set(zmq::sockopt::sndtimeo,
                         int(std::min<uint64_t>(INT32_MAX, uint64_t(heartbeatMs_) * liveness_)));
        if (peers_)
          peers_->admit(welcome->peerKeys);
        // A fetch may take a few heartbeats' time (64 MiB over a slow link); a peer that is
        // gone is declared lost by the coordinator meanwhile.
        locality_.emplace(Locality{name_, kept_, options_.curveKey,
                                   std::chrono::milliseconds(4 * heartbeatMs_ * liveness_), plan_,
                                   lostPeers_});
        lastHeard_ = Clock::now();
        // It answered, so the hello went: from now on sends wait for room (results are never
        // dropped).
        unsentBeforeWelcome_.clear();
        welcomed_ = true;
        return true;
      }
    }
    log("no answer from a coordinator at " + options_.endpoint);
    return false;
  }

  /// Why the security handshake with the coordinator failed, if it did.
  std::optional<std::string> handshakeFailure() {
    std::optional<std::string> failure;
    while (auto frames = receiveFrames(handshakes_))
      if (const std::optional<MonitorEvent> parsed = parseMonitorEvent(*frames))
        failure = describeHandshakeFailure(parsed->event, parsed->value);
    return failure;
  }

  std::string describeHandshakeFailure(uint16_t event, uint32_t value) const {
    const std::string prefix = "cannot join the coordinator at " + options_.endpoint + ": ";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
      return prefix + "it refused this worker's key" +
             (options_.curveKey ? " '" + options_.curveKey->name + "'" : std::string()) +
             " (add the worker's .pub file to the coordinator's --authorized-keys)";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
      return prefix +
             (options_.curveKey
                  ? "it does not use CURVE keys, this worker does (--key, --server-key)"
                  : "it requires CURVE keys (give this worker --key WORKER.key and --server-key "
                    "COORDINATOR.pub; see orch keygen)");
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)
      return prefix + "the CURVE handshake failed: the coordinator's key is not the one given "
                      "with --server-key";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
      // The coordinator hung up mid-handshake: what a CURVE server does to a peer without
      // keys, or to one that encrypted for another server key.
      return prefix + "it closed the connection during the security handshake: " +
             (options_.curveKey ? "--server-key is probably not its public key (or it uses no "
                                  "keys and this worker does)"
                                : "it probably requires CURVE keys (give this worker --key "
                                  "WORKER.key and --server-key COORDINATOR.pub; see orch "
                                  "keygen)");
    char code[16];
    std::snprintf(code, sizeof code, "0x%x", value);
    return prefix + "the security handshake failed (ZeroMQ protocol error " + code + ")";
  }

  /// Handles one message from the coordinator; an exit code when the worker should stop.
  std::optional<int> handle(const std::string &body) {
    auto decoded = decodeMessage(body);
    if (auto *problem = std::get_if<std::string>(&decoded)) {
      send(ErrorMessage{"malformed message: " + *problem});
      return std::nullopt;
    }
    Message &message = std::get<Message>(decoded);
    if (auto *init = std::get_if<InitMessage>(&message)) {
      host(*init);
    } else if (auto *batch = std::get_if<BatchMessage>(&message)) {
      auto replica = replicas_.find(batch->replica);
      if (replica == replicas_.end()) {
        ResultMessage result;
        result.replica = batch->replica;
        result.report.batchId = batch->batch.id;
        result.report.batchError = "this worker hosts no replica " + std::to_string(batch->replica);
        send(result);
      } else {
        replica->second->enqueue(
            QueuedBatch{std::move(batch->batch), std::move(batch->peers), batchesReceived_++});
      }
    } else if (auto *fetch = std::get_if<FetchMessage>(&message)) {
      // The coordinator relays kept values to a worker that cannot reach this one's peer
      // socket: they go through it, as values without locality do.
      send(kept_.findAll(fetch->ids));
    } else if (std::holds_alternative<MoreMessage>(message)) {
      moreWanted_ = pieceOffset_ > 0;
      sendFromOutbox();
    } else if (auto *drop = std::get_if<DropMessage>(&message)) {
      largeBytesFreed_ += kept_.drop(drop->ids);
    } else if (auto *lost = std::get_if<LostMessage>(&message)) {
      lostPeers_.add(lost->worker, batchesReceived_);
      if (options_.verbose)
        log("the coordinator lost worker " + lost->worker +
            ": values kept there are no longer waited for");
    } else if (auto *release = std::get_if<ReleaseMessage>(&message)) {
      // Released replicas end in the background: one may still be starting its process.
      if (auto found = replicas_.find(release->replica); found != replicas_.end()) {
        // Its GPU's share and memory go to the next replica placed here.
        const OperatorConfig &config = found->second->config();
        if (config.gpuDevice() >= 0)
          gpuPlacer_.release(config.gpuDevice(), config.gpus(), config.gpuMemoryBytes());
        found->second->close();
        released_.push_back(std::move(found->second));
        replicas_.erase(found);
      }
    } else if (auto *bye = std::get_if<ByeMessage>(&message)) {
      if (options_.verbose)
        log("the coordinator said goodbye: " + bye->reason);
      restartIfReplicasAreStuck();
      return 0;
    } else if (auto *error = std::get_if<ErrorMessage>(&message)) {
      log("the coordinator reported: " + error->message);
      if (error->code == ErrorCode::Restart) {
        if (options_.restart)
          options_.restart(error->message);
        throw RestartRequested{};
      }
      if (error->code == ErrorCode::DeclaredLost)
        return kWorkerLost;
    }
    return std::nullopt;
  }

  void host(const InitMessage &init) {
    if (init.call >= plan_.calls.size()) {
      send(ErrorMessage{"init names call " + std::to_string(init.call) + " of " +
                        std::to_string(plan_.calls.size())});
      return;
    }
    const plan::PlanCall &call = plan_.calls[init.call];
    const OperatorFactory *factory = factories_->forCall(init.call);
    if (const plan::PlanExternalOperator *op = plan_.externalOperator(call.op))
      if (std::optional<std::string> refused = options_.programs.refusal(*op))
        log(*refused);
    if (!factory) {
      // Batches for it come back as batch errors naming the missing operator.
      send(ErrorMessage{"this worker has no operator " + call.op});
      return;
    }
    OperatorConfig config(call.name, call.op, call.constants, init.inputs);
    config.withOptions(call.options)
        .withReplica(init.callReplica)
        .withLog([this](const std::string &line) { log(line); });
    if (call.gpu && call.options.gpus > 0 && !options_.gpus.empty()) {
      config.withGpuDevice(gpuPlacer_.place(call.options.gpus, config.gpuMemoryBytes()));
      if (options_.verbose)
        log("replica " + std::to_string(init.callReplica) + " of '" + call.name + "' on GPU " +
            std::to_string(config.gpuDevice()));
    }
    replicas_[init.replica] = std::make_unique<HostedReplica>(
        context_, init.replica, *factory, std::move(config), factories_->startsEagerly(init.call),
        *locality_, peers_ ? init.keepOver : 0);
  }

  /// Whether the session connects once, not again on its own: to an ipc:// socket in the file
  /// system without keys, trusted for its directory when it was checked.
  bool connectsOnce() const {
    return !options_.curveKey && options_.endpoint.rfind("ipc://", 0) == 0 &&
           options_.endpoint.rfind("ipc://@", 0) != 0;
  }

  /// Waits (within the connect timeout, or until stopped) until the coordinator's socket file
  /// is there, so that the one connection is not tried before it binds.
  bool awaitSocketFile() const {
    const std::string path = options_.endpoint.substr(6);
    const Clock::time_point giveUp =
        Clock::now() + std::chrono::milliseconds(options_.connectTimeoutMs);
    while (::access(path.c_str(), F_OK) != 0) {
      if ((options_.stopRequested && options_.stopRequested->load()) || Clock::now() >= giveUp)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  /// Binds the socket other workers fetch kept values from (WorkerOptions::peerEndpoint, else
  /// PeerEndpoint.h's choice). Without one the worker keeps no values.
  void openPeerSocket() {
    const std::string bind =
        options_.peerEndpoint.empty() ? peerBindEndpoint(options_.endpoint) : options_.peerEndpoint;
    try {
      peers_ = std::make_unique<PeerServer>(kept_, bind, options_.curveKey,
                                            [this](const std::string &line) { log(line); });
    } catch (const zmq::error_t &error) {
      log("cannot open a socket for other workers at " + bind + " (" + error.what() +
          "); values this worker makes go through the coordinator");
      return;
    }
    peerEndpoint_ = options_.peerAnnounce.empty()
                        ? announcedPeerEndpoint(peers_->boundEndpoint(), options_.endpoint)
                        : options_.peerAnnounce;
  }

  void send(const Message &message) {
    zmq::message_t frame = messageFrame(message);
    forward(frame);
  }

  /// Sends an encoded message (a replica's result is forwarded as it is, frame and all) to
  /// the coordinator. A coordinator without keys on tcp:// takes large messages in pieces, one
  /// message at a time: the messages after one being pieced wait their turn in the outbox.
  void forward(zmq::message_t &frame) {
    largeBytesFreed_ += frame.size();
    if (!pieced_) {
      sendNow(frame);
      return;
    }
    if (frame.size() > ProtocolLimits::kUnauthenticatedPiecesBytes)
      frame = refusedAsTooLarge(frame);
    outbox_.push_back(std::move(frame));
    sendFromOutbox();
  }

  void sendNow(zmq::message_t &frame) {
    if (!welcomed_) {
      // Until the coordinator answered there may be no connection to send on (a refused
      // handshake takes it away): the hello waits here, and awaitWelcome() tries again while
      // it watches for refusals and its deadline, rather than block for ever.
      if (!unsentBeforeWelcome_.empty() || !coordinator_.send(frame, zmq::send_flags::dontwait))
        unsentBeforeWelcome_.push_back(std::move(frame));
      lastSent_ = Clock::now();
      return;
    }
    // Not sent within the coordinator's silence limit (sndtimeo): it is gone, or declares this
    // worker lost meanwhile. The session ends (nothing is dropped silently: the coordinator
    // runs this worker's batches again).
    if (!coordinator_.send(frame, zmq::send_flags::none))
      sendTimedOut_ = true;
    lastSent_ = Clock::now();
  }

  void sendWhatWaitedForAConnection() {
    while (!unsentBeforeWelcome_.empty() &&
           coordinator_.send(unsentBeforeWelcome_.front(), zmq::send_flags::dontwait))
      unsentBeforeWelcome_.pop_front();
  }

  /// Sends what the outbox holds, up to a message in pieces that waits for MORE.
  void sendFromOutbox() {
    while (!outbox_.empty()) {
      zmq::message_t &front = outbox_.front();
      if (front.size() <= ProtocolLimits::kUnauthenticatedMessageBytes) {
        sendNow(front);
        outbox_.pop_front();
        continue;
      }
      const uint64_t total = front.size();
      if (pieceOffset_ > 0 && !moreWanted_)
        return;
      // The first piece goes unasked; the rest once the coordinator wants them.
      do {
        const uint64_t size = std::min<uint64_t>(ProtocolLimits::kPieceBytes, total - pieceOffset_);
        zmq::message_t piece = messageFrame(PieceMessage{
            total, pieceOffset_, std::string(front.data<char>() + pieceOffset_, size)});
        sendNow(piece);
        pieceOffset_ += size;
      } while (moreWanted_ && pieceOffset_ < total);
      if (pieceOffset_ < total)
        return;
      outbox_.pop_front();
      pieceOffset_ = 0;
      moreWanted_ = false;
    }
  }

  /// A message too large for a coordinator without keys: a result becomes its batch's error
  /// (its rows fail, saying why); anything else is replaced by an error for the coordinator.
  zmq::message_t refusedAsTooLarge(const zmq::message_t &frame) {
    const std::string why = "a message of " + std::to_string(frame.size()) +
                            " bytes, more than a coordinator " +
                            "without keys takes from a worker (" +
                            std::to_string(ProtocolLimits::kUnauthenticatedPiecesBytes >> 20) +
                            " MiB): run it with keys (orch keygen; docs/cluster.md)";
    auto decoded = decodeMessage(frame.to_string_view());
    if (auto *message = std::get_if<Message>(&decoded))
      if (auto *result = std::get_if<ResultMessage>(message)) {
        result->report.batchError = "the result of this batch is " + why;
        result->report.grains.clear();
        return messageFrame(*result);
      }
    log("cannot send " + why);
    return messageFrame(ErrorMessage{"this worker could not send " + why});
  }

  /// Once large values worth kTrimEvery went (kept values dropped, results sent, values served
  /// to other workers), hands the free memory inside malloc's heaps back to the system: blocks
  /// of a page image's size that are freed between others that live on (kept values) stay in
  /// the heap otherwise, and a worker that passed 2 GiB of 26 MB pages through held hundreds
  /// of MiB more than its values (docs/benchmarks.md, "Memory bounded by bytes").
  void giveBackFreedMemory() {
    const uint64_t served = peers_ ? peers_->bytesServed() : 0;
    largeBytesFreed_ += served - bytesServedBefore_;
    bytesServedBefore_ = served;
    if (largeBytesFreed_ < kTrimEvery)
      return;
    largeBytesFreed_ = 0;
    ::malloc_trim(0);
  }

  void log(const std::string &line) {
    if (options_.log)
      options_.log(name_ + ": " + line);
  }

  const WorkerOptions &options_;
  const OperatorRegistry &registry_;
  std::string name_;
  zmq::context_t context_;
  zmq::socket_t coordinator_;
  zmq::socket_t results_;
  /// Handshake failures of `coordinator_`, from its socket monitor.
  zmq::socket_t handshakes_;
  /// The coordinator welcomed this worker; before that, sends do not block (sendNow).
  bool welcomed_ = false;
  std::deque<zmq::message_t> unsentBeforeWelcome_;
  plan::Plan plan_;
  std::optional<CallFactories> factories_;
  /// A send to the coordinator did not go within its silence limit: the session ends.
  bool sendTimedOut_ = false;
  uint32_t heartbeatMs_ = kDefaultHeartbeatMs;
  uint32_t liveness_ = kDefaultLiveness;
  Clock::time_point lastSent_ = Clock::now();
  Clock::time_point lastHeard_ = Clock::now();
  KeptValues kept_;
  LostPeers lostPeers_;
  uint64_t batchesReceived_ = 0;
  std::unique_ptr<PeerServer> peers_;
  static constexpr uint64_t kTrimEvery = 64 << 20;
  uint64_t largeBytesFreed_ = 0, bytesServedBefore_ = 0;
  std::string peerEndpoint_;
  std::optional<Locality> locality_;
  /// Whether the coordinator takes large messages in pieces (no keys, tcp://), what waits to
  /// be sent to it, how much of the front message went, and whether it asked for the rest.
  const bool pieced_ = !options_.curveKey && (options_.endpoint.rfind("ipc://", 0) != 0 ||
                                              options_.endpoint.rfind("ipc://@", 0) == 0);
  std::deque<zmq::message_t> outbox_;
  uint64_t pieceOffset_ = 0;
  bool moreWanted_ = false;
  /// The run is over, and a replica may still be inside a batch nobody needs any more (a hang
  /// the run did not wait for): after a moment this process starts afresh (or exits, with
  /// --once), so that neither the batch nor the operator processes it started outlive the run.
  void restartIfReplicasAreStuck() {
    for (auto &[id, replica] : replicas_)
      replica->close();
    auto stuck = [this] {
      return std::any_of(replicas_.begin(), replicas_.end(),
                         [](const auto &entry) { return !entry.second->finished(); });
    };
    const Clock::time_point giveUp = Clock::now() + std::chrono::milliseconds(250);
    while (stuck() && Clock::now() < giveUp)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (stuck()) {
      killLeftoversOfChildProcesses();
      if (options_.restart)
        options_.restart("a replica is still running a batch the run no longer needs");
    }
  }

  std::map<uint32_t, std::unique_ptr<HostedReplica>> replicas_;
  std::vector<std::unique_ptr<HostedReplica>> released_;
  GpuPlacer gpuPlacer_{options_.gpus, options_.gpuMemory};
};

} // namespace

int runWorker(const WorkerOptions &options, const OperatorRegistry &registry) {
  try {
    auto session = std::make_unique<WorkerSession>(options, registry);
    try {
      return session->run();
    } catch (const RestartRequested &) {
      // A replica may never return from its operator: the session, which would wait for it,
      // is left behind on purpose; the caller restarts the process.
      (void)session.release();
      return kWorkerMustRestart;
    }
  } catch (const std::exception &error) {
    if (options.log)
      options.log(std::string("worker error: ") + error.what());
    return 1;
  }
}

} // namespace orch::runtime
