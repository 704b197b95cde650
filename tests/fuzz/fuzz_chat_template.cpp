// Fuzzes a chat template: the input is a template's text, or (when it is a JSON object) a
// tokenizer_config.json whose chat_template field holds one, loaded from a directory as
// `stormo serve` loads a model's. A template that loads is rendered over fixed messages (system,
// user, an assistant turn with reasoning and a tool call, a tool answer) and tools, with limits
// small enough that a runaway template ends in milliseconds rather than at the fuzzer's timeout.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "jinja/chat_template.hpp"
#include "jinja/chat_value.hpp"

namespace {

using stormo::text::Value;

const Value& messages() {
    static const Value v = *stormo::text::parse_json_value(R"([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 12+34? Use the tool."},
        {"role": "assistant", "content": "", "reasoning_content": "add them", "thinking": "add them",
         "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 12, "b": 34}}}]},
        {"role": "tool", "name": "add", "content": "46"},
        {"role": "assistant", "content": "46 \u00e9\ud83d\ude00"},
        {"role": "user", "content": [{"type": "text", "text": "and 1/3?"}]}])", "messages");
    return v;
}

const Value& options() {
    static const Value v = *stormo::text::parse_json_value(R"({"add_generation_prompt": true,
        "tools": [{"type": "function", "function": {"name": "add", "description": "a + b",
                   "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}},
                                  "required": ["a", "b"]}}}],
        "enable_thinking": false, "reasoning_effort": "low", "strftime_now": "26 Jul 2024"})", "options");
    return v;
}

// A directory of this process's own for tokenizer_config.json inputs, removed at exit.
struct ConfigDir {
    std::filesystem::path path;
    ConfigDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "stormo-fuzz-chat-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) __builtin_trap();
        path = pattern;
    }
    ~ConfigDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

const std::filesystem::path& config_dir() {
    static const ConfigDir dir;
    return dir.path;
}

// A JSON object opens with '{' then '"' or '}'; a template's '{' is followed by '{', '%' or '#'.
bool is_config(const std::string& input) {
    size_t next = input.find_first_not_of(" \t\r\n", 1);
    return !input.empty() && input[0] == '{' && next != std::string::npos && (input[next] == '"' || input[next] == '}');
}

stormo::Expected<stormo::text::ChatTemplate> load(const std::string& input) {
    if (!is_config(input)) return stormo::text::ChatTemplate::parse(input, "fuzz.jinja");
    std::ofstream(config_dir() / "tokenizer_config.json", std::ios::binary | std::ios::trunc) << input;
    return stormo::text::ChatTemplate::load(config_dir());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto chat_template = load(std::string(reinterpret_cast<const char*>(data), size));
    if (!chat_template) return 0;
    stormo::text::RenderLimits limits;
    limits.max_output_bytes = size_t{1} << 20;
    limits.max_steps = 200'000;
    chat_template->set_limits(limits);
    (void)chat_template->render(messages(), options());
    (void)chat_template->render(Value::list(), Value());
    return 0;
}
