// A conversation's record (what a session file keeps beside the KV): the messages and the system
// message survive the trip through JSON so the restored conversation renders the same prompt ids;
// a conversation restored with its session from a file answers its next turn with the tokens of
// the conversation that never stopped, reusing every position the file holds; a record that is
// no conversation is refused, naming the file and what is wrong.
#include "jinja/chat_template.hpp"
#include "oracle_support.hpp"
#include "runtime/conversation.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/session_file.hpp"
#include "safetensors_writer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::testing {
namespace {

struct ChatParts {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<text::Tokenizer> tokenizer;
    std::unique_ptr<text::ChatTemplate> chat_template;
    ChatSettings settings;
};

std::unique_ptr<ChatParts> open_chat_parts(const std::string& dir) {
    auto parts = std::make_unique<ChatParts>();
    parts->engine = open_engine(dir);
    auto tokenizer = text::Tokenizer::load(dir);
    auto chat_template = text::ChatTemplate::load(dir);
    auto stops = parts->engine ? stop_ids_of(parts->engine->source()) : Expected<std::vector<int32_t>>(std::vector<int32_t>{});
    EXPECT_TRUE(tokenizer && chat_template && stops);
    if (!parts->engine || !tokenizer || !chat_template || !stops) return nullptr;
    parts->tokenizer = std::make_unique<text::Tokenizer>(std::move(*tokenizer));
    parts->chat_template = std::make_unique<text::ChatTemplate>(std::move(*chat_template));
    parts->settings.max_tokens = 12;
    parts->settings.stop_ids = *stops;
    // Sampled, so the continuation depends on every bit of the logits, not only their argmax.
    parts->settings.sampling.temperature = 1.0f;
    parts->settings.sampling.seed = 7;
    return parts;
}

std::unique_ptr<Session> new_session(const ChatParts& parts) {
    auto s = parts.engine->new_session(256);
    EXPECT_TRUE(s.has_value());
    return s ? std::move(*s) : nullptr;
}

std::unique_ptr<Conversation> conversation_over(ChatParts& parts, Session& session) {
    return std::make_unique<Conversation>(parts.engine->pipeline(), session, *parts.tokenizer, *parts.chat_template, parts.settings);
}

const std::vector<std::string> kQuestions = {"3+8=", "copy:tiwyeuq=", "178+798="};

TEST(ConversationRecord, TheMessagesAndTheSystemSurviveTheTripThroughJson) {
    auto parts = open_chat_parts(demo_dir("gpt-oss-demo"));
    ASSERT_NE(parts, nullptr);
    auto session = new_session(*parts);
    auto chat = conversation_over(*parts, *session);
    chat->set_system("You add, sort and reverse. \"Quotes\", a tab\tand ünïcode.");
    for (size_t i = 0; i < 2; ++i) ASSERT_TRUE(chat->ask(kQuestions[i], {}).has_value());
    const std::string record = chat->record();
    auto parsed = Conversation::parse_record(record, "x.session");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    auto other_session = new_session(*parts);
    auto restored = conversation_over(*parts, *other_session);
    restored->restore(std::move(*parsed));
    EXPECT_EQ(restored->system(), chat->system());
    EXPECT_EQ(restored->record(), record);
    const auto next = text::Value::list({text::Value::object({{"role", text::Value("user")}, {"content", text::Value("1+1=")}})});
    auto ids = chat->prompt_ids(chat->messages());
    auto restored_ids = restored->prompt_ids(restored->messages());
    ASSERT_TRUE(ids && restored_ids);
    EXPECT_EQ(*ids, *restored_ids);
    // Restoring replaces what was there, the system message included.
    restored->restore(ConversationRecord{});
    EXPECT_EQ(restored->messages().as_list().size(), 0u);
    EXPECT_EQ(restored->system(), "");
    EXPECT_TRUE(restored->prompt_ids(next).has_value());
}

TEST(ConversationRecord, ToolCallsWithNumbersRoundTrip) {
    const std::string record =
        R"({"stormo_conversation": 1, "system": "", "messages": [{"role": "user", "content": "weather?"}, )"
        R"({"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get", )"
        R"("arguments": {"lat": 52.52, "n": 3, "ok": true, "none": null, "list": [1.5, "x"]}}}]}]})";
    auto parsed = Conversation::parse_record(record, "t.session");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    auto parts = open_chat_parts(demo_dir("qwen3-moe-demo"));
    ASSERT_NE(parts, nullptr);
    auto session = new_session(*parts);
    auto chat = conversation_over(*parts, *session);
    chat->restore(std::move(*parsed));
    EXPECT_EQ(chat->record(), record);
}

TEST(ConversationRecord, ARecordThatIsNoConversationIsRefusedByName) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "holds no conversation"},
        {"{not json", "bad.session"},
        {"[1, 2]", "not a stormo conversation"},
        {R"({"stormo_conversation": 2, "system": "", "messages": []})", "version 2"},
        {R"({"stormo_conversation": 1, "messages": []})", "\"system\""},
        {R"({"stormo_conversation": 1, "system": "", "messages": {}})", "\"messages\""},
        {R"({"stormo_conversation": 1, "system": "", "messages": [{"content": "x"}]})", "message 0 has no \"role\""},
    };
    for (const auto& [record, why] : cases) {
        auto parsed = Conversation::parse_record(record, "bad.session");
        ASSERT_FALSE(parsed.has_value()) << record;
        EXPECT_NE(parsed.error().message.find("bad.session"), std::string::npos) << parsed.error().message;
        EXPECT_NE(parsed.error().message.find(why), std::string::npos) << parsed.error().message;
    }
}

class ConversationRecordDemos : public ::testing::TestWithParam<std::string> {};

// Two turns, the session and the record saved, both restored into a new session and
// conversation, a third turn: its tokens are the uninterrupted conversation's third turn's, and it
// reuses as many positions (nothing the file holds is computed again).
TEST_P(ConversationRecordDemos, ARestoredConversationAnswersAsTheOneThatNeverStopped) {
    auto parts = open_chat_parts(demo_dir(GetParam()));
    ASSERT_NE(parts, nullptr);
    auto identity = engine_identity(*parts->engine);
    ASSERT_TRUE(identity.has_value()) << identity.error().message;

    auto whole_session = new_session(*parts);
    auto whole = conversation_over(*parts, *whole_session);
    std::vector<TurnResult> expected;
    for (const auto& q : kQuestions) {
        auto turn = whole->ask(q, {});
        ASSERT_TRUE(turn.has_value()) << turn.error().message;
        expected.push_back(std::move(*turn));
    }

    auto first_session = new_session(*parts);
    auto first = conversation_over(*parts, *first_session);
    for (size_t i = 0; i < 2; ++i) ASSERT_TRUE(first->ask(kQuestions[i], {}).has_value());
    stormo::test::TempDir dir;
    const std::string path = dir.file("chat.session");
    ASSERT_TRUE(save_session_file(path, *first_session, *identity, first->record()).has_value());
    first.reset();
    first_session.reset();

    auto loaded = load_session_file(path, *identity, new_session(*parts));
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    auto record = Conversation::parse_record(loaded->record, path);
    ASSERT_TRUE(record.has_value()) << record.error().message;
    auto restored = conversation_over(*parts, *loaded->session);
    restored->restore(std::move(*record));
    auto third = restored->ask(kQuestions[2], {});
    ASSERT_TRUE(third.has_value()) << third.error().message;
    EXPECT_EQ(third->generation.tokens, expected[2].generation.tokens);
    EXPECT_EQ(third->reply.content, expected[2].reply.content);
    EXPECT_EQ(third->generation.reused_positions, expected[2].generation.reused_positions);
    EXPECT_EQ(restored->record(), whole->record());
}

INSTANTIATE_TEST_SUITE_P(Demos, ConversationRecordDemos, ::testing::ValuesIn(demo_names()),
                         [](const auto& p) { return test_name_of(p.param); });

}  // namespace
}  // namespace stormo::testing
