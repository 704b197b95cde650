// GBNF grammars (constrain/gbnf.hpp) and the byte matcher that walks them
// (constrain/grammar_matcher.hpp): each construct, the errors with their line and column, UTF-8
// classes matched byte by byte, and the forced bytes.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "constrain/gbnf.hpp"
#include "constrain/grammar_matcher.hpp"

namespace stormo::constrain {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& text) {
    auto g = parse_gbnf(text);
    EXPECT_TRUE(g.has_value()) << text << "\n" << (g ? "" : g.error().message);
    return std::make_shared<const Grammar>(g ? std::move(*g) : Grammar{});
}

// Whole: the text is a sentence. Prefix: some sentence starts with it.
struct Verdict {
    bool whole;
    bool prefix;
};
Verdict judge(const std::shared_ptr<const Grammar>& g, std::string_view text) {
    GrammarMatcher m(g);
    const auto s = m.walk(m.start(), text);
    return {s != GrammarMatcher::kDead && m.accepts(s), s != GrammarMatcher::kDead};
}
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) { return judge(g, text).whole; }

std::string error_of(const std::string& text) {
    auto g = parse_gbnf(text);
    EXPECT_FALSE(g.has_value()) << text;
    return g ? std::string() : g.error().message;
}

TEST(Gbnf, LiteralsAlternationAndGroups) {
    auto g = compile(R"(root ::= "ab" ("c" | "de") | "x")");
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "abde"));
    EXPECT_TRUE(matches(g, "x"));
    EXPECT_FALSE(matches(g, "ab"));
    EXPECT_TRUE(judge(g, "ab").prefix);
    EXPECT_FALSE(judge(g, "abx").prefix);
    EXPECT_FALSE(matches(g, "abcx"));
}

TEST(Gbnf, RepetitionsStarPlusOptionalAndBounds) {
    auto g = compile("root ::= a* b+ c? d{2} e{1,3} f{2,}\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"\nd ::= \"d\"\ne ::= \"e\"\nf ::= \"f\"");
    EXPECT_TRUE(matches(g, "bddeff"));
    EXPECT_TRUE(matches(g, "aaabbbcddeeefffff"));
    EXPECT_FALSE(matches(g, "ddeff"));       // b+ needs one
    EXPECT_FALSE(matches(g, "bdeff"));       // d{2}
    EXPECT_FALSE(matches(g, "bddeeeeff"));   // e{1,3}
    EXPECT_FALSE(matches(g, "bddef"));       // f{2,}
    EXPECT_FALSE(matches(g, "bccddeff"));    // c?
}

TEST(Gbnf, RepetitionOfAGroupAndOfALiteral) {
    auto g = compile(R"(root ::= ("ab" | "c"){2,3} "xy"?)");
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "ccabxy"));
    EXPECT_FALSE(matches(g, "c"));
    EXPECT_FALSE(matches(g, "abababab"));
    EXPECT_FALSE(matches(g, "ccx"));
}

TEST(Gbnf, CharacterClassesRangesNegationEscapesAndAnyCharacter) {
    auto g = compile(R"(root ::= [a-c0-9_] [^"\\\n] [\x41-\x43] [\]\-] .)");
    EXPECT_TRUE(matches(g, "b5A]z"));
    EXPECT_TRUE(matches(g, "_xB-z"));
    EXPECT_TRUE(matches(g, "9 C]\xC3\xA9"));  // any character: é is two bytes
    EXPECT_FALSE(matches(g, "d" "xB-z"));
    EXPECT_FALSE(matches(g, "a\"B-z"));
    EXPECT_FALSE(matches(g, "a\nB-z"));
    EXPECT_FALSE(matches(g, "axD-z"));
}

TEST(Gbnf, UnicodeClassesAreMatchedByteByByte) {
    auto g = compile("root ::= [α-ω]+ [^a-z]");
    EXPECT_TRUE(matches(g, "βγ!"));
    EXPECT_TRUE(matches(g, "ω\xF0\x9F\x98\x80"));  // an emoji is not in a-z
    EXPECT_FALSE(matches(g, "βa"));
    EXPECT_FALSE(matches(g, "a!"));
    // A token may end inside a character: the first byte of β is a valid prefix.
    EXPECT_TRUE(judge(g, "\xCE").prefix);
    EXPECT_FALSE(judge(g, "\xC3").prefix);  // starts U+00C0..U+00FF, none of them Greek
    // Surrogates are never characters, not even for a negated class.
    EXPECT_FALSE(judge(compile("root ::= [^a]"), "\xED\xA0\x80").prefix);
}

TEST(Gbnf, LiteralEscapesAndUtf8Literals) {
    auto g = compile(R"(root ::= "\"q\"\t\\\x41\u00e9\U0001F600" "ü")");
    EXPECT_TRUE(matches(g, "\"q\"\t\\A\xC3\xA9\xF0\x9F\x98\x80\xC3\xBC"));
}

TEST(Gbnf, RulesSpanLinesAfterOperatorsAndInsideGroupsWithComments) {
    auto g = compile(R"(# a comment
root ::=
  item ("," # inside a group
    item)*   # after a rule
item ::= "a" |
         "b"
)");
    EXPECT_TRUE(matches(g, "a,b,a"));
    EXPECT_FALSE(matches(g, "a,"));
}

TEST(Gbnf, RecursionThatConsumesFirstIsFine) {
    auto g = compile(R"g(root ::= "(" root ")" | "x")g");
    EXPECT_TRUE(matches(g, "((x))"));
    EXPECT_FALSE(matches(g, "((x)"));
}

TEST(Gbnf, EmptyAlternativeAndEmptyGrammarSentence) {
    auto g = compile(R"(root ::= "a" | )");
    EXPECT_TRUE(matches(g, ""));
    EXPECT_TRUE(matches(g, "a"));
}

TEST(Gbnf, LlamaCppsJsonGrammarParsesAndMatchesJson) {
    // Laid out as llama.cpp's grammars/json.gbnf is: rules over several lines, groups across lines, comments.
    auto g = compile(R"gbnf(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf");
    EXPECT_TRUE(matches(g, "{\"a\": [1, -2.5e3, \"x\\n\", {\"b\": null}], \"c\": true}"));
    EXPECT_TRUE(matches(g, "{\n  \"k\": \"v\"\n}"));
    EXPECT_FALSE(matches(g, "{\"a\": 01}"));
    EXPECT_FALSE(matches(g, "[1]"));
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
    EXPECT_EQ(error_of("root ::= \"a\" b\n"), "grammar line 1, column 14: undefined rule 'b'");
    EXPECT_EQ(error_of("x ::= \"a\"\n"), "the grammar has no rule named 'root'");
    EXPECT_EQ(error_of("root ::= \"a\n"), "grammar line 1, column 10: unterminated string literal");
    EXPECT_EQ(error_of("root ::= a\na = \"x\"\n"), "grammar line 2, column 3: expected '::=' after rule name 'a'");
    EXPECT_EQ(error_of("root ::= (\"a\"\n"), "grammar line 2, column 1: expected ')' to close the group opened at line 1, column 10");
    EXPECT_EQ(error_of("root ::= [ab\n"), "grammar line 1, column 10: unterminated character class");
    EXPECT_EQ(error_of("root ::= [z-a]"), "grammar line 1, column 13: character range ends before it starts");
    EXPECT_EQ(error_of("root ::= \"a\"{3,1}"), "grammar line 1, column 13: repetition {m,n} needs m <= n");
    EXPECT_EQ(error_of("root ::= * \"a\""), "grammar line 1, column 10: '*' must follow something to repeat");
    EXPECT_EQ(error_of("root ::= \"\\q\""), "grammar line 1, column 11: unknown escape '\\q'");
    EXPECT_EQ(error_of("root ::= \"a\" @"), "grammar line 1, column 14: unexpected '@'");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "grammar line 2, column 1: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root ::= \"a\"{20000}"), "grammar line 1, column 14: repetition count above 10000");
}

TEST(Gbnf, AGrammarTooLargeOnceUnrolledIsRefused) {
    std::string text = "root ::=";
    for (int i = 0; i < 21; ++i) text += " \"a\"{0,10000}";
    EXPECT_NE(error_of(text).find("the grammar is too large: "), std::string::npos);
}

TEST(Gbnf, LeftRecursionIsRefusedNamingTheRule) {
    EXPECT_NE(error_of("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"").find("rule 'expr' is left-recursive"), std::string::npos);
    // Through a rule that can be empty.
    EXPECT_NE(error_of("root ::= opt root \"x\" | \"y\"\nopt ::= \"a\"?").find("left-recursive"), std::string::npos);
    // A repetition of something that can be empty.
    EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

TEST(GrammarMatcher, StatesAreInternedSoALoopReturnsToTheSameState) {
    auto g = compile(R"(root ::= "\"" [a-z]* "\"")");
    GrammarMatcher m(g);
    const auto open = m.step(m.start(), '"');
    const auto one = m.step(open, 'a');
    EXPECT_EQ(m.step(one, 'b'), one);
    EXPECT_EQ(m.step(one, 'b'), m.step(open, 'z'));
    EXPECT_EQ(m.step(one, 'A'), GrammarMatcher::kDead);
    const auto closed = m.step(one, '"');
    EXPECT_TRUE(m.accepts(closed));
    EXPECT_FALSE(m.can_continue(closed));
    EXPECT_FALSE(m.accepts(one));
    EXPECT_TRUE(m.can_continue(one));
}

TEST(GrammarMatcher, OnlyByteIsTheForcedByteUntilAChoice) {
    auto g = compile(R"(root ::= "{\"k\":" ("1" | "2") "}")");
    GrammarMatcher m(g);
    auto s = m.start();
    std::string forced;
    while (auto b = m.only_byte(s)) {
        forced += static_cast<char>(*b);
        s = m.step(s, *b);
    }
    EXPECT_EQ(forced, "{\"k\":");
    s = m.step(s, '2');
    EXPECT_EQ(m.only_byte(s), std::optional<uint8_t>('}'));
    s = m.step(s, '}');
    EXPECT_EQ(m.only_byte(s), std::nullopt);  // accepting: nothing more is forced
    EXPECT_TRUE(m.accepts(s));
}

TEST(GrammarMatcher, AmbiguousGrammarsKeepEveryParseAlive) {
    // "a" then either "ab" or "b" then "c": both parses of "aab" must survive until "c" or not.
    auto g = compile(R"(root ::= "a" x "c" | "aa" "b" "d"
x ::= "ab" | "a" "b")");
    EXPECT_TRUE(matches(g, "aabc"));
    EXPECT_TRUE(matches(g, "aabd"));
    EXPECT_FALSE(matches(g, "aabe"));
}

}  // namespace
}  // namespace stormo::constrain
