// What a request to a model server costs below Orch's engine (bench/llm/run.py): the CPU per
// request of a bare libcurl client (the multi interface over epoll on one thread, handles and
// connections reused: the least libcurl can do), and of Orch's own HTTP client (ServiceClient:
// the same with its thread, retries, rate limits and the reply parsed as JSON) without the run
// around it. Both are marginal: the CPU of the second half of the requests over that half
// (connections and start-up are in the first).
//
//   orch_bench_http_floor bare|client URL COUNT IN_FLIGHT
// URL is the API base ("http://127.0.0.1:PORT/v1"). Prints one JSON object.
#include "llm/ServiceClient.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <sys/epoll.h>
#include <sys/resource.h>

namespace {

using Clock = std::chrono::steady_clock;

struct CpuTime {
  double user = 0;
  double system = 0;
};

CpuTime processCpu() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return CpuTime{double(usage.ru_utime.tv_sec) + double(usage.ru_utime.tv_usec) * 1e-6,
                 double(usage.ru_stime.tv_sec) + double(usage.ru_stime.tv_usec) * 1e-6};
}

std::string requestBody(int number) {
  return R"({"model":"orch-test","messages":[{"role":"user","content":"benchmark prompt number )" +
         std::to_string(number) + R"("}]})";
}

/// libcurl's multi interface driven by epoll and curl_multi_socket_action, as ServiceClient
/// drives it, with nothing else around it.
class BareClient {
public:
  BareClient(std::string url, int inFlight) : url_(std::move(url)), inFlight_(inFlight) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &BareClient::onSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &BareClient::onTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    headers_ = curl_slist_append(nullptr, "Content-Type: application/json");
    headers_ = curl_slist_append(headers_, "Expect:");
  }

  /// Sends `count` requests, `inFlight` open at once, and returns when all are answered.
  void run(int count) {
    int started = 0;
    int answered = 0;
    int running = 0;
    std::vector<std::string> bodies(size_t(inFlight_) * 2);
    while (answered < count) {
      while (started < count && started - answered < inFlight_) {
        CURL *easy = spare_.empty() ? curl_easy_init() : spare_.back();
        if (!spare_.empty())
          spare_.pop_back();
        std::string &body = bodies[size_t(started) % bodies.size()];
        body = requestBody(started);
        curl_easy_setopt(easy, CURLOPT_URL, (url_ + "/chat/completions").c_str());
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &BareClient::ignoreBody);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_multi_add_handle(multi_, easy);
        ++started;
      }
      epoll_event events[64];
      const int happened = ::epoll_wait(epoll_, events, 64, millisecondsToTimer());
      for (int e = 0; e < happened; ++e)
        curl_multi_socket_action(multi_, events[e].data.fd,
                                 ((events[e].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                                     ((events[e].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0),
                                 &running);
      if (Clock::now() >= timer_) {
        timer_ = Clock::time_point::max();
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      int left = 0;
      while (CURLMsg *message = curl_multi_info_read(multi_, &left)) {
        if (message->msg != CURLMSG_DONE)
          continue;
        if (message->data.result != CURLE_OK) {
          std::fprintf(stderr, "a request failed: %s\n", curl_easy_strerror(message->data.result));
          std::exit(1);
        }
        curl_multi_remove_handle(multi_, message->easy_handle);
        spare_.push_back(message->easy_handle);
        ++answered;
      }
    }
  }

private:
  static size_t ignoreBody(char *, size_t size, size_t count, void *) { return size * count; }

  static int onSocket(CURL *, curl_socket_t socket, int what, void *user, void *) {
    auto &client = *static_cast<BareClient *>(user);
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(client.epoll_, EPOLL_CTL_DEL, socket, nullptr);
      return 0;
    }
    epoll_event event{};
    event.data.fd = socket;
    event.events =
        ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    if (::epoll_ctl(client.epoll_, EPOLL_CTL_MOD, socket, &event) != 0)
      ::epoll_ctl(client.epoll_, EPOLL_CTL_ADD, socket, &event);
    return 0;
  }

  static int onTimer(CURLM *, long milliseconds, void *user) {
    auto &client = *static_cast<BareClient *>(user);
    client.timer_ = milliseconds < 0 ? Clock::time_point::max()
                                     : Clock::now() + std::chrono::milliseconds(milliseconds);
    return 0;
  }

  int millisecondsToTimer() const {
    if (timer_ == Clock::time_point::max())
      return 1000;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(timer_ - Clock::now()).count();
    return int(std::clamp<int64_t>(left, 0, 1000));
  }

  std::string url_;
  int inFlight_;
  int epoll_ = -1;
  CURLM *multi_ = nullptr;
  curl_slist *headers_ = nullptr;
  std::vector<CURL *> spare_;
  Clock::time_point timer_ = Clock::time_point::max();
};

/// Orch's ServiceClient alone: `count` requests queued at once; it keeps `inFlight` open.
void runServiceClient(orch::stdlib::ServiceClient &client, int count) {
  std::mutex mutex;
  std::condition_variable allAnswered;
  std::atomic<int> answered{0};
  for (int i = 0; i < count; ++i) {
    orch::stdlib::ServiceRequest request;
    request.path = "/chat/completions";
    request.body = requestBody(i);
    client.send(std::move(request), [&](orch::stdlib::ServiceReply reply) {
      if (!reply.ok) {
        std::fprintf(stderr, "a request failed: %s\n", reply.error.c_str());
        std::exit(1);
      }
      if (answered.fetch_add(1) + 1 == count) {
        std::lock_guard<std::mutex> lock(mutex);
        allAnswered.notify_one();
      }
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  allAnswered.wait(lock, [&] { return answered.load() == count; });
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s bare|client URL COUNT IN_FLIGHT\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const std::string url = argv[2];
  const int half = std::max(1, std::atoi(argv[3]) / 2);
  const int inFlight = std::max(1, std::atoi(argv[4]));
  CpuTime before;
  CpuTime after;
  if (mode == "bare") {
    BareClient client(url, inFlight);
    client.run(half);
    before = processCpu();
    client.run(half);
    after = processCpu();
  } else if (mode == "client") {
    orch::stdlib::ServiceSettings settings;
    settings.endpoints = {url};
    settings.inFlight = inFlight;
    orch::stdlib::ServiceClient client(settings);
    runServiceClient(client, half);
    before = processCpu();
    runServiceClient(client, half);
    after = processCpu();
  } else {
    std::fprintf(stderr, "unknown mode '%s': bare or client\n", mode.c_str());
    return 2;
  }
  std::printf("{\"mode\": \"%s\", \"requests\": %d, \"user_us\": %.1f, \"system_us\": %.1f}\n",
              mode.c_str(), half, (after.user - before.user) / half * 1e6,
              (after.system - before.system) / half * 1e6);
  return 0;
}
