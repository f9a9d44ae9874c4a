// Choosing a worker's peer endpoint (PeerEndpoint.h).
#include "PeerEndpoint.h"

#include "NetworkAddresses.h"

#include <filesystem>
#include <unistd.h>

namespace orch::runtime {

std::string peerBindEndpoint(const std::string &coordinatorEndpoint) {
  if (coordinatorEndpoint.rfind("ipc://", 0) == 0) {
    const std::filesystem::path directory =
        std::filesystem::path(coordinatorEndpoint.substr(6)).parent_path();
    return "ipc://" + (directory / ("peer-" + std::to_string(::getpid()) + ".sock")).string();
  }
  // Loopback when the route to the coordinator is (its name resolved, not read as text).
  std::string route = localAddressTowards(tcpHost(coordinatorEndpoint));
  if (route.size() > 2 && route.front() == '[')
    route = route.substr(1, route.size() - 2);
  return isLoopbackAddress(route) ? "tcp://127.0.0.1:*" : "tcp://*:*";
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
