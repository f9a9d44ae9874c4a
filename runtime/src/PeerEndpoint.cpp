// Choosing a worker's peer endpoint (PeerEndpoint.h).
#include "PeerEndpoint.h"

#include <arpa/inet.h>
#include <filesystem>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

/// "HOST" of "tcp://HOST:PORT" ("[::1]" without brackets), or "".
std::string tcpHost(const std::string &endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0)
    return {};
  std::string rest = endpoint.substr(6);
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    return close == std::string::npos ? std::string() : rest.substr(1, close - 1);
  }
  return rest.substr(0, rest.rfind(':'));
}

/// This host's address on the route to `host` (a UDP socket "connected" there sends nothing
/// but learns its source address), or "".
std::string localAddressTowards(const std::string &host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo *found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), "9", &hints, &found) != 0)
    return {};
  std::string address;
  for (addrinfo *candidate = found; candidate && address.empty(); candidate = candidate->ai_next) {
    const int probe = ::socket(candidate->ai_family, SOCK_DGRAM, 0);
    if (probe < 0)
      continue;
    sockaddr_storage local{};
    socklen_t size = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (::connect(probe, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        ::getsockname(probe, reinterpret_cast<sockaddr *>(&local), &size) == 0) {
      if (local.ss_family == AF_INET)
        address = ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in &>(local).sin_addr, text,
                              sizeof text)
                      ? text
                      : "";
      else if (local.ss_family == AF_INET6 &&
               ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6 &>(local).sin6_addr, text,
                           sizeof text))
        address = "[" + std::string(text) + "]";
    }
    ::close(probe);
  }
  ::freeaddrinfo(found);
  return address;
}

} // namespace

std::string peerBindEndpoint(const std::string &coordinatorEndpoint) {
  if (coordinatorEndpoint.rfind("ipc://", 0) == 0) {
    const std::filesystem::path directory =
        std::filesystem::path(coordinatorEndpoint.substr(6)).parent_path();
    return "ipc://" + (directory / ("peer-" + std::to_string(::getpid()) + ".sock")).string();
  }
  const std::string host = tcpHost(coordinatorEndpoint);
  const bool loopback = host.rfind("127.", 0) == 0 || host == "localhost" || host == "::1";
  return loopback ? "tcp://127.0.0.1:*" : "tcp://*:*";
}

std::string announcedPeerEndpoint(const std::string &bound,
                                  const std::string &coordinatorEndpoint) {
  for (const std::string any : {"tcp://0.0.0.0:", "tcp://[::]:"}) {
    if (bound.rfind(any, 0) != 0)
      continue;
    std::string address = localAddressTowards(tcpHost(coordinatorEndpoint));
    if (address.empty()) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      address = name;
    }
    return "tcp://" + address + ":" + bound.substr(any.size());
  }
  return bound;
}

} // namespace orch::runtime
