// Types shared by compiler and runtime: spelling, assignability, unification, projection.
#include "orch/plan/Type.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace orch::plan {
namespace {

Type scalar(TypeKind kind) { return Type::scalar(kind); }

TEST(TypeTest, PrintsTypesAsTheLanguageSpellsThem) {
  EXPECT_EQ(Type::list(scalar(TypeKind::Text)).str(), "List<Text>");
  EXPECT_EQ(Type::record({{"path", scalar(TypeKind::String)},
                          {"pages", Type::list(scalar(TypeKind::PdfPage))}})
                .str(),
            "{path: String, pages: List<PdfPage>}");
  EXPECT_EQ(Type::list(Type::var()).str(), "List<T>");
  for (std::string_view name : namedTypeKinds())
    EXPECT_EQ(scalar(*typeKindNamed(name)).str(), name);
  EXPECT_FALSE(typeKindNamed("List"));
  EXPECT_FALSE(typeKindNamed("text"));
}

TEST(TypeTest, AssignabilityWidensIntAndTextOnlyAndWorksThroughListsAndRecords) {
  EXPECT_TRUE(isAssignable(scalar(TypeKind::Int), scalar(TypeKind::Float)));
  EXPECT_FALSE(isAssignable(scalar(TypeKind::Float), scalar(TypeKind::Int)));
  EXPECT_TRUE(isAssignable(scalar(TypeKind::Text), scalar(TypeKind::String)));
  EXPECT_TRUE(isAssignable(scalar(TypeKind::String), scalar(TypeKind::Text)))
      << "a lines source's String feeds a declared operator's `text: Text`";
  EXPECT_FALSE(isAssignable(scalar(TypeKind::Bytes), scalar(TypeKind::Text)));
  EXPECT_TRUE(
      isAssignable(Type::list(scalar(TypeKind::Text)), Type::list(scalar(TypeKind::String))));
  EXPECT_FALSE(isAssignable(Type::list(scalar(TypeKind::Text)), scalar(TypeKind::Text)));
  Type narrow = Type::record({{"a", scalar(TypeKind::Int)}});
  Type wide = Type::record({{"a", scalar(TypeKind::Float)}});
  EXPECT_TRUE(isAssignable(narrow, wide));
  EXPECT_FALSE(isAssignable(wide, narrow));
  EXPECT_FALSE(isAssignable(narrow, Type::record({{"b", scalar(TypeKind::Int)}})));
}

TEST(TypeTest, UnifyBindsTheTypeVariableOnceAndSubstitutesIt) {
  std::optional<Type> binding;
  EXPECT_TRUE(unify(Type::list(Type::var()), Type::list(scalar(TypeKind::Clip)), binding));
  ASSERT_TRUE(binding);
  EXPECT_EQ(*binding, scalar(TypeKind::Clip));
  EXPECT_TRUE(unify(Type::var(), scalar(TypeKind::Clip), binding));
  EXPECT_FALSE(unify(Type::var(), scalar(TypeKind::Frame), binding));
  EXPECT_EQ(substitute(Type::list(Type::var()), *binding), Type::list(scalar(TypeKind::Clip)));
  std::optional<Type> unbound;
  EXPECT_FALSE(unify(Type::list(Type::var()), scalar(TypeKind::Text), unbound));
}

TEST(TypeTest, ObjectsExposeTheirFieldsForProjection) {
  std::vector<RecordField> file = projectableFields(scalar(TypeKind::File));
  ASSERT_EQ(file.size(), 4u);
  EXPECT_EQ(file[2].name, "stem");
  EXPECT_EQ(file[3].type, scalar(TypeKind::Int));
  EXPECT_TRUE(projectableFields(scalar(TypeKind::Text)).empty());
}

} // namespace
} // namespace orch::plan
