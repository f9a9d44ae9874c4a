// Types, constants, Call options and the operator catalog shared by compiler and runtime.
#include "orch/plan/Type.h"
#include "orch/plan/CallOptions.h"
#include "orch/plan/OperatorCatalog.h"
#include "orch/plan/StaticValue.h"

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
  EXPECT_FALSE(isAssignable(scalar(TypeKind::String), scalar(TypeKind::Text)));
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

TEST(OperatorCatalogTest, HoldsEveryOperatorTheLanguageReferenceUses) {
  const OperatorCatalog &catalog = standardCatalog();
  for (const char *name :
       {"pdf.pages", "pdf.render", "pdf.text", "ocr.tesseract", "text.join", "text.nonempty",
        "list.len", "list.mean", "math.gt", "video.clips", "video.frames", "video.decode",
        "image.sharpness", "test.split", "test.sleep", "test.fail", "test.identity"})
    EXPECT_NE(catalog.find(OperatorKind::Transform, name), nullptr) << name;
  EXPECT_NE(catalog.find(OperatorKind::Source, "files"), nullptr);
  EXPECT_NE(catalog.find(OperatorKind::Sink, "files"), nullptr);
  EXPECT_NE(catalog.find(OperatorKind::Sink, "jsonl"), nullptr);
  EXPECT_EQ(catalog.find(OperatorKind::Transform, "files"), nullptr);
  EXPECT_TRUE(catalog.find(OperatorKind::Transform, "image.sharpness")->gpu);
  EXPECT_FALSE(catalog.find(OperatorKind::Transform, "ocr.tesseract")->gpu);
}

TEST(OperatorCatalogTest, SignaturesListTheOptionsTheyAccept) {
  const OperatorCatalog &catalog = standardCatalog();
  auto accepts = [&](OperatorKind kind, const char *op, const char *option) {
    const std::vector<std::string> &options = catalog.find(kind, op)->options;
    return std::find(options.begin(), options.end(), option) != options.end();
  };
  EXPECT_TRUE(accepts(OperatorKind::Transform, "image.sharpness", "gpus"));
  EXPECT_TRUE(accepts(OperatorKind::Transform, "image.sharpness", "batch"));
  EXPECT_FALSE(accepts(OperatorKind::Transform, "ocr.tesseract", "gpus"));
  EXPECT_FALSE(accepts(OperatorKind::Transform, "ocr.tesseract", "require_gpu"));
  EXPECT_TRUE(accepts(OperatorKind::Transform, "ocr.tesseract", "timeout"));
  EXPECT_TRUE(catalog.find(OperatorKind::Sink, "jsonl")->options.empty());
  EXPECT_TRUE(catalog.find(OperatorKind::Source, "files")->options.empty());
  for (const OperatorSignature &signature : catalog.all())
    for (const std::string &option : signature.options)
      EXPECT_NE(findCallOption(option), nullptr) << signature.name << " lists " << option;
}

TEST(OperatorCatalogTest, EverySignatureIsWellFormed) {
  for (const OperatorSignature &signature : standardCatalog().all()) {
    EXPECT_FALSE(signature.doc.empty()) << signature.name;
    std::set<std::string> names;
    for (const OperatorParam &param : signature.params) {
      EXPECT_TRUE(names.insert(param.name).second) << signature.name << "." << param.name;
      if (param.defaultValue) {
        EXPECT_TRUE(isAssignable(typeOf(*param.defaultValue), param.type))
            << signature.name << "." << param.name;
      }
      if (signature.kind == OperatorKind::Source) {
        EXPECT_EQ(param.role, ParamRole::Static) << signature.name;
      }
    }
    if (signature.kind != OperatorKind::Source) {
      bool hasInput = false;
      for (const OperatorParam &param : signature.params)
        hasInput |= param.role == ParamRole::Input;
      EXPECT_TRUE(hasInput) << signature.name << " has no dataflow input, so it could never run";
    }
    if (signature.kind == OperatorKind::Transform && signature.result.containsVar()) {
      bool bindsVar = false;
      for (const OperatorParam &param : signature.params)
        bindsVar |= param.role == ParamRole::Input && param.type.containsVar();
      EXPECT_TRUE(bindsVar) << signature.name << " returns T but no input binds it";
    }
  }
}

TEST(OperatorCatalogTest, ALaterSignatureReplacesAnEarlierOneOfTheSameKindAndName) {
  OperatorCatalog catalog;
  catalog.add(OperatorSignature{"x", OperatorKind::Transform, {}, Type(), false, {}, "first", ""});
  catalog.add(OperatorSignature{"x", OperatorKind::Sink, {}, Type(), false, {}, "sink", ""});
  catalog.add(OperatorSignature{"x", OperatorKind::Transform, {}, Type(), false, {}, "second", ""});
  EXPECT_EQ(catalog.all().size(), 2u);
  EXPECT_EQ(catalog.find(OperatorKind::Transform, "x")->doc, "second");
}

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
