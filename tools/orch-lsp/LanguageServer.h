// The Orch language server: keeps the open documents, re-indexes one on every change, and
// answers the LSP requests an editor sends (diagnostics are pushed).
#pragma once

#include "DocumentIndex.h"
#include "JsonRpc.h"

#include <map>
#include <string>

namespace orch::lsp {

class LanguageServer {
public:
  explicit LanguageServer(JsonRpcStream &stream) : stream_(stream) {}

  /// Serves until `exit` or the end of the input; the process exit status.
  int run();

private:
  struct Document {
    std::string text;
    int64_t version = 0;
    DocumentIndex index;
    /// Types from the last version that compiled, for hovering while the file is broken.
    std::map<std::string, std::string> lastValueTypes;
  };

  void handle(const nlohmann::json &message);
  nlohmann::json dispatch(const std::string &method, const nlohmann::json &params);
  void notification(const std::string &method, const nlohmann::json &params);

  void update(const std::string &uri, std::string text, int64_t version);
  void publishDiagnostics(const std::string &uri, const Document &document);

  nlohmann::json initialize();
  nlohmann::json hover(const nlohmann::json &params);
  nlohmann::json definition(const nlohmann::json &params);
  nlohmann::json documentSymbol(const nlohmann::json &params);
  nlohmann::json formatting(const nlohmann::json &params);
  nlohmann::json completion(const nlohmann::json &params);

  Document &document(const nlohmann::json &params);

  JsonRpcStream &stream_;
  std::map<std::string, Document> documents_;
  bool initialized_ = false;
  bool shutdownRequested_ = false;
  bool exitRequested_ = false;
};

} // namespace orch::lsp
