#include "cli/structured_output_options.hpp"

#include "constrain/gbnf.hpp"
#include "constrain/json_schema_grammar.hpp"
#include "constrain/structured_output.hpp"
#include "util/file.hpp"

namespace stormo::cli {

void add_structured_output_options(po::options_description& d, StructuredOutputOptions& out) {
    d.add_options()("json-schema",
                    po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.json_schema_file = v; }),
                    "the answer is JSON matching the JSON Schema in FILE (docs/serve.md: structured output)")(
        "grammar", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.grammar_file = v; }),
        "the answer matches the GBNF grammar in FILE");
}

Expected<std::shared_ptr<const constrain::Grammar>> read_structured_output(const StructuredOutputOptions& options) {
    if (options.json_schema_file && options.grammar_file)
        return fail(ErrorKind::invalid_argument, "--json-schema and --grammar both constrain the answer; give one");
    std::string gbnf;
    if (options.json_schema_file) {
        const std::string& path = *options.json_schema_file;
        auto text = read_file(path);
        if (!text) return tl::unexpected(with_context(text.error(), "--json-schema"));
        auto schema = text::parse_json_value(*text, path);
        if (!schema) return tl::unexpected(with_context(schema.error(), "--json-schema"));
        auto compiled = constrain::json_schema_to_gbnf(*schema, /*strict=*/false);
        if (!compiled) return fail(compiled.error().kind, "--json-schema " + path + ": " + compiled.error().message);
        gbnf = std::move(*compiled);
    } else if (options.grammar_file) {
        auto text = read_file(*options.grammar_file);
        if (!text) return tl::unexpected(with_context(text.error(), "--grammar"));
        gbnf = std::move(*text);
    } else {
        return std::shared_ptr<const constrain::Grammar>{};
    }
    auto grammar = constrain::parse_gbnf(gbnf);
    if (!grammar)
        return fail(grammar.error().kind, (options.grammar_file ? "--grammar " + *options.grammar_file : std::string("--json-schema")) +
                                              ": " + grammar.error().message);
    return std::make_shared<const constrain::Grammar>(std::move(*grammar));
}

Expected<void> constrain_answers(ChatStack& stack, std::shared_ptr<const constrain::Grammar> grammar) {
    if (!grammar) return {};
    STORMO_TRY_ASSIGN(auto vocabulary, constrain::TokenTrie::from_tokenizer(*stack.tokenizer, stack.loaded.engine->model().vocab_size()));
    const constrain::ReplyMarkers markers = constrain::ReplyMarkers::of(*stack.tokenizer, stack.conversation->format());
    const std::vector<int32_t> stop_ids = stack.conversation->settings().stop_ids;
    stack.conversation->set_answer_constraint([=]() -> std::shared_ptr<TokenConstraint> {
        return std::make_shared<constrain::StructuredOutput>(grammar, vocabulary, markers, stop_ids);
    });
    return {};
}

}  // namespace stormo::cli
