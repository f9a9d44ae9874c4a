// Signatures of the standard library and test operators. Implementations live in stdlib/ and
// runtime/; this table is what both the compiler and the workers agree on.
#include "orch/plan/CallOptions.h"
#include "orch/plan/OperatorCatalog.h"

namespace orch::plan {
namespace {

Type scalar(TypeKind kind) { return Type::scalar(kind); }
Type listOf(TypeKind kind) { return Type::list(scalar(kind)); }

OperatorParam input(std::string name, Type type, std::string doc) {
  return OperatorParam{std::move(name), ParamRole::Input, std::move(type),
                       std::nullopt,    std::move(doc),   false};
}

OperatorParam constant(std::string name, Type type, std::optional<StaticValue> defaultValue,
                       std::string doc) {
  return OperatorParam{std::move(name),         ParamRole::Static, std::move(type),
                       std::move(defaultValue), std::move(doc),    false};
}

/// A constant that may also be given per row: batches then hold grains of one value each.
OperatorParam perRowConstant(std::string name, Type type, std::optional<StaticValue> defaultValue,
                             std::string doc) {
  OperatorParam param =
      constant(std::move(name), std::move(type), std::move(defaultValue), std::move(doc));
  param.perRow = true;
  return param;
}

OperatorSignature source(std::string name, std::vector<OperatorParam> params, Type row,
                         std::string doc, std::string failures) {
  OperatorSignature signature;
  signature.name = std::move(name);
  signature.kind = OperatorKind::Source;
  signature.params = std::move(params);
  signature.result = std::move(row);
  signature.doc = std::move(doc);
  signature.failures = std::move(failures);
  return signature;
}

OperatorSignature transform(std::string name, std::vector<OperatorParam> params, Type result,
                            std::string doc, std::string failures, bool gpu = false) {
  OperatorSignature signature;
  signature.name = std::move(name);
  signature.kind = OperatorKind::Transform;
  signature.params = std::move(params);
  signature.result = std::move(result);
  signature.gpu = gpu;
  signature.options = transformOptionNames(gpu);
  signature.doc = std::move(doc);
  signature.failures = std::move(failures);
  return signature;
}

OperatorSignature sink(std::string name, std::string target, std::vector<OperatorParam> params,
                       std::string doc, std::string failures) {
  OperatorSignature signature;
  signature.name = std::move(name);
  signature.target = std::move(target);
  signature.kind = OperatorKind::Sink;
  signature.params = std::move(params);
  signature.doc = std::move(doc);
  signature.failures = std::move(failures);
  return signature;
}

void addSources(OperatorCatalog &catalog) {
  const Type string = scalar(TypeKind::String);
  catalog.add(source("files",
                     {constant("glob", string, std::nullopt, "a path pattern"),
                      constant("optional", scalar(TypeKind::Bool), StaticValue(false),
                               "whether matching no file is an empty source")},
                     scalar(TypeKind::File),
                     "one row per file matching the pattern, sorted by path",
                     "a pattern that matches no file stops the run before anything is written, "
                     "unless `optional: true`"));
  catalog.add(source("jsonl", {constant("path", string, std::nullopt, "a JSON Lines file")},
                     scalar(TypeKind::Json), "one row per line of a JSON Lines manifest",
                     "a malformed line (or one nested deeper than 512 levels) is a failed row with "
                     "its line number; a missing or "
                     "unreadable file, or a directory, stops the run with the cause"));
  catalog.add(source(
      "webdataset",
      {constant("glob", string, std::nullopt, "the shards, a path pattern (\"out/*.tar\")")},
      scalar(TypeKind::Json),
      "one row per sample of WebDataset tar shards, in path order: a record with `__key__`, "
      "`__shard__` (its shard's path) and one field per member (`json` members parsed, `txt` "
      "ones as strings, the rest as Bytes)",
      "a pattern that matches nothing stops the run; a shard that cannot be read (or a member "
      "whose header claims more bytes than the shard holds) is a failed row, and the next "
      "shard is read; a `json` member that is not JSON, or nests deeper than 512 levels, fails "
      "its sample"));
  catalog.add(source("lines", {constant("path", string, std::nullopt, "a text file")}, string,
                     "one row per line of a text file",
                     "a missing or unreadable file, or a directory, stops the run with the "
                     "cause"));
}

/// Cheap row-wise functions: their Calls take this many rows per batch unless told otherwise.
constexpr int64_t kRowWiseBatch = 256;

OperatorSignature rowWise(OperatorSignature signature) {
  signature.defaultBatch = kRowWiseBatch;
  return signature;
}

void addDocumentOperators(OperatorCatalog &catalog) {
  const Type integer = scalar(TypeKind::Int);
  const Type string = scalar(TypeKind::String);
  catalog.add(rowWise(transform(
      "file", {input("path", string, "a file's path (relative paths: to the worker's directory)")},
      scalar(TypeKind::File),
      "the File at a path, as the files source gives it ({path, name, stem, size}): how a "
      "manifest's paths become documents, `pdf.pages(file(rows.path))`",
      "a path that does not exist, is not a regular file or cannot be read is a RecordFailure "
      "naming it")));
  catalog.add(transform("pdf.pages",
                        {input("file", scalar(TypeKind::File), "a PDF file"),
                         constant("dpi", integer, int64_t(150), "resolution for later rendering")},
                        listOf(TypeKind::PdfPage), "the pages of a PDF, in order",
                        "a corrupt or encrypted PDF is a RecordFailure"));
  catalog.add(transform("pdf.render",
                        {input("page", scalar(TypeKind::PdfPage), "a page"),
                         constant("dpi", integer, int64_t(150), "render resolution")},
                        scalar(TypeKind::Image), "renders a page to an RGB image",
                        "a page that cannot be rendered is a RecordFailure"));
  catalog.add(transform(
      "pdf.text",
      {input("page", scalar(TypeKind::PdfPage), "a page"),
       constant("mode", string, std::string("layout"),
                "\"layout\": reading order, blocks and columns one after the other, no padding "
                "(as pdftotext without flags; the default, for training data); \"raw\": the "
                "order of the content stream (pdftotext -raw); \"physical\": lines as they sit "
                "on the page, padded with spaces (pdftotext -layout)")},
      scalar(TypeKind::Text), "the text layer of a page", "none"));
  catalog.add(
      transform("ocr.tesseract",
                {input("image", scalar(TypeKind::Image), "a page image"),
                 perRowConstant("lang", string, std::string("eng"),
                                "tesseract language (\"eng\", \"deu+eng\"); per row, a manifest's "
                                "`lang: rows.lang as String` OCRs each document in its own")},
                scalar(TypeKind::Text),
                "OCR with tesseract, reading the page's layout (columns one after the other) as "
                "tesseract's command line does; engine loaded once per replica",
                "an image tesseract cannot read is a RecordFailure"));
}

void addTextListMathOperators(OperatorCatalog &catalog) {
  const Type string = scalar(TypeKind::String);
  const Type text = scalar(TypeKind::Text);
  const Type real = scalar(TypeKind::Float);
  const Type boolean = scalar(TypeKind::Bool);
  // Each is cheap and row-wise: batched by kRowWiseBatch by default.
  auto add = [&](OperatorSignature signature) { catalog.add(rowWise(std::move(signature))); };
  add(transform("text.join",
                {input("parts", Type::list(string), "the texts to join"),
                 constant("separator", string, std::string("\n"), "placed between parts")},
                text, "joins texts in order", "none"));
  add(transform("text.nonempty", {input("text", string, "a text")}, boolean,
                "whether a text has any non-whitespace character", "none"));
  add(transform("text.len", {input("text", string, "a text")}, scalar(TypeKind::Int),
                "length in Unicode code points", "none"));
  add(transform("text.normalize", {input("text", string, "a text")}, text,
                "Unicode NFC, collapsed whitespace, trimmed", "none"));
  add(transform("list.len", {input("list", Type::list(Type::var()), "a list")},
                scalar(TypeKind::Int), "number of elements", "none"));
  add(transform("list.mean", {input("list", Type::list(real), "numbers")}, real, "arithmetic mean",
                "an empty list is a RecordFailure"));
  add(transform("list.max", {input("list", Type::list(real), "numbers")}, real, "largest element",
                "an empty list is a RecordFailure"));
  add(transform("math.gt", {input("a", real, "left"), input("b", real, "right")}, boolean, "a > b",
                "NaN on either side is a RecordFailure, as in the expression a > b"));
  add(transform("math.lt", {input("a", real, "left"), input("b", real, "right")}, boolean, "a < b",
                "NaN on either side is a RecordFailure, as in the expression a < b"));
}

/// Requests open at once per replica of an llm.* Call unless `in_flight` says otherwise.
constexpr int64_t kModelInFlight = 16;

/// The settings every llm.* operator takes: which server, which model, how requests are
/// retried and limited (docs/models.md).
std::vector<OperatorParam> modelServiceParams() {
  const Type string = scalar(TypeKind::String);
  return {
      constant("model", string, std::nullopt, "the model's name, as the server serves it"),
      constant("endpoint", string, std::string(""),
               "the server's OpenAI-compatible base URL (\"http://127.0.0.1:8000/v1\"); several, "
               "separated by commas, share the requests (fewest open first); \"\": "
               "$ORCH_LLM_ENDPOINT"),
      constant("api_key_env", string, std::string("OPENAI_API_KEY"),
               "the environment variable holding the API key (sent as a Bearer token; never in "
               "the plan, the logs or a message); none set: no key"),
      constant("api_key_file", string, std::string(""),
               "a file whose first line is the API key (instead of api_key_env)"),
      constant("max_retries", scalar(TypeKind::Int), int64_t(5),
               "retries of one request after a 429 or 503 (after its Retry-After), a timeout, a "
               "dropped connection or another 5xx (after an exponential backoff with jitter, "
               "from 0.5 s)"),
      constant("request_timeout", scalar(TypeKind::Duration), Duration{300'000'000'000},
               "how long one attempt may take"),
      constant("requests_per_second", scalar(TypeKind::Float), 0.0,
               "the most requests the Call starts per second, over its replicas (0: no limit)"),
      constant("tokens_per_minute", scalar(TypeKind::Int), int64_t(0),
               "the most tokens the Call spends per minute, over its replicas: a request is "
               "charged its estimate (prompt bytes / 4 + max_tokens) until the server counts it "
               "(0: no limit)"),
  };
}

std::vector<OperatorParam> completionParams() {
  const Type string = scalar(TypeKind::String);
  return {
      constant("system", string, std::string(""), "a system message (\"\": none)"),
      constant("max_tokens", scalar(TypeKind::Int), int64_t(512), "the most tokens to generate"),
      constant("temperature", scalar(TypeKind::Float), 0.0, "sampling temperature"),
      constant("seed", scalar(TypeKind::Int), int64_t(-1),
               "the sampling seed sent to the server (-1: none)"),
  };
}

OperatorSignature modelOperator(std::string name, std::vector<OperatorParam> params, Type result,
                                std::string doc, int64_t defaultBatch = 1) {
  for (OperatorParam &param : modelServiceParams())
    params.push_back(std::move(param));
  OperatorSignature signature = transform(
      std::move(name), std::move(params), std::move(result), std::move(doc),
      "a request the server refuses (a 4xx such as a context too long), a reply that is not JSON "
      "or lacks the answer, or one that still fails after max_retries (or past the Call's "
      "timeout) is a RecordFailure of its row with the server's message; the other rows of "
      "its batch are not touched. No endpoint, or an unreadable api_key_file, stops the run "
      "before it starts");
  signature.options = transformOptionNames(false, true);
  signature.defaultInFlight = kModelInFlight;
  signature.defaultBatch = defaultBatch;
  return signature;
}

void addModelOperators(OperatorCatalog &catalog) {
  const Type string = scalar(TypeKind::String);
  const Type text = scalar(TypeKind::Text);
  std::vector<OperatorParam> chat{input("prompt", text, "the user message")};
  for (OperatorParam &param : completionParams())
    chat.push_back(std::move(param));
  catalog.add(modelOperator(
      "llm.chat", chat, text,
      "the model's answer to the prompt: a chat completion (POST /chat/completions) from an "
      "OpenAI-compatible server (vLLM, SGLang, TGI, Ollama, llama.cpp); one request per row, "
      "up to `in_flight` batches open per replica"));
  std::vector<OperatorParam> structured = chat;
  structured.push_back(constant("json_schema", string, std::nullopt,
                                "the JSON Schema the answer must match (a JSON object as a "
                                "String), sent as the request's response_format"));
  catalog.add(modelOperator(
      "llm.json", std::move(structured), scalar(TypeKind::Json),
      "the model's answer as JSON: a chat completion with a json_schema response_format; an "
      "answer that is not JSON or does not match the schema (type, properties, required, "
      "additionalProperties, items, enum, const, anyOf and the min/max bounds are checked) "
      "fails its row"));
  std::vector<OperatorParam> vision{
      input("image", scalar(TypeKind::Image), "the image, e.g. a rendered page"),
      perRowConstant("prompt", string, std::nullopt, "the instruction that goes with the image"),
      constant("image_format", string, std::string("png"),
               "how the image is sent, as a data URL: \"png\" (lossless) or \"jpeg\"")};
  for (OperatorParam &param : completionParams())
    vision.push_back(std::move(param));
  catalog.add(modelOperator(
      "llm.vision", std::move(vision), text,
      "a vision-language model's answer about an image (VLM OCR: `llm.vision(pdf.render(page), "
      "prompt: \"Transcribe this page as Markdown.\")`): a chat completion whose user message "
      "holds the prompt and the image as a data URL"));
  catalog.add(modelOperator(
      "llm.embed",
      {input("text", text, "the text to embed"),
       constant("dimensions", scalar(TypeKind::Int), int64_t(0),
                "the vector's length, for models that can shorten it (0: the model's own)")},
      listOf(TypeKind::Float),
      "the text's embedding vector (POST /embeddings); one request per batch, all its texts in "
      "`input` (a request the server refuses is sent again one text at a time, so that only the "
      "refused text fails)",
      32));
}

void addDedupOperators(OperatorCatalog &catalog) {
  const Type any = Type::var();
  const Type integer = scalar(TypeKind::Int);
  const Type string = scalar(TypeKind::String);
  const auto order = [&] {
    return constant("order", string, std::string("source"),
                    "\"source\": the first in source order (source row, then ordinal path) "
                    "survives, whatever the timing (rows wait until every earlier one is "
                    "decided); \"arrival\": the first to arrive survives, without waiting (not "
                    "deterministic)");
  };
  const auto shape = [&] {
    return std::vector<OperatorParam>{
        constant("ngram", integer, int64_t(5), "words per shingle"),
        constant("permutations", integer, int64_t(128), "minima per signature (1 to 1024)"),
        constant("seed", integer, int64_t(1), "seed of the permutations")};
  };
  OperatorSignature exact = transform(
      "dedup.exact",
      {input("value", any, "the key: any value, e.g. a normalised text or a hash"), order()}, any,
      "the value where no earlier entity of its domain had an equal one; DROPPED where one did "
      "(a duplicate, listed in the errors journal with its survivor). Decided by the runtime "
      "itself, in source order, as values arrive: no barrier",
      "a failed or dropped value is not indexed and stays failed or dropped");
  exact.options.clear();
  exact.loweredByCompiler = true;
  catalog.add(std::move(exact));
  std::vector<OperatorParam> nearParams{
      input("text", any, "a text (Text or String)"),
      constant("threshold", scalar(TypeKind::Float), 0.8,
               "the estimated Jaccard similarity of word shingles at or above which a text is a "
               "duplicate of an earlier survivor")};
  for (OperatorParam &param : shape())
    nearParams.push_back(std::move(param));
  nearParams.push_back(
      constant("bands", integer, int64_t(16),
               "LSH bands (must divide permutations): more bands find less similar candidates"));
  nearParams.push_back(constant(
      "confirm", string, std::string("estimate"),
      "how a candidate is confirmed: \"estimate\", by the similarity its sketch estimates (64 "
      "bytes a survivor); \"exact\", by the Jaccard similarity of the shingle sets themselves "
      "(the index keeps every survivor's shingle hashes: 4 bytes a shingle)"));
  nearParams.push_back(order());
  OperatorSignature near = rowWise(transform(
      "dedup.near", std::move(nearParams), any,
      "the text where no earlier survivor of its domain is similar (MinHash signatures computed "
      "in batches, like `dedup.minhash`, with this Call's options; an LSH index of the "
      "survivors; a candidate confirmed by its estimated similarity); DROPPED where one is (a "
      "duplicate, listed in the errors journal with its survivor and similarity)",
      "a failed or dropped text is not indexed and stays failed or dropped"));
  near.loweredByCompiler = true;
  catalog.add(std::move(near));
  OperatorSignature hamming = transform(
      "dedup.hamming",
      {input("hash", string, "a 64-bit perceptual hash in hex, as image.phash gives it"),
       constant("distance", integer, int64_t(6),
                "the most bits (0 to 16) in which a hash may differ from an earlier survivor's "
                "and still be a duplicate of it"),
       order()},
      string,
      "the hash where no earlier survivor of its domain is within the Hamming distance "
      "(near-duplicate frames or images); DROPPED where one is (a duplicate, listed in the "
      "errors journal with its survivor; similarity 1 - distance / 64). Decided by the runtime "
      "in source order, like dedup.exact",
      "a hash that is not 1 to 16 hex digits is a RecordFailure");
  hamming.options.clear();
  hamming.loweredByCompiler = true;
  catalog.add(std::move(hamming));
  std::vector<OperatorParam> minhashParams{input("text", string, "a text")};
  for (OperatorParam &param : shape())
    minhashParams.push_back(std::move(param));
  minhashParams.push_back(constant("shingles", scalar(TypeKind::Bool), false,
                                   "also the shingles' hashes, sorted, after the minima (for "
                                   "dedup.near's confirm: \"exact\")"));
  catalog.add(rowWise(transform(
      "dedup.minhash", std::move(minhashParams), scalar(TypeKind::Bytes),
      "the MinHash signature of a text's word shingles (lowercased, punctuation removed), one "
      "little-endian uint32 minimum per permutation: the datasketch method",
      "none")));
}

void addMediaOperators(OperatorCatalog &catalog) {
  const Type integer = scalar(TypeKind::Int);
  const Type image = scalar(TypeKind::Image);
  catalog.add(transform("video.clips",
                        {input("video", scalar(TypeKind::File), "a video file"),
                         constant("seconds", scalar(TypeKind::Float), 2.0, "clip length")},
                        listOf(TypeKind::Clip), "consecutive clips of a video",
                        "a corrupt video is a RecordFailure"));
  catalog.add(transform("video.frames",
                        {input("clip", scalar(TypeKind::Clip), "a clip"),
                         constant("per_clip", integer, int64_t(4), "frames sampled per clip")},
                        listOf(TypeKind::Frame), "evenly spaced frames of a clip", "none"));
  catalog.add(transform(
      "video.decode", {input("frame", scalar(TypeKind::Frame), "a frame")}, image,
      "decodes a frame to an RGB image (the first frame at or after its time); a batch's frames "
      "are decoded in video and time order, so each clip's frames come out of one seek and one "
      "forward pass, as `ffmpeg -vf select` would give them",
      "an undecodable frame is a RecordFailure"));
  catalog.add(transform("image.sharpness", {input("image", image, "an image")},
                        scalar(TypeKind::Float), "variance of the Laplacian", "none", true));
  catalog.add(transform("image.resize",
                        {input("image", image, "an image"),
                         constant("width", integer, std::nullopt, "target width"),
                         constant("height", integer, std::nullopt, "target height")},
                        image, "bilinear resize", "none", true));
  catalog.add(transform("image.grayscale", {input("image", image, "an image")}, image,
                        "BT.601 luma", "none", true));
  catalog.add(transform("image.phash", {input("image", image, "an image")},
                        scalar(TypeKind::String),
                        "64-bit DCT perceptual hash as 16 hex digits (\"c3a1...\"; a string, so "
                        "that JSON readers keep every bit); compare two with image.hamming",
                        "none", true));
  catalog.add(transform(
      "image.encode",
      {input("image", image, "an image"),
       constant("format", scalar(TypeKind::String), std::string("png"),
                "\"png\" (lossless), \"jpeg\" or \"webp\""),
       constant("quality", integer, int64_t(90), "1-100, for jpeg and webp")},
      scalar(TypeKind::Bytes),
      "the image as a PNG, JPEG or WebP file (FFmpeg's encoders); a files sink writes Bytes "
      "content as they are",
      "a malformed image is a RecordFailure"));
  catalog.add(transform(
      "image.decode", {input("bytes", scalar(TypeKind::Bytes), "a PNG, JPEG or WebP file's bytes")},
      image,
      "decodes an image file's bytes (what image.encode writes, what a WebDataset shard holds) "
      "to an image: gray stays gray, everything else becomes RGB (alpha is dropped)",
      "bytes that are not a PNG, JPEG or WebP image, or a corrupt one, are a RecordFailure"));
  catalog.add(rowWise(transform(
      "image.hamming",
      {input("a", scalar(TypeKind::String), "a hash from image.phash"),
       input("b", scalar(TypeKind::String), "another")},
      integer,
      "the number of bits in which two perceptual hashes differ (0-64): near-duplicate images "
      "differ in a few (10 or fewer is a common threshold)",
      "a value that is not 16 hex digits is a RecordFailure")));
  catalog.add(transform(
      "image.tensor",
      {input("image", image, "an image"), constant("width", integer, std::nullopt, "tensor width"),
       constant("height", integer, std::nullopt, "tensor height")},
      Type::record({{"channels", integer},
                    {"height", integer},
                    {"width", integer},
                    {"data", scalar(TypeKind::Bytes)}}),
      "bilinear resize to width x height, then (value / 255 - mean) / std per channel "
      "(ImageNet's mean and std; their averages for gray) into a float32 CHW tensor "
      "(`data`, little-endian)",
      "none", true));
  catalog.add(transform("image.motion", {input("frames", Type::list(image), "a clip's frames")},
                        scalar(TypeKind::Float),
                        "motion score: the mean over consecutive frames of their mean absolute "
                        "gray-level difference (0 to 255; 0 for fewer than two frames)",
                        "frames of different sizes are a RecordFailure", true));
}

void addTestOperators(OperatorCatalog &catalog) {
  const Type any = Type::var();
  const Type integer = scalar(TypeKind::Int);
  const Type real = scalar(TypeKind::Float);
  const Type string = scalar(TypeKind::String);
  catalog.add(transform(
      "test.split",
      {input("value", any, "any value"),
       constant("n", integer, int64_t(-1),
                "children per parent; -1 reads the count from the value"),
       constant("field", string, std::string(), "with n = -1: the Json field holding the count")},
      listOf(TypeKind::Int), "a list of n ordinals, for expand",
      "a missing count is a RecordFailure"));
  catalog.add(transform("test.sleep",
                        {input("value", any, "passed through"),
                         constant("ms", real, 0.0, "sleep per grain"),
                         constant("per_batch_ms", real, 0.0, "sleep per batch")},
                        any, "sleeps without using CPU, then passes values through", "none"));
  catalog.add(transform(
      "test.fail",
      {input("value", any, "passed through"),
       constant("kind", string, std::string("record"),
                "\"record\", \"group\", \"batch\", \"hang\" (the batch sleeps an hour) or "
                "\"crash\" (the process gets SIGSEGV, as a native library's bug would give it)"),
       constant("ordinals", string, std::string(), "comma-separated child ordinals that fail"),
       constant("attempts", integer, int64_t(-1), "fail only the first n attempts; -1 always"),
       constant("when", string, std::string(),
                "if set, fail only rows whose record value has this Bool field true"),
       constant("ms", real, 0.0, "sleep per grain before answering (a simulated kernel)"),
       constant("per_batch_ms", real, 0.0, "sleep per batch before answering"),
       constant("marks", string, std::string(),
                "if set, a directory where attempts are counted, so that worker processes "
                "agree")},
      any, "fails chosen grains, for tests", "the failures it is told to inject"));
  catalog.add(transform("test.identity", {input("value", any, "passed through")}, any,
                        "passes values through", "none"));
  catalog.add(transform("test.tag",
                        {input("value", any, "tagged"),
                         perRowConstant("tag", scalar(TypeKind::String), std::string(""),
                                        "the tag, constant or per row")},
                        scalar(TypeKind::String),
                        "\"TAG:VALUE\"; a batch that mixes tags is an operator error (a check that "
                        "per-row constants batch by value)",
                        "a batch with more than one tag fails as a whole"));
  catalog.add(transform("test.blob",
                        {input("value", any, "what the bytes are made from"),
                         constant("bytes", integer, int64_t(1 << 20), "the value's size")},
                        scalar(TypeKind::Bytes),
                        "a value of the given size made from its input (a stand-in for a "
                        "rendered page), for memory tests",
                        "none"));
  catalog.add(transform(
      "test.checksum",
      {input("value", any, "any value"),
       constant("ms", real, 0.0, "sleep per grain before answering (a simulated OCR kernel)")},
      integer,
      "a 64-bit FNV-1a hash of the value's text or bytes (a small result "
      "from a big input, for memory tests)",
      "none"));
}

void addSinks(OperatorCatalog &catalog) {
  const Type string = scalar(TypeKind::String);
  const auto order = [&] {
    return constant("order", string, std::string("finish"),
                    "\"finish\": each source row's rows as soon as it finishes; \"source\": in "
                    "source order, through a bounded reorder buffer (docs/outputs.md)");
  };
  catalog.add(sink("jsonl", "{path}",
                   {constant("path", string, std::nullopt, "output file"),
                    input("record", Type::var(), "the row to write"), order(),
                    constant("nonfinite", string, std::string("fail"),
                             "a NaN or infinite number, which JSON cannot hold: \"fail\" fails "
                             "its source row, \"null\" writes null")},
                   "appends one JSON line per row as soon as its source row finishes",
                   "an unwritable path fails the run at start; a row that cannot be written "
                   "(disk full, a NaN or infinity) fails its source row, whose rows are taken back "
                   "from every sink"));
  catalog.add(sink(
      "webdataset", "{dir}/shard-*.tar",
      {constant("dir", string, std::nullopt, "output directory"),
       input("sample", Type::var(),
             "a record: `__key__` (the sample's key; default its number) and one field per "
             "member, named by its extension (png: Bytes, json: a record, txt: a string)"),
       constant("shard_samples", scalar(TypeKind::Int), int64_t(1000),
                "samples per shard at most (0: no limit)"),
       constant("shard_bytes", scalar(TypeKind::Int), int64_t(0),
                "bytes per shard at most (0: no limit)"),
       order()},
      "writes WebDataset tar shards shard-000000.tar, ...: members KEY.FIELD (Bytes as they "
      "are, strings as UTF-8, anything else as JSON); a shard is renamed into place when full "
      "(at the first commit after it reaches either limit: a source row's samples stay in one "
      "shard) or when the run ends; a fresh run removes the directory's earlier shards",
      "an unwritable directory fails the run at start; a sample that is not a record or has no "
      "member fails its source row; a run that was stopped (killed, interrupted, a full disk) "
      "resumes into its last shard, and `--retry-failed` cuts the retried rows' samples out of "
      "their shards first"));
  catalog.add(sink("files", "{dir}/*{ext}",
                   {constant("dir", string, std::nullopt, "output directory"),
                    input("name", string, "file name (sanitized; never escapes dir)"),
                    constant("ext", string, std::string(), "extension, e.g. \".md\""),
                    input("content", Type::var(), "file contents"), order()},
                   "writes one file per row, atomically (renamed into place when its source row "
                   "commits)",
                   "an unwritable directory fails the run at start; a name too long or already "
                   "written by another row, or a full disk, fails the row's source row"));
}

OperatorCatalog buildStandardCatalog() {
  OperatorCatalog catalog;
  addSources(catalog);
  addDocumentOperators(catalog);
  addTextListMathOperators(catalog);
  addDedupOperators(catalog);
  addModelOperators(catalog);
  addMediaOperators(catalog);
  addTestOperators(catalog);
  addSinks(catalog);
  return catalog;
}

} // namespace

std::vector<std::string> transformOptionNames(bool gpu, bool concurrent) {
  std::vector<std::string> names;
  for (const CallOptionSpec &spec : callOptionSpecs())
    if ((gpu || (spec.name != "gpus" && spec.name != "require_gpu" && spec.name != "gpu_memory")) &&
        (concurrent || spec.name != "in_flight"))
      names.emplace_back(spec.name);
  return names;
}

const OperatorCatalog &standardCatalog() {
  static const OperatorCatalog catalog = buildStandardCatalog();
  return catalog;
}

} // namespace orch::plan
