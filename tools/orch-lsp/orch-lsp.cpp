// orch-lsp: the Orch language server, speaking LSP over standard input and output.
#include "JsonRpc.h"
#include "LanguageServer.h"

#include <cstring>
#include <iostream>

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << "orch-lsp " ORCH_VERSION "\n";
      return 0;
    }
    if (!std::strcmp(argv[i], "--stdio"))
      continue; // what editors pass; stdio is the only transport
    std::cerr << "usage: orch-lsp [--stdio]\n  the Orch language server: LSP over standard "
                 "input and output (see docs/editors.md)\n";
    return std::strcmp(argv[i], "--help") ? 2 : 0;
  }
  std::ios::sync_with_stdio(false);
  orch::lsp::JsonRpcStream stream(std::cin, std::cout);
  return orch::lsp::LanguageServer(stream).run();
}
