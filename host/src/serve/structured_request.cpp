#include "serve/structured_request.hpp"

#include "constrain/gbnf.hpp"
#include "constrain/json_schema_grammar.hpp"

namespace stormo::serve {
namespace {

using text::Value;
using GrammarPtr = std::shared_ptr<const constrain::Grammar>;

const Value* given(const Value& object, std::string_view key) {
    const Value* v = object.find(key);
    return v && !v->is_null() ? v : nullptr;
}

ApiExpected<GrammarPtr> compile_gbnf(const std::string& gbnf, const std::string& param) {
    auto grammar = constrain::parse_gbnf(gbnf);
    if (!grammar) return bad_request("'" + param + "': " + grammar.error().message, param);
    return std::make_shared<const constrain::Grammar>(std::move(*grammar));
}

ApiExpected<GrammarPtr> compile_schema(const Value& schema, bool strict, const std::string& param) {
    auto gbnf = constrain::json_schema_to_gbnf(schema, strict);
    if (!gbnf) return bad_request("'" + param + "' " + gbnf.error().message, param);
    return compile_gbnf(*gbnf, param);
}

ApiExpected<GrammarPtr> read_response_format(const Value& format) {
    if (!format.is_object()) return bad_request("'response_format' must be an object", "response_format");
    const Value* type = given(format, "type");
    if (!type || !type->is_string())
        return bad_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"", "response_format.type");
    const std::string& t = type->as_string();
    if (t == "text") return GrammarPtr{};
    if (t == "json_object") {
        if (const Value* schema = given(format, "schema")) return compile_schema(*schema, false, "response_format.schema");
        return compile_gbnf(constrain::json_object_gbnf(), "response_format");
    }
    if (t != "json_schema")
        return bad_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"" + t + "\"",
                           "response_format.type");
    const Value* spec = given(format, "json_schema");
    if (!spec || !spec->is_object())
        return bad_request("'response_format.json_schema' must be an object holding the schema", "response_format.json_schema");
    bool strict = false;
    if (const Value* s = given(*spec, "strict")) {
        if (!s->is_bool()) return bad_request("'response_format.json_schema.strict' must be a boolean", "response_format.json_schema.strict");
        strict = s->as_bool();
    }
    const Value* schema = given(*spec, "schema");
    if (!schema) return bad_request("'response_format.json_schema.schema' is required", "response_format.json_schema.schema");
    return compile_schema(*schema, strict, "response_format.json_schema.schema");
}

}  // namespace

ApiExpected<GrammarPtr> read_structured_output(const Value& body) {
    GrammarPtr grammar;
    const char* source = nullptr;
    auto take = [&](ApiExpected<GrammarPtr> next, const char* field) -> ApiExpected<void> {
        if (!next) return tl::unexpected(next.error());
        if (!*next) return {};
        if (grammar)
            return bad_request(std::string("'") + field + "' and '" + source + "' both constrain the answer; give one", field);
        grammar = std::move(*next);
        source = field;
        return {};
    };
    if (const Value* format = given(body, "response_format"))
        if (auto ok = take(read_response_format(*format), "response_format"); !ok) return tl::unexpected(ok.error());
    if (const Value* g = given(body, "grammar")) {
        if (!g->is_string()) return bad_request("'grammar' must be a string (a GBNF grammar)", "grammar");
        if (auto ok = take(compile_gbnf(g->as_string(), "grammar"), "grammar"); !ok) return tl::unexpected(ok.error());
    }
    if (const Value* schema = given(body, "json_schema"))
        if (auto ok = take(compile_schema(*schema, false, "json_schema"), "json_schema"); !ok) return tl::unexpected(ok.error());
    return grammar;
}

}  // namespace stormo::serve
