#pragma once
// `run --json-schema FILE` and `run --grammar FILE`: the answer constrained as a server request's
// response_format or grammar constrains it (host/src/constrain).
#include <memory>
#include <optional>
#include <string>

#include "cli/chat_command.hpp"
#include "constrain/grammar.hpp"

namespace stormo::cli {

struct StructuredOutputOptions {
    std::optional<std::string> json_schema_file;
    std::optional<std::string> grammar_file;
};
void add_structured_output_options(po::options_description& d, StructuredOutputOptions& out);

// The grammar the options ask for (none without them), read and compiled before the model is
// loaded; errors name the option and the file (and the keyword's path, or the line and column).
Expected<std::shared_ptr<const constrain::Grammar>> read_structured_output(const StructuredOutputOptions& options);

// Every answer of the stack's conversation matches `grammar` from now on.
Expected<void> constrain_answers(ChatStack& stack, std::shared_ptr<const constrain::Grammar> grammar);

}  // namespace stormo::cli
