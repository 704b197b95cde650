// The Jinja engine behind ChatTemplate, feature by feature. Expected texts are what Jinja2 3.1
// renders with transformers' settings (trim_blocks, lstrip_blocks, loopcontrols, its tojson).
#include <gtest/gtest.h>

#include <string>

#include "jinja/chat_template.hpp"
#include "jinja/chat_value.hpp"

namespace {

using stormo::ErrorKind;
using stormo::Expected;
using stormo::text::ChatTemplate;
using stormo::text::Value;

// Renders `text` with `variables` as the render options (messages an empty list unless given).
Expected<std::string> render(const std::string& text, Value variables = Value::object()) {
    auto chat_template = ChatTemplate::parse(text, "t.jinja");
    if (!chat_template) return tl::unexpected(chat_template.error());
    Value messages = variables.find("messages") ? *variables.find("messages") : Value::list();
    return chat_template->render(messages, variables);
}

std::string rendered(const std::string& text, Value variables = Value::object()) {
    auto out = render(text, std::move(variables));
    return out ? *out : "ERROR: " + out.error().message;
}

std::string error_of(const std::string& text, Value variables = Value::object()) {
    auto out = render(text, std::move(variables));
    return out ? "rendered: " + *out : out.error().message;
}

ErrorKind error_kind(const std::string& text) {
    auto out = render(text);
    return out ? ErrorKind::internal : out.error().kind;
}

Value parsed(const std::string& json) { return *stormo::text::parse_json_value(json, "test"); }

// ---- whitespace

TEST(Jinja, DashStripsWhitespaceOnItsSide) {
    EXPECT_EQ(rendered("a  {{- 'x' -}}  b"), "axb");
    EXPECT_EQ(rendered("line1\n    {%- if true %} y{% endif %}"), "line1 y");
    EXPECT_EQ(rendered("{%- if true -%}\n  a\n{%- endif -%}\n"), "a");
}

TEST(Jinja, TrimBlocksDropsTheNewlineAfterABlockTag) {
    EXPECT_EQ(rendered("{% if true %}\nyes\n{% endif %}\n"), "yes\n");
    EXPECT_EQ(rendered("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");  // not after {{ }}
    EXPECT_EQ(rendered("{% for i in [1] %}\n  x\n{% endfor %}\n"), "  x\n");
}

TEST(Jinja, LstripBlocksDropsIndentBeforeABlockTagAtLineStart) {
    EXPECT_EQ(rendered("a\n  {% if true %}\n  x\n  {% endif %}\nb"), "a\n  x\nb");
    EXPECT_EQ(rendered("  {{ 1 }}  {% if 1 %}\n  k\n  {% endif %}"), "  1    k\n");
    EXPECT_EQ(rendered("t\t{% if true %}\t\n{% endif %}u"), "t\t\t\nu");  // not at a line start
    EXPECT_EQ(rendered("{% if true %}  {% endif %}\n  {% if true %}y{% endif %}  \nz"), "  y  \nz");
}

TEST(Jinja, PlusKeepsTheIndentBeforeABlockTag) {
    EXPECT_EQ(rendered("a\n  {%+ if true %}x{% endif %}\n"), "a\n  x");
}

TEST(Jinja, CommentsFollowTheBlockWhitespaceRules) {
    EXPECT_EQ(rendered("  {# comment #}\nz"), "z");
    EXPECT_EQ(rendered("a {# c -#}   b"), "a b");
    EXPECT_EQ(rendered("a\n{#- c #}\nb\n  {#- c -#}  \nc"), "abc");
}

TEST(Jinja, NewlinesNormalizedAndOneTrailingNewlineDropped) {
    EXPECT_EQ(rendered("x\r\ny\r\n"), "x\ny");
    EXPECT_EQ(rendered("x\n\n"), "x\n");
    EXPECT_EQ(rendered("{{ 'v' }}x\n  "), "vx\n  ");  // the last line's indent is text, not a tag's
}

TEST(Jinja, RawBlockIsText) {
    EXPECT_EQ(rendered("{% raw %}{{ not }}{% endraw %}!"), "{{ not }}!");
}

// ---- literals, operators, printing

TEST(Jinja, PrintsValuesAsPythonStr) {
    EXPECT_EQ(rendered("{{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ 1.0 }}|{{ 3 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|"
                       "{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}"),
              "None|None|True|False|1.0|1.5|3|-4|2|1024|0.5");
    EXPECT_EQ(rendered("{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }}|{{ {'a': 1, 'b': [2]} }}|{{ ('x', 1) }}|{{ (1,) }}"),
              "[1, 'a', None, True, 1.5, {'k': 'v'}]|{'a': 1, 'b': [2]}|('x', 1)|(1,)");
    EXPECT_EQ(rendered("{{ \"it's\" }}|{{ ['it\\'s'] }}|{{ ['q\"x'] }}|{{ ['\\n'] }}"), "it's|[\"it's\"]|['q\"x']|['\\n']");
}

TEST(Jinja, FloatsPrintAsPythonRepr) {
    EXPECT_EQ(rendered("{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ -0.0 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 123e-7 }}|{{ 1/3 }}|{{ 0.000123 }}"),
              "1e+20|0.30000000000000004|1e-05|-0.0|1e+16|1000000000000000.0|1.23e-05|0.3333333333333333|0.000123");
}

TEST(Jinja, StringLiteralsDecodePythonEscapes) {
    EXPECT_EQ(rendered("{{ 'a\\tb\\\\c\\u00e9\\x41' }}|{{ 'ab' 'cd' }}|{{ 1_000 }}|{{ 12.5e1 }}"), "a\tb\\céA|abcd|1000|125.0");
}

TEST(Jinja, ConcatenationComparisonAndLogic) {
    EXPECT_EQ(rendered("{{ 'x' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] * 2 }}|{{ [1] + [2] }}"), "x1NoneTrue|ababab|[1, 1]|[1, 2]");
    EXPECT_EQ(rendered("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 5 }}|{{ [1,2] < [1,3] }}|{{ 1 == 1.0 }}|{{ true == 1 }}|"
                       "{{ 'a' in 'cat' }}|{{ 2 not in [1] }}|{{ 'k' in {'k': 1} }}"),
              "True|False|True|True|True|True|True|True");
    EXPECT_EQ(rendered("{{ 1 if false }}|{{ 1 if false else 2 }}|{{ x or 'd' }}|{{ 0 and 1 }}|{{ [] or [5] }}|{{ not(1) }}"),
              "|2|d|0|[5]|False");
    EXPECT_EQ(rendered("{{ 'x' if a else 'y' if b else 'z' }}", parsed(R"({"b": 1})")), "y");
    EXPECT_EQ(rendered("{{ -3|abs }}|{{ -(3) }}|{{ - 1.5 }}"), "3|-3|-1.5");
}

// ---- undefined

TEST(Jinja, UndefinedPrintsNothingAndIsFalsy) {
    EXPECT_EQ(rendered("[{{ x }}]{{ x is defined }}{{ x is undefined }}{% if x %}t{% else %}f{% endif %}"
                       "{{ x|length }}{{ x|default('d') }}{{ x == none }}"),
              "[]FalseTruef0dFalse");
    EXPECT_EQ(rendered("{% for i in x %}{{ i }}{% else %}empty{% endfor %}|{{ x ~ 'a' }}|{{ x|join(',') }}|{{ x|list }}"),
              "empty|a||[]");
}

TEST(Jinja, MissingMemberIsUndefinedButMemberOfUndefinedIsAnError) {
    Value d = parsed(R"({"d": {"k": 1}})");
    EXPECT_EQ(rendered("{{ d.missing }}|{{ d.missing is defined }}|{{ d['missing'] is defined }}|{{ d.k }}", d),
              "|False|False|1");
    EXPECT_EQ(rendered("{{ none.x }}|{{ [1][5] }}|{{ 'ab'[9] }}"), "||");
    EXPECT_EQ(error_of("\n{{ d.missing.deeper }}", d), "t.jinja:2: 'dict object' has no attribute 'missing'");
    EXPECT_EQ(error_of("{{ x.y }}"), "t.jinja:1: 'x' is undefined");
    EXPECT_EQ(error_of("{{ x + 1 }}"), "t.jinja:1: 'x' is undefined");
    EXPECT_EQ(error_of("{{ x|tojson }}"), "t.jinja:1: Object of type Undefined is not JSON serializable");
}

// ---- statements

TEST(Jinja, LoopVariables) {
    EXPECT_EQ(rendered("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                       "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
              "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
    EXPECT_EQ(rendered("{% for x in ['a','b','c'] %}{{ loop.previtem|default('^') }}{{ x }}{{ loop.nextitem|default('$') }} {% endfor %}"),
              "^ab abc bc$ ");
    EXPECT_EQ(rendered("{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}"),
              "113 214 1|123 224 2|");
}

TEST(Jinja, LoopFilterElseBreakContinueAndUnpacking) {
    EXPECT_EQ(rendered("{% for x in range(10) if x is odd %}{{ x }}/{{ loop.index }}/{{ loop.length }} {% endfor %}"),
              "1/1/5 3/2/5 5/3/5 7/4/5 9/5/5 ");
    EXPECT_EQ(rendered("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "0134");
    EXPECT_EQ(rendered("{% for x in [] %}{% else %}\n  empty\n{% endfor %}"), "  empty\n");
    EXPECT_EQ(rendered("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k in {'z': 1, 'y': 2} %}{{ k }}{% endfor %}"),
              "a=1;b=2;zy");
    EXPECT_EQ(rendered("{% for c in 'héllo' %}{{ c }}.{% endfor %}"), "h.é.l.l.o.");
}

TEST(Jinja, SetInsideALoopLastsOneIterationAndNamespaceCarriesState) {
    EXPECT_EQ(rendered("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = x + 10 %}{{ x }};{% endfor %}{{ x }}"), "111;111;1");
    EXPECT_EQ(rendered("{% set ns = namespace(total=0) %}{% for i in [1,2,3] %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}"),
              "6");
    EXPECT_EQ(rendered("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
    EXPECT_EQ(rendered("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"), "12(1, 2)");
    EXPECT_EQ(rendered("{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[inner 2]");
    EXPECT_EQ(error_of("{% set ns = namespace(a=1) %}{% set ns.me = ns %}"), "t.jinja:1: a namespace member cannot be another namespace");
}

TEST(Jinja, MacrosTakeDefaultsKeywordsAndRecurseInTheirOwnScope) {
    EXPECT_EQ(rendered("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                       "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }} {{ greet() }}"),
              "Hi A! Hi B? Hi C. Hi !");
    EXPECT_EQ(rendered("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}"), "54321");
    EXPECT_EQ(rendered("{% set g = 'global' %}{% macro m() %}{{ g }}{% set g = 'local' %}{{ g }}{% endmacro %}{{ m() }}{{ g }}"),
              "globallocalglobal");
    EXPECT_EQ(rendered("{% macro m(x) %}[{{ x }}]{% endmacro %}{% set r = m(1) %}{{ r|length }}{{ r == '[1]' }}"), "3True");
    EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "t.jinja:1: macro 'm' takes not more than 1 argument(s)");
    EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}{{ m(z=1) }}"), "t.jinja:1: macro 'm' takes no keyword argument 'z'");
}

TEST(Jinja, CallBlockGivesTheMacroACaller) {
    EXPECT_EQ(rendered("{% macro box(title) %}[{{ title }}:{{ caller() }}]{% endmacro %}{% set x = 'in' %}"
                       "{% call box('t') %}{{ x }}{% endcall %}|{% for i in [1, 2] %}{% call box(i) %}{{ i * 10 }}{% endcall %}{% endfor %}"),
              "[t:in]|[1:10][2:20]");
    EXPECT_EQ(error_of("{% set ns = namespace() %}{% macro m() %}{% set ns.c = caller %}{% endmacro %}"
                       "{% call m() %}x{% endcall %}{{ ns.c() }}"),
              "t.jinja:1: caller() called after its call block ended");
    EXPECT_EQ(error_of("{% macro m() %}{% endmacro %}{% call(a) m() %}{% endcall %}"),
              "t.jinja:1: unsupported construct 'call' block with caller arguments");
}

// ---- filters, tests, methods

TEST(Jinja, StringFilters) {
    EXPECT_EQ(rendered("{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'Hello World'|upper }}|{{ 'Hello'|lower }}|"
                       "{{ 'hello wORLD-foo(bar'|title }}|{{ 'hELLO'|capitalize }}|{{ 'éa'|upper }}"),
              "a b|a|HELLO WORLD|hello|Hello World-Foo(Bar|Hello|ÉA");
    EXPECT_EQ(rendered("{{ 'aXbXc'|replace('X', '-') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ '<a href=\"x\">&\\''|e }}|{{ 5|string + 'x' }}"),
              "a-b-c|bba|&lt;a href=&#34;x&#34;&gt;&amp;&#39;|5x");
    EXPECT_EQ(rendered("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}"),
              "a\n    b\n\n    c|  a\n  b|a\n  \n  b");
}

TEST(Jinja, SequenceFilters) {
    EXPECT_EQ(rendered("{{ [1,2,3]|join('-') }}|{{ [3,1,2]|sort }}|{{ [3,1,2]|sort(reverse=true) }}|{{ ['b','A','a']|sort }}|"
                       "{{ ['b','A','a']|sort(case_sensitive=true) }}"),
              "1-2-3|[1, 2, 3]|[3, 2, 1]|['A', 'a', 'b']|['A', 'a', 'b']");
    EXPECT_EQ(rendered("{{ [1,2,3]|first }}|{{ [1,2,3]|last }}|{{ 'abc'|first }}|{{ []|first }}|{{ [1,2,3]|reverse|list }}|"
                       "{{ 'abc'|reverse }}|{{ [1,2,2,1,3]|unique|list }}|{{ ['a','A','b']|unique|list }}"),
              "1|3|a||[3, 2, 1]|cba|[1, 2, 3]|['a', 'b']");
    EXPECT_EQ(rendered("{{ {'b': 1, 'a': 2}|items|list }}|{{ {'a': 1}|length }}|{{ 'héllo'|length }}|{{ [1,2]|count }}|"
                       "{{ 'one two  three'|wordcount }}"),
              "[('b', 1), ('a', 2)]|1|5|2|3");
    EXPECT_EQ(rendered("{{ [1,2,3,4]|select('even')|list }}|{{ [1,2,3,4]|reject('odd')|list }}|{{ ['a','b']|map('upper')|list }}|"
                       "{{ [1,2,3]|sum }}|{{ [3,1,2]|min }}|{{ [3,1,2]|max }}"),
              "[2, 4]|[2, 4]|['A', 'B']|6|1|3");
    EXPECT_EQ(rendered("{{ {'b': 1, 'A': 3, 'c': 2}|dictsort }}|{{ {'b': 1, 'a': 3, 'c': 2}|dictsort(by='value', reverse=true) }}"),
              "[('A', 3), ('b', 1), ('c', 2)]|[('a', 3), ('c', 2), ('b', 1)]");
    Value msgs = parsed(R"({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "x": 1}]})");
    EXPECT_EQ(rendered("{{ msgs|selectattr('role', 'equalto', 'user')|list|length }}|"
                       "{{ msgs|rejectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|"
                       "{{ msgs|map(attribute='role')|join(',') }}|{{ msgs|selectattr('x')|map(attribute='x')|list }}",
                       msgs),
              "1|['b']|user,assistant|[1]");
}

TEST(Jinja, NumberAndDefaultFilters) {
    EXPECT_EQ(rendered("{{ '42'|int }}|{{ '4.7'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|{{ '2.5'|float }}|"
                       "{{ 'q'|float }}|{{ 3|float }}|{{ true|int }}"),
              "42|4|0|7|3|2.5|0.0|3.0|1");
    EXPECT_EQ(rendered("{{ x|default('d') }}|{{ none|default('d') }}|{{ ''|default('d', true) }}|{{ 0|d('z', boolean=true) }}"),
              "d|None|d|z");
}

TEST(Jinja, TojsonIsJsonDumpsKeepingKeyOrder) {
    Value v = parsed(R"({"v": {"b": 1, "a": [1.5, 2.0, null, true, "é\n\"\\", 1e-7, 1e16, 123456789.123], "c": {}}})");
    EXPECT_EQ(rendered("{{ v|tojson }}", v),
              R"({"b": 1, "a": [1.5, 2.0, null, true, "é\n\"\\", 1e-07, 1e+16, 123456789.123], "c": {}})");
    Value nested = parsed(R"({"v": {"b": 1, "a": [1, {"x": []}], "c": {}}})");
    EXPECT_EQ(rendered("{{ v|tojson(indent=2) }}", nested),
              "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {\n      \"x\": []\n    }\n  ],\n  \"c\": {}\n}");
    Value text = parsed(R"({"v": {"b": "é😀", "a": 1}})");
    EXPECT_EQ(rendered("{{ v|tojson(sort_keys=true) }}|{{ v|tojson(separators=[',', ':']) }}|{{ v|tojson(ensure_ascii=true) }}", text),
              R"({"a": 1, "b": "é😀"}|{"b":"é😀","a":1}|{"b": "\u00e9\ud83d\ude00", "a": 1})");
    EXPECT_EQ(rendered("{{ 'x'|tojson }}|{{ 1|tojson }}|{{ none|tojson }}|{{ 2.50|tojson }}"), "\"x\"|1|null|2.5");
}

TEST(Jinja, Tests) {
    EXPECT_EQ(rendered("{{ 1 is number }}{{ true is number }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}"
                       "{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ none is none }}{{ true is boolean }}"
                       "{{ 1 is true }}{{ true is true }}{{ false is false }}{{ 0 is false }}"),
              "TrueTrueTrueFalseTrueTrueTrueTrueTrueTrueFalseTrueTrueFalse");
    EXPECT_EQ(rendered("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ none is sameas none }}"
                       "{{ 1 is sameas true }}{{ 2 is equalto 2 }}{{ 2 is ne 3 }}{{ 1 is lt 2 }}{{ 1 is in [1] }}"
                       "{{ 'ab' is lower }}{{ x is not defined }}{{ 1 is not string }}"),
              "TrueTrueTrueFalseTrueFalseTrueTrueTrueTrueTrueTrueTrue");
}

TEST(Jinja, PythonMethods) {
    EXPECT_EQ(rendered("{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|"
                       "{{ 'xyx'.strip('x') }}|{{ '  q '.lstrip() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}"),
              "['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a,b', 'c']|y|q |True|True");
    EXPECT_EQ(rendered("{{ 'hello world'.title() }}|{{ 'abc'.find('c') }}|{{ 'abc'.find('z') }}|{{ ', '.join(['a', 'b']) }}|"
                       "{{ 'aaa'.count('a') }}"),
              "Hello World|2|-1|a, b|3");
    Value d = parsed(R"({"d": {"a": 1, "b": 2}})");
    EXPECT_EQ(rendered("{{ d.get('a') }}|{{ d.get('z') }}|{{ d.get('z', 5) }}|{{ d.keys()|list }}|{{ d.values()|list }}|"
                       "{{ d.items()|list }}",
                       d),
              "1|None|5|['a', 'b']|[1, 2]|[('a', 1), ('b', 2)]");
    EXPECT_EQ(rendered("{{ d['items'] }}", parsed(R"({"d": {"items": 3}})")), "3");
    EXPECT_EQ(error_of("{{ l.append(1) }}", parsed(R"({"l": []})")), "t.jinja:1: access to attribute 'append' of 'list' object is unsafe");
}

TEST(Jinja, UnicodeWhitespaceAndReprFollowPython) {
    Value s = parsed(R"({"s": "\u00a0 x\u2003y\u3000z\u202f\n\u001c"})");
    EXPECT_EQ(rendered("[{{ s.strip() }}]|{{ s.split() }}|[{{ s|trim }}]|{{ s.isspace() }}|{{ s.rstrip()|length }}|{{ s.split(none, 1) }}", s),
              "[x\u2003y\u3000z]|['x', 'y', 'z']|[x\u2003y\u3000z]|False|7|['x', 'y\\u3000z\\u202f\\n\\x1c']");
    EXPECT_EQ(rendered("{{ ['a\u200bb', 'é'] }}"), "['a\\u200bb', 'é']");
}

TEST(Jinja, IndexingAndSlicing) {
    Value l = parsed(R"({"l": [1, 2, 3, 4]})");
    EXPECT_EQ(rendered("{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[-1] }}|{{ l[1:3] }}|{{ 'hello'[1:3] }}|"
                       "{{ 'héllo'[::-1] }}|{{ l[5:] }}|{{ l[-100:2] }}",
                       l),
              "[2, 3, 4]|[1, 2, 3]|[4, 3, 2, 1]|[1, 3]|4|[2, 3]|el|olléh|[]|[1, 2]");
}

TEST(Jinja, GlobalsAndTransformersVariables) {
    EXPECT_EQ(rendered("{{ dict(a=1, b='x') }}|{{ namespace(a=1).a }}|{{ range(3)|list }}|{{ range(1, 7, 2)|list }}"),
              "{'a': 1, 'b': 'x'}|1|[0, 1, 2]|[1, 3, 5]");
    EXPECT_EQ(rendered("{{ tools }}|{{ documents }}|{{ add_generation_prompt }}"), "None|None|False");
    EXPECT_EQ(rendered("{{ strftime_now('%Y') }}", parsed(R"({"strftime_now": "2025-06-28"})")), "2025-06-28");
    EXPECT_EQ(rendered("{{ strftime_now('%Y')|length }}"), "4");
    EXPECT_EQ(rendered("{%- generation %}g{% endgeneration -%}"), "g");  // transformers' assistant-mask tag
}

TEST(Jinja, PrintfStyleFormatting) {
    EXPECT_EQ(rendered("{{ '%s' % 3 }}|{{ '%s and %s' % ('a', 1) }}|{{ '%d' % 3.7 }}|{{ '%5.2f|%-4d|%04d' % (3.14159, 7, 42) }}|"
                       "{{ '%r' % 'x' }}|{{ '%(a)s-%(b)d' % {'a': 'A', 'b': 2} }}|{{ '100%%' % () }}"),
              "3|a and 1|3| 3.14|7   |0042|'x'|A-2|100%");
    EXPECT_EQ(rendered("{{ '%x %X %o %e %g' % (255, 255, 8, 12345.678, 0.0001) }}|{{ '%s' % [1, 2] }}|{{ '%s' % none }}|"
                       "{{ '%c' % 65 }}|{{ '%.2s' % 'abc' }}|{{ '%+d % d' % (5, 5) }}|{{ '[%s]' % x }}"),
              "ff FF 10 1.234568e+04 0.0001|[1, 2]|None|A|ab|+5  5|[]");
    EXPECT_EQ(rendered("{{ 'Hello %s'|format('x') }}|{{ '%s-%s'|format(1, 2) }}|{{ '%(n)s!'|format(n='k') }}"), "Hello x|1-2|k!");
    EXPECT_EQ(error_of("{{ '%d' % 'x' }}"), "t.jinja:1: %d format: a real number is required, not str");
    EXPECT_EQ(error_of("{{ '%s %s' % ('a',) }}"), "t.jinja:1: not enough arguments for format string");
    EXPECT_EQ(error_of("{{ 'abc' % 5 }}"), "t.jinja:1: not all arguments converted during string formatting");
}

// ---- errors

TEST(Jinja, UnsupportedConstructsFailAtLoadNamingThemAndTheLine) {
    EXPECT_EQ(error_of("a\n\n{{ 'a' | wordwrap }}"), "t.jinja:3: unsupported filter 'wordwrap'");
    EXPECT_EQ(error_kind("{{ 'a' | wordwrap }}"), ErrorKind::unsupported);
    EXPECT_EQ(error_of("x\n{% include 'x' %}"), "t.jinja:2: unsupported tag 'include'");
    EXPECT_EQ(error_of("{{ 'a' is foo }}"), "t.jinja:1: unsupported test 'foo'");
    EXPECT_EQ(error_of("{% for x in y recursive %}{% endfor %}"), "t.jinja:1: unsupported construct 'recursive' loop");
    // Inside a branch that would never run: still refused at load.
    EXPECT_EQ(error_kind("{% if false %}{{ x|pprint }}{% endif %}"), ErrorKind::unsupported);
}

TEST(Jinja, SyntaxErrorsNameTheLine) {
    EXPECT_EQ(error_of("\n{% if x %}unclosed"), "t.jinja:2: unclosed 'if' block (no 'endif' before the end of the template)");
    EXPECT_EQ(error_of("{{ 1 + }}"), "t.jinja:1: expected an expression, found '}}'");
    EXPECT_EQ(error_of("ok\n{{ 1"), "t.jinja:2: unclosed tag '{{'");
    EXPECT_EQ(error_of("{% endfor %}"), "t.jinja:1: unexpected 'endfor' (no open block it closes)");
    EXPECT_EQ(error_of("{% break %}"), "t.jinja:1: 'break' outside a for loop");
    // Chains build deep trees without recursing in the parser; evaluating them would.
    std::string chain = "{{ x";
    for (int k = 0; k < 5000; ++k) chain += ".y";
    EXPECT_EQ(error_of(chain + " }}"), "t.jinja:1: blocks and expressions nested deeper than 200 levels");
    EXPECT_EQ(error_kind("{% for %}"), ErrorKind::format);
}

TEST(Jinja, RenderErrorsNameTheLine) {
    EXPECT_EQ(error_of("a\n{{ raise_exception('Only user and assistant roles are supported!') }}"),
              "t.jinja:2: raise_exception: Only user and assistant roles are supported!");
    EXPECT_EQ(error_of("\n\n{{ 'a' + 1 }}"), "t.jinja:3: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(error_of("{{ 1 < 'a' }}"), "t.jinja:1: '<' not supported between instances of 'int' and 'str'");
    EXPECT_EQ(error_of("{{ 1 / 0 }}"), "t.jinja:1: division by zero");
    EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"), "t.jinja:1: cannot assign attribute on non-namespace object 'x'");
    EXPECT_EQ(error_of("{{ '{}'.format(1) }}"), "t.jinja:1: unsupported method str.format() (not implemented by this template engine)");
}

TEST(Jinja, RunawayTemplatesStopWithAResourceError) {
    auto chat_template = ChatTemplate::parse("{% for i in range(1000) %}{{ 'x' * 100 }}{% endfor %}", "t.jinja");
    ASSERT_TRUE(chat_template);
    stormo::text::RenderLimits limits;
    limits.max_output_bytes = 10'000;
    chat_template->set_limits(limits);
    auto out = chat_template->render(Value::list(), Value::object());
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().kind, ErrorKind::resource);
    EXPECT_EQ(out.error().message, "t.jinja:1: rendered output exceeds 10000 bytes (a runaway template?)");

    auto recursion = render("{% macro f() %}{{ f() }}{% endmacro %}\n{{ f() }}");
    ASSERT_FALSE(recursion);
    EXPECT_EQ(recursion.error().kind, ErrorKind::resource);
    EXPECT_NE(recursion.error().message.find("macro 'f' nested more than 100 calls deep"), std::string::npos)
        << recursion.error().message;

    EXPECT_EQ(error_of("{{ 'x' * 100000000 }}"), "t.jinja:1: string repetition result larger than 16777216 bytes (the rendered output's limit)");

    auto deep = ChatTemplate::parse("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", "t.jinja");
    ASSERT_TRUE(deep);
    limits.max_nesting = 50;
    deep->set_limits(limits);
    auto nested = deep->render(Value::list(), Value::object());
    ASSERT_FALSE(nested);
    EXPECT_EQ(nested.error().kind, ErrorKind::resource);
    EXPECT_NE(nested.error().message.find("nested more than 50 deep"), std::string::npos) << nested.error().message;

    // Copies count as steps: a list grown quadratically stops long before its 200000 rounds.
    stormo::text::RenderLimits few_steps;
    few_steps.max_steps = 1'000'000;
    for (const char* growing : {"{% set ns = namespace(s=[]) %}{% for i in range(200000) %}{% set ns.s = ns.s + [i] %}{% endfor %}",
                                "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"}) {
        auto quadratic = ChatTemplate::parse(growing, "t.jinja");
        ASSERT_TRUE(quadratic);
        quadratic->set_limits(few_steps);
        auto grown = quadratic->render(Value::list(), Value::object());
        ASSERT_FALSE(grown) << growing;
        EXPECT_EQ(grown.error().kind, ErrorKind::resource) << grown.error().message;
    }

    auto busy = ChatTemplate::parse("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "t.jinja");
    ASSERT_TRUE(busy);
    limits.max_steps = 100'000;
    busy->set_limits(limits);
    auto spun = busy->render(Value::list(), Value::object());
    ASSERT_FALSE(spun);
    EXPECT_EQ(spun.error().kind, ErrorKind::resource);
}

}  // namespace
