"""A scripted LSP client: starts orch-lsp, speaks JSON-RPC over its stdio, and checks the
answers an editor relies on. Exits 1 naming every check that failed."""
import json
import os
import subprocess
import sys

BIN = os.environ["ORCH_BIN"]
SOURCE_DIR = os.environ["ORCH_SOURCE_DIR"]
failures = []


def check(description, condition, detail=""):
    print(("ok: " if condition else "FAIL: ") + description + ("" if condition else f" ({detail})"))
    if not condition:
        failures.append(description)


class Client:
    def __init__(self):
        self.process = subprocess.Popen([f"{BIN}/orch-lsp", "--stdio"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self.next_id = 0
        self.notifications = []

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send_raw(self, data):
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def receive(self):
        length = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise EOFError("orch-lsp closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id:
                return message
            self.notifications.append(message)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self):
        """The next publishDiagnostics notification."""
        while True:
            pending = [n for n in self.notifications if n.get("method") == "textDocument/publishDiagnostics"]
            if pending:
                self.notifications.remove(pending[0])
                return pending[0]["params"]
            self.notifications.append(self.receive())


URI = "file:///work/pages.orch"
BROKEN = """pipeline pages;
param dpi: Int = 150;
source docs = files("in/*.pdf") as Doc;
call ocr = ocr.tesseract(lang: "eng") { batch: 8 };
pages = expand(pdf.pages(docs)) as Page;
texts = ocr(pdf.render(pages, dpi: dpi));
grouped = reduce(textz);
sink jsonl(path: "out.jsonl", record: { path: docs.path, text: text.join(grouped) });
"""
FIXED = BROKEN.replace("reduce(textz)", "reduce(texts)")


def position_of(text, needle, occurrence=0, offset=0):
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)}


client = Client()
answer = client.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}})
check("a request before initialize is refused", answer.get("error", {}).get("code") == -32002, answer)
answer = client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
capabilities = answer["result"]["capabilities"]
check("initialize announces hover, definition, symbols, formatting, completion",
      all(capabilities.get(k) for k in ("hoverProvider", "definitionProvider", "documentSymbolProvider",
                                        "documentFormattingProvider", "completionProvider")), capabilities)
client.notify("initialized", {})

# Diagnostics: the same message as orchc, on the exact range of `textz` (line 7, columns 17-22).
client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "orch", "version": 1, "text": BROKEN}})
published = client.diagnostics()
errors = [d for d in published["diagnostics"] if d["severity"] == 1]
check("didOpen of a file with an error publishes it", len(errors) == 1, published)
if errors:
    check("the diagnostic's range is exactly the undefined name",
          errors[0]["range"] == {"start": {"line": 6, "character": 17}, "end": {"line": 6, "character": 22}}, errors[0]["range"])
    broken_path = "/tmp/orch-lsp-test-broken.orch"
    with open(broken_path, "w") as f:
        f.write(BROKEN)
    orchc = subprocess.run([f"{BIN}/orchc", "--check", broken_path], capture_output=True, text=True)
    check("the message is the one orchc prints", f"7:18: error: {errors[0]['message']}" in orchc.stderr,
          (errors[0]["message"], orchc.stderr))

# The file is broken: hover and definition still work on what parsed.
answer = client.request("textDocument/definition", {"textDocument": {"uri": URI}, "position": position_of(BROKEN, "ocr(pdf", offset=1)})
check("go to definition works in a file with errors (a Call)",
      answer["result"] and answer["result"]["range"]["start"] == {"line": 3, "character": 5}, answer)

client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": FIXED}]})
published = client.diagnostics()
check("didChange that fixes it publishes no diagnostics", published["diagnostics"] == [] and published["version"] == 2, published)

hover = lambda needle, occurrence=0, offset=0: client.request(
    "textDocument/hover", {"textDocument": {"uri": URI}, "position": position_of(FIXED, needle, occurrence, offset)})["result"]
value = hover("texts", 1, 2)
check("hover on a value shows its type in its domain", value and "texts: Page<Text>" in value["contents"]["value"], value)
check("hover's range is the name", value and value["range"]["start"] == position_of(FIXED, "texts", 1), value)
op = hover("pdf.render", 0, 5)
check("hover on an operator shows its signature", op and "pdf.render(page: PdfPage, dpi: Int = 150) -> Image" in op["contents"]["value"], op)
check("hover on an operator shows its doc", op and "render" in op["contents"]["value"].split("```")[-1].lower(), op)
domain = hover("as Page", 0, 4)
check("hover on a domain shows its parent", domain and "nested in `Doc`" in domain["contents"]["value"], domain)
option = hover("batch")
check("hover on a Call option explains it", option and "batch: Int" in option["contents"]["value"], option)
param = hover("dpi", 2)
argument = hover("dpi", 1)
check("hover on an argument name shows the parameter", argument and "dpi: Int = 150" in argument["contents"]["value"] and "pdf.render" in argument["contents"]["value"], argument)
check("hover on a param shows its type", param and "dpi: Int = 150" in param["contents"]["value"] and "param" in param["contents"]["value"], param)

definition = lambda needle, occurrence=0, offset=0: client.request(
    "textDocument/definition", {"textDocument": {"uri": URI}, "position": position_of(FIXED, needle, occurrence, offset)})["result"]
target = definition("pages, dpi")
check("definition of a value is its binding", target and target["range"]["start"] == {"line": 4, "character": 0}, target)
target = definition("docs.path")
check("definition of a source", target and target["range"]["start"] == {"line": 2, "character": 7}, target)
target = definition("dpi)", 0)
check("definition of a param", target and target["range"]["start"] == {"line": 1, "character": 6}, target)
target = definition("Page;", 0)
check("definition of a domain is the expand that opens it", target and target["range"]["start"] == {"line": 4, "character": 35}, target)
check("an operator has no definition in the file", definition("pdf.pages") is None)

symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})["result"]
names = [(s["name"], s["kind"]) for s in symbols]
expected = [("pages", 2), ("dpi", 14), ("docs", 24), ("Doc", 3), ("ocr", 12), ("pages", 13), ("Page", 3),
            ("texts", 13), ("grouped", 13), ("sink jsonl", 6)]
check("documentSymbol lists pipeline, params, sources, Calls, bindings, sinks and domains",
      sorted(names) == sorted(expected), names)
check("symbols carry types", any(s["name"] == "grouped" and s.get("detail") == "Doc<List<Text>>" for s in symbols), symbols)

messy = FIXED.replace("call ocr = ", "call   ocr=").replace(", dpi: dpi", ",dpi :dpi ,")
client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [{"text": messy}]})
client.diagnostics()
edits = client.request("textDocument/formatting", {"textDocument": {"uri": URI}, "options": {"tabSize": 4, "insertSpaces": True}})["result"]
formatted = subprocess.run([f"{BIN}/orchc", "fmt", "-"], input=messy, capture_output=True, text=True).stdout
check("formatting returns one edit with what orchc fmt prints", len(edits) == 1 and edits[0]["newText"] == formatted, edits)
check("formatting's edit covers the whole document",
      edits and edits[0]["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 8, "character": 0}}, edits)
check("the formatted text is the canonical one", formatted == FIXED, formatted)

def completion(text, needle, offset):
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 4}, "contentChanges": [{"text": text}]})
    client.diagnostics()
    return client.request("textDocument/completion", {"textDocument": {"uri": URI}, "position": position_of(text, needle, 0, offset)})["result"]["items"]

partial = FIXED.replace("sink jsonl", "extra = pdf.te\nsink jsonl")
items = completion(partial, "pdf.te\n", 6)
labels = [i["label"] for i in items]
check("completion of a dotted prefix offers those operators", "pdf.text" in labels and all(l.startswith("pdf.te") for l in labels), labels)
check("the completion edit replaces the whole dotted prefix",
      items and items[0]["textEdit"]["range"]["start"]["character"] == len("extra = "), items[:1])
partial = FIXED.replace("sink jsonl", "extra = o\nsink jsonl")
labels = [i["label"] for i in completion(partial, "= o\n", 3)]
check("completion offers Call names and operators", "ocr" in labels and "ocr.tesseract" in labels, labels)
partial = FIXED.replace("sink jsonl", "extra = l\nsink jsonl")
labels = [i["label"] for i in completion(partial, "= l\n", 1)]
check("completion offers every builtin function starting so (len came from Builtins.cpp)", "len" in labels, labels)
partial = FIXED.replace("sink jsonl", "extra = f\nsink jsonl")
labels = [i["label"] for i in completion(partial, "= f\n", 1)]
check("completion offers format, float, filter and false (builtins and the grammar's keywords)",
      all(word in labels for word in ("format", "float", "filter", "false")), labels)
partial = FIXED.replace("{ batch: 8 }", "{ batch: 8, re }")
labels = [i["label"] for i in completion(partial, "re }", 2)]
check("completion inside a Call's options offers option keys", "replicas" in labels and "retries" in labels and "recovery" in labels and "pdf.text" not in labels, labels)

# An operator the document declares: hover shows its declaration, completion offers it.
import os
script = os.path.join(os.environ["ORCH_SOURCE_DIR"], "examples/models/quality.py")
declared = FIXED.replace("sink jsonl", 'operator quality.score(text: Text, const min_words: Int = 20) -> Float\n'
                         '    = python("%s", class: "Scorer");\nscores = quality.score(texts, min_words: 5);\n'
                         'sink jsonl' % script)
client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 5}, "contentChanges": [{"text": declared}]})
published = client.diagnostics()
check("a document with an operator declaration has no errors",
      [d for d in published["diagnostics"] if d["severity"] == 1] == [], published)
use = client.request("textDocument/hover", {"textDocument": {"uri": URI},
                                            "position": position_of(declared, "quality.score", 1, 3)})["result"]
check("hover on a declared operator's use shows its signature",
      use and "quality.score(text: Text, min_words: Int = 20) -> Float" in use["contents"]["value"], use)
check("... and where it runs", use and "class Scorer of " + script in use["contents"]["value"], use)
declaration = client.request("textDocument/hover", {"textDocument": {"uri": URI},
                                                    "position": position_of(declared, "quality.score", 0, 3)})["result"]
check("hover on the declaration shows it too", declaration and "quality.score(" in declaration["contents"]["value"], declaration)
labels = [i["label"] for i in completion(declared.replace("scores = quality.score(", "more = quality.sc\nscores = quality.score("), "quality.sc\n", 10)]
check("completion offers a declared operator", labels == ["quality.score"], labels)

# Broken variants (cut short, characters dropped or doubled): every request is answered.
import random
rng = random.Random(7)
answered = 0
for variant in range(80):
    text = FIXED
    for _ in range(rng.randint(1, 4)):
        if not text:
            break
        at = rng.randrange(len(text))
        choice = rng.randrange(3)
        text = text[:at] if choice == 0 else (text[:at] + text[at + 1:] if choice == 1 else text[:at] + text[at] * 2 + text[at:])
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 100 + variant}, "contentChanges": [{"text": text}]})
    client.diagnostics()
    lines = text.split("\n")
    line = rng.randrange(len(lines))
    position = {"line": line, "character": rng.randint(0, len(lines[line]))}
    for method in ("textDocument/hover", "textDocument/definition", "textDocument/documentSymbol",
                   "textDocument/completion", "textDocument/formatting"):
        answer = client.request(method, {"textDocument": {"uri": URI}, "position": position, "options": {}})
        answered += "result" in answer or "error" in answer
check("every request on 80 broken variants is answered", answered == 80 * 5, answered)

# Robustness: garbage is answered with an error and the server keeps going.
client.send_raw(b"Content-Length: 9\r\n\r\nnot json!")
answer = client.receive()
check("a message that is not JSON gets a parse error", answer.get("error", {}).get("code") == -32700, answer)
answer = client.request("textDocument/unknownThing", {})
check("an unknown method gets MethodNotFound", answer.get("error", {}).get("code") == -32601, answer)
answer = client.request("textDocument/hover", {"textDocument": {"uri": "file:///not/open.orch"}, "position": {"line": 0, "character": 0}})
check("a request on a document that is not open is an error", "error" in answer, answer)

answer = client.request("shutdown", None)
check("shutdown answers null", "result" in answer and answer["result"] is None, answer)
client.notify("exit", None)
check("exit after shutdown ends the server with status 0", client.process.wait(timeout=10) == 0)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
