// Test helper: a fixture for runs that read and write real files. Each test gets its own
// directory (removed afterwards), a registry with the standard and test operators, and
// compiles programs in which $DIR names that directory.
#pragma once

#include "CompileExample.h"

#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace orch::testing {

class RuntimeFixture : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("orch-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    runtime::registerTestOperators(registry_, log_);
    stdlib::registerStandardOperators(registry_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  void writeFile(const std::string &name, const std::string &text) {
    std::ofstream(path(name)) << text;
  }

  std::vector<std::string> lines(const std::string &name) const {
    std::ifstream input(path(name));
    std::vector<std::string> result;
    for (std::string line; std::getline(input, line);)
      result.push_back(line);
    return result;
  }

  /// Compiles `program` with $DIR replaced by the test's directory; `sourcePath` is the file
  /// it claims to come from (relative paths in it are relative to that file's folder).
  plan::Plan compile(std::string program, const std::string &sourcePath = "test.orch") {
    for (size_t at; (at = program.find("$DIR")) != std::string::npos;)
      program.replace(at, 4, dir_.string());
    std::string error;
    std::optional<plan::Plan> plan = testing::compileText(program, &error, sourcePath);
    EXPECT_TRUE(plan) << error << "\n" << program;
    return plan.value_or(plan::Plan{});
  }

  std::filesystem::path dir_;
  std::shared_ptr<runtime::TestOperatorLog> log_ = std::make_shared<runtime::TestOperatorLog>();
  runtime::OperatorRegistry registry_;
};

} // namespace orch::testing
