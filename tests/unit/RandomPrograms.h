// Test helper: random .orch programs for property and equivalence tests (up to three levels
// of nesting, filters, broadcasts, several sinks, injected failures).
#pragma once

#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace orch::testing {

using Random = std::mt19937_64;

inline int pick(Random &random, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(random);
}

inline bool chance(Random &random, double p) {
  return std::uniform_real_distribution<double>(0, 1)(random) < p;
}

struct ProgramShape {
  /// Inject GroupFailures (their sibling outcomes depend on timing).
  bool groupFailures = true;
  /// Inject batch failures that succeed on a retry (their attempt counts live in the
  /// operator's process).
  bool retriedFailures = true;
  /// Prefix of the sinks' output paths.
  std::string sinkDirectory;
  /// Sinks below the root sometimes write `dedup.exact` of their value (children's values are
  /// ordinals: many repeat across parents and roots).
  bool dedups = false;
};

/// Writes a random pipeline. Root rows are {id, n}; every child value is an Int ordinal.
class ProgramGenerator {
public:
  explicit ProgramGenerator(Random &random, ProgramShape shape = {})
      : random_(random), shape_(std::move(shape)) {}

  std::string generate() {
    out_ << "pipeline prop;\nsource rows = jsonl(\"in.jsonl\") as L0;\n";
    std::string top = level(0, "rows", {});
    sink(0, {{"id", "rows.id"}, {"top", top}});
    return out_.str();
  }

private:
  std::string fresh(const std::string &stem) { return stem + std::to_string(counter_++); }

  std::string options() {
    std::string text = "{ batch: " + std::to_string(pick(random_, 1, 6));
    return text + " }";
  }

  std::string failOptions(const std::string &kind, int &attempts) {
    int retries = pick(random_, 0, 2);
    std::string recovery = chance(random_, 0.5) ? "isolate" : "retry";
    attempts = -1;
    if (kind == "batch") {
      if (shape_.retriedFailures && retries > 0 && chance(random_, 0.5)) {
        attempts = pick(random_, 1, retries);
      } else {
        recovery = "isolate";
      }
    }
    return "{ batch: " + std::to_string(pick(random_, 1, 6)) +
           ", retries: " + std::to_string(retries) + ", recovery: \"" + recovery + "\" }";
  }

  /// A chain of operators on `value` in domain level `depth`; returns the chain's end.
  std::string chain(int depth, std::string value) {
    int steps = pick(random_, 0, 2);
    for (int i = 0; i < steps; ++i) {
      std::string name = fresh("v");
      int choice = pick(random_, 0, depth == 0 ? 1 : 2);
      if (choice == 0) {
        out_ << name << " = test.identity(" << value << ") " << options() << ";\n";
      } else if (choice == 1 && chance(random_, 0.6)) {
        static const char *kinds[] = {"record", "group", "batch"};
        std::string kind = kinds[pick(random_, 0, 2)];
        if (kind == "group" && !shape_.groupFailures)
          kind = "record";
        std::string ordinals = std::to_string(pick(random_, 0, 4));
        if (chance(random_, 0.4))
          ordinals += "," + std::to_string(pick(random_, 0, 6));
        int attempts = -1;
        std::string opts = failOptions(kind, attempts);
        out_ << name << " = test.fail(" << value << ", kind: \"" << kind << "\", ordinals: \""
             << ordinals << "\", attempts: " << attempts << ") " << opts << ";\n";
      } else if (depth > 0 && chance(random_, 0.5)) {
        const char *op = chance(random_, 0.5) ? "math.gt" : "math.lt";
        out_ << name << " = filter(" << value << ", " << op << "(" << value << ", "
             << pick(random_, 0, 3) << "));\n";
      } else if (depth > 0) {
        chooseBetweenCalls(name, value);
      } else {
        out_ << name << " = test.identity(" << value << ") " << options() << ";\n";
      }
      value = name;
    }
    return value;
  }

  /// A failing Call on `value` (record or batch failures).
  std::string failing(const std::string &value) {
    std::string kind = chance(random_, 0.5) ? "record" : "batch";
    int attempts = -1;
    std::string opts = failOptions(kind, attempts);
    return "test.fail(" + value + ", kind: \"" + kind + "\", ordinals: \"" +
           std::to_string(pick(random_, 0, 4)) + "\", attempts: " + std::to_string(attempts) +
           ") " + opts;
  }

  /// A condition on the Int `value`.
  std::string condition(const std::string &value) {
    return std::string(chance(random_, 0.5) ? "math.gt(" : "math.lt(") + value + ", " +
           std::to_string(pick(random_, 0, 3)) + ")";
  }

  /// A choice whose operands are Calls (semantics.md, demand): an if between two chains, a
  /// coalesce that falls back to a Call, or a filter of a Call; one of them may fail.
  void chooseBetweenCalls(const std::string &name, const std::string &value) {
    std::string identity = "test.identity(" + value + ") " + options();
    if (chance(random_, 0.3)) {
      // A named operand that a value nothing reads also reads (never needed, never run).
      const std::string operand = fresh("o");
      out_ << operand << " = " << identity << ";\n"
           << fresh("unused") << " = " << operand << " + 1;\n";
      identity = operand;
    }
    switch (pick(random_, 0, 2)) {
    case 0:
      out_ << name << " = if " << condition(value) << " then "
           << (chance(random_, 0.5) ? failing(value) : identity) << " else "
           << (chance(random_, 0.5) ? failing(value) : identity) << ";\n";
      return;
    case 1:
      out_ << name << " = coalesce(filter(" << value << ", " << condition(value) << "), "
           << (chance(random_, 0.5) ? failing(value) : identity) << ");\n";
      return;
    default:
      out_ << name << " = filter(" << (chance(random_, 0.5) ? failing(value) : identity) << ", "
           << condition(value) << ");\n";
      return;
    }
  }

  void sink(int depth, std::vector<std::pair<std::string, std::string>> fields) {
    out_ << "sink jsonl(path: \"" << shape_.sinkDirectory << "s" << sinks_++ << "_L" << depth
         << ".jsonl\", record: {";
    for (size_t i = 0; i < fields.size(); ++i)
      out_ << (i ? ", " : " ") << fields[i].first << ": " << fields[i].second;
    out_ << " });\n";
  }

  /// Emits one level; returns a value of this level for the parent to reduce.
  std::string level(int depth, const std::string &entity, std::vector<std::string> ancestors) {
    std::string value = chain(depth, entity);
    std::vector<std::pair<std::string, std::string>> fields{{"v", value}};
    if (!ancestors.empty() && chance(random_, 0.5)) {
      std::string seen = fresh("b");
      out_ << seen << " = broadcast(" << ancestors[pick(random_, 0, int(ancestors.size()) - 1)]
           << ", " << value << ");\n";
      fields.emplace_back("up", seen);
    }
    std::string result = value;
    int expands = depth >= 3 ? 0 : (depth == 0 ? pick(random_, 1, 2) : pick(random_, 0, 1));
    for (int e = 0; e < expands; ++e) {
      std::string count;
      if (depth == 0)
        count = "field: \"n\"";
      else if (chance(random_, 0.5))
        count = "n: " + std::to_string(pick(random_, 0, 4));
      else
        count = "n: -1";
      std::string domain = "L" + std::to_string(depth + 1) + "x" + std::to_string(counter_++);
      std::string child = fresh("c");
      out_ << child << " = expand(test.split(" << value << ", " << count << ") " << options()
           << ") as " << domain << ";\n";
      std::vector<std::string> below = ancestors;
      below.push_back(value);
      std::string gathered = level(depth + 1, child, below);
      std::string reduced = fresh("r");
      // Sometimes a Call runs on the gathered list: grains downstream of a reduce.
      if (chance(random_, 0.4))
        out_ << reduced << " = test.identity(reduce(" << gathered << ")) " << options() << ";\n";
      else
        out_ << reduced << " = reduce(" << gathered << ");\n";
      if (depth > 0 && chance(random_, 0.3)) {
        // A reduce only some rows need: its children's failures matter only there.
        std::string picked = fresh("p");
        out_ << picked << " = filter(" << reduced << ", " << condition(value) << ");\n";
        reduced = picked;
      }
      fields.emplace_back("kids" + std::to_string(e), reduced);
      if (e == 0) {
        result = fresh("rec");
        out_ << result << " = { v: " << value << ", kids: " << reduced << " };\n";
      }
    }
    if (depth > 0 && chance(random_, 0.5)) {
      if (shape_.dedups && chance(random_, 0.6)) {
        const std::string unique = fresh("u");
        out_ << unique << " = dedup.exact(" << value << ");\n";
        fields[0].second = unique;
      }
      sink(depth, fields);
    }
    return result;
  }

  Random &random_;
  ProgramShape shape_;
  std::ostringstream out_;
  int counter_ = 0;
  int sinks_ = 0;
};

} // namespace orch::testing
