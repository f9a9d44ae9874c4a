// Reading addresses out of ZeroMQ tcp:// endpoints, and what they are: the coordinator decides
// whether a socket it bound is on loopback from the address it bound (never from the text the
// user wrote: an interface may be named "127.lan"), and a worker binds its peer socket on
// loopback when its route to the coordinator is (docs/cluster.md, "Security").
#pragma once

#include <string>

namespace orch::runtime {

/// "HOST" of "tcp://HOST:PORT" ("::1" for "tcp://[::1]:PORT"), or "" for other transports.
std::string tcpHost(const std::string &endpoint);

/// Whether `address` is a numeric loopback address: 127.0.0.0/8, ::1, or ::ffff:127.x.x.x.
/// Names are not resolved: "localhost" is not an address.
bool isLoopbackAddress(const std::string &address);

/// This host's address on the route to `host` (a UDP socket "connected" there sends nothing
/// but learns its source address; IPv6 in brackets), or "".
std::string localAddressTowards(const std::string &host);

} // namespace orch::runtime
