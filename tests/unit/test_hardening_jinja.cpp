// The chat-template engine under hostile templates (hardening issue, items 2 and 3): integer
// arithmetic that C++ traps on or leaves undefined is an error or Python's exact answer, values
// nest only so deep, and no string a template builds grows past the output limit or comes out
// silently cut. Limits are made small where a test proves a bound, so nothing here allocates much.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"
#include "jinja/chat_template.hpp"
#include "jinja/chat_value.hpp"
#include "util/file.hpp"

namespace stormo::test {
namespace {

using text::ChatTemplate;
using text::RenderLimits;
using text::Value;

Expected<std::string> render_with(const std::string& source, const RenderLimits& limits, Value options = Value::object()) {
    auto chat_template = ChatTemplate::parse(source, "t.jinja");
    if (!chat_template) return tl::unexpected(chat_template.error());
    chat_template->set_limits(limits);
    return chat_template->render(Value::list(), options);
}

// What the template renders, or "ERROR: " and the message.
std::string outcome(const std::string& source, const RenderLimits& limits = RenderLimits{}) {
    auto out = render_with(source, limits);
    return out ? *out : "ERROR: " + out.error().message;
}

RenderLimits output_limit(size_t bytes) {
    RenderLimits limits;
    limits.max_output_bytes = bytes;
    return limits;
}

constexpr const char* int64_min = "(-9223372036854775807 - 1)";

std::string with_min(const std::string& before, const std::string& after) {
    return "{{ " + before + int64_min + after + " }}";
}

TEST(JinjaIntegers, TheSmallestIntegerDividedByMinusOneIsAnErrorNotATrap) {
    EXPECT_EQ(outcome(with_min("", " // -1")), "ERROR: t.jinja:1: integer overflow in // (integers here are 64-bit)");
    EXPECT_EQ(outcome(with_min("", " % -1")), "0");  // Python's answer, which fits
    EXPECT_EQ(outcome(with_min("", " is divisibleby(-1)")), "True");
    EXPECT_EQ(outcome("{{ 7 // -1 }} {{ -7 % -1 }} {{ -7 // 2 }} {{ -7 % 2 }}"), "-7 0 -4 1");
}

TEST(JinjaIntegers, OverflowIsAnErrorInEveryOperation) {
    for (const std::string& overflowing :
         {with_min("-", ""), with_min("", "|abs"), std::string("{{ 9223372036854775807 + 1 }}"), with_min("", " - 1"),
          std::string("{{ 4611686018427387904 * 2 }}"), std::string("{{ 2 ** 63 }}"), std::string("{{ (-3) ** 40 }}")}) {
        const std::string got = outcome(overflowing);
        EXPECT_NE(got.find("ERROR: t.jinja:1: integer overflow in"), std::string::npos) << overflowing << " gave " << got;
    }
    auto kind = render_with("{{ 9223372036854775807 + 1 }}", RenderLimits{});
    ASSERT_FALSE(kind);
    EXPECT_EQ(kind.error().kind, ErrorKind::unsupported);  // Python's answer is a bigger integer than this engine has
    EXPECT_EQ(outcome("{{ 2 ** 62 }} {{ (-2) ** 63 }}"), "4611686018427387904 -9223372036854775808");
    // By squaring: an exponent near 2^63 takes 63 rounds, not 2^63.
    EXPECT_EQ(outcome("{{ 1 ** 9223372036854775807 }} {{ (-1) ** 9223372036854775807 }} {{ 0 ** 9223372036854775807 }}"),
              "1 -1 0");
}

TEST(JinjaIntegers, SizesNearTwoToThe63DoNotWrapAround) {
    EXPECT_EQ(outcome("{{ range(9223372036854775800, 9223372036854775807, 5)|list }}"),
              "[9223372036854775800, 9223372036854775805]");
    EXPECT_EQ(outcome("{{ range(-9223372036854775800, -9223372036854775807 - 1, -5)|list }}"),
              "[-9223372036854775800, -9223372036854775805]");
    EXPECT_EQ(outcome("{{ [1, 2, 3][1::9223372036854775807] }} {{ 'abc'[::-9223372036854775807] }}"), "[2] c");
    // 2 bytes times 2^63 wraps to 0 in 64 bits: the check must not.
    EXPECT_NE(outcome("{{ 'ab' * 9223372036854775807 }}").find("string repetition result larger than"), std::string::npos);
    EXPECT_NE(outcome("{{ [1, 2] * 4611686018427387904 }}").find("list repetition result larger than"), std::string::npos);
}

TEST(JinjaIntegers, FloatsBeyondInt64AreErrorsWhereTheyWouldBecomeIntegers) {
    EXPECT_EQ(outcome("{{ 1e300|int }}"), "ERROR: t.jinja:1: int of 1e+300 is beyond 64-bit integers");
    EXPECT_EQ(outcome("{{ '1e300'|int }}"), "ERROR: t.jinja:1: int of 1e+300 is beyond 64-bit integers");
    EXPECT_EQ(outcome("{{ '99999999999999999999'|int }}"),
              "ERROR: t.jinja:1: int of '99999999999999999999' is beyond 64-bit integers");
    EXPECT_EQ(outcome("{{ 'nan'|float|int }} {{ 'x'|int(7) }} {{ -2.5|int }} {{ '-12'|int }}"), "0 7 -2 -12");
    EXPECT_EQ(outcome("{{ '%d' % 1e300 }}"), "ERROR: t.jinja:1: %d of a float beyond 64-bit integers (not supported)");
    EXPECT_EQ(outcome("{{ '%d' % 'nan'|float }}"), "ERROR: t.jinja:1: cannot convert float NaN to integer");
    EXPECT_EQ(outcome("{{ '%d' % -2.9 }}"), "-2");
    EXPECT_EQ(outcome("{{ (-9223372036854775808.0)|int }} {{ '%d' % -9223372036854775808.0 }}"),  // -2^63 itself fits
              "-9223372036854775808 -9223372036854775808");
}

TEST(JinjaFloats, ArithmeticGivesPythonsAnswerOrItsError) {
    // CPython's float floor division and modulo (fmod based): floor(1 / 0.1) would say 10.0.
    EXPECT_EQ(outcome("{{ 1 // 0.1 }} {{ 1 % 0.1 }} {{ -4.0 % 2.0 }} {{ 4.0 % -2.0 }} {{ -7 // 2.0 }} {{ 0.0 // -1 }}"),
              "9.0 0.09999999999999995 0.0 -0.0 -4.0 -0.0");
    EXPECT_EQ(outcome("{{ 0 ** -1 }}"), "ERROR: t.jinja:1: 0.0 cannot be raised to a negative power");
    EXPECT_EQ(outcome("{{ 10.0 ** 400 }}"), "ERROR: t.jinja:1: float ** overflows (Numerical result out of range)");
    EXPECT_EQ(outcome("{{ (-8) ** (1 / 3) }}"),
              "ERROR: t.jinja:1: a negative number to a fractional power is complex (not supported)");
    EXPECT_EQ(outcome("{{ 2 ** -1 }} {{ (-2.0) ** 3 }}"), "0.5 -8.0");
}

TEST(JinjaFloats, IntegersCompareWithFloatsExactly) {
    // 2**53 + 1 and 2.0**53 are one double apart in Python's eyes, the same double in C's.
    EXPECT_EQ(outcome("{{ 9007199254740993 == 9007199254740992.0 }} {{ 9007199254740993 > 9007199254740992.0 }} "
                      "{{ 9223372036854775807 < 9223372036854775808.0 }} {{ 1 == 1.0 }} {{ -1 < -0.5 }} {{ [1, 2] < [1, 2.5] }}"),
              "False True True True True True");
}

// ---- nesting

constexpr const char* nest_50000 =
    "{% set ns = namespace(d=0) %}{% for i in range(50000) %}{% set ns.d = [ns.d] %}{% endfor %}";

TEST(JinjaNesting, AValueNestedDeeperThanTheLimitIsAnErrorNotAStackOverflow) {
    for (const char* use : {"{{ ns.d|tojson }}", "{{ ns.d }}", "{{ ns.d == ns.d }}"}) {
        auto out = render_with(std::string(nest_50000) + use, RenderLimits{});
        ASSERT_FALSE(out) << use;
        EXPECT_EQ(out.error().kind, ErrorKind::resource);
        EXPECT_EQ(out.error().message, "t.jinja:1: a value nested more than 1000 lists or dicts deep") << use;
    }
    const std::string dicts = "{% set ns = namespace(d=0) %}{% for i in range(50000) %}{% set ns.d = {'k': ns.d} %}{% endfor %}";
    EXPECT_EQ(outcome(dicts), "ERROR: t.jinja:1: a value nested more than 1000 lists or dicts deep");
}

TEST(JinjaNesting, TheDepthLimitIsExactAndEveryWayOfNestingCounts) {
    RenderLimits limits;
    limits.max_value_depth = 3;
    EXPECT_EQ(outcome("{{ [[[1]]] }} {{ {'a': [{'b': 1}]} }}", limits), "[[[1]]] {'a': [{'b': 1}]}");
    EXPECT_EQ(outcome("{{ [[[[1]]]] }}", limits), "ERROR: t.jinja:1: a value nested more than 3 lists or dicts deep");
    // dict.items() pairs, dictsort's pairs, list and dict displays, inside a macro.
    for (const char* deeper : {"{{ {'a': [[1]]}.items()|list }}", "{{ {'a': [[1]]}|dictsort }}", "{% set x = [[[1]]] %}{{ [x] }}",
                               "{% set x = [[[1]]] %}{{ {'k': x} }}", "{% set x = [[[1]]] %}{% macro m(v) %}{{ [v] }}{% endmacro %}{{ m(x) }}"}) {
        EXPECT_NE(outcome(deeper, limits).find("nested more than 3"), std::string::npos) << deeper;
    }
}

// ---- text size

TEST(JinjaTextLimits, DoublingByReplaceJoinOrConcatenationStopsAtTheOutputLimit) {
    const RenderLimits limits = output_limit(1000);
    for (const char* doubling : {"{% set ns.s = ns.s|replace('a', 'aa') %}", "{% set ns.s = ns.s.replace('a', 'aa') %}",
                                 "{% set ns.s = [ns.s, ns.s]|join %}", "{% set ns.s = ns.s.join([ns.s, ns.s]) %}",
                                 "{% set ns.s = ns.s ~ ns.s %}", "{% set ns.s = ns.s + ns.s %}", "{% set ns.s = ns.s * 2 %}",
                                 "{% set ns.s = [ns.s, ns.s]|sum(start='') %}", "{% set ns.s = '%s%s' % (ns.s, ns.s) %}"}) {
        const std::string source = std::string("{% set ns = namespace(s='ab') %}{% for i in range(64) %}") + doubling + "{% endfor %}";
        auto out = render_with(source, limits);
        ASSERT_FALSE(out) << doubling;
        EXPECT_EQ(out.error().kind, ErrorKind::resource) << doubling;
        EXPECT_NE(out.error().message.find("larger than 1000 bytes (the rendered output's limit)"), std::string::npos)
            << doubling << ": " << out.error().message;
    }
}

TEST(JinjaTextLimits, WidthsAndIndentsAreCheckedBeforeTheTextIsBuilt) {
    const RenderLimits limits = output_limit(1000);
    EXPECT_EQ(outcome("{{ 'a\\nb'|indent(100000) }}", limits),
              "ERROR: t.jinja:1: indent width larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ 'a\\nb\\nc'|indent(' ' * 600) }}", limits),
              "ERROR: t.jinja:1: string result larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ '%999999999s' % 'a' }}", limits),
              "ERROR: t.jinja:1: format width larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ '%.999999999f' % 1.0 }}", limits),
              "ERROR: t.jinja:1: format precision larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ '%99999999999999999999d' % 1 }}"),  // would overflow an int while parsed
              "ERROR: t.jinja:1: format width larger than 16777216 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ [1, 2]|tojson(indent='x' * 600) }}", limits),
              "ERROR: t.jinja:1: tojson result larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ strftime_now('%Y' * 300) }}", limits),
              "ERROR: t.jinja:1: strftime_now() result larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{{ 'x' * 100000000 }}"),
              "ERROR: t.jinja:1: string repetition result larger than 16777216 bytes (the rendered output's limit)");
}

TEST(JinjaTextLimits, WideNumbersAndDatesComeOutWholeNotCut) {
    // A fixed 512-byte buffer cut these to 511 characters, and strftime's to nothing.
    const std::string precise = outcome("{{ '%.600f' % 1.0 }}");
    EXPECT_EQ(precise.size(), 602u);
    EXPECT_EQ(precise.substr(0, 5), "1.000");
    EXPECT_EQ(outcome("{{ ('%700d' % 7)|length }} {{ ('%-700s' % 'a')|length }}"), "700 700");
    const std::string years = outcome("{{ strftime_now('%Y' * 1000) }}");
    ASSERT_EQ(years.size(), 4000u) << years.substr(0, 100);
    EXPECT_EQ(years.find_first_not_of("0123456789"), std::string::npos);
    EXPECT_EQ(outcome("[{{ strftime_now('') }}]"), "[]");
}

TEST(JinjaTextLimits, AValueHoldingMoreThanTheOutputLimitIsRefused) {
    // A list is cheap to build from a big string, and prints (and copies) it once per item.
    auto out = render_with("{% set s = 'x' * 600 %}{{ [s, s]|length }}", output_limit(1000));
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().message, "t.jinja:1: a value larger than 1000 bytes (the rendered output's limit)");
    EXPECT_EQ(outcome("{% set s = 'x' * 600 %}{% set ns = namespace(l=[s]) %}{% for i in range(9) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                      output_limit(1000)),
              "ERROR: t.jinja:1: list concatenation result larger than 1000 bytes (the rendered output's limit)");
}

// ---- work

TEST(JinjaWork, UniqueFindsRepeatsByHashNotByComparingEveryPair) {
    // Each item against every kept one: 100,000 distinct items were 5 billion comparisons.
    EXPECT_EQ(outcome("{{ range(100000)|unique|list|length }} {{ (range(50000)|list + range(50000)|list)|unique|list|length }}"),
              "100000 50000");
    // The hash keeps Python's equality: 1 == 1.0 == True, a list is not a tuple, dicts ignore order.
    EXPECT_EQ(outcome("{{ [1, 1.0, True, 2, '2', 'A', 'a', [1], [1.0], (1,), {'a': 1, 'b': 2}, {'b': 2, 'a': 1.0}]|unique|list }}"),
              "[1, 2, '2', 'A', [1], (1,), {'a': 1, 'b': 2}]");
}

// ---- the CLI

TEST(JinjaHardeningCli, ATrappingTemplateExitsOneWithTheLineNotASignal) {
    TempDir tmp;
    ASSERT_TRUE(write_file(tmp.file("chat_template.jinja"),
                           "{% for m in messages %}{{ (m.content|int) // -1 }}{% endfor %}").has_value());
    const std::string messages = tmp.file("messages.json");
    ASSERT_TRUE(write_file(messages, R"({"messages": [{"role": "user", "content": "-9223372036854775808"}]})").has_value());
    const auto r = run_cli("chat-template --tokenizer '" + tmp.path() + "' --messages '" + messages + "'");
    EXPECT_EQ(r.status, 1) << r.err;  // was 136 (SIGFPE)
    EXPECT_NE(r.err.find("chat_template.jinja:1: integer overflow in //"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stormo::test
