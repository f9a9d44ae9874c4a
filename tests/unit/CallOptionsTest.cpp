// Call options (plan/CallOptions.h): the table of options the language accepts.
#include "orch/plan/CallOptions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace orch::plan {
namespace {

TEST(CallOptionsTest, SpecsCoverTheDocumentedOptions) {
  for (const char *name :
       {"batch", "replicas", "cpus", "gpus", "memory", "retries", "recovery", "timeout"})
    EXPECT_NE(findCallOption(name), nullptr) << name;
  EXPECT_EQ(findCallOption("batch")->minimum, 1);
  EXPECT_EQ(findCallOption("recovery")->choices.size(), 3u);
  EXPECT_EQ(findCallOption("bogus"), nullptr);
}

} // namespace
} // namespace orch::plan
