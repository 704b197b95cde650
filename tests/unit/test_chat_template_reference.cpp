// Every reference chat case (prompts rendered by transformers' apply_chat_template) must come
// out of ChatTemplate character for character, and the demo models' templates must render the
// prompt their READMEs describe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "text/chat_template.hpp"
#include "text/chat_value.hpp"

namespace {

namespace fs = std::filesystem;
using stormo::text::ChatTemplate;
using stormo::text::Value;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// "" when equal, else where and how the texts first differ.
std::string first_difference(const std::string& want, const std::string& got) {
    if (want == got) return "";
    size_t k = 0;
    while (k < want.size() && k < got.size() && want[k] == got[k]) ++k;
    auto around = [&](const std::string& s) { return s.substr(k < 20 ? 0 : k - 20, 60); };
    std::ostringstream out;
    out << "first difference at byte " << k << " (want " << want.size() << " bytes, got " << got.size()
        << ")\n  want: ..." << around(want) << "...\n  got:  ..." << around(got) << "...";
    return out.str();
}

void expect_reference_cases(const std::string& model, size_t expected_cases) {
    const fs::path dir = fs::path(STORMO_TOKENIZER_DATA_DIR) / model;
    auto chat_template = ChatTemplate::load(dir);
    ASSERT_TRUE(chat_template) << chat_template.error().message;
    auto cases = stormo::text::parse_json_value(read_text(dir / "reference" / "chat.json"), "chat.json");
    ASSERT_TRUE(cases) << cases.error().message;
    ASSERT_TRUE(cases->is_list());
    EXPECT_EQ(cases->as_list().size(), expected_cases);
    for (const Value& c : cases->as_list()) {
        const std::string& name = c.find("name")->as_string();
        auto text = chat_template->render(*c.find("messages"), *c.find("options"));
        ASSERT_TRUE(text) << model << " case " << name << ": " << text.error().message;
        std::string diff = first_difference(c.find("text")->as_string(), *text);
        EXPECT_EQ(diff, "") << model << " case " << name;
    }
}

TEST(ChatTemplateReference, GptOssHarmonyCases) { expect_reference_cases("gpt-oss", 7); }

TEST(ChatTemplateReference, Qwen3ChatMlCases) { expect_reference_cases("qwen3", 7); }

TEST(ChatTemplateReference, SpecialTokensComeFromTokenizerConfig) {
    auto gpt_oss = ChatTemplate::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / "gpt-oss");
    ASSERT_TRUE(gpt_oss) << gpt_oss.error().message;
    EXPECT_EQ(gpt_oss->bos_token(), "<|startoftext|>");
    EXPECT_EQ(gpt_oss->eos_token(), "<|return|>");
    auto qwen3 = ChatTemplate::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / "qwen3");
    ASSERT_TRUE(qwen3) << qwen3.error().message;
    EXPECT_EQ(qwen3->bos_token(), "");  // null in Qwen3's config
    EXPECT_EQ(qwen3->eos_token(), "<|im_end|>");
}

TEST(ChatTemplateReference, DemoModelsRenderTheirReadmeExample) {
    Value messages = Value::list({Value::object({{"role", "user"}, {"content", "12+34="}}),
                                  Value::object({{"role", "assistant"}, {"content", "46"}}),
                                  Value::object({{"role", "user"}, {"content", "rev:abc="}})});
    for (const char* model : {"gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo"}) {
        auto chat_template = ChatTemplate::load(fs::path(STORMO_SOURCE_DIR) / "models" / model);
        ASSERT_TRUE(chat_template) << model << ": " << chat_template.error().message;
        EXPECT_EQ(chat_template->eos_token(), "<|end|>") << model;
        for (bool generation_prompt : {false, true}) {
            auto text = chat_template->render(messages, Value::object({{"add_generation_prompt", generation_prompt}}));
            ASSERT_TRUE(text) << model << ": " << text.error().message;
            EXPECT_EQ(*text, "12+34=46<|end|>rev:abc=") << model;
        }
    }
}

}  // namespace
