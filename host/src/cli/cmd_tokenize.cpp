// stormo tokenize / stormo detokenize: text to ids and ids to text with a tokenizer.json.
#include <simdjson.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/file.hpp"
#include "util/token_ids.hpp"

namespace stormo::cli {

namespace {

constexpr uint64_t kMaxInputBytes = 1ull << 30;  // --text-file and --jsonl inputs

// A whole input file; it must be a regular file no larger than the cap.
Expected<std::string> read_input(const std::string& path, const std::string& option) {
    const std::string what = option + " " + path;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail(errno == ENOENT ? ErrorKind::missing : ErrorKind::io, what + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return fail(ErrorKind::invalid_argument, what + ": not a regular file");
    if (static_cast<uint64_t>(st.st_size) > kMaxInputBytes)
        return fail(ErrorKind::resource, what + ": " + std::to_string(st.st_size) + " bytes, over the 1 GiB input limit");
    return read_file(path);
}

void print_ids(const std::vector<int32_t>& ids, std::string& out) {
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ' ';
        out += std::to_string(ids[i]);
    }
    out += '\n';
}

// Each line of a JSONL file is one JSON string; the result has one line of ids per input line.
Expected<std::string> tokenize_jsonl(const text::Tokenizer& tokenizer, const std::string& path, const std::string& content, bool plain) {
    simdjson::dom::parser parser;
    std::string out;
    size_t line_no = 0;
    for (size_t start = 0; start < content.size();) {
        size_t end = content.find('\n', start);
        if (end == std::string::npos) end = content.size();
        ++line_no;
        std::string line = content.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        start = end + 1;
        std::string_view value;
        simdjson::dom::element el;
        if (parser.parse(line).get(el) != simdjson::SUCCESS || el.get(value) != simdjson::SUCCESS)
            return fail(ErrorKind::format, "--jsonl " + path + ": line " + std::to_string(line_no) + ": expected one JSON string");
        print_ids(tokenizer.encode(value, !plain), out);
    }
    return out;
}

}  // namespace

int run_tokenize(int argc, char** argv) {
    std::string tokenizer_path;
    std::optional<std::string> text, text_file, jsonl;
    bool plain = false, timed = false;
    po::options_description d("tokenize options");
    d.add_options()
        ("tokenizer", po::value<std::string>(&tokenizer_path)->value_name("PATH")->required(), "a tokenizer.json, a directory holding one, or a GGUF model file")
        ("text", po::value<std::string>()->value_name("TEXT")->notifier([&](const std::string& v) { text = v; }), "the text to encode")
        ("text-file", po::value<std::string>()->value_name("FILE")->notifier([&](const std::string& v) { text_file = v; }), "encode a file's content")
        ("jsonl", po::value<std::string>()->value_name("FILE")->notifier([&](const std::string& v) { jsonl = v; }),
         "one JSON string per line; one line of ids per line")
        ("plain", po::bool_switch(&plain), "encode added and special tokens' text as ordinary text")
        ("time", po::bool_switch(&timed), "print load time and encode speed (MB/s) on stderr");
    auto parsed = parse_command_line(argc, argv, "tokenize", "--tokenizer PATH (--text TEXT | --text-file FILE | --jsonl FILE) [--plain]",
                                     "Prints the token ids of a text on one line, separated by spaces.", d);
    if (!parsed) return report_usage_error("tokenize", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if ((text ? 1 : 0) + (text_file ? 1 : 0) + (jsonl ? 1 : 0) != 1)
        return report_usage_error("tokenize", Error{ErrorKind::invalid_argument, "give exactly one of --text, --text-file, --jsonl"});

    const auto t0 = std::chrono::steady_clock::now();
    auto tokenizer = text::Tokenizer::load(tokenizer_path);
    if (!tokenizer) return report_error("tokenize", tokenizer.error());
    std::string input;
    if (text) {
        input = *text;
    } else {
        auto content = read_input(text_file ? *text_file : *jsonl, text_file ? "--text-file" : "--jsonl");
        if (!content) return report_error("tokenize", content.error());
        input = std::move(*content);
    }
    const auto t1 = std::chrono::steady_clock::now();
    std::string out;
    if (jsonl) {
        auto lines = tokenize_jsonl(*tokenizer, *jsonl, input, plain);
        if (!lines) return report_error("tokenize", lines.error());
        out = std::move(*lines);
    } else {
        print_ids(tokenizer->encode(input, !plain), out);
    }
    const auto t2 = std::chrono::steady_clock::now();
    std::cout << out << std::flush;
    if (timed) {
        const double load_s = std::chrono::duration<double>(t1 - t0).count();
        const double encode_s = std::chrono::duration<double>(t2 - t1).count();
        std::cerr << "stormo tokenize: load " << load_s << " s; encoded " << input.size() << " bytes in " << encode_s << " s, "
                  << (encode_s > 0 ? static_cast<double>(input.size()) / 1e6 / encode_s : 0.0) << " MB/s\n";
    }
    return 0;
}

int run_detokenize(int argc, char** argv) {
    std::string tokenizer_path, list;
    bool skip_special = false;
    po::options_description d("detokenize options");
    d.add_options()
        ("tokenizer", po::value<std::string>(&tokenizer_path)->value_name("PATH")->required(), "a tokenizer.json, a directory holding one, or a GGUF model file")
        ("ids", po::value<std::string>(&list)->value_name("LIST")->required(), "token ids, separated by commas or whitespace")
        ("skip-special", po::bool_switch(&skip_special), "leave special tokens out");
    auto parsed = parse_command_line(argc, argv, "detokenize", "--tokenizer PATH --ids LIST [--skip-special]",
                                     "Prints the text of token ids exactly (no newline is added).", d);
    if (!parsed) return report_usage_error("detokenize", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    auto ids = parse_token_ids(list, "--ids", /*allow_empty=*/true);
    if (!ids) return report_usage_error("detokenize", ids.error());
    auto tokenizer = text::Tokenizer::load(tokenizer_path);
    if (!tokenizer) return report_error("detokenize", tokenizer.error());
    auto decoded = tokenizer->decode(*ids, skip_special);
    if (!decoded) return report_error("detokenize", decoded.error());
    std::cout << *decoded << std::flush;
    return 0;
}

}  // namespace stormo::cli
