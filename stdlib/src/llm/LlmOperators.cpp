// llm.chat, llm.json, llm.vision (Text/Json from a chat completion) and llm.embed (a vector per
// text) against an OpenAI-compatible server (docs/models.md). Concurrent operators: a replica
// keeps up to its Call's `in_flight` batches open, each row one request (llm.embed: one per
// batch), sent by a ServiceClient that retries each on its own; a request that cannot succeed
// fails its row with the server's message, never the batch.
#include "OperatorGroups.h"
#include "image/ImageEncoder.h"
#include "image/ImageValue.h"
#include "io/JsonValue.h"
#include "llm/JsonSchemaCheck.h"
#include "llm/ServiceClient.h"

#include <curl/curl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

namespace orch::stdlib {
namespace {

using nlohmann::json;
using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::RowsAnswer;
using runtime::RowsDone;
using runtime::ServiceUsage;
using runtime::Value;

enum class LlmKind { Chat, Json, Vision, Embed };

const char *kindName(LlmKind kind) {
  switch (kind) {
  case LlmKind::Chat:
    return "llm.chat";
  case LlmKind::Json:
    return "llm.json";
  case LlmKind::Vision:
    return "llm.vision";
  case LlmKind::Embed:
    return "llm.embed";
  }
  return "llm";
}

std::string stringOr(const OperatorConfig &config, const char *name, std::string fallback) {
  return config.constant(name) ? config.stringConstant(name) : std::move(fallback);
}

/// Endpoints from `endpoint` ("" : $ORCH_LLM_ENDPOINT), separated by commas or spaces, without a
/// trailing slash.
std::vector<std::string> endpointsOf(const OperatorConfig &config, const char *op) {
  std::string text = stringOr(config, "endpoint", "");
  if (text.empty())
    if (const char *fromEnvironment = std::getenv("ORCH_LLM_ENDPOINT"))
      text = fromEnvironment;
  std::vector<std::string> endpoints;
  std::string current;
  for (char c : text + ",") {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
      while (!current.empty() && current.back() == '/')
        current.pop_back();
      if (!current.empty())
        endpoints.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (endpoints.empty())
    throw OperatorError(std::string(op) +
                        ": no endpoint: give `endpoint: \"http://host:8000/v1\"` or set "
                        "ORCH_LLM_ENDPOINT");
  for (const std::string &endpoint : endpoints) {
    if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0)
      throw OperatorError(std::string(op) + ": endpoint \"" + endpoint +
                          "\" is not an http:// or https:// URL");
    // libcurl's own parser: a missing host or a port out of range is found now, not per row.
    CURLU *url = curl_url();
    const CURLUcode parsed = curl_url_set(url, CURLUPART_URL, endpoint.c_str(), 0);
    curl_url_cleanup(url);
    if (parsed != CURLUE_OK)
      throw OperatorError(std::string(op) + ": endpoint \"" + endpoint +
                          "\" is not a valid URL: " + curl_url_strerror(parsed));
    for (const char *path : {"/chat/completions", "/embeddings", "/completions"})
      if (endpoint.size() > std::strlen(path) &&
          endpoint.compare(endpoint.size() - std::strlen(path), std::string::npos, path) == 0)
        throw OperatorError(std::string(op) + ": endpoint \"" + endpoint +
                            "\" names a path; give the base URL (\"" +
                            endpoint.substr(0, endpoint.size() - std::strlen(path)) +
                            "\"): the operator adds " + path);
  }
  return endpoints;
}

/// The API key: the file `api_key_file` names (its first line), else the environment variable
/// `api_key_env` names; "" when neither has one. The key itself is never in the plan.
std::string apiKeyOf(const OperatorConfig &config, const char *op) {
  const auto trimmed = [](std::string key) {
    const size_t first = key.find_first_not_of(" \t\r\n");
    const size_t last = key.find_last_not_of(" \t\r\n");
    return first == std::string::npos ? std::string() : key.substr(first, last - first + 1);
  };
  // A key goes into a header: a control character in it would add others.
  const auto checked = [op](std::string key, const std::string &from) {
    for (unsigned char c : key)
      if (c < 0x20 || c == 0x7F)
        throw OperatorError(std::string(op) + ": the API key in " + from +
                            " holds a control character (a line break?)");
    return key;
  };
  const std::string file = stringOr(config, "api_key_file", "");
  if (!file.empty()) {
    std::ifstream in(file);
    std::string key;
    if (!in)
      throw OperatorError(std::string(op) + ": cannot read the API key file " + file);
    std::getline(in, key);
    key = trimmed(key);
    if (key.empty())
      throw OperatorError(std::string(op) + ": the API key file " + file +
                          " is empty (the key is its first line)");
    return checked(key, "the file " + file);
  }
  const std::string variable = stringOr(config, "api_key_env", "OPENAI_API_KEY");
  if (variable.empty())
    return {};
  const char *key = std::getenv(variable.c_str());
  return key ? checked(trimmed(key), "$" + variable) : "";
}

ServiceSettings settingsOf(const OperatorConfig &config, LlmKind kind) {
  const char *op = kindName(kind);
  ServiceSettings settings;
  settings.endpoints = endpointsOf(config, op);
  settings.apiKey = apiKeyOf(config, op);
  // The replica's `in_flight` batches: one request per row (llm.embed: per batch).
  settings.inFlight = std::max<int64_t>(1, config.inFlight()) *
                      (kind == LlmKind::Embed ? 1 : std::max<int64_t>(1, config.batchLimit()));
  if (config.constant("max_retries")) {
    settings.maxRetries = config.intConstant("max_retries");
    if (settings.maxRetries < 0)
      throw OperatorError(std::string(op) + ": max_retries cannot be negative");
  }
  if (const plan::StaticValue *timeout = config.constant("request_timeout"))
    if (auto *duration = std::get_if<plan::Duration>(timeout)) {
      if (duration->nanoseconds < 1'000'000)
        throw OperatorError(std::string(op) + ": request_timeout must be at least 1ms");
      settings.requestTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::nanoseconds(duration->nanoseconds));
    }
  // The Call's limits are shared by its replicas: each takes its part.
  const double replicas = double(std::max<int64_t>(1, config.pinnedReplicas()));
  if (config.constant("requests_per_second"))
    settings.requestsPerSecond = config.floatConstant("requests_per_second") / replicas;
  if (config.constant("tokens_per_minute"))
    settings.tokensPerMinute = double(config.intConstant("tokens_per_minute")) / replicas;
  if (settings.requestsPerSecond < 0 || settings.tokensPerMinute < 0)
    throw OperatorError(std::string(op) + ": rate limits cannot be negative");
  return settings;
}

/// One batch's rows waiting for their requests; answered when the last is done.
struct OpenBatch {
  std::vector<RowResult> results;
  std::atomic<size_t> remaining{0};
  std::mutex usageMutex;
  ServiceUsage usage;
  RowsDone done;

  void account(const ServiceReply &reply) {
    std::lock_guard<std::mutex> lock(usageMutex);
    usage.requests += reply.attempts;
    usage.retries += reply.attempts > 0 ? reply.attempts - 1 : 0;
    usage.failedRequests += reply.ok ? 0 : 1;
    usage.promptTokens += reply.promptTokens;
    usage.completionTokens += reply.completionTokens;
    if (reply.ok)
      usage.latencies.push_back(float(reply.latency));
  }
  /// `count` rows have their results.
  void settled(size_t count) {
    if (remaining.fetch_sub(count, std::memory_order_acq_rel) != count)
      return;
    RowsAnswer answer;
    answer.results = std::move(results);
    {
      std::lock_guard<std::mutex> lock(usageMutex);
      answer.usage = std::move(usage);
    }
    done(std::move(answer));
  }
};

/// What the constructor would refuse besides the service settings: no model, a json_schema
/// that is not a JSON object. OperatorError.
void checkSettings(const OperatorConfig &config, LlmKind kind) {
  const std::string op = kindName(kind);
  if (stringOr(config, "model", "").empty())
    throw OperatorError(op + ": no model: give `model: \"NAME\"` (the name the server serves)");
  if (kind == LlmKind::Json) {
    const std::string schema = stringOr(config, "json_schema", "");
    const json parsed = json::parse(schema, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
      throw OperatorError(op + ": json_schema is not a JSON object: " + schema.substr(0, 80));
    if (std::optional<std::string> problem = jsonSchemaProblem(parsed))
      throw OperatorError(op + ": json_schema " + *problem);
  }
}

class LlmOperator : public runtime::Operator {
public:
  LlmOperator(const OperatorConfig &config, LlmKind kind)
      : kind_(kind), op_(kindName(kind)), model_(stringOr(config, "model", "")),
        client_(settingsOf(config, kind)) {
    checkSettings(config, kind);
    system_ = stringOr(config, "system", "");
    if (config.constant("max_tokens"))
      maxTokens_ = config.intConstant("max_tokens");
    if (config.constant("temperature"))
      temperature_ = config.floatConstant("temperature");
    if (config.constant("seed"))
      seed_ = config.intConstant("seed");
    if (config.constant("dimensions"))
      dimensions_ = config.intConstant("dimensions");
    if (kind_ == LlmKind::Json) {
      schema_ = json::parse(stringOr(config, "json_schema", ""));
    }
    if (kind_ == LlmKind::Vision) {
      encoder_.emplace(stringOr(config, "image_format", "png"), 90);
      const std::vector<std::string> &labels = config.inputLabels();
      const auto found = std::find(labels.begin(), labels.end(), "prompt");
      if (found != labels.end())
        promptInput_ = size_t(found - labels.begin());
      else
        prompt_ = stringOr(config, "prompt", "");
    }
  }

  bool concurrent() const override { return true; }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    RowsAnswer got = runtime::startAndWait(*this, rows, std::chrono::nanoseconds(0));
    if (got.batchError)
      throw OperatorError(*got.batchError);
    results = std::move(got.results);
  }

  void start(std::span<const OperatorRow> rows, std::chrono::nanoseconds limit,
             RowsDone done) override {
    auto batch = std::make_shared<OpenBatch>();
    batch->results.resize(rows.size());
    batch->remaining.store(rows.size() + 1);
    batch->done = std::move(done);
    const ServiceClock::time_point deadline =
        limit.count() > 0 ? ServiceClock::now() + limit : ServiceClock::time_point::max();
    if (kind_ == LlmKind::Embed)
      sendEmbeddings(batch, rows, 0, rows.size(), deadline);
    else
      for (size_t i = 0; i < rows.size(); ++i)
        sendCompletion(batch, rows[i], i, deadline);
    // The extra count kept the batch open while its requests were being queued.
    batch->settled(1);
  }

private:
  void sendCompletion(const std::shared_ptr<OpenBatch> &batch, const OperatorRow &row, size_t i,
                      ServiceClock::time_point deadline) {
    std::string problem;
    std::optional<ServiceRequest> request = completionRequest(row, deadline, problem);
    if (!request) {
      batch->results[i] = RowResult::recordFailure(op_ + ": " + problem);
      batch->settled(1);
      return;
    }
    client_.send(std::move(*request), [this, batch, i](ServiceReply reply) {
      batch->account(reply);
      batch->results[i] = completionResult(reply);
      batch->settled(1);
    });
  }

  std::optional<ServiceRequest> completionRequest(const OperatorRow &row,
                                                  ServiceClock::time_point deadline,
                                                  std::string &problem) {
    json messages = json::array();
    if (!system_.empty())
      messages.push_back({{"role", "system"}, {"content", system_}});
    size_t promptBytes = system_.size();
    if (kind_ == LlmKind::Vision) {
      std::string prompt = prompt_;
      if (promptInput_) {
        const Value &perRow = row.inputs[*promptInput_];
        if (perRow.kind() != Value::Kind::String) {
          problem = "the prompt is not a String";
          return std::nullopt;
        }
        prompt = perRow.asString();
      }
      std::optional<ImageView> image = imageView(row.inputs[0], problem);
      if (!image)
        return std::nullopt;
      std::string encoded;
      {
        // One encoder per operator: requests are built on the executor's thread, one batch at
        // a time per replica, but a replica may be handed batches from several threads.
        std::lock_guard<std::mutex> lock(encoderMutex_);
        if (!encoder_->encode(*image, encoded, problem))
          return std::nullopt;
      }
      json content = json::array();
      content.push_back({{"type", "text"}, {"text", prompt}});
      content.push_back({{"type", "image_url"},
                         {"image_url",
                          {{"url", std::string("data:") + encoder_->mimeType() + ";base64," +
                                       base64(encoded)}}}});
      messages.push_back({{"role", "user"}, {"content", std::move(content)}});
      // Vision models count an image as about a thousand tokens.
      promptBytes += prompt.size() + 4000;
    } else {
      if (row.inputs[0].kind() != Value::Kind::String) {
        problem = "the prompt is not a String";
        return std::nullopt;
      }
      const std::string &prompt = row.inputs[0].asString();
      messages.push_back({{"role", "user"}, {"content", prompt}});
      promptBytes += prompt.size();
    }
    json body = {{"model", model_}, {"messages", std::move(messages)}};
    if (maxTokens_ > 0)
      body["max_tokens"] = maxTokens_;
    body["temperature"] = temperature_;
    if (seed_ >= 0)
      body["seed"] = seed_;
    if (kind_ == LlmKind::Json)
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", "output"}, {"schema", schema_}, {"strict", true}}}};
    ServiceRequest request;
    request.path = "/chat/completions";
    request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    request.estimatedTokens = promptBytes / 4 + uint64_t(std::max<int64_t>(0, maxTokens_));
    request.deadline = deadline;
    return request;
  }

  RowResult completionResult(const ServiceReply &reply) const {
    if (!reply.ok)
      return RowResult::recordFailure(op_ + ": " + reply.error);
    const json &choices = reply.body.contains("choices") ? reply.body["choices"] : json();
    if (!choices.is_array() || choices.empty() || !choices[0].is_object() ||
        !choices[0].contains("message") || !choices[0]["message"].is_object())
      return RowResult::recordFailure(
          op_ + ": the reply has no choices[0].message: " + reply.body.dump().substr(0, 200));
    const json &content =
        choices[0]["message"].contains("content") ? choices[0]["message"]["content"] : json();
    if (!content.is_string())
      return RowResult::recordFailure(op_ + ": the reply's message has no text content");
    const std::string &text = content.get_ref<const std::string &>();
    if (kind_ != LlmKind::Json)
      return RowResult::ok(Value::string(text));
    if (std::optional<std::string> tooDeep = jsonNestedTooDeep(text))
      return RowResult::recordFailure(op_ + ": the model's answer is " + *tooDeep);
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text, nullptr, false);
    if (parsed.is_discarded())
      return RowResult::recordFailure(op_ + ": the model's answer is not JSON: \"" +
                                      text.substr(0, 120) + "\"");
    if (std::optional<std::string> mismatch = jsonSchemaMismatch(json(parsed), schema_))
      return RowResult::recordFailure(op_ + ": the model's answer does not match json_schema " +
                                      *mismatch);
    return RowResult::ok(valueFromJson(parsed));
  }

  /// One request for rows [begin, end); a refused request of several texts is sent again one
  /// text at a time, so that only the text the server refuses fails.
  void sendEmbeddings(const std::shared_ptr<OpenBatch> &batch, std::span<const OperatorRow> rows,
                      size_t begin, size_t end, ServiceClock::time_point deadline) {
    json input = json::array();
    size_t bytes = 0;
    std::vector<size_t> sent;
    for (size_t i = begin; i < end; ++i) {
      if (rows[i].inputs[0].kind() != Value::Kind::String) {
        batch->results[i] = RowResult::recordFailure(op_ + ": the text is not a String");
        batch->settled(1);
        continue;
      }
      input.push_back(rows[i].inputs[0].asString());
      bytes += rows[i].inputs[0].asString().size();
      sent.push_back(i);
    }
    if (sent.empty())
      return;
    json body = {{"model", model_}, {"input", std::move(input)}};
    if (dimensions_ > 0)
      body["dimensions"] = dimensions_;
    ServiceRequest request;
    request.path = "/embeddings";
    request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    request.estimatedTokens = bytes / 4 + 1;
    request.deadline = deadline;
    // The rows live until the batch is answered (startOperatorBatch keeps them).
    client_.send(std::move(request), [this, batch, rows, sent, deadline](ServiceReply reply) {
      batch->account(reply);
      if (!reply.ok && reply.refused && sent.size() > 1) {
        for (size_t i : sent)
          sendEmbeddings(batch, rows, i, i + 1, deadline);
        return;
      }
      embeddingResults(*batch, reply, sent);
      batch->settled(sent.size());
    });
  }

  void embeddingResults(OpenBatch &batch, const ServiceReply &reply,
                        const std::vector<size_t> &sent) const {
    auto failAll = [&](const std::string &why) {
      for (size_t i : sent)
        batch.results[i] = RowResult::recordFailure(op_ + ": " + why);
    };
    if (!reply.ok)
      return failAll(reply.error);
    const json &data = reply.body.contains("data") ? reply.body["data"] : json();
    if (!data.is_array() || data.size() != sent.size())
      return failAll("the reply has " + std::to_string(data.is_array() ? data.size() : 0) +
                     " embeddings for " + std::to_string(sent.size()) + " texts");
    for (size_t d = 0; d < data.size(); ++d) {
      const json &entry = data[d];
      const size_t index =
          entry.is_object() && entry.contains("index") && entry["index"].is_number_unsigned()
              ? entry["index"].get<size_t>()
              : d;
      if (index >= sent.size() || !entry.is_object() || !entry.contains("embedding") ||
          !entry["embedding"].is_array())
        return failAll("the reply's data[" + std::to_string(d) + "] is not an embedding");
      runtime::ValueList vector;
      vector.reserve(entry["embedding"].size());
      for (const json &number : entry["embedding"]) {
        if (!number.is_number())
          return failAll("the reply's embedding " + std::to_string(d) + " holds a non-number");
        vector.push_back(Value::real(number.get<double>()));
      }
      batch.results[sent[index]] = RowResult::ok(Value::list(std::move(vector)));
    }
  }

  LlmKind kind_;
  std::string op_;
  std::string model_;
  std::string system_;
  int64_t maxTokens_ = 512;
  double temperature_ = 0;
  int64_t seed_ = -1;
  int64_t dimensions_ = 0;
  json schema_;
  std::optional<ImageEncoder> encoder_;
  std::mutex encoderMutex_;
  std::optional<size_t> promptInput_;
  std::string prompt_;
  /// Last: it stops (and drops what is open) before the rest goes.
  ServiceClient client_;
};

} // namespace

void registerLlmOperators(runtime::OperatorRegistry &registry) {
  for (LlmKind kind : {LlmKind::Chat, LlmKind::Json, LlmKind::Vision, LlmKind::Embed}) {
    registry.addTransform(kindName(kind), [kind](const OperatorConfig &config) {
      return std::make_unique<LlmOperator>(config, kind);
    });
    // No endpoint, no model, an unreadable key file or a schema that is not JSON stop the run
    // before it starts (checked where the run is driven; workers check again).
    registry.addCheck(kindName(kind),
                      [kind](const OperatorConfig &config) -> std::optional<std::string> {
                        try {
                          settingsOf(config, kind);
                          checkSettings(config, kind);
                        } catch (const std::exception &problem) {
                          return std::string(problem.what());
                        }
                        return std::nullopt;
                      });
  }
}

} // namespace orch::stdlib
