// Static values (constants of the plan) as the language spells them.
#include "orch/plan/StaticValue.h"

#include "orch/plan/Type.h"

#include <gtest/gtest.h>

namespace orch::plan {
namespace {

Type scalar(TypeKind kind) { return Type::scalar(kind); }

TEST(StaticValueTest, FormatsValuesAsOrchLiterals) {
  EXPECT_EQ(formatStaticValue(StaticValue(std::string("a\"b\\c\n\x01"))), R"("a\"b\\c\n\u0001")");
  EXPECT_EQ(formatStaticValue(StaticValue(int64_t(-42))), "-42");
  EXPECT_EQ(formatStaticValue(StaticValue(2.0)), "2.0");
  EXPECT_EQ(formatStaticValue(StaticValue(0.25)), "0.25");
  EXPECT_EQ(formatStaticValue(StaticValue(Duration{1'500'000'000})), "1500ms");
  EXPECT_EQ(formatStaticValue(StaticValue(Duration{7'200'000'000'000})), "2h");
  EXPECT_EQ(formatStaticValue(StaticValue(ByteSize{int64_t(4) << 30})), "4GiB");
  EXPECT_EQ(formatStaticValue(StaticValue(ByteSize{512'000'000})), "512MB");
  EXPECT_EQ(formatStaticValue(StaticValue(ByteSize{1023})), "1023B");
  EXPECT_EQ(typeOf(StaticValue(Duration{1})), scalar(TypeKind::Duration));
}

} // namespace
} // namespace orch::plan
