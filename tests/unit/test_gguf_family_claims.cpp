// The host reads a GGUF container and hands it to the family that claims its general.architecture
// (Family::gguf_architectures, Family::map_gguf): the host names no architecture itself, refuses
// one no loaded family claims (naming the file, the architecture and what the families claim), and
// checks what a family's mapping hands back before reading through it.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "gguf_fixture_support.hpp"
#include "gguf_writer.hpp"
#include "stormo/toolkit/gguf_mapping.hpp"
#include "toy_gguf_file.hpp"

namespace stormo::testing {
namespace {

using ::testing::HasSubstr;

// A family that claims "toy" and maps it with the toolkit: the embedding as the file holds it, or,
// when `stray` is set, one tensor whose range runs past the file's tensor. The file's other
// tensors it leaves out on purpose, unless `forget` is set.
class ToyClaim final : public Family {
public:
    bool stray = false;
    bool forget = false;
    Expected<ModelSummary> summarize(const ModelConfig&) const override { return ModelSummary{}; }
    TensorRole classify(std::string_view) const override { return TensorRole::other; }
    Expected<std::unique_ptr<Model>> load(LoadContext&) const override { return fail(ErrorKind::unsupported, "no"); }
    std::vector<std::string> gguf_architectures() const override { return {"toy"}; }
    Expected<GgufMappedModel> map_gguf(const GgufView& file) const override {
        GgufMappedModel m;
        m.config_json = "{\"model_type\": \"toy\"}";
        STORMO_TRY(toolkit::gguf::copy_tensor(file, m, "token_embd.weight", "model.embed_tokens.weight", {16, test::kToyVocab}));
        if (stray) m.tensors.back().slice_bytes += 4;
        for (const GgufTensorInfo* t : file.tensors())
            if (t->name != "token_embd.weight" && !(forget && t->name == "output_norm.weight")) m.left_out.push_back(t->name);
        return m;
    }
};

TEST(GgufFamilyClaims, TheClaimingFamilyMapsTheFile) {
    test::TempDir dir;
    test::write_toy_gguf(dir.file("toy.gguf"));
    const ToyClaim toy;
    const std::vector<const Family*> families = {&toy};
    auto source = stormo::open_gguf_source(dir.file("toy.gguf"), families);
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(*(*source)->config().string("model_type"), "toy");
    const TensorInfo* embedding = (*source)->find("model.embed_tokens.weight");
    ASSERT_NE(embedding, nullptr);
    EXPECT_EQ(embedding->shape, (Shape{test::kToyVocab, 16}));
    EXPECT_FALSE((*source)->in_memory(*embedding));
    EXPECT_EQ((*source)->tensors().size(), 1u);
}

TEST(GgufFamilyClaims, AnArchitectureNoFamilyClaimsNamesWhatTheFamiliesClaim) {
    test::TempDir dir;
    test::write_toy_gguf(dir.file("toy.gguf"));
    auto built = open_gguf_source(dir.file("toy.gguf"));  // the build's own family plugins
    ASSERT_FALSE(built);
    EXPECT_EQ(built.error().kind, ErrorKind::unsupported);
    EXPECT_THAT(built.error().message, HasSubstr("toy.gguf: general.architecture \"toy\" has no mapping onto a loaded family"));
    for (const char* arch : {"gpt-oss", "qwen3moe", "glm-dsa"}) EXPECT_THAT(built.error().message, HasSubstr(arch));

    auto none = stormo::open_gguf_source(dir.file("toy.gguf"), {});
    ASSERT_FALSE(none);
    EXPECT_THAT(none.error().message, HasSubstr("(no loaded family maps a GGUF architecture)"));
}

TEST(GgufFamilyClaims, AMappingsRangeOutsideItsTensorIsRefused) {
    test::TempDir dir;
    test::write_toy_gguf(dir.file("toy.gguf"));
    ToyClaim toy;
    toy.stray = true;
    const std::vector<const Family*> families = {&toy};
    auto source = stormo::open_gguf_source(dir.file("toy.gguf"), families);
    ASSERT_FALSE(source);
    EXPECT_EQ(source.error().kind, ErrorKind::internal);
    EXPECT_THAT(source.error().message,
                HasSubstr("toy.gguf: the toy mapping's tensor \"model.embed_tokens.weight\" runs past the bytes of \"token_embd.weight\""));
}

// A tensor of the file the mapping neither maps nor leaves out on purpose (a block past the block
// count, a part the metadata turns off) is refused, naming the file and the tensor: the model would
// run without it and answer with exit 0.
TEST(GgufFamilyClaims, ATensorTheMappingDoesNotAccountForIsRefused) {
    test::TempDir dir;
    test::write_toy_gguf(dir.file("toy.gguf"));
    ToyClaim toy;
    toy.forget = true;
    const std::vector<const Family*> families = {&toy};
    auto source = stormo::open_gguf_source(dir.file("toy.gguf"), families);
    ASSERT_FALSE(source);
    EXPECT_EQ(source.error().kind, ErrorKind::format);
    EXPECT_THAT(source.error().message,
                HasSubstr("toy.gguf: 1 of the file's 20 tensors are not part of the toy model its metadata describes "
                          "(\"output_norm.weight\")"));
}

}  // namespace
}  // namespace stormo::testing
