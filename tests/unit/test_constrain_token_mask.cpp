// The token mask on real vocabularies (gpt-oss's 200k ids, Qwen3's): the trie walk agrees with
// decoding every token and walking its bytes; answers drawn among the allowed tokens parse and
// match their schema; Harmony's analysis channel and Qwen3's think block stay free while the
// answer is constrained; the forced tokens; greedy and seeded draws honour the mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <random>
#include <string>

#include "constrain/gbnf.hpp"
#include "constrain/grammar_constraint.hpp"
#include "constrain/json_schema_grammar.hpp"
#include "constrain/structured_output.hpp"
#include "runtime/sampler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::constrain {
namespace {

namespace fs = std::filesystem;

const text::Tokenizer& tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<text::Tokenizer>> loaded;
    auto& slot = loaded[name];
    if (!slot) {
        auto t = text::Tokenizer::load(fs::path(STORMO_TOKENIZER_DATA_DIR) / name / "tokenizer.json");
        EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
        slot = std::make_unique<text::Tokenizer>(std::move(*t));
    }
    return *slot;
}

std::shared_ptr<const TokenTrie> trie_of(const std::string& name) {
    static std::map<std::string, std::shared_ptr<const TokenTrie>> built;
    auto& slot = built[name];
    if (!slot) slot = *TokenTrie::from_tokenizer(tokenizer(name), tokenizer(name).size());
    return slot;
}

std::shared_ptr<const Grammar> schema_grammar(std::string_view schema) {
    auto value = text::parse_json_value(schema, "test");
    auto gbnf = json_schema_to_gbnf(*value, true);
    EXPECT_TRUE(gbnf.has_value()) << (gbnf ? "" : gbnf.error().message);
    auto g = parse_gbnf(*gbnf);
    EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().message);
    return std::make_shared<const Grammar>(std::move(*g));
}

int32_t id_of(const std::string& tokenizer_name, const char* token) {
    auto id = tokenizer(tokenizer_name).token_id(token);
    EXPECT_TRUE(id.has_value()) << token;
    return id.value_or(-1);
}

constexpr std::string_view kPerson = R"({"type": "object", "additionalProperties": false,
  "properties": {"name": {"type": "string", "maxLength": 8}, "role": {"enum": ["admin", "user", "guest"]},
                 "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
                 "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 6}}, "required": ["city"],
                             "additionalProperties": false}},
  "required": ["name", "role", "tags", "address"]})";

TEST(TokenTrie, PreOrderSubtreesAndTokenRanges) {
    const TokenTrie trie = TokenTrie::build({{0, "ab"}, {1, "a"}, {2, "b"}, {3, "abc"}, {4, "ab"}, {5, ""}}, 8);
    ASSERT_EQ(trie.nodes().size(), 4u);  // a, ab, abc, b
    EXPECT_EQ(trie.nodes()[0].byte, 'a');
    EXPECT_EQ(trie.nodes()[0].end, 3u);  // its subtree: a, ab, abc
    EXPECT_EQ(trie.nodes()[1].depth, 2u);
    EXPECT_EQ(trie.nodes()[1].tokens_end - trie.nodes()[1].tokens_begin, 2u);  // ids 0 and 4 spell "ab"
    EXPECT_EQ(trie.nodes()[3].byte, 'b');
    EXPECT_EQ(trie.bytes(3), "abc");
    EXPECT_EQ(trie.bytes(5), "");  // empty: never allowed
    EXPECT_EQ(trie.max_depth(), 3u);
}

TEST(TokenMask, TheTrieWalkAgreesWithWalkingEveryTokenOfA200kVocabulary) {
    const auto trie = trie_of("gpt-oss");
    ASSERT_GT(trie->vocab_size(), 199000u);
    const auto grammar = schema_grammar(kPerson);
    GrammarConstraint constraint(grammar, trie);
    GrammarMatcher brute(grammar);
    auto state = brute.start();
    // Masks at the start, inside a key, inside a string value, inside the enum, after a value.
    for (std::string prefix : {std::string(), std::string("{\"na"), std::string("me\": \"Ad"), std::string("a\", \"role\": \"us"),
                               std::string("er\", \"tags\": []")}) {
        for (char c : prefix) {
            // Feed the constraint the same bytes, as one-byte tokens of the vocabulary.
            const auto id = tokenizer("gpt-oss").encode(std::string(1, c), false);
            ASSERT_EQ(id.size(), 1u);
            ASSERT_TRUE(constraint.accept(id[0]).has_value());
            state = brute.step(state, static_cast<uint8_t>(c));
        }
        const std::vector<uint64_t> bits = constraint.allowed();
        size_t allowed = 0;
        for (size_t id = 0; id < trie->vocab_size(); ++id) {
            const std::string_view bytes = trie->bytes(static_cast<int32_t>(id));
            const bool expected = !bytes.empty() && brute.walk(state, bytes) != GrammarMatcher::kDead;
            ASSERT_EQ(GrammarConstraint::test(bits, static_cast<int32_t>(id)), expected) << "after '" << prefix << "': id " << id;
            allowed += expected;
        }
        EXPECT_GT(allowed, 0u);
    }
}

// Draws answers among the allowed tokens (uniformly, seeded) until a stop id: each parses.
std::string draw_answer(StructuredOutput& output, const TokenTrie& trie, size_t vocab, std::mt19937& rng, int32_t stop) {
    std::string text;
    for (int step = 0; step < 400; ++step) {
        std::vector<float> logits(vocab, 0.0f);
        EXPECT_TRUE(output.mask(logits).has_value());
        std::vector<int32_t> allowed;
        for (size_t i = 0; i < vocab; ++i)
            if (logits[i] == 0.0f) allowed.push_back(static_cast<int32_t>(i));
        EXPECT_FALSE(allowed.empty());
        // The stop id when it may come half the time, so answers end.
        const bool may_stop = std::ranges::find(allowed, stop) != allowed.end();
        const int32_t token = may_stop && rng() % 2 == 0 ? stop : allowed[rng() % allowed.size()];
        EXPECT_TRUE(output.accept(token).has_value());
        if (token == stop) return text;
        text += trie.bytes(token);
    }
    ADD_FAILURE() << "no stop within 400 tokens: " << text;
    return text;
}

TEST(TokenMask, AnswersDrawnAmongTheAllowedTokensParseAndMatchTheSchema) {
    const auto trie = trie_of("gpt-oss");
    const auto grammar = schema_grammar(kPerson);
    const int32_t stop = id_of("gpt-oss", "<|return|>");
    std::mt19937 rng(5);
    for (int i = 0; i < 6; ++i) {
        ReplyMarkers plain;
        StructuredOutput output(grammar, trie, plain, {stop});
        const std::string text = draw_answer(output, *trie, trie->vocab_size(), rng, stop);
        auto parsed = text::parse_json_value(text, "answer");
        ASSERT_TRUE(parsed.has_value()) << text;
        ASSERT_TRUE(parsed->is_object()) << text;
        const text::Value* role = parsed->find("role");
        ASSERT_TRUE(role && role->is_string()) << text;
        EXPECT_TRUE(role->as_string() == "admin" || role->as_string() == "user" || role->as_string() == "guest") << text;
        ASSERT_TRUE(parsed->find("name") && parsed->find("name")->is_string()) << text;
        ASSERT_TRUE(parsed->find("tags") && parsed->find("tags")->is_list()) << text;
        EXPECT_LE(parsed->find("tags")->as_list().size(), 3u) << text;
        const text::Value* address = parsed->find("address");
        ASSERT_TRUE(address && address->is_object() && address->find("city")) << text;
        if (const text::Value* age = parsed->find("age")) {
            EXPECT_TRUE(age->is_int()) << text;
        }
    }
}

TEST(TokenMask, TheStopIdIsAllowedOnlyWhereTheGrammarAccepts) {
    const auto trie = trie_of("gpt-oss");
    const int32_t stop = id_of("gpt-oss", "<|return|>");
    auto g = parse_gbnf(R"(root ::= "ok" "!"?)");
    StructuredOutput output(std::make_shared<const Grammar>(std::move(*g)), trie, ReplyMarkers{}, {stop});
    std::vector<float> logits(trie->vocab_size(), 1.0f);
    ASSERT_TRUE(output.mask(logits).has_value());
    EXPECT_TRUE(std::isinf(logits[static_cast<size_t>(stop)]));
    ASSERT_TRUE(output.accept(tokenizer("gpt-oss").encode("ok", false).at(0)).has_value());
    logits.assign(trie->vocab_size(), 1.0f);
    ASSERT_TRUE(output.mask(logits).has_value());
    EXPECT_EQ(logits[static_cast<size_t>(stop)], 1.0f);
    EXPECT_FALSE(output.complete());
    ASSERT_TRUE(output.accept(tokenizer("gpt-oss").encode("!", false).at(0)).has_value());
    logits.assign(trie->vocab_size(), 1.0f);
    ASSERT_TRUE(output.mask(logits).has_value());
    size_t finite = 0;
    for (float v : logits) finite += std::isfinite(v);
    EXPECT_EQ(finite, 1u);  // only the stop id
    // Without stop ids (ignore_eos) the answer is complete as soon as nothing can follow.
    auto g2 = parse_gbnf(R"(root ::= "ok")");
    StructuredOutput no_stop(std::make_shared<const Grammar>(std::move(*g2)), trie, ReplyMarkers{}, {});
    ASSERT_TRUE(no_stop.accept(tokenizer("gpt-oss").encode("ok", false).at(0)).has_value());
    EXPECT_TRUE(no_stop.complete());
}

TEST(TokenMask, HarmonyConstrainsOnlyTheFinalChannel) {
    const std::string name = "gpt-oss";
    const auto trie = trie_of(name);
    const auto& tok = tokenizer(name);
    const int32_t ret = id_of(name, "<|return|>"), call = id_of(name, "<|call|>");
    StructuredOutput output(schema_grammar(R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})"),
                            trie, ReplyMarkers::of(tok, text::ReplyFormat::harmony), {ret, call});
    const int32_t junk = tok.encode("}}]]", false).at(0);
    auto feed = [&](const std::string& text) {
        for (int32_t id : tok.encode(text, true)) ASSERT_TRUE(output.accept(id).has_value()) << text;
    };
    auto allowed = [&](int32_t id) {
        std::vector<float> logits(trie->vocab_size(), 0.0f);
        EXPECT_TRUE(output.mask(logits).has_value());
        return std::isfinite(logits[static_cast<size_t>(id)]);
    };
    // The header and the analysis channel: anything but the end of the reply.
    EXPECT_TRUE(allowed(junk));
    EXPECT_FALSE(allowed(ret));
    feed("<|channel|>analysis<|message|>Let me think }} about it");
    EXPECT_FALSE(output.in_answer());
    EXPECT_TRUE(allowed(junk));
    EXPECT_FALSE(allowed(ret));
    EXPECT_TRUE(output.forced_tokens(8).empty());  // outside the answer nothing is forced
    feed("<|end|><|start|>assistant<|channel|>final<|message|>");
    EXPECT_TRUE(output.in_answer());
    EXPECT_EQ(*tok.decode(output.forced_tokens(8)), "{");  // then a choice: whitespace or the key
    EXPECT_FALSE(allowed(junk));
    EXPECT_TRUE(allowed(tok.encode("{\"", false).at(0)));
    EXPECT_FALSE(allowed(ret));
    feed("{\"ok\": true}");
    EXPECT_TRUE(allowed(ret));
    EXPECT_TRUE(allowed(id_of(name, "<|end|>")));
    EXPECT_FALSE(allowed(junk));
    ASSERT_TRUE(output.accept(ret).has_value());
    EXPECT_TRUE(output.complete());
}

TEST(TokenMask, HarmonyToolCallsMayEndTheReply) {
    const std::string name = "gpt-oss";
    const auto& tok = tokenizer(name);
    const int32_t ret = id_of(name, "<|return|>"), call = id_of(name, "<|call|>");
    StructuredOutput output(schema_grammar(R"({"type": "integer"})"), trie_of(name), ReplyMarkers::of(tok, text::ReplyFormat::harmony),
                            {ret, call});
    for (int32_t id : tok.encode("<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}", true))
        ASSERT_TRUE(output.accept(id).has_value());
    std::vector<float> logits(trie_of(name)->vocab_size(), 0.0f);
    ASSERT_TRUE(output.mask(logits).has_value());
    EXPECT_TRUE(std::isfinite(logits[static_cast<size_t>(call)]));
}

TEST(TokenMask, ThinkTagsLeaveTheReasoningFreeAndTheNewlinesAfterIt) {
    const std::string name = "qwen3";
    const auto& tok = tokenizer(name);
    const auto trie = trie_of(name);
    const int32_t eos = id_of(name, "<|im_end|>");
    StructuredOutput output(schema_grammar(R"({"enum": ["yes", "no"]})"), trie, ReplyMarkers::of(tok, text::ReplyFormat::think_tags), {eos});
    auto allowed = [&](int32_t id) {
        std::vector<float> logits(trie->vocab_size(), 0.0f);
        EXPECT_TRUE(output.mask(logits).has_value());
        return std::isfinite(logits[static_cast<size_t>(id)]);
    };
    const int32_t think = id_of(name, "<think>");
    const int32_t prose = tok.encode("Hello", false).at(0);
    const int32_t quote = tok.encode("\"", false).at(0);
    EXPECT_TRUE(allowed(think));
    EXPECT_TRUE(allowed(quote));
    EXPECT_FALSE(allowed(prose));
    ASSERT_TRUE(output.accept(think).has_value());
    EXPECT_TRUE(allowed(prose));
    EXPECT_FALSE(allowed(eos));
    for (int32_t id : tok.encode("\nHello there\n</think>\n\n", true)) ASSERT_TRUE(output.accept(id).has_value());
    EXPECT_FALSE(allowed(prose));
    EXPECT_TRUE(allowed(quote));
    EXPECT_TRUE(allowed(tok.encode("\n", false).at(0)));
    for (int32_t id : tok.encode("\"no\"", false)) ASSERT_TRUE(output.accept(id).has_value());
    EXPECT_TRUE(allowed(eos));
    EXPECT_FALSE(allowed(tok.encode("\n", false).at(0)));
}

TEST(TokenMask, ForcedTokensSpellTheBytesTheGrammarForces) {
    const auto trie = trie_of("gpt-oss");
    const auto& tok = tokenizer("gpt-oss");
    auto g = parse_gbnf(R"(root ::= "{\"name\": \"" [a-z]+ "\", \"kind\": \"person\"}")");
    GrammarConstraint constraint(std::make_shared<const Grammar>(std::move(*g)), trie);
    EXPECT_EQ(constraint.forced_bytes(100), "{\"name\": \"");
    const std::vector<int32_t> forced = constraint.forced_tokens(16);
    ASSERT_FALSE(forced.empty());
    EXPECT_EQ(*tok.decode(forced), "{\"name\": \"");
    for (int32_t id : forced) ASSERT_TRUE(constraint.accept(id).has_value());
    EXPECT_TRUE(constraint.forced_tokens(16).empty());  // the name is a choice
    for (int32_t id : tok.encode("ada\"", false)) ASSERT_TRUE(constraint.accept(id).has_value());
    const std::vector<int32_t> rest = constraint.forced_tokens(16);
    EXPECT_EQ(*tok.decode(rest), ", \"kind\": \"person\"}");
    EXPECT_LT(rest.size(), std::string(", \"kind\": \"person\"}").size());  // longest matches: fewer tokens than bytes
    EXPECT_EQ(constraint.forced_tokens(2).size(), 2u);
}

TEST(TokenMask, GreedyAndSeededDrawsHonourTheMask) {
    const auto trie = trie_of("gpt-oss");
    auto g = parse_gbnf(R"(root ::= ("yes" | "no"))");
    auto grammar = std::make_shared<const Grammar>(std::move(*g));
    // The model's favourites lie elsewhere: the largest logits are on tokens the grammar refuses.
    std::vector<float> logits(trie->vocab_size(), 0.0f);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 97) * 0.1f;
    StructuredOutput output(grammar, trie, ReplyMarkers{}, {});
    std::vector<float> masked = logits;
    ASSERT_TRUE(output.mask(masked).has_value());
    // Allowed: exactly the tokens that spell a start of "yes" or "no".
    std::set<int32_t> allowed;
    for (size_t i = 0; i < masked.size(); ++i)
        if (std::isfinite(masked[i])) allowed.insert(static_cast<int32_t>(i));
    std::set<int32_t> expected;
    for (size_t i = 0; i < trie->vocab_size(); ++i) {
        const std::string_view b = trie->bytes(static_cast<int32_t>(i));
        if (!b.empty() && (std::string_view("yes").starts_with(b) || std::string_view("no").starts_with(b)))
            expected.insert(static_cast<int32_t>(i));
    }
    EXPECT_EQ(allowed, expected);
    ASSERT_GE(allowed.size(), 2u);
    int32_t best = *allowed.begin();
    for (int32_t id : allowed)
        if (logits[static_cast<size_t>(id)] > logits[static_cast<size_t>(best)]) best = id;
    Sampler greedy(SamplingParams{});
    EXPECT_EQ(greedy.sample(masked, {}), best);
    EXPECT_NE(argmax(logits), best);  // unmasked, greedy would have left the grammar
    SamplingParams p;
    p.temperature = 1.5f;
    p.top_k = 40;
    p.seed = 9;
    Sampler seeded(p);
    std::set<int32_t> drawn;
    for (int i = 0; i < 300; ++i) drawn.insert(seeded.sample(masked, {}));
    EXPECT_GT(drawn.size(), 1u);
    for (int32_t id : drawn) EXPECT_TRUE(allowed.contains(id)) << id;
}

TEST(TokenMask, AVocabularyThatCannotSpellTheGrammarIsAnError) {
    const TokenTrie letters = TokenTrie::build({{0, "a"}, {1, "b"}}, 2);
    auto g = parse_gbnf(R"(root ::= "{")");
    StructuredOutput output(std::make_shared<const Grammar>(std::move(*g)), std::make_shared<const TokenTrie>(letters), ReplyMarkers{}, {});
    std::vector<float> logits(2, 0.0f);
    auto masked = output.mask(logits);
    ASSERT_FALSE(masked.has_value());
    EXPECT_NE(masked.error().message.find("no token of this model's vocabulary can continue the answer"), std::string::npos);
}

}  // namespace
}  // namespace stormo::constrain
