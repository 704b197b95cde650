// The shipped demo models through text in and text out: each of the 200 public problems rendered
// with the demo's own chat template, answered, and read back, giving transformers' answer ids and
// text; and one conversation that answers problem after problem, as `stormo chat` does.
#include "jinja/chat_template.hpp"
#include "oracle_support.hpp"
#include "runtime/conversation.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::testing {
namespace {

struct TextStack {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<text::Tokenizer> tokenizer;
    std::unique_ptr<text::ChatTemplate> chat_template;
    std::unique_ptr<Session> session;
    std::unique_ptr<Conversation> conversation;
};

std::unique_ptr<TextStack> open_text_stack(const std::string& dir) {
    auto stack = std::make_unique<TextStack>();
    stack->engine = open_engine(dir);
    auto tokenizer = text::Tokenizer::load(dir);
    auto chat_template = text::ChatTemplate::load(dir);
    EXPECT_TRUE(tokenizer.has_value()) << (tokenizer ? "" : tokenizer.error().message);
    EXPECT_TRUE(chat_template.has_value()) << (chat_template ? "" : chat_template.error().message);
    if (!stack->engine || !tokenizer || !chat_template) return nullptr;
    stack->tokenizer = std::make_unique<text::Tokenizer>(std::move(*tokenizer));
    stack->chat_template = std::make_unique<text::ChatTemplate>(std::move(*chat_template));
    auto session = stack->engine->new_session(256);
    auto stops = stop_ids_of(stack->engine->source());
    EXPECT_TRUE(session && stops);
    if (!session || !stops) return nullptr;
    stack->session = std::move(*session);
    ChatSettings settings;
    settings.max_tokens = 12;
    settings.stop_ids = *stops;
    stack->conversation = std::make_unique<Conversation>(stack->engine->pipeline(), *stack->session, *stack->tokenizer,
                                                         *stack->chat_template, settings);
    return stack;
}

class DemoText : public ::testing::TestWithParam<std::string> {};

TEST_P(DemoText, AllPublicProblemsAnswerInTextAsThroughIds) {
    const std::string dir = std::string(STORMO_SOURCE_DIR) + "/models/" + GetParam();
    auto stack = open_text_stack(dir);
    ASSERT_NE(stack, nullptr);
    const Json eval = read_json_file(dir + "/reference/eval.json");
    size_t agree = 0, total = 0;
    std::vector<std::string> mismatches;
    for (const auto& p : *eval.find("problems")->as_array()) {
        const std::string prompt = *p.find("prompt")->as_string();
        stack->conversation->reset();
        // The template renders a lone user message as its raw text: the prompt ids of the reference.
        auto one = text::Value::list({text::Value::object({{"role", text::Value("user")}, {"content", text::Value(prompt)}})});
        auto ids = stack->conversation->prompt_ids(one);
        ASSERT_TRUE(ids.has_value()) << ids.error().message;
        EXPECT_EQ(*ids, int_list(*p.find("prompt_ids"))) << prompt;
        auto turn = stack->conversation->ask(prompt, {});
        ASSERT_TRUE(turn.has_value()) << turn.error().message;
        ++total;
        if (turn->generation.tokens == int_list(*p.find("output_ids")) && turn->reply.content == *p.find("output_text")->as_string())
            ++agree;
        else
            mismatches.push_back(prompt + " -> \"" + turn->reply.content + "\"");
    }
    EXPECT_EQ(total, 200u);
    EXPECT_EQ(agree, total) << "first mismatch: " << (mismatches.empty() ? "" : mismatches.front());
}

TEST_P(DemoText, OneConversationAnswersProblemAfterProblem) {
    // The reference's multi-turn sequence: 3+8= 11, copy:tiwyeuq= tiwyeuq, 178+798= 976.
    const std::string dir = std::string(STORMO_SOURCE_DIR) + "/models/" + GetParam();
    auto stack = open_text_stack(dir);
    ASSERT_NE(stack, nullptr);
    const std::vector<std::pair<std::string, std::string>> turns = {
        {"3+8=", "11"}, {"copy:tiwyeuq=", "tiwyeuq"}, {"178+798=", "976"}};
    size_t reused_before = 0;
    for (const auto& [question, answer] : turns) {
        auto turn = stack->conversation->ask(question, {});
        ASSERT_TRUE(turn.has_value()) << turn.error().message;
        EXPECT_EQ(turn->reply.content, answer) << question;
        EXPECT_GE(turn->generation.reused_positions, reused_before) << "the earlier turns' KV was recomputed";
        reused_before = turn->prompt_tokens - 1;
    }
    // The session holds the conversation as the reference's ids, less the final <|end|> (generated, not fed).
    const Json eval = read_json_file(dir + "/reference/eval.json");
    const auto& sequences = *eval.find("logits_npy")->find("sequences")->as_array();
    const auto want = int_list(*sequences.back().find("ids"));
    EXPECT_TRUE(std::ranges::equal(stack->session->tokens(), std::span<const int32_t>(want).first(want.size() - 1)));
}

TEST(DemoConversation, ARefusedTurnChangesNeitherTheMessagesNorTheSession) {
    auto stack = open_text_stack(std::string(STORMO_SOURCE_DIR) + "/models/qwen3-moe-demo");
    ASSERT_NE(stack, nullptr);
    Conversation& chat = *stack->conversation;
    ASSERT_TRUE(chat.ask("12+34=", {}).has_value());
    const std::string before = text::to_json(chat.messages());
    const std::vector<int32_t> held(stack->session->tokens().begin(), stack->session->tokens().end());
    // More tokens than the session's 256 positions: refused before anything runs.
    auto refused = chat.ask(std::string(400, '7'), {});
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message.find("the context holds 256"), std::string::npos) << refused.error().message;
    EXPECT_EQ(text::to_json(chat.messages()), before) << "the refused message stayed in the conversation";
    EXPECT_TRUE(std::ranges::equal(stack->session->tokens(), held));
    auto next = chat.ask("56+11=", {});
    ASSERT_TRUE(next.has_value()) << next.error().message;
    EXPECT_EQ(next->reply.content, "67");
    EXPECT_EQ(chat.messages().as_list().size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Demos, DemoText, ::testing::ValuesIn(demo_names()), [](const auto& i) {
    std::string name = i.param;
    for (char& c : name)
        if (c == '-') c = '_';
    return name;
});

}  // namespace
}  // namespace stormo::testing
