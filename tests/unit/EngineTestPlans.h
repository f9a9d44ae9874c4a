// Test helper for engine tests: a program compiled to a runnable plan (failing the test when it
// is not), and the operators engine tests run (the test operators with a log, the core ones).
#pragma once

#include "CompileExample.h"

#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/CoreOperators.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

namespace orch::testing {

/// The plan of `text`, checked runnable; a failed expectation (and an empty plan) otherwise.
inline plan::Plan compileRunnable(const std::string &text) {
  std::string error;
  std::optional<plan::Plan> plan = compileText(text, &error);
  EXPECT_TRUE(plan) << error;
  if (!plan)
    return {};
  EXPECT_FALSE(runtime::checkPlanRunnable(*plan).has_value()) << *runtime::checkPlanRunnable(*plan);
  return std::move(*plan);
}

/// The test operators, recording into `log`, and the core operators.
struct EngineTestOperators {
  std::shared_ptr<runtime::TestOperatorLog> log = std::make_shared<runtime::TestOperatorLog>();
  runtime::OperatorRegistry registry;
  EngineTestOperators() {
    runtime::registerTestOperators(registry, log);
    stdlib::registerCoreOperators(registry);
  }
};

/// A report answering every grain of `batch` with `value(i)` (or the operator's own results).
inline runtime::BatchReport reportFor(const runtime::Batch &batch,
                                      const std::function<runtime::Value(size_t)> &value) {
  runtime::BatchReport report;
  report.batchId = batch.id;
  for (size_t i = 0; i < batch.grains.size(); ++i)
    report.grains.push_back(runtime::GrainReport{batch.grains[i].grain, batch.grains[i].generation,
                                                 runtime::RowResultKind::Value, value(i), ""});
  return report;
}

/// A report giving each grain of `batch` its first input back.
inline runtime::BatchReport identityReport(const runtime::Batch &batch) {
  return reportFor(batch, [&](size_t i) { return batch.inputsOf(i)[0]; });
}

} // namespace orch::testing
