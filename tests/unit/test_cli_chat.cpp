// The text commands as a user runs them: `stormo run` answers in text on every shipped demo,
// `stormo chat-template` renders every reference conversation exactly (text and ids), and bad
// input (no tokenizer, a malformed messages file, a prompt beyond the context) is one clear line.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.hpp"
#include "jinja/chat_value.hpp"
#include "util/file.hpp"

namespace stormo::test {
namespace {

std::string demo(const std::string& name) { return std::string(STORMO_SOURCE_DIR) + "/models/" + name; }

TEST(CliRun, EveryDemoAnswersInText) {
    for (const char* name : {"gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo"}) {
        const auto r = run_cli("run --model '" + demo(name) + "' --prompt '123+456='");
        EXPECT_EQ(r.status, 0) << name << ": " << r.err;
        EXPECT_EQ(r.out, "579\n") << name;
        EXPECT_NE(r.err.find("tok/s"), std::string::npos) << "the speed goes to stderr: " << r.err;
    }
    const auto sorted = run_cli("run --model '" + demo("gpt-oss-demo") + "' --prompt 'sort:dcab=' --show-reasoning");
    EXPECT_EQ(sorted.out, "abcd\n") << sorted.err;
}

TEST(CliRun, ChatReadsProblemAfterProblemFromAPipe) {
    const auto r = run_command("printf '12+34=\\nrev:abc=\\n/stats\\n' | env -u STORMO_PLUGIN_PATH '" + std::string(STORMO_CLI) +
                               "' chat --model '" + demo("qwen3-moe-demo") + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, 8), "46\ncba\nt") << r.out;
    EXPECT_NE(r.out.find("turns 2"), std::string::npos) << r.out;
}

// `stormo chat` fed from a file: each line of `input` a message.
CommandResult chat_with(const std::string& input, const std::string& options = "") {
    TempDir tmp;
    const std::string file = tmp.file("input.txt");
    EXPECT_TRUE(write_file(file, input).has_value());
    return run_cli("chat --model '" + demo("qwen3-moe-demo") + "' " + options + " < '" + file + "'");
}

TEST(CliChat, ARefusedTurnLeavesTheConversationAsItWas) {
    // The middle message cannot fit the context: refused by its size in tokens, and the next turn
    // answers as if it had never been sent (it stayed in the conversation, refusing every turn after).
    const auto r = chat_with("12+34=\n" + std::string(300, '7') + "\n56+11=\n/stats\n", "--context 64");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, 6), "46\n67\n") << r.out << r.err;
    EXPECT_NE(r.out.find("turns 2"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("tokens, the context holds 64"), std::string::npos) << r.err;
}

TEST(CliChat, ALineOverTheLimitIsSkippedAndNamedTooLong) {
    // 5 MiB without a newline, then a question: the long line is skipped (not read into memory whole,
    // not blamed on the template), the question answered.
    const size_t n = size_t{5} << 20;
    const auto r = chat_with(std::string(n, 'x') + "\n12+34=\n");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "46\n") << r.err;
    EXPECT_NE(r.err.find("the line is too long: " + std::to_string(n) + " bytes, the limit is 4194304"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("template"), std::string::npos) << r.err;
    // The last line, without a newline, is measured the same way.
    const auto last = chat_with("12+34=\n" + std::string(n, 'x'));
    EXPECT_EQ(last.out, "46\n") << last.err;
    EXPECT_NE(last.err.find("the line is too long: " + std::to_string(n) + " bytes"), std::string::npos) << last.err;
}

TEST(CliRun, AModelWithoutATokenizerIsRefusedByName) {
    TempDir tmp;
    const std::filesystem::path copy = tmp.file("model");
    std::filesystem::copy(demo("gpt-oss-demo"), copy, std::filesystem::copy_options::recursive);
    std::filesystem::remove(copy / "tokenizer.json");
    const auto r = run_cli("run --model '" + copy.string() + "' --prompt 'x'");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("tokenizer.json"), std::string::npos) << r.err;
    ASSERT_TRUE(write_file((copy / "tokenizer.json").string(), "{\"model\": ").has_value());
    const auto malformed = run_cli("run --model '" + copy.string() + "' --prompt 'x'");
    EXPECT_EQ(malformed.status, 1);
    EXPECT_NE(malformed.err.find("tokenizer.json"), std::string::npos) << malformed.err;
}

TEST(CliRun, APromptBeyondTheContextIsRefused) {
    const auto r = run_cli("run --model '" + demo("gpt-oss-demo") + "' --context 8 --prompt '123+456=123+456='");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

// Each reference case as the contract's messages file: {"messages": [...], "options": {...}}.
void check_reference_cases(const std::string& tokenizer) {
    const std::string dir = std::string(STORMO_TOKENIZER_DATA_DIR) + "/" + tokenizer;
    auto cases = text::parse_json_value(*read_file(dir + "/reference/chat.json"), "chat.json");
    ASSERT_TRUE(cases.has_value()) << cases.error().message;
    TempDir tmp;
    for (const auto& c : cases->as_list()) {
        const std::string name = c.find("name")->as_string();
        const std::string file = tmp.file(name + ".json");
        const text::Value request = text::Value::object({{"messages", *c.find("messages")}, {"options", *c.find("options")}});
        ASSERT_TRUE(write_file(file, text::to_json(request)).has_value());
        const auto rendered = run_cli("chat-template --tokenizer '" + dir + "' --messages '" + file + "'");
        EXPECT_EQ(rendered.status, 0) << name << ": " << rendered.err;
        EXPECT_EQ(rendered.out, c.find("text")->as_string()) << name;
        const auto ids = run_cli("chat-template --tokenizer '" + dir + "' --messages '" + file + "' --ids");
        std::string want;
        for (const auto& id : c.find("ids")->as_list()) {
            if (!want.empty()) want += ' ';
            want += std::to_string(id.as_int());
        }
        EXPECT_EQ(ids.out, want + "\n") << name << ": " << ids.err;
    }
}

TEST(CliChatTemplate, GptOssReferenceConversationsRenderExactly) { check_reference_cases("gpt-oss"); }
TEST(CliChatTemplate, Qwen3ReferenceConversationsRenderExactly) { check_reference_cases("qwen3"); }

TEST(CliChatTemplate, MalformedMessagesAreRefusedByName) {
    TempDir tmp;
    const std::string file = tmp.file("bad.json");
    const std::string dir = demo("gpt-oss-demo");
    ASSERT_TRUE(write_file(file, "{\"messages\": {\"role\": \"user\"}}").has_value());
    auto r = run_cli("chat-template --tokenizer '" + dir + "' --messages '" + file + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("\"messages\" must be a list"), std::string::npos) << r.err;
    ASSERT_TRUE(write_file(file, "{\"messages\": [{\"content\": \"hi\"}]}").has_value());
    r = run_cli("chat-template --tokenizer '" + dir + "' --messages '" + file + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("messages[0]"), std::string::npos) << r.err;
    ASSERT_TRUE(write_file(file, "[1, 2").has_value());
    r = run_cli("chat-template --tokenizer '" + dir + "' --messages '" + file + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stormo::test
