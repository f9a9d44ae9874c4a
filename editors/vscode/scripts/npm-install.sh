#!/usr/bin/env bash
# Installs the extension's npm packages (exact versions from package-lock.json) unless the
# installed ones are already those. Exit status 77 (and the reason) when node or the npm
# registry is not available, so tests can skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "skip: node and npm are not installed (scripts/install-deps.sh installs them)" >&2
  exit 77
fi
# npm records what it installed in node_modules/.package-lock.json.
if [[ -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json ]]; then
  exit 0
fi
if ! npm ping >/dev/null 2>&1; then
  echo "skip: the npm registry is not reachable from here" >&2
  exit 77
fi
npm ci --no-audit --no-fund --loglevel=error
