// Tokenizes every example of the repository with the TextMate grammar (the engine VS Code
// uses: vscode-textmate on the Oniguruma regex library) and compares the scopes of keywords,
// strings, comments and numbers with the snapshots in test/snapshots/. A snippet with every
// kind of token is checked against explicit expectations.
//   node --test test/                      check
//   UPDATE_SNAPSHOTS=1 node --test test/   rewrite the snapshots after a deliberate change
'use strict';

const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const test = require('node:test');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

const extensionDir = path.join(__dirname, '..');
const repositoryDir = path.join(extensionDir, '..', '..');
const snapshotDir = path.join(__dirname, 'snapshots');

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== 'source.orch') return null;
      const file = path.join(extensionDir, 'syntaxes', 'orch.tmLanguage.json');
      return textmate.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  return registry.loadGrammar('source.orch');
}

/** Every token as [line, column, text, innermost scope]. */
function tokenize(grammar, text) {
  const tokens = [];
  let state = textmate.INITIAL;
  text.split('\n').forEach((line, index) => {
    const result = grammar.tokenizeLine(line, state);
    for (const token of result.tokens) {
      const value = line.slice(token.startIndex, token.endIndex);
      if (value.trim() === '') continue;
      tokens.push([index + 1, token.startIndex + 1, value, token.scopes[token.scopes.length - 1]]);
    }
    state = result.ruleStack;
  });
  return tokens;
}

/** The tokens a snapshot records: keywords, strings, comments, numbers and constants. */
const SNAPSHOT_SCOPES = /^(keyword|string|comment|constant|punctuation\.definition\.(string|comment))/;

function snapshotLines(tokens) {
  return tokens
    .filter(([, , , scope]) => SNAPSHOT_SCOPES.test(scope))
    .map(([line, column, text, scope]) => `${line}:${column} ${JSON.stringify(text)} ${scope}`);
}

function exampleFiles() {
  const examples = path.join(repositoryDir, 'examples');
  return fs.readdirSync(examples).filter((f) => f.endsWith('.orch')).sort()
    .map((f) => path.join(examples, f));
}

test('every example tokenizes as its snapshot records', async () => {
  const grammar = await loadGrammar();
  const files = exampleFiles();
  assert.ok(files.length >= 3, `examples found: ${files}`);
  for (const file of files) {
    const lines = snapshotLines(tokenize(grammar, fs.readFileSync(file, 'utf8')));
    const snapshot = path.join(snapshotDir, path.basename(file, '.orch') + '.snap');
    if (process.env.UPDATE_SNAPSHOTS) {
      fs.writeFileSync(snapshot, lines.join('\n') + '\n');
      continue;
    }
    assert.ok(fs.existsSync(snapshot), `no snapshot for ${file}: run with UPDATE_SNAPSHOTS=1`);
    const expected = fs.readFileSync(snapshot, 'utf8').trimEnd().split('\n');
    assert.deepStrictEqual(lines, expected, `scopes of ${path.basename(file)} changed`);
  }
});

test('every kind of token gets its scope', async () => {
  const grammar = await loadGrammar();
  const source = [
    'pipeline demo;  // a comment',
    'param limit: Size = 512MiB;',
    'source docs = files("in/*.pdf\\n\\u00e9\\q") as Doc;',
    'call ocr = ocr.tesseract(lang: "eng") { batch: 8, timeout: 1.5s, retries: 2, require_gpu: true };',
    '/* a block',
    '   comment */ pages = expand(pdf.pages(docs)) as Page;',
    'n: Doc<Int> = list.len(reduce(filter(pages, math.gt(-2.5e3, 1_000))));',
    'sink jsonl(path: "o.jsonl", record: { n: broadcast(n, pages) });',
    'm = if n > 2 and not (n == 3) then string(n * 2) else coalesce(x, y);',
    'operator my.score(text: Text, const k: Int = 2) -> Float = python("m.py", class: "S");',
    'operator up(text: String) -> String = exec("bin/up", args: ["-v"]);',
  ].join('\n');
  const scopeOf = new Map();
  for (const [line, column, text, scope] of tokenize(grammar, source)) {
    scopeOf.set(`${line}:${text}`, scope);
  }
  const expectations = {
    '1:pipeline': 'keyword.other.pipeline.orch',
    '1:demo': 'entity.name.namespace.pipeline.orch',
    '1://': 'punctuation.definition.comment.orch',
    '1: a comment': 'comment.line.double-slash.orch',
    '2:param': 'keyword.other.param.orch',
    '2:512MiB': 'constant.numeric.size.orch',
    '2:Size': 'entity.name.type.orch',
    '3:source': 'keyword.other.source.orch',
    '3:in/*.pdf': 'string.quoted.double.orch',
    '3:\\n': 'constant.character.escape.orch',
    '3:\\u00e9': 'constant.character.escape.orch',
    '3:\\q': 'invalid.illegal.escape.orch',
    '3:as': 'keyword.other.as.orch',
    '3:Doc': 'entity.name.type.domain.orch',
    '3:files': 'entity.name.function.orch',
    '4:call': 'keyword.other.call.orch',
    '4:ocr.tesseract': 'entity.name.function.orch',
    '4:8': 'constant.numeric.integer.orch',
    '4:1.5s': 'constant.numeric.duration.orch',
    '4:batch': 'variable.parameter.orch',
    '4:true': 'constant.language.boolean.orch',
    '5:/*': 'punctuation.definition.comment.begin.orch',
    '6:*/': 'punctuation.definition.comment.end.orch',
    '6:expand': 'keyword.control.structural.orch',
    '7:n': 'variable.other.definition.orch',
    '7:reduce': 'keyword.control.structural.orch',
    '7:filter': 'keyword.control.structural.orch',
    '7:-2.5e3': 'constant.numeric.float.orch',
    '7:1_000': 'constant.numeric.integer.orch',
    '8:sink': 'keyword.other.sink.orch',
    '8:broadcast': 'keyword.control.structural.orch',
    '9:if': 'keyword.operator.logical.orch',
    '9:and': 'keyword.operator.logical.orch',
    '9:not': 'keyword.operator.logical.orch',
    '9:then': 'keyword.operator.logical.orch',
    '9:else': 'keyword.operator.logical.orch',
    '9:string': 'support.function.builtin.orch',
    '9:coalesce': 'support.function.builtin.orch',
    '10:operator': 'keyword.other.operator.orch',
    '10:my.score': 'entity.name.function.declaration.orch',
    '10:const': 'storage.modifier.const.orch',
    '10:->': 'punctuation.separator.result.orch',
    '10:python': 'support.function.runner.orch',
    '11:exec': 'support.function.runner.orch',
    '11:[': 'punctuation.section.brackets.orch',
    '9:==': 'keyword.operator.orch',
    '9:*': 'keyword.operator.orch',
  };
  for (const [key, scope] of Object.entries(expectations)) {
    assert.strictEqual(scopeOf.get(key), scope, `scope of ${key}`);
  }
});
