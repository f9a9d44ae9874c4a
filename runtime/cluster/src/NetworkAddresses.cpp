// Addresses of tcp:// endpoints (NetworkAddresses.h).
#include "NetworkAddresses.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace orch::runtime {

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

bool isLoopbackAddress(const std::string &address) {
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) != 1)
    return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6))
    return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

} // namespace orch::runtime
