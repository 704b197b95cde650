// The shipped gpt-oss demo model as one GGUF file, written by llama.cpp's converter (BF16, so the
// weights are the directory's bits): the file alone answers as the model directory does, with the
// tokenizer and chat template it carries (tests/data/gguf/README.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::testing {
namespace {

std::string demo_gguf() { return std::string(STORMO_GGUF_UNPACKED_DIR) + "/gpt-oss-demo-bf16.gguf"; }

TEST(GgufDemo, LogitsAreTheModelDirectorysBits) {
    const std::vector<int32_t> ids = {1, 2, 3, 40, 4, 5, 6, 45, 5, 7, 9};
    const std::vector<float> from_gguf = all_logits(demo_gguf(), ids);
    EXPECT_TRUE(same_bits(from_gguf, all_logits(demo_dir(), ids)));
}

TEST(GgufDemo, AnswersEveryPublicProblemAsTransformers) {
    auto engine = open_engine(demo_gguf());
    ASSERT_NE(engine, nullptr);
    const DemoAgreement a = run_demo_eval(*engine);
    EXPECT_EQ(a.total, 200u);
    EXPECT_EQ(a.agree, a.total) << (a.mismatches.empty() ? "" : a.mismatches.front());
}

// The file's own tokenizer gives the prompt ids the reference gave, and decodes the answers.
TEST(GgufDemo, ItsTokenizerEncodesTheEvalPromptsAsTheReference) {
    auto tokenizer = text::Tokenizer::load(demo_gguf());
    ASSERT_TRUE(tokenizer) << tokenizer.error().message;
    const Json eval = read_json_file(demo_dir() + "/reference/eval.json");
    size_t checked = 0;
    for (const Json& p : *eval.find("problems")->as_array()) {
        EXPECT_EQ(tokenizer->encode(*p.find("prompt")->as_string()), int_list(*p.find("prompt_ids"))) << *p.find("prompt")->as_string();
        ++checked;
    }
    EXPECT_EQ(checked, 200u);
}

// `stormo run` with the GGUF file alone in its directory: tokenizer, chat template, stop token and
// weights all come from it.
TEST(GgufDemo, RunNeedsNothingBesideTheFile) {
    test::TempDir dir;
    const std::string alone = dir.file("gpt-oss-demo-bf16.gguf");
    std::filesystem::copy_file(demo_gguf(), alone);
    const test::CommandResult r = test::run_cli("run --model '" + alone + "' --prompt '123+456='");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "579\n");
}

}  // namespace
}  // namespace stormo::testing
