#include "constrain/json_schema_grammar.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>

namespace stormo::constrain {
namespace {

using text::Value;

// The JSON grammar's shared rules, written once into every compiled grammar.
constexpr std::string_view kJsonRules = R"(ws ::= | " " | "\n" [ \t]{0,20}
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-char-bmp ::= [^"\\\x00-\x1F\U00010000-\U0010FFFF] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-member ::= json-string ws ":" ws json-value
json-object ::= "{" ws (json-member (ws "," ws json-member)* ws)? "}"
json-array ::= "[" ws (json-value (ws "," ws json-value)* ws)? "]"
)";

// Keywords that say nothing about which values are valid.
constexpr std::array kAnnotations{"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                  "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "$anchor"};
// Keywords compiled here.
constexpr std::array kCompiled{"type", "properties", "required", "additionalProperties", "enum", "const", "items",
                               "minItems", "maxItems", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "$ref"};
// Keywords that constrain values and are not compiled: refused even when not strict.
constexpr std::array kNotHonoured{"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                  "multipleOf", "patternProperties", "propertyNames", "minProperties", "maxProperties",
                                  "dependentRequired", "dependentSchemas", "dependencies", "if", "then", "else", "not",
                                  "contains", "minContains", "maxContains", "uniqueItems", "prefixItems",
                                  "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contentEncoding",
                                  "contentMediaType", "contentSchema", "$dynamicRef", "$recursiveRef"};

// Repetition bounds the grammar can unroll (gbnf.cpp's limit).
constexpr int64_t kMaxBound = 10000;

template <size_t N>
bool among(const std::array<const char*, N>& list, std::string_view key) {
    return std::ranges::any_of(list, [&](const char* k) { return key == k; });
}

std::string compact_json(const Value& v) {
    text::JsonStyle style;
    style.item_separator = ",";
    style.key_separator = ":";
    return to_json(v, style);
}

tl::unexpected<Error> refuse(const std::string& path, const std::string& message) {
    return fail(ErrorKind::unsupported, path + ": " + message);
}
tl::unexpected<Error> invalid(const std::string& path, const std::string& message) {
    return fail(ErrorKind::invalid_argument, path + ": " + message);
}

// A JSON pointer's reference token as the key it names: "~1" is "/", "~0" is "~" (RFC 6901).
std::string unescape_pointer_token(std::string_view token) {
    std::string key;
    for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
            key += token[++i] == '0' ? '~' : '/';
        } else {
            key += token[i];
        }
    }
    return key;
}

class SchemaCompiler {
public:
    SchemaCompiler(const Value& root, bool strict) : root_(root), strict_(strict) {}

    Expected<std::string> run() {
        STORMO_TRY_ASSIGN(std::string top, compile(root_, "$"));
        return "root ::= " + top + "\n" + rules_ + std::string(kJsonRules);
    }

private:
    std::string add_rule(const std::string& body) {
        const std::string name = "schema-" + std::to_string(++count_);
        rules_ += name + " ::= " + body + "\n";
        return name;
    }
    std::string reserve_rule() { return "schema-" + std::to_string(++count_); }

    Expected<void> check_keywords(const Value& schema, const std::string& path) const {
        for (const auto& [key, value] : schema.as_object()) {
            if (among(kAnnotations, key) || among(kCompiled, key)) continue;
            if (key == "uniqueItems" && value.is_bool() && !value.as_bool()) continue;  // says nothing
            if (among(kNotHonoured, key))
                return refuse(path + "." + key, "the keyword '" + key + "' is not supported in structured output");
            if (strict_) return refuse(path + "." + key, "unknown keyword '" + key + "' (strict schemas admit none)");
        }
        return {};
    }

    Expected<std::optional<int64_t>> bound(const Value& schema, const char* key, const std::string& path) const {
        const Value* v = schema.find(key);
        if (!v) return std::optional<int64_t>{};
        if (!v->is_int() || v->as_int() < 0) return invalid(path + "." + key, "must be a non-negative integer");
        if (v->as_int() > kMaxBound)
            return refuse(path + "." + key, "bounds above " + std::to_string(kMaxBound) + " are not supported");
        return std::optional<int64_t>{v->as_int()};
    }

    Expected<std::string> compile(const Value& schema, const std::string& path) {
        if (schema.is_bool()) {
            if (schema.as_bool()) return std::string("json-value");
            return invalid(path, "the schema false admits no value");
        }
        if (!schema.is_object()) return invalid(path, "a schema must be an object or a boolean");
        STORMO_TRY(check_keywords(schema, path));
        if (const Value* ref = schema.find("$ref")) return compile_ref(*ref, path);
        if (const Value* c = schema.find("const")) return gbnf_literal(compact_json(*c));
        if (const Value* e = schema.find("enum")) {
            if (!e->is_list() || e->as_list().empty()) return invalid(path + ".enum", "must be a non-empty array");
            std::string body;
            for (const Value& item : e->as_list()) body += (body.empty() ? "" : " | ") + gbnf_literal(compact_json(item));
            return "(" + body + ")";
        }
        for (const char* key : {"anyOf", "oneOf"})
            if (const Value* list = schema.find(key)) return compile_alternatives(*list, path + "." + key);
        if (const Value* all = schema.find("allOf")) {
            if (!all->is_list() || all->as_list().empty()) return invalid(path + ".allOf", "must be a non-empty array");
            if (all->as_list().size() > 1) return refuse(path + ".allOf", "allOf of more than one schema is not supported");
            return compile(all->as_list()[0], path + ".allOf[0]");
        }
        const Value* type = schema.find("type");
        if (!type) {
            if (schema.find("properties") || schema.find("additionalProperties") || schema.find("required"))
                return compile_object(schema, path);
            if (schema.find("items") || schema.find("minItems") || schema.find("maxItems")) return compile_array(schema, path);
            if (schema.find("minLength") || schema.find("maxLength")) return compile_string(schema, path);
            return std::string("json-value");
        }
        if (type->is_string()) return compile_type(type->as_string(), schema, path);
        if (!type->is_list() || type->as_list().empty()) return invalid(path + ".type", "must be a type name or an array of them");
        std::string body;
        for (const Value& t : type->as_list()) {
            if (!t.is_string()) return invalid(path + ".type", "must be a type name or an array of them");
            STORMO_TRY_ASSIGN(std::string one, compile_type(t.as_string(), schema, path));
            body += (body.empty() ? "" : " | ") + one;
        }
        return "(" + body + ")";
    }

    Expected<std::string> compile_type(const std::string& type, const Value& schema, const std::string& path) {
        if (type == "string") return compile_string(schema, path);
        if (type == "integer") return std::string("json-integer");
        if (type == "number") return std::string("json-number");
        if (type == "boolean") return std::string("json-boolean");
        if (type == "null") return std::string("json-null");
        if (type == "object") return compile_object(schema, path);
        if (type == "array") return compile_array(schema, path);
        return invalid(path + ".type", "unknown type '" + type + "'");
    }

    Expected<std::string> compile_alternatives(const Value& list, const std::string& path) {
        if (!list.is_list() || list.as_list().empty()) return invalid(path, "must be a non-empty array");
        std::string body;
        for (size_t i = 0; i < list.as_list().size(); ++i) {
            STORMO_TRY_ASSIGN(std::string one, compile(list.as_list()[i], path + "[" + std::to_string(i) + "]"));
            body += (body.empty() ? "" : " | ") + one;
        }
        return "(" + body + ")";
    }

    Expected<std::string> compile_ref(const Value& ref, const std::string& path) {
        if (!ref.is_string()) return invalid(path + ".$ref", "must be a string");
        const std::string& target = ref.as_string();
        if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return it->second;
        if (target.empty() || target[0] != '#')
            return refuse(path + ".$ref", "only references inside the schema ('#...') are supported, not '" + target + "'");
        // A JSON pointer from the root: "#/$defs/Address".
        const Value* at = &root_;
        std::string pointer = target.substr(1);
        while (!pointer.empty()) {
            if (pointer[0] != '/') return invalid(path + ".$ref", "'" + target + "' is not a JSON pointer");
            size_t next = pointer.find('/', 1);
            std::string token = pointer.substr(1, next == std::string::npos ? std::string::npos : next - 1);
            pointer = next == std::string::npos ? "" : pointer.substr(next);
            const Value* child = at->is_object() ? at->find(unescape_pointer_token(token)) : nullptr;
            if (!child) return invalid(path + ".$ref", "'" + target + "' leads nowhere in the schema");
            at = child;
        }
        // Named before it is compiled, so a recursive schema refers to itself.
        const std::string name = reserve_rule();
        ref_rules_[target] = name;
        STORMO_TRY_ASSIGN(std::string body, compile(*at, target == "#" ? "$" : "$" + target.substr(1)));
        rules_ += name + " ::= " + body + "\n";
        return name;
    }

    Expected<std::string> compile_string(const Value& schema, const std::string& path) {
        STORMO_TRY_ASSIGN(auto min, bound(schema, "minLength", path));
        STORMO_TRY_ASSIGN(auto max, bound(schema, "maxLength", path));
        if (!min && !max) return std::string("json-string");
        const int64_t lo = min.value_or(0);
        if (max && *max < lo) return invalid(path, "maxLength is below minLength");
        // Characters of the Basic Multilingual Plane only: each is one UTF-16 unit too, so the length
        // is the same for validators that count those (JavaScript's, zod's).
        return std::string("\"\\\"\" json-char-bmp{") + std::to_string(lo) + "," + (max ? std::to_string(*max) : "") + "} \"\\\"\"";
    }

    Expected<std::string> compile_array(const Value& schema, const std::string& path) {
        std::string item = "json-value";
        if (const Value* items = schema.find("items")) {
            if (items->is_list()) return refuse(path + ".items", "an array of item schemas (a tuple) is not supported");
            STORMO_TRY_ASSIGN(item, compile(*items, path + ".items"));
            if (item.find(' ') != std::string::npos) item = add_rule(item);
        }
        STORMO_TRY_ASSIGN(auto min, bound(schema, "minItems", path));
        STORMO_TRY_ASSIGN(auto max, bound(schema, "maxItems", path));
        const int64_t lo = min.value_or(0);
        if (max && *max < lo) return invalid(path, "maxItems is below minItems");
        if (max && *max == 0) return std::string("\"[\" ws \"]\"");
        const std::string more = "(ws \",\" ws " + item + ")";
        const std::string rest_max = max ? std::to_string(*max - 1) : "";
        if (lo == 0) return "\"[\" ws (" + item + " " + more + "{0," + rest_max + "} ws)? \"]\"";
        return "\"[\" ws " + item + " " + more + "{" + std::to_string(lo - 1) + "," + rest_max + "} ws \"]\"";
    }

    Expected<std::string> compile_object(const Value& schema, const std::string& path) {
        const Value* properties = schema.find("properties");
        if (properties && !properties->is_object()) return invalid(path + ".properties", "must be an object");
        std::set<std::string> required;
        std::vector<std::string> required_order;
        if (const Value* r = schema.find("required")) {
            if (!r->is_list()) return invalid(path + ".required", "must be an array of property names");
            for (const Value& name : r->as_list()) {
                if (!name.is_string()) return invalid(path + ".required", "must be an array of property names");
                if (required.insert(name.as_string()).second) required_order.push_back(name.as_string());
            }
        }
        const Value* additional = schema.find("additionalProperties");
        const bool closed = additional && additional->is_bool() && !additional->as_bool();
        std::vector<std::string> required_members, optional_members;
        std::set<std::string> declared;
        if (properties)
            for (const auto& [name, sub] : properties->as_object()) {
                declared.insert(name);
                STORMO_TRY_ASSIGN(std::string value, compile(sub, path + ".properties." + name));
                const std::string member = add_rule(gbnf_literal(compact_json(Value(name))) + " ws \":\" ws " + value);
                (required.contains(name) ? required_members : optional_members).push_back(member);
            }
        // The required members in the order `required` names them where `properties` does not.
        for (const std::string& name : required_order) {
            if (declared.contains(name)) continue;
            if (closed) return invalid(path + ".required", "'" + name + "' is required but additionalProperties is false and properties does not name it");
            required_members.push_back(add_rule(gbnf_literal(compact_json(Value(name))) + " ws \":\" ws json-value"));
        }
        if (!properties && required_members.empty()) {
            // A map: any keys, values of the additionalProperties schema.
            if (closed) return std::string("\"{\" ws \"}\"");
            std::string value = "json-value";
            if (additional && !additional->is_bool()) {
                STORMO_TRY_ASSIGN(value, compile(*additional, path + ".additionalProperties"));
            }
            const std::string member = add_rule("json-string ws \":\" ws " + value);
            return "\"{\" ws (" + member + " (ws \",\" ws " + member + ")* ws)? \"}\"";
        }
        // Additional members are allowed but never required: the grammar writes none.
        std::string optional_tail;  // ("," optional)? for each optional member, in order
        for (const std::string& m : optional_members) optional_tail += " (ws \",\" ws " + m + ")?";
        if (!required_members.empty()) {
            std::string body = "\"{\" ws";
            for (size_t i = 0; i < required_members.size(); ++i) body += (i ? " ws \",\" ws " : " ") + required_members[i];
            return body + optional_tail + " ws \"}\"";
        }
        if (optional_members.empty()) return std::string("\"{\" ws \"}\"");
        // No member is required: whichever comes first has no comma before it.
        std::vector<std::string> tails(optional_members.size() + 1);
        for (size_t j = optional_members.size(); j-- > 0;) {
            const std::string next = j + 1 < optional_members.size() ? " " + tails[j + 1] : "";
            tails[j] = add_rule("(ws \",\" ws " + optional_members[j] + ")?" + next);
        }
        std::string starts;
        for (size_t j = 0; j < optional_members.size(); ++j)
            starts += (j ? " | " : "") + optional_members[j] + (j + 1 < optional_members.size() ? " " + tails[j + 1] : "");
        return "\"{\" ws ((" + starts + ") ws)? \"}\"";
    }

    const Value& root_;
    bool strict_;
    std::string rules_;
    int count_ = 0;
    std::map<std::string, std::string> ref_rules_;
};

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out = "\"";
    for (char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (u < 0x20 || u == 0x7F) {
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

Expected<std::string> json_schema_to_gbnf(const Value& schema, bool strict) { return SchemaCompiler(schema, strict).run(); }

std::string json_object_gbnf() { return "root ::= json-object\n" + std::string(kJsonRules); }

}  // namespace stormo::constrain
