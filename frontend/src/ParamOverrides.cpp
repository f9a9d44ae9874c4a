// `--set NAME=VALUE` overrides of params (see ParamOverrides.h).
#include "ParamOverrides.h"

#include "LiteralDecoder.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

namespace orch::frontend {
namespace {

using plan::StaticValue;
using plan::TypeKind;

std::string quoted(const std::string &text) { return "'" + text + "'"; }

} // namespace

std::optional<ParamOverride> parseParamOverride(const std::string &assignment) {
  size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0)
    return std::nullopt;
  return ParamOverride{assignment.substr(0, equals), assignment.substr(equals + 1)};
}

std::optional<plan::StaticValue> parseOverrideValue(const ast::ParamDecl &param,
                                                    const plan::Type &type, const std::string &text,
                                                    DiagnosticEngine &diags) {
  std::optional<StaticValue> value;
  const std::string &name = param.name.name;
  errno = 0;
  char *end = nullptr;
  switch (type.kind()) {
  case TypeKind::String:
    value = text;
    break;
  case TypeKind::Int: {
    long long parsed = std::strtoll(text.c_str(), &end, 10);
    if (!text.empty() && *end == '\0' && errno == 0)
      value = int64_t(parsed);
    break;
  }
  case TypeKind::Float: {
    double parsed = std::strtod(text.c_str(), &end);
    if (!text.empty() && *end == '\0' && errno == 0)
      value = parsed;
    break;
  }
  case TypeKind::Bool:
    if (text == "true" || text == "false")
      value = text == "true";
    break;
  case TypeKind::Duration:
  case TypeKind::Size: {
    DiagnosticEngine quiet(nullptr);
    value = type.kind() == TypeKind::Duration ? decodeDurationLiteral(text, {}, quiet)
                                              : decodeSizeLiteral(text, {}, quiet);
    break;
  }
  default:
    break;
  }
  if (!value) {
    const char *example = type.kind() == TypeKind::Duration ? " such as 30s or 250ms"
                          : type.kind() == TypeKind::Size   ? " such as 512MB or 4GiB"
                                                            : "";
    diags.error({}, "--set " + name + "=" + text + ": expected " + type.str() + example)
        .attachNote(param.name.location, "param " + quoted(name) + " is declared here");
  }
  return value;
}

void reportOverridesOfUnknownParams(const ast::File &file,
                                    const std::unordered_map<std::string, std::string> &overrides,
                                    DiagnosticEngine &diags) {
  std::vector<std::string> params;
  for (const auto &statement : file.statements)
    if (auto *param = std::get_if<ast::ParamDecl>(&statement->node))
      params.push_back(param->name.name);
  for (const auto &[name, value] : overrides) {
    if (std::find(params.begin(), params.end(), name) != params.end())
      continue;
    diags.error({}, "--set " + name + "=" + value + ": the pipeline has no param " + quoted(name) +
                        didYouMean(name, params));
  }
}

} // namespace orch::frontend
