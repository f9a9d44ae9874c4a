// Requests to a model server (an OpenAI-compatible HTTP API) with many open at once: one thread
// drives libcurl's multi interface, starting queued requests as earlier ones complete, so that
// throughput is bounded by the server rather than by batches. Each request is retried on its own
// (429 and 503 after Retry-After, timeouts, dropped connections and other 5xx after an
// exponential backoff with jitter) and answered once: a parsed JSON body, or why not.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace orch::stdlib {

using ServiceClock = std::chrono::steady_clock;

struct ServiceSettings {
  /// Base URLs ("http://127.0.0.1:8000/v1"); requests go to the one with the fewest open.
  std::vector<std::string> endpoints;
  /// Sent as "Authorization: Bearer KEY" when not empty; never in a message.
  std::string apiKey;
  /// Requests open at once.
  int64_t inFlight = 16;
  /// Attempts after the first of a request that failed in a way that may pass.
  int64_t maxRetries = 5;
  /// How long one attempt may take.
  std::chrono::milliseconds requestTimeout{std::chrono::minutes(5)};
  /// Limits on what this client sends (0: none): requests started per second, and tokens (the
  /// request's estimate until the server's count is known) per minute.
  double requestsPerSecond = 0;
  double tokensPerMinute = 0;
  /// The first backoff; each retry doubles it (with ±25 % jitter), up to 30 s.
  std::chrono::milliseconds backoff{500};
};

struct ServiceRequest {
  /// Appended to the endpoint: "/chat/completions".
  std::string path;
  std::string body;
  /// Tokens it will cost, for tokensPerMinute, until the reply says.
  uint64_t estimatedTokens = 0;
  /// Not started, nor retried, after this.
  ServiceClock::time_point deadline = ServiceClock::time_point::max();
};

struct ServiceReply {
  /// A 2xx status with a JSON body (in `body`).
  bool ok = false;
  nlohmann::json body;
  /// Why not ok: the server's message with its status, or the transport's error.
  std::string error;
  long status = 0;
  /// A 4xx other than 408 and 429: the request itself was refused (retrying cannot help).
  bool refused = false;
  /// Attempts made (1 without retries).
  uint32_t attempts = 0;
  /// From the body's `usage`, when there.
  uint64_t promptTokens = 0;
  uint64_t completionTokens = 0;
  /// Seconds the last attempt took.
  double latency = 0;
};

class ServiceClient {
public:
  explicit ServiceClient(ServiceSettings settings);
  /// Stops the thread: what is still open or queued is dropped without an answer.
  ~ServiceClient();
  ServiceClient(const ServiceClient &) = delete;
  ServiceClient &operator=(const ServiceClient &) = delete;

  /// Queues a request; `done` is called once, on the client's thread.
  void send(ServiceRequest request, std::function<void(ServiceReply)> done);

private:
  struct Loop;
  std::unique_ptr<Loop> loop_;
};

} // namespace orch::stdlib
