// Every reference chat case (prompts rendered by transformers' apply_chat_template) must come
// out of ChatTemplate character for character, and the demo models' templates must render the
// prompt their READMEs describe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "jinja/chat_template.hpp"
#include "jinja/chat_value.hpp"

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

// DeepSeek-V3's template: system prompts joined ahead of the turns, namespace() state across the
// loop, tool calls from an assistant message whose content is null, fullwidth-bar markers.
TEST(ChatTemplateReference, DeepSeekV3Cases) { expect_reference_cases("deepseek-v3", 7); }

TEST(ChatTemplateReference, SpecialTokensComeFromTokenizerConfig) {
    auto gpt_oss = ChatTemplate::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / "gpt-oss");
    ASSERT_TRUE(gpt_oss) << gpt_oss.error().message;
    EXPECT_EQ(gpt_oss->bos_token(), "<|startoftext|>");
    EXPECT_EQ(gpt_oss->eos_token(), "<|return|>");
    auto qwen3 = ChatTemplate::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / "qwen3");
    ASSERT_TRUE(qwen3) << qwen3.error().message;
    EXPECT_EQ(qwen3->bos_token(), "");  // null in Qwen3's config
    EXPECT_EQ(qwen3->eos_token(), "<|im_end|>");
    auto deepseek = ChatTemplate::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / "deepseek-v3");
    ASSERT_TRUE(deepseek) << deepseek.error().message;
    EXPECT_EQ(deepseek->bos_token(), "<｜begin▁of▁sentence｜>");
    EXPECT_EQ(deepseek->eos_token(), "<｜end▁of▁sentence｜>");
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

// A scratch model directory under the system's temporary directory, removed afterwards.
class ModelDir {
public:
    explicit ModelDir(const std::string& name)
        : path_(fs::temp_directory_path() / ("stormo-chat-template-" + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~ModelDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ModelDir(const ModelDir&) = delete;
    ModelDir& operator=(const ModelDir&) = delete;
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path_ / name, std::ios::binary) << text;
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

TEST(ChatTemplateLoad, MissingTemplateNamesTheDirectoryAndBothPlaces) {
    ModelDir dir("missing");
    dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
    auto loaded = ChatTemplate::load(dir.path());
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().kind, stormo::ErrorKind::missing);
    const std::string& message = loaded.error().message;
    EXPECT_NE(message.find(dir.path().string()), std::string::npos) << message;
    EXPECT_NE(message.find("chat_template.jinja"), std::string::npos) << message;
    EXPECT_NE(message.find("tokenizer_config.json"), std::string::npos) << message;
}

TEST(ChatTemplateLoad, JinjaFileWinsOverTheConfigField) {
    ModelDir dir("jinja-first");
    dir.write("tokenizer_config.json", R"({"chat_template": "config", "bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
    dir.write("chat_template.jinja", "{{ bos_token }}file{{ eos_token }}\n");
    auto loaded = ChatTemplate::load(dir.path());
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(loaded->bos_token(), "<s>");
    EXPECT_EQ(loaded->source(), (dir.path() / "chat_template.jinja").string());
    auto text = loaded->render(Value::list(), Value::object());
    ASSERT_TRUE(text) << text.error().message;
    EXPECT_EQ(*text, "<s>file</s>");
}

TEST(ChatTemplateLoad, NamedTemplateListUsesDefault) {
    ModelDir dir("named");
    dir.write("tokenizer_config.json",
              R"({"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}]})");
    auto loaded = ChatTemplate::load(dir.path());
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(*loaded->render(Value::list(), Value::object()), "plain");

    ModelDir no_default("named-no-default");
    no_default.write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "tools"}]})");
    auto refused = ChatTemplate::load(no_default.path());
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("\"default\""), std::string::npos) << refused.error().message;
}

TEST(ChatTemplateLoad, RefusesWhatIsNotARegularFileAndNamesTemplateErrors) {
    ModelDir dir("not-regular");
    fs::create_directories(dir.path() / "chat_template.jinja");
    auto loaded = ChatTemplate::load(dir.path());
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message.find("not a regular file"), std::string::npos) << loaded.error().message;

    ModelDir bad("unsupported");
    bad.write("tokenizer_config.json", R"({"chat_template": "ok\n{{ x|wordwrap }}"})");
    auto refused = ChatTemplate::load(bad.path());
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, stormo::ErrorKind::unsupported);
    EXPECT_EQ(refused.error().message,
              (bad.path() / "tokenizer_config.json").string() + ":chat_template:2: unsupported filter 'wordwrap'");
}

}  // namespace
