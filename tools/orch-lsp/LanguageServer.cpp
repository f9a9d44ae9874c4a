// Request dispatch and the translation between the LSP's JSON and the document index.
#include "LanguageServer.h"

#include "Completion.h"
#include "Hover.h"
#include "SourcePositions.h"

#include "orch/format/Formatter.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace orch::lsp {
namespace {

using nlohmann::json;

/// A request the server cannot answer, turned into a JSON-RPC error.
struct RequestError {
  RpcError code;
  std::string message;
};

json toJson(const Position &position) {
  return {{"line", position.line}, {"character", position.character}};
}

json toJson(const Range &range) {
  return {{"start", toJson(range.start)}, {"end", toJson(range.end)}};
}

Position positionOf(const json &params) {
  try {
    const json &position = params.at("position");
    return Position{position.at("line").get<uint32_t>(), position.at("character").get<uint32_t>()};
  } catch (const json::exception &error) {
    throw RequestError{RpcError::InvalidParams, std::string("bad position: ") + error.what()};
  }
}

/// A file path for messages, from a file:// URI.
std::string pathOf(const std::string &uri) {
  constexpr std::string_view scheme = "file://";
  return uri.rfind(scheme, 0) == 0 ? uri.substr(scheme.size()) : uri;
}

int lspSeverity(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return 1;
  case DiagnosticSeverity::Warning:
    return 2;
  case DiagnosticSeverity::Note:
    return 3;
  }
  return 1;
}

int lspSymbolKind(SymbolKind kind) {
  switch (kind) {
  case SymbolKind::Pipeline:
    return 2; // Module
  case SymbolKind::Param:
    return 14; // Constant
  case SymbolKind::Source:
    return 24; // Event
  case SymbolKind::Call:
    return 12; // Function
  case SymbolKind::Binding:
    return 13; // Variable
  case SymbolKind::Sink:
    return 6; // Method
  case SymbolKind::Domain:
    return 3; // Namespace
  }
  return 13;
}

int lspCompletionKind(CompletionKind kind) {
  switch (kind) {
  case CompletionKind::Operator:
    return 3; // Function
  case CompletionKind::Call:
    return 2; // Method
  case CompletionKind::Value:
    return 6; // Variable
  case CompletionKind::Keyword:
    return 14; // Keyword
  case CompletionKind::Option:
    return 10; // Property
  }
  return 1;
}

} // namespace

int LanguageServer::run() {
  while (!exitRequested_) {
    std::optional<std::string> body = stream_.read();
    if (!body)
      break;
    json message = json::parse(*body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.is_object()) {
      stream_.respondError(nullptr, RpcError::ParseError, "the message is not a JSON object");
      continue;
    }
    handle(message);
  }
  return shutdownRequested_ ? 0 : 1;
}

void LanguageServer::handle(const json &message) {
  const json id = message.contains("id") ? message["id"] : json();
  const bool isRequest = message.contains("id");
  if (!message.contains("method") || !message["method"].is_string()) {
    if (isRequest)
      stream_.respondError(id, RpcError::InvalidRequest, "no method");
    return; // a response to something we never sent
  }
  const std::string method = message["method"];
  const json params = message.value("params", json::object());
  if (!isRequest) {
    try {
      notification(method, params);
    } catch (const std::exception &) {
      // Notifications have no answer; a malformed one is dropped.
    }
    return;
  }
  try {
    if (!initialized_ && method != "initialize")
      throw RequestError{RpcError::ServerNotInitialized, "initialize first"};
    if (shutdownRequested_)
      throw RequestError{RpcError::InvalidRequest, "the server is shutting down"};
    stream_.respond(id, dispatch(method, params));
  } catch (const RequestError &error) {
    stream_.respondError(id, error.code, error.message);
  } catch (const json::exception &error) {
    stream_.respondError(id, RpcError::InvalidParams, error.what());
  }
}

json LanguageServer::dispatch(const std::string &method, const json &params) {
  if (method == "initialize")
    return initialize();
  if (method == "shutdown") {
    shutdownRequested_ = true;
    return nullptr;
  }
  if (method == "textDocument/hover")
    return hover(params);
  if (method == "textDocument/definition")
    return definition(params);
  if (method == "textDocument/documentSymbol")
    return documentSymbol(params);
  if (method == "textDocument/formatting")
    return formatting(params);
  if (method == "textDocument/completion")
    return completion(params);
  throw RequestError{RpcError::MethodNotFound, "orch-lsp does not implement " + method};
}

void LanguageServer::notification(const std::string &method, const json &params) {
  if (method == "exit") {
    exitRequested_ = true;
  } else if (method == "textDocument/didOpen") {
    const json &item = params.at("textDocument");
    update(item.at("uri"), item.at("text"), item.value("version", int64_t(0)));
  } else if (method == "textDocument/didChange") {
    // Full synchronization: the last change holds the whole text.
    const json &changes = params.at("contentChanges");
    if (!changes.empty())
      update(params.at("textDocument").at("uri"), changes.back().at("text"),
             params.at("textDocument").value("version", int64_t(0)));
  } else if (method == "textDocument/didClose") {
    const std::string uri = params.at("textDocument").at("uri");
    documents_.erase(uri);
    stream_.notify("textDocument/publishDiagnostics",
                   {{"uri", uri}, {"diagnostics", json::array()}});
  }
}

json LanguageServer::initialize() {
  initialized_ = true;
  return {{"capabilities",
           {{"textDocumentSync", {{"openClose", true}, {"change", 1}}},
            {"hoverProvider", true},
            {"definitionProvider", true},
            {"documentSymbolProvider", true},
            {"documentFormattingProvider", true},
            {"completionProvider", {{"triggerCharacters", {".", "{", ","}}}}}},
          {"serverInfo", {{"name", "orch-lsp"}, {"version", ORCH_VERSION}}}};
}

void LanguageServer::update(const std::string &uri, std::string text, int64_t version) {
  Document &document = documents_[uri];
  document.text = std::move(text);
  document.version = version;
  document.index = indexDocument(document.text, pathOf(uri));
  if (document.index.compiled)
    document.lastValueTypes = document.index.valueTypes;
  else
    for (const auto &[name, type] : document.lastValueTypes)
      document.index.valueTypes.emplace(name, type);
  publishDiagnostics(uri, document);
}

void LanguageServer::publishDiagnostics(const std::string &uri, const Document &document) {
  SourcePositions positions(document.text);
  json diagnostics = json::array();
  for (const Diagnostic &diagnostic : document.index.diagnostics) {
    json item = {{"range", toJson(positions.range(diagnostic.location))},
                 {"severity", lspSeverity(diagnostic.severity)},
                 {"source", "orch"},
                 {"message", diagnostic.message}};
    json related = json::array();
    for (const Diagnostic &note : diagnostic.notes)
      related.push_back(
          {{"location", {{"uri", uri}, {"range", toJson(positions.range(note.location))}}},
           {"message", note.message}});
    if (!related.empty())
      item["relatedInformation"] = related;
    diagnostics.push_back(item);
  }
  stream_.notify("textDocument/publishDiagnostics",
                 {{"uri", uri}, {"version", document.version}, {"diagnostics", diagnostics}});
}

LanguageServer::Document &LanguageServer::document(const json &params) {
  const std::string uri = params.at("textDocument").at("uri");
  auto found = documents_.find(uri);
  if (found == documents_.end())
    throw RequestError{RpcError::InvalidParams, "document not open: " + uri};
  return found->second;
}

json LanguageServer::hover(const json &params) {
  Document &doc = document(params);
  SourcePositions positions(doc.text);
  const Position position = positionOf(params);
  const Reference *reference =
      doc.index.referenceAt(position.line + 1, positions.byteColumn(position));
  if (!reference)
    return nullptr;
  std::optional<std::string> text = hoverMarkdown(doc.index, *reference, *doc.index.catalog);
  if (!text)
    return nullptr;
  return {{"contents", {{"kind", "markdown"}, {"value", *text}}},
          {"range", toJson(positions.range(reference->location))}};
}

json LanguageServer::definition(const json &params) {
  Document &doc = document(params);
  SourcePositions positions(doc.text);
  const Position position = positionOf(params);
  const Reference *reference =
      doc.index.referenceAt(position.line + 1, positions.byteColumn(position));
  if (!reference)
    return nullptr;
  std::optional<SourceLocation> target = definitionOf(doc.index, *reference);
  if (!target)
    return nullptr;
  return {{"uri", params.at("textDocument").at("uri")},
          {"range", toJson(positions.range(*target))}};
}

json LanguageServer::documentSymbol(const json &params) {
  Document &doc = document(params);
  SourcePositions positions(doc.text);
  json symbols = json::array();
  for (const Symbol &symbol : doc.index.symbols) {
    const Range selection = positions.range(symbol.nameLocation);
    Range range = positions.range(symbol.statementLocation);
    if (!symbol.statementLocation.isKnown() ||
        symbol.statementLocation.line != symbol.nameLocation.line)
      range = selection;
    range.start.character = std::min(range.start.character, selection.start.character);
    range.end.character = std::max(range.end.character, selection.end.character);
    json item = {{"name", symbol.name},
                 {"kind", lspSymbolKind(symbol.kind)},
                 {"range", toJson(range)},
                 {"selectionRange", toJson(selection)}};
    auto type = doc.index.valueTypes.find(symbol.name);
    if (!symbol.detail.empty())
      item["detail"] = symbol.detail;
    else if (type != doc.index.valueTypes.end() && symbol.kind != SymbolKind::Domain)
      item["detail"] = type->second;
    symbols.push_back(item);
  }
  return symbols;
}

json LanguageServer::formatting(const json &params) {
  Document &doc = document(params);
  llvm::SourceMgr sources;
  const uint32_t buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(doc.text, "document.orch"), llvm::SMLoc());
  DiagnosticEngine diags([](const Diagnostic &) {});
  std::optional<std::string> formatted = format::formatSource(sources, buffer, diags);
  if (!formatted)
    throw RequestError{RpcError::RequestFailed, "the file has syntax errors; fix them to format"};
  if (*formatted == doc.text)
    return json::array();
  SourcePositions positions(doc.text);
  return json::array(
      {{{"range", toJson(Range{Position{}, positions.end()})}, {"newText", *formatted}}});
}

json LanguageServer::completion(const json &params) {
  Document &doc = document(params);
  SourcePositions positions(doc.text);
  const Position position = positionOf(params);
  const size_t offset = positions.offset(position);
  CompletionResult result =
      completeAt(std::string_view(doc.text).substr(0, offset), doc.index, *doc.index.catalog);
  // The edit replaces the whole dotted name typed so far (editors split words at '.').
  Position start = position;
  start.character -= std::min<uint32_t>(start.character, uint32_t(result.prefix.size()));
  json items = json::array();
  for (const CompletionCandidate &candidate : result.candidates) {
    json item = {
        {"label", candidate.label},
        {"kind", lspCompletionKind(candidate.kind)},
        {"filterText", candidate.label},
        {"textEdit", {{"range", toJson(Range{start, position})}, {"newText", candidate.label}}}};
    if (!candidate.detail.empty())
      item["detail"] = candidate.detail;
    if (!candidate.documentation.empty())
      item["documentation"] = {{"kind", "markdown"}, {"value", candidate.documentation}};
    items.push_back(item);
  }
  return {{"isIncomplete", false}, {"items", items}};
}

} // namespace orch::lsp
