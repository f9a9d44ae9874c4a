#!/usr/bin/env bash
# The language server driven over stdio by a scripted client (tests/e2e/lib/lsp_client.py).
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
exec /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/lib/lsp_client.py"
