// The Orch extension: starts orch-lsp (LSP over stdio) for .orch files. Highlighting, the
// language configuration and snippets are declared in package.json and need no code.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function createClient() {
  const config = vscode.workspace.getConfiguration('orch');
  const serverOptions = {
    command: config.get('server.path') || 'orch-lsp',
    args: config.get('server.args') || [],
  };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'orch' },
      { scheme: 'untitled', language: 'orch' },
    ],
    outputChannelName: 'Orch Language Server',
  };
  return new LanguageClient('orch', 'Orch Language Server', serverOptions, clientOptions);
}

async function start() {
  client = createClient();
  try {
    await client.start();
  } catch (error) {
    const path = vscode.workspace.getConfiguration('orch').get('server.path');
    vscode.window.showErrorMessage(
      `Orch: cannot start the language server '${path}' (${error.message}). ` +
        'Build it (make build) and set "orch.server.path" to build/bin/orch-lsp, or put it on PATH.');
  }
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('orch.restartServer', async () => {
      if (client) await client.stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('orch.server')) {
        if (client) await client.stop();
        await start();
      }
    }));
  await start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
