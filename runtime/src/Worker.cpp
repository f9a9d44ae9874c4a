// `orch worker`: the DEALER side. The main thread owns the coordinator socket (messages,
// heartbeats); each hosted replica is a thread with its operator instance and a queue of
// batches, and hands results back over an inproc socket.
#include "orch/runtime/Worker.h"

#include "JobQueue.h"
#include "MessageSocket.h"

#include "orch/plan/PlanCodec.h"
#include "orch/runtime/ExternalOperator.h"
#include "orch/runtime/GpuPlacement.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
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

/// One Call replica: an operator instance kept for every batch, run on its own thread.
class HostedReplica {
public:
  /// `eager`: the instance (a declared operator's process) starts at once, and the coordinator
  /// hears when it is ready (StartedMessage).
  HostedReplica(zmq::context_t &context, uint32_t id, const OperatorFactory &factory,
                OperatorConfig config, bool eager)
      : id_(id), factory_(factory), config_(std::move(config)), eager_(eager),
        thread_([this, &context] { run(context); }) {}

  ~HostedReplica() {
    queue_.close();
    thread_.join();
  }

  void enqueue(Batch batch) { queue_.push(std::move(batch)); }
  /// Stops taking batches; the thread ends after what it is doing (a start, a batch).
  void close() { queue_.close(); }
  /// The thread has ended: destroying the replica will not wait.
  bool finished() const { return finished_.load(); }

private:
  void run(zmq::context_t &context) {
    ::pthread_setname_np(::pthread_self(),
                         ("orch-replica-" + std::to_string(id_)).substr(0, 15).c_str());
    zmq::socket_t results(context, zmq::socket_type::push);
    results.set(zmq::sockopt::linger, 0);
    results.connect(kResultsEndpoint);
    if (eager_)
      start(results);
    while (std::optional<Batch> batch = queue_.pop()) {
      const Clock::time_point start = Clock::now();
      ResultMessage result;
      result.replica = id_;
      result.report = runOperatorBatch(instance_, factory_, config_, *batch);
      result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string body = encodeMessage(result);
      sendBody(results, body);
    }
    finished_.store(true);
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
    sendBody(results, encodeMessage(started));
  }

  uint32_t id_;
  const OperatorFactory &factory_;
  OperatorConfig config_;
  bool eager_;
  std::atomic<bool> finished_{false};
  std::unique_ptr<Operator> instance_;
  JobQueue<Batch> queue_;
  std::thread thread_;
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
  }

  ~WorkerSession() {
    // Replica threads hold sockets of this context: stop them before the context goes.
    replicas_.clear();
    released_.clear();
  }

  int run() {
    ::pthread_setname_np(::pthread_self(), "orch-worker");
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
    hello.operators = registry_.transformNames();
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
          forward(frame.to_string());
      while (auto frames = receiveFrames(coordinator_)) {
        lastHeard_ = Clock::now();
        if (std::optional<int> exit = handle(frames->back().to_string()))
          return *exit;
      }
      std::erase_if(released_, [](const std::unique_ptr<HostedReplica> &replica) {
        return replica->finished();
      });
      const Clock::time_point now = Clock::now();
      if (now - lastSent_ >= interval)
        send(HeartbeatMessage{});
      if (now - lastHeard_ > interval * liveness_) {
        log("lost the coordinator at " + options_.endpoint + " (silent for " +
            std::to_string(heartbeatMs_ * liveness_) + " ms)");
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
      zmq::pollitem_t items[] = {{coordinator_.handle(), 0, ZMQ_POLLIN, 0},
                                 {handshakes_.handle(), 0, ZMQ_POLLIN, 0}};
      pollForInput(items, 2, std::chrono::milliseconds(100));
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
        factories_.emplace(plan_, registry_);
        heartbeatMs_ = std::max<uint32_t>(1, welcome->heartbeatMs);
        liveness_ = std::max<uint32_t>(1, welcome->liveness);
        lastHeard_ = Clock::now();
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
        replica->second->enqueue(std::move(batch->batch));
      }
    } else if (auto *release = std::get_if<ReleaseMessage>(&message)) {
      // Released replicas end in the background: one may still be starting its process.
      if (auto found = replicas_.find(release->replica); found != replicas_.end()) {
        found->second->close();
        released_.push_back(std::move(found->second));
        replicas_.erase(found);
      }
    } else if (auto *bye = std::get_if<ByeMessage>(&message)) {
      if (options_.verbose)
        log("the coordinator said goodbye: " + bye->reason);
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
    if (!factory) {
      // Batches for it come back as batch errors naming the missing operator.
      send(ErrorMessage{"this worker has no operator " + call.op});
      return;
    }
    OperatorConfig config(call.name, call.op, call.constants, init.inputs);
    config.withOptions(call.options)
        .withReplica(init.replica)
        .withLog([this](const std::string &line) { log(line); });
    if (call.gpu && call.options.gpus > 0 && !options_.gpus.empty()) {
      config.withGpuDevice(gpuPlacer_.place(call.options.gpus));
      if (options_.verbose)
        log("replica " + std::to_string(init.replica) + " of '" + call.name + "' on GPU " +
            std::to_string(config.gpuDevice()));
    }
    replicas_[init.replica] = std::make_unique<HostedReplica>(
        context_, init.replica, *factory, std::move(config), factories_->startsEagerly(init.call));
  }

  void send(const Message &message) { forward(encodeMessage(message)); }

  /// Sends an encoded message (a replica's result is forwarded as it is) to the coordinator.
  void forward(const std::string &body) {
    sendBody(coordinator_, body);
    lastSent_ = Clock::now();
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
  plan::Plan plan_;
  std::optional<CallFactories> factories_;
  uint32_t heartbeatMs_ = kDefaultHeartbeatMs;
  uint32_t liveness_ = kDefaultLiveness;
  Clock::time_point lastSent_ = Clock::now();
  Clock::time_point lastHeard_ = Clock::now();
  std::map<uint32_t, std::unique_ptr<HostedReplica>> replicas_;
  std::vector<std::unique_ptr<HostedReplica>> released_;
  GpuPlacer gpuPlacer_{options_.gpus};
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
