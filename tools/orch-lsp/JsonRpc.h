// JSON-RPC 2.0 over a byte stream with LSP framing: `Content-Length: N\r\n\r\n` then N bytes of
// JSON. Reads and writes whole messages; knows nothing about the methods.
#pragma once

#include <nlohmann/json.hpp>

#include <istream>
#include <optional>
#include <ostream>
#include <string>

namespace orch::lsp {

/// Standard JSON-RPC error codes.
enum class RpcError : int {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  ServerNotInitialized = -32002,
  RequestFailed = -32803,
};

class JsonRpcStream {
public:
  JsonRpcStream(std::istream &in, std::ostream &out) : in_(in), out_(out) {}

  /// The next message's body; nullopt at the end of the input. A frame without a valid
  /// Content-Length is skipped up to the next blank line and reported as "" (not JSON).
  std::optional<std::string> read();

  void write(const nlohmann::json &message);
  void respond(const nlohmann::json &id, nlohmann::json result);
  void respondError(const nlohmann::json &id, RpcError code, const std::string &message);
  void notify(const std::string &method, nlohmann::json params);

private:
  std::istream &in_;
  std::ostream &out_;
};

} // namespace orch::lsp
