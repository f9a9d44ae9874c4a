// Where a worker's peer socket (PeerServer.h) listens, and the address other workers are told
// to fetch from: the choice `orch worker --peer-endpoint` overrides (docs/cluster.md).
#pragma once

#include <string>

namespace orch::runtime {

/// Where to bind, given the coordinator's endpoint: beside an ipc coordinator's socket (in
/// its private directory), on loopback when the coordinator is on loopback, else on every
/// interface, on a free port.
std::string peerBindEndpoint(const std::string &coordinatorEndpoint);

/// The endpoint to announce for one bound as `bound`: a wildcard address is replaced by this
/// host's address on the route to the coordinator (the interface other hosts of the cluster
/// reach it by), or by its host name when that cannot be found.
std::string announcedPeerEndpoint(const std::string &bound, const std::string &coordinatorEndpoint);

} // namespace orch::runtime
