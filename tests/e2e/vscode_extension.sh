#!/usr/bin/env bash
# The VS Code extension: its TextMate grammar tokenizes every example as the snapshots record
# (node test with vscode-textmate + vscode-oniguruma), and it packages into a .vsix that holds
# what VS Code loads.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

extension="$ORCH_SOURCE_DIR/editors/vscode"
status=0
"$extension/scripts/npm-install.sh" || status=$?
[[ $status -eq 0 ]] || exit "$status"

check "the grammar's node tests pass" bash -c "cd '$extension' && node --test test/"

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
check "vsce packages the extension" \
  bash -c "cd '$extension' && npx vsce package --skip-license -o '$workdir/orch.vsix' >/dev/null"
check "the .vsix holds the manifest, the grammar, the client and its runtime dependencies" \
  /usr/bin/python3 - "$workdir/orch.vsix" <<'PY'
import json, sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
needed = {"extension.vsixmanifest", "[Content_Types].xml", "extension/package.json",
          "extension/extension.js", "extension/language-configuration.json",
          "extension/syntaxes/orch.tmLanguage.json", "extension/snippets/orch.json",
          "extension/node_modules/vscode-languageclient/node.js"}
missing = needed - names
dev = [n for n in names if n.startswith("extension/node_modules/vscode-textmate/")
       or n.startswith("extension/test/")]
manifest = json.loads(zipfile.ZipFile(sys.argv[1]).read("extension/package.json"))
ok = not missing and not dev and manifest["contributes"]["languages"][0]["extensions"] == [".orch"]
print("missing:", sorted(missing), "dev files:", dev[:3]) if not ok else None
sys.exit(0 if ok else 1)
PY
finish_checks
