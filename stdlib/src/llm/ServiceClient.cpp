// The client's thread: a queue of requests ready to go, retries waiting for their time, and up to
// `inFlight` transfers open in one libcurl multi handle (see ServiceClient.h).
#include "llm/ServiceClient.h"

#include "orch/runtime/values/Utf8.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>

#include <pthread.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace orch::stdlib {
namespace {

using Clock = ServiceClock;

/// The most of a reply that is read: a bigger one fails its request.
constexpr size_t kMaxReplyBytes = size_t(64) << 20;
constexpr std::chrono::seconds kMaxBackoff{30};

/// libcurl is initialised once per process, before any thread uses it.
void initialiseCurlOnce() {
  static const bool initialised = [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return true;
  }();
  (void)initialised;
}

/// The server's own words from an error body: OpenAI's {"error": {"message"}}, FastAPI's
/// {"detail"}, or the start of the text.
std::string serverMessage(const std::string &body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object()) {
    if (auto error = parsed.find("error"); error != parsed.end()) {
      if (error->is_object() && error->contains("message") && (*error)["message"].is_string())
        return (*error)["message"].get<std::string>();
      if (error->is_string())
        return error->get<std::string>();
    }
    if (auto detail = parsed.find("detail"); detail != parsed.end() && detail->is_string())
      return detail->get<std::string>();
    if (auto message = parsed.find("message"); message != parsed.end() && message->is_string())
      return message->get<std::string>();
  }
  std::string text = runtime::validUtf8(body.substr(0, 300));
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(no body)" : text;
}

} // namespace

struct ServiceClient::Loop {
  struct Exchange {
    ServiceRequest request;
    std::function<void(ServiceReply)> done;
    uint32_t attempts = 0;
    size_t endpoint = 0;
    CURL *easy = nullptr;
    std::string url;
    std::string reply;
    bool tooBig = false;
    /// From the last attempt's Retry-After header (seconds; < 0: none).
    double retryAfter = -1;
    Clock::time_point sentAt;
    /// A retry waits until then.
    Clock::time_point notBefore;
    std::string lastError;
  };

  explicit Loop(ServiceSettings given) : settings(std::move(given)) {
    initialiseCurlOnce();
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, long(CURLPIPE_MULTIPLEX));
    // Every open request's connection stays for the next (keep-alive), per endpoint.
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS,
                      long(std::max<int64_t>(1, settings.inFlight) *
                           int64_t(std::max<size_t>(1, settings.endpoints.size()))));
    // Sockets and timers through epoll (curl_multi_socket_action): each wakeup costs what
    // happened, not a poll of every open connection.
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &Loop::onSocket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &Loop::onTimer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    epollFd = ::epoll_create1(EPOLL_CLOEXEC);
    wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wakeFd;
    ::epoll_ctl(epollFd, EPOLL_CTL_ADD, wakeFd, &wake);
    openPerEndpoint.assign(settings.endpoints.size(), 0);
    // The same headers for every request: made once.
    headers = curl_slist_append(nullptr, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    if (!settings.apiKey.empty())
      headers = curl_slist_append(headers, ("Authorization: Bearer " + settings.apiKey).c_str());
    tokens = settings.tokensPerMinute;
    tokensAt = Clock::now();
    thread = std::thread([this] { run(); });
  }

  ~Loop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake();
    thread.join();
    for (auto &[easy, exchange] : open) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
    }
    for (CURL *easy : spareHandles)
      curl_easy_cleanup(easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    ::close(wakeFd);
    ::close(epollFd);
  }

  /// Wakes the thread if it waits in epoll_wait (or is about to): a busy one sees the queue
  /// before it waits again.
  void wake() {
    if (!sleeping.exchange(false, std::memory_order_acq_rel))
      return;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(wakeFd, &one, sizeof one);
  }

  static int onSocket(CURL *, curl_socket_t socket, int what, void *user, void *) {
    Loop &loop = *static_cast<Loop *>(user);
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(loop.epollFd, EPOLL_CTL_DEL, socket, nullptr);
      return 0;
    }
    epoll_event event{};
    event.data.fd = socket;
    event.events = (what == CURL_POLL_IN || what == CURL_POLL_INOUT ? EPOLLIN : 0u) |
                   (what == CURL_POLL_OUT || what == CURL_POLL_INOUT ? EPOLLOUT : 0u);
    if (::epoll_ctl(loop.epollFd, EPOLL_CTL_MOD, socket, &event) != 0)
      ::epoll_ctl(loop.epollFd, EPOLL_CTL_ADD, socket, &event);
    return 0;
  }

  static int onTimer(CURLM *, long timeoutMs, void *user) {
    Loop &loop = *static_cast<Loop *>(user);
    loop.curlTimer = timeoutMs < 0 ? Clock::time_point::max()
                                   : Clock::now() + std::chrono::milliseconds(timeoutMs);
    return 0;
  }

  void send(ServiceRequest request, std::function<void(ServiceReply)> done) {
    auto exchange = std::make_unique<Exchange>();
    exchange->request = std::move(request);
    exchange->done = std::move(done);
    {
      std::lock_guard<std::mutex> lock(mutex);
      incoming.push_back(std::move(exchange));
    }
    wake();
  }

  void run() {
    ::pthread_setname_np(::pthread_self(), "orch-llm-http");
    while (true) {
      // From here on a sender wakes the thread: what it queued after the look below is seen
      // after the wait (the eventfd stays readable until read).
      sleeping.store(true, std::memory_order_release);
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (stopping)
          return;
        for (std::unique_ptr<Exchange> &exchange : incoming)
          ready.push_back(std::move(exchange));
        incoming.clear();
      }
      const Clock::time_point now = Clock::now();
      takeDueRetries(now);
      startWhatMayStart(now);
      const Clock::time_point wakeAt = std::min(nextWake(now), curlTimer);
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wakeAt - now);
      epoll_event events[64];
      const int happened =
          ::epoll_wait(epollFd, events, 64, int(std::clamp<int64_t>(wait.count(), 0, 1000)));
      int running = 0;
      for (int e = 0; e < happened; ++e) {
        if (events[e].data.fd == wakeFd) {
          uint64_t count;
          [[maybe_unused]] const ssize_t got = ::read(wakeFd, &count, sizeof count);
          continue;
        }
        const int flags = ((events[e].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                          ((events[e].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                          ((events[e].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(multi, events[e].data.fd, flags, &running);
      }
      if (Clock::now() >= curlTimer) {
        curlTimer = Clock::time_point::max();
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      finishCompleted();
    }
  }

  /// Retries whose time came go to the front of the queue (they are older than the rest).
  void takeDueRetries(Clock::time_point now) {
    while (!waiting.empty() && waiting.begin()->first <= now) {
      ready.push_front(std::move(waiting.begin()->second));
      waiting.erase(waiting.begin());
    }
  }

  void startWhatMayStart(Clock::time_point now) {
    while (!ready.empty()) {
      Exchange &front = *ready.front();
      if (front.request.deadline <= now) {
        std::unique_ptr<Exchange> late = std::move(ready.front());
        ready.pop_front();
        answerFailure(*late,
                      "no answer before the batch's time limit" +
                          (late->lastError.empty() ? "" : " (last: " + late->lastError + ")"));
        continue;
      }
      if (open.size() >= size_t(std::max<int64_t>(1, settings.inFlight)) || now < pausedUntil ||
          !rateAllows(front, now))
        return;
      std::unique_ptr<Exchange> exchange = std::move(ready.front());
      ready.pop_front();
      start(std::move(exchange), now);
    }
  }

  /// Whether the rate limits let `exchange` start now; if so, it is charged.
  bool rateAllows(const Exchange &exchange, Clock::time_point now) {
    if (settings.requestsPerSecond > 0 && now < nextRequestAt)
      return false;
    if (settings.tokensPerMinute > 0) {
      refillTokens(now);
      const double wanted =
          std::min(double(exchange.request.estimatedTokens), settings.tokensPerMinute);
      if (tokens < wanted)
        return false;
      tokens -= double(exchange.request.estimatedTokens);
    }
    if (settings.requestsPerSecond > 0)
      nextRequestAt = std::max(now, nextRequestAt) +
                      std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(1.0 / settings.requestsPerSecond));
    return true;
  }

  void refillTokens(Clock::time_point now) {
    const double seconds = std::chrono::duration<double>(now - tokensAt).count();
    tokensAt = now;
    tokens = std::min(settings.tokensPerMinute, tokens + seconds * settings.tokensPerMinute / 60);
  }

  /// When the loop must look again: a retry's time, when the queue's first request may start
  /// (rate limits, a pause after a 429), its deadline; at most a second (for stopping).
  Clock::time_point nextWake(Clock::time_point now) const {
    Clock::time_point wake = now + std::chrono::seconds(1);
    if (!waiting.empty())
      wake = std::min(wake, waiting.begin()->first);
    if (!ready.empty() && open.size() < size_t(std::max<int64_t>(1, settings.inFlight))) {
      Clock::time_point canStart = std::max(now, pausedUntil);
      if (settings.requestsPerSecond > 0)
        canStart = std::max(canStart, nextRequestAt);
      if (settings.tokensPerMinute > 0) {
        const double missing =
            std::min(double(ready.front()->request.estimatedTokens), settings.tokensPerMinute) -
            tokens;
        if (missing > 0)
          canStart = std::max(canStart, now + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(
                                                      missing * 60 / settings.tokensPerMinute)));
      }
      wake = std::min({wake, canStart, ready.front()->request.deadline});
    }
    return wake;
  }

  size_t pickEndpoint() {
    size_t best = 0;
    for (size_t e = 1; e < openPerEndpoint.size(); ++e) {
      const size_t candidate = (nextEndpoint + e) % openPerEndpoint.size();
      if (openPerEndpoint[candidate] < openPerEndpoint[best])
        best = candidate;
    }
    if (openPerEndpoint.size() > 1 && openPerEndpoint[nextEndpoint] <= openPerEndpoint[best])
      best = nextEndpoint;
    nextEndpoint = (best + 1) % openPerEndpoint.size();
    return best;
  }

  static size_t onBody(char *data, size_t size, size_t count, void *user) {
    Exchange &exchange = *static_cast<Exchange *>(user);
    const size_t bytes = size * count;
    if (exchange.reply.size() + bytes > kMaxReplyBytes) {
      exchange.tooBig = true;
      return 0;
    }
    exchange.reply.append(data, bytes);
    return bytes;
  }

  static size_t onHeader(char *data, size_t size, size_t count, void *user) {
    Exchange &exchange = *static_cast<Exchange *>(user);
    const size_t bytes = size * count;
    const std::string_view line(data, bytes);
    if (line.starts_with("HTTP/"))
      exchange.retryAfter = -1;
    constexpr std::string_view kRetryAfter = "retry-after:";
    if (line.size() > kRetryAfter.size() &&
        ::strncasecmp(line.data(), kRetryAfter.data(), kRetryAfter.size()) == 0) {
      std::string value(line.substr(kRetryAfter.size()));
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t\r\n") + 1);
      char *end = nullptr;
      const double seconds = std::strtod(value.c_str(), &end);
      if (end && *end == '\0' && !value.empty() && seconds >= 0)
        exchange.retryAfter = seconds;
      else if (const time_t at = curl_getdate(value.c_str(), nullptr); at >= 0)
        exchange.retryAfter = std::max<double>(0, double(at - ::time(nullptr)));
    }
    return bytes;
  }

  void start(std::unique_ptr<Exchange> exchange, Clock::time_point now) {
    Exchange &x = *exchange;
    ++x.attempts;
    x.reply.clear();
    x.tooBig = false;
    x.retryAfter = -1;
    x.endpoint = pickEndpoint();
    ++openPerEndpoint[x.endpoint];
    // A handle is reused with the options every request shares, set when it was made; the
    // connection comes from the multi handle's pool.
    if (spareHandles.empty()) {
      x.easy = newHandle();
    } else {
      x.easy = spareHandles.back();
      spareHandles.pop_back();
    }
    x.url = settings.endpoints[x.endpoint] + x.request.path;
    curl_easy_setopt(x.easy, CURLOPT_URL, x.url.c_str());
    curl_easy_setopt(x.easy, CURLOPT_POSTFIELDS, x.request.body.data());
    curl_easy_setopt(x.easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(x.request.body.size()));
    curl_easy_setopt(x.easy, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(x.easy, CURLOPT_PRIVATE, &x);
    auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings.requestTimeout);
    if (x.request.deadline != Clock::time_point::max())
      timeout = std::min(
          timeout, std::chrono::duration_cast<std::chrono::milliseconds>(x.request.deadline - now) +
                       std::chrono::milliseconds(1));
    curl_easy_setopt(x.easy, CURLOPT_TIMEOUT_MS, long(std::max<int64_t>(1, timeout.count())));
    curl_easy_setopt(x.easy, CURLOPT_CONNECTTIMEOUT_MS,
                     long(std::min<int64_t>(10000, std::max<int64_t>(1, timeout.count()))));
    x.sentAt = now;
    curl_multi_add_handle(multi, x.easy);
    open.emplace(x.easy, std::move(exchange));
  }

  /// A handle with what every request sets the same way.
  CURL *newHandle() const {
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Loop::onBody);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Loop::onHeader);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    return easy;
  }

  /// The exchange's handle goes back to the spares.
  void release(Exchange &x) {
    if (x.easy)
      spareHandles.push_back(x.easy);
    x.easy = nullptr;
  }

  void finishCompleted() {
    int left = 0;
    while (CURLMsg *message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE)
        continue;
      CURL *easy = message->easy_handle;
      const CURLcode code = message->data.result;
      curl_multi_remove_handle(multi, easy);
      auto found = open.find(easy);
      if (found == open.end())
        continue;
      std::unique_ptr<Exchange> exchange = std::move(found->second);
      open.erase(found);
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      --openPerEndpoint[exchange->endpoint];
      release(*exchange);
      finish(std::move(exchange), code, status);
    }
  }

  void finish(std::unique_ptr<Exchange> exchange, CURLcode code, long status) {
    Exchange &x = *exchange;
    const Clock::time_point now = Clock::now();
    const double latency = std::chrono::duration<double>(now - x.sentAt).count();
    const std::string &where = x.url;
    if (code != CURLE_OK) {
      const std::string why =
          x.tooBig ? "a reply over 64 MiB" : std::string(curl_easy_strerror(code));
      // A malformed URL or an unsupported scheme does not get better; the rest might.
      const bool hopeless = x.tooBig || code == CURLE_URL_MALFORMAT ||
                            code == CURLE_UNSUPPORTED_PROTOCOL ||
                            code == CURLE_BAD_FUNCTION_ARGUMENT;
      return retryOrFail(std::move(exchange), hopeless, why + " (" + where + ")", -1, now);
    }
    if (status == 429 || status == 503) {
      // The server asked for less: nothing new is sent until Retry-After has passed.
      if (status == 429 && x.retryAfter > 0)
        pausedUntil = std::max(pausedUntil, now + std::chrono::duration_cast<Clock::duration>(
                                                      std::chrono::duration<double>(x.retryAfter)));
      return retryOrFail(std::move(exchange), false,
                         "HTTP " + std::to_string(status) + " from " + where + ": " +
                             serverMessage(x.reply),
                         x.retryAfter, now);
    }
    if (status == 408 || status >= 500)
      return retryOrFail(std::move(exchange), false,
                         "HTTP " + std::to_string(status) + " from " + where + ": " +
                             serverMessage(x.reply),
                         -1, now);
    ServiceReply reply;
    reply.status = status;
    reply.attempts = x.attempts;
    reply.latency = latency;
    if (status < 200 || status >= 300) {
      reply.refused = status >= 400 && status < 500;
      reply.error =
          "HTTP " + std::to_string(status) + " from " + where + ": " + serverMessage(x.reply);
      return deliver(x, std::move(reply));
    }
    reply.body = nlohmann::json::parse(x.reply, nullptr, false);
    if (reply.body.is_discarded() || !reply.body.is_object()) {
      std::string start = runtime::validUtf8(x.reply.substr(0, 120));
      std::replace(start.begin(), start.end(), '\n', ' ');
      reply.body = nlohmann::json();
      reply.error = "the reply from " + where + " is not a JSON object: \"" + start + "\"";
      return deliver(x, std::move(reply));
    }
    if (auto usage = reply.body.find("usage"); usage != reply.body.end() && usage->is_object()) {
      if (auto prompt = usage->find("prompt_tokens");
          prompt != usage->end() && prompt->is_number_unsigned())
        reply.promptTokens = prompt->get<uint64_t>();
      if (auto completion = usage->find("completion_tokens");
          completion != usage->end() && completion->is_number_unsigned())
        reply.completionTokens = completion->get<uint64_t>();
    }
    // The bucket was charged the estimate: it gets the difference back (or pays it).
    if (settings.tokensPerMinute > 0 && (reply.promptTokens || reply.completionTokens))
      tokens +=
          double(x.request.estimatedTokens) - double(reply.promptTokens + reply.completionTokens);
    reply.ok = true;
    deliver(x, std::move(reply));
  }

  /// Retries a failed attempt after Retry-After (when the server gave one) or a backoff, unless
  /// it is hopeless, the retries are spent, or the retry would come after the deadline.
  void retryOrFail(std::unique_ptr<Exchange> exchange, bool hopeless, const std::string &why,
                   double retryAfter, Clock::time_point now) {
    Exchange &x = *exchange;
    x.lastError = why;
    if (hopeless || int64_t(x.attempts) > settings.maxRetries)
      return answerFailure(x, hopeless ? why
                                       : why + " (gave up after " + std::to_string(x.attempts) +
                                             " attempt" + (x.attempts == 1 ? "" : "s") + ")");
    std::chrono::duration<double> delay(0);
    if (retryAfter >= 0) {
      delay = std::chrono::duration<double>(retryAfter);
    } else {
      const double base = std::chrono::duration<double>(settings.backoff).count() *
                          std::pow(2.0, double(x.attempts - 1));
      std::uniform_real_distribution<double> jitter(0.75, 1.25);
      delay = std::chrono::duration<double>(std::min(base, double(kMaxBackoff.count())) *
                                            jitter(random));
    }
    x.notBefore = now + std::chrono::duration_cast<Clock::duration>(delay);
    if (x.notBefore >= x.request.deadline)
      return answerFailure(x, why + " (no time left to retry within the batch's time limit: "
                                    "the Call's timeout, or without one the hang guard's)");
    waiting.emplace(x.notBefore, std::move(exchange));
  }

  void answerFailure(Exchange &x, std::string why) {
    ServiceReply reply;
    reply.attempts = x.attempts;
    reply.error = std::move(why);
    deliver(x, std::move(reply));
  }

  /// The answer, with the API key taken out of anything the server said (some echo it).
  void deliver(Exchange &x, ServiceReply reply) {
    if (!settings.apiKey.empty())
      for (size_t at; (at = reply.error.find(settings.apiKey)) != std::string::npos;)
        reply.error.replace(at, settings.apiKey.size(), "[API key]");
    x.done(std::move(reply));
  }

  ServiceSettings settings;
  CURLM *multi = nullptr;
  int epollFd = -1;
  int wakeFd = -1;
  /// Set before the thread looks at its queue; a sender that clears it writes the eventfd.
  std::atomic<bool> sleeping{false};
  /// When libcurl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT) (its timer callback).
  Clock::time_point curlTimer = Clock::time_point::max();
  std::thread thread;
  std::mutex mutex;
  bool stopping = false;
  std::vector<std::unique_ptr<Exchange>> incoming;
  // Only the loop's thread touches what follows.
  std::deque<std::unique_ptr<Exchange>> ready;
  std::multimap<Clock::time_point, std::unique_ptr<Exchange>> waiting;
  std::map<CURL *, std::unique_ptr<Exchange>> open;
  std::vector<CURL *> spareHandles;
  curl_slist *headers = nullptr;
  std::vector<size_t> openPerEndpoint;
  size_t nextEndpoint = 0;
  Clock::time_point pausedUntil;
  Clock::time_point nextRequestAt;
  double tokens = 0;
  Clock::time_point tokensAt;
  std::mt19937_64 random{std::random_device{}()};
};

ServiceClient::ServiceClient(ServiceSettings settings)
    : loop_(std::make_unique<Loop>(std::move(settings))) {}

ServiceClient::~ServiceClient() = default;

void ServiceClient::send(ServiceRequest request, std::function<void(ServiceReply)> done) {
  loop_->send(std::move(request), std::move(done));
}

} // namespace orch::stdlib
