// LSP base protocol framing.
#include "JsonRpc.h"

#include <cctype>

namespace orch::lsp {

std::optional<std::string> JsonRpcStream::read() {
  size_t length = 0;
  bool haveLength = false;
  bool sawHeader = false;
  for (std::string line; std::getline(in_, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty()) {
      if (!sawHeader)
        continue;
      if (!haveLength)
        return std::string();
      std::string body(length, '\0');
      in_.read(body.data(), std::streamsize(length));
      if (size_t(in_.gcount()) != length)
        return std::nullopt;
      return body;
    }
    sawHeader = true;
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = line.substr(0, colon);
    for (char &c : name)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    if (name != "content-length")
      continue;
    try {
      length = size_t(std::stoull(line.substr(colon + 1)));
      haveLength = true;
    } catch (const std::exception &) {
      haveLength = false;
    }
  }
  return std::nullopt;
}

void JsonRpcStream::write(const nlohmann::json &message) {
  const std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out_ << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out_.flush();
}

void JsonRpcStream::respond(const nlohmann::json &id, nlohmann::json result) {
  write({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void JsonRpcStream::respondError(const nlohmann::json &id, RpcError code,
                                 const std::string &message) {
  write({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", int(code)}, {"message", message}}}});
}

void JsonRpcStream::notify(const std::string &method, nlohmann::json params) {
  write({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

} // namespace orch::lsp
