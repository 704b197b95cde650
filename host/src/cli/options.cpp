#include "cli/options.hpp"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <string_view>

#include "runtime/engine.hpp"
#include "runtime/engine_settings.hpp"
#include "stormo/quote.hpp"
#include "util/utf8.hpp"

namespace stormo::cli {

std::optional<std::string> CommonOptions::given(std::string_view key) const {
    const auto it = settings.find(key);
    if (it == settings.end() || it->second.empty()) return std::nullopt;
    return it->second.front();
}

namespace {

// The other names a setting's option answers to: those llama.cpp users type.
std::string option_names(std::string_view flag) {
    if (flag == "threads") return "threads,t";
    if (flag == "context") return "context,ctx-size,c";
    return std::string(flag);
}

// One setting's option, made from its row: a value, or a repeatable one for a list.
void add_setting_option(po::options_description& d, const EngineSetting& s, CommonOptions& out) {
    const std::string key(s.key), flag = option_names(s.flag), help(s.help), value_name(s.value_name);
    if (s.form == EngineSetting::Form::list) {
        d.add_options()(flag.c_str(),
                        po::value<std::vector<std::string>>()->value_name(value_name)->composing()->notifier(
                            [&out, key](const std::vector<std::string>& v) { out.settings[key] = v; }),
                        help.c_str());
    } else {
        d.add_options()(flag.c_str(),
                        po::value<std::string>()->value_name(value_name)->notifier(
                            [&out, key](const std::string& v) { out.settings[key] = {v}; }),
                        help.c_str());
    }
}

}  // namespace

po::options_description common_options(CommonOptions& out) {
    po::options_description d("Options every model command accepts");
    d.add_options()
        ("model,m", po::value<std::string>()->value_name("PATH")->notifier([&out](const std::string& v) { out.model = v; }),
         "the model: a directory or a GGUF file. A Hugging Face directory (config.json with safetensors "
         "shards or index), a GGUF file or the first part of a split (known by its content, whatever its "
         "name: an Ollama blob too), or a directory holding one; also the first argument")
        ("config", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.config = v; }),
         "YAML engine configuration (default: the values of configs/default.yaml)");
    for (const EngineSetting& s : engine_settings()) add_setting_option(d, s, out);
    d.add_options()
        ("verbose,v", po::bool_switch(&out.verbose),
         "print the family, kernels, threads and expert budget chosen to stderr at start");
    return d;
}

void validate(boost::any& out, const std::vector<std::string>& values, UnsignedArg*, int) {
    po::validators::check_first_occurrence(out);
    const std::string& text = po::validators::get_single_string(values);
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) throw po::invalid_option_value(text);
    out = UnsignedArg{v};
}

namespace {

// Boost's messages quote the argument at fault as given; a 10 MB or binary argument is escaped
// and cut like every other value in an error (stormo/quote.hpp). Its text is found in the message
// as the whole word or, for --name=value, as the value.
std::string usage_message(std::string message, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        const size_t equals = arg.find('=');
        const std::string_view value = equals == std::string_view::npos ? std::string_view() : arg.substr(equals + 1);
        for (std::string_view text : {arg, value}) {
            const std::string shown = printable(text);
            if (text.empty() || shown == text) continue;
            for (size_t at = message.find(text); at != std::string::npos; at = message.find(text, at + shown.size()))
                message.replace(at, text.size(), shown);
        }
    }
    return message;
}

}  // namespace

namespace {

// The edits (insertions, deletions, substitutions, and swaps of two neighbours) that turn a into b.
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The words that are not options fill the options `positional` names, in order, skipping those
// given as options; a word past them stays "stormo-positional", refused by the caller.
void assign_positional(po::parsed_options& parsed, const std::vector<std::string>& positional) {
    std::vector<std::string> open;
    for (const std::string& name : positional) {
        const bool given = std::any_of(parsed.options.begin(), parsed.options.end(),
                                       [&](const po::option& o) { return o.string_key == name; });
        if (!given) open.push_back(name);
    }
    size_t next = 0;
    for (po::option& o : parsed.options)
        if (o.string_key == "stormo-positional" && next < open.size()) o.string_key = open[next++];
}

std::string unexpected_word(const std::string& word, const std::vector<std::string>& positional) {
    std::string message = "unexpected argument '" + printable(word) + "'";
    if (std::find(positional.begin(), positional.end(), "prompt") != positional.end())
        message += ": a prompt of several words goes in quotes";
    else if (!positional.empty())
        message += ": the command takes one " + positional.front() + " (--" + positional.front() + " or the first argument)";
    return message;
}

}  // namespace

std::optional<std::string> closest_option(const std::string& unknown, const po::options_description& options) {
    const std::string_view asked = std::string_view(unknown).substr(std::min(unknown.find_first_not_of('-'), unknown.size()));
    if (asked.size() < 2) return std::nullopt;
    std::optional<std::string> best;
    size_t best_distance = std::max<size_t>(1, std::min<size_t>(3, asked.size() / 3));
    const auto consider = [&](std::string_view name) {
        if (name.empty()) return;
        size_t distance = edit_distance(asked, name);
        // "--ctx" for "--ctx-size": the start of a name is as good as one edit.
        if (asked.size() >= 3 && name.starts_with(asked)) distance = std::min<size_t>(distance, 1);
        if (distance <= best_distance && (!best || distance < best_distance)) {
            best = "--" + std::string(name);
            best_distance = distance;
        }
    };
    consider("help");
    for (const auto& option : options.options()) {
        const auto [names, count] = option->long_names();
        for (size_t i = 0; i < count; ++i) consider(names[i]);
    }
    return best;
}

Expected<ParseResult> parse_command_line(int argc, char** argv, const std::string& command,
                                         const std::string& synopsis, const std::string& description,
                                         const po::options_description& options,
                                         const std::vector<std::string>& positional) {
    po::options_description all;
    all.add_options()("help,h", "print this help");
    all.add(options);
    // Words that are not options fill `positional`; the rest are named in the error, not silently ignored.
    po::options_description hidden;
    hidden.add_options()("stormo-positional", po::value<std::vector<std::string>>());
    po::options_description parsed_options;
    parsed_options.add(all).add(hidden);
    po::positional_options_description words;
    words.add("stormo-positional", -1);
    po::variables_map vm;
    try {
        // No abbreviations: "--mod" is not taken to mean "--model".
        const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::parsed_options parsed =
            po::command_line_parser(argc, argv).options(parsed_options).positional(words).style(style).run();
        assign_positional(parsed, positional);
        po::store(parsed, vm);
        if (vm.count("help")) {
            std::cout << "usage: stormo " << command << " " << synopsis << "\n";
            if (std::find(positional.begin(), positional.end(), "model") != positional.end())
                std::cout << "MODEL (or --model PATH, -m PATH) is a model directory or a GGUF file.\n";
            std::cout << "\n"
                      << description << "\n\n"
                      << all << std::flush;
            return ParseResult::help_shown;
        }
        if (vm.count("stormo-positional"))
            return fail(ErrorKind::invalid_argument,
                        unexpected_word(vm["stormo-positional"].as<std::vector<std::string>>().front(), positional));
        po::notify(vm);
    } catch (const po::unknown_option& e) {
        std::string message = usage_message(e.what(), argc, argv);
        if (const auto meant = closest_option(e.get_option_name(), all)) message += "; did you mean " + *meant + "?";
        return fail(ErrorKind::invalid_argument, message);
    } catch (const po::error& e) {
        return fail(ErrorKind::invalid_argument, usage_message(e.what(), argc, argv));
    }
    return ParseResult::run;
}

namespace {

// One line on stderr, whatever the message holds: line breaks become spaces and other control
// bytes and invalid UTF-8 \xNN, so bytes echoed from a file cannot drive the terminal (the last
// line of defence; messages quote such bytes with printable() already). Valid UTF-8 (a path
// with accents) stays as it is.
std::string one_line(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n' || c == '\r') {
            out += ' ';
        } else if (c >= 0x80) {
            // A valid character stays, unless it is a C1 control (U+0080..U+009F), which some
            // terminals obey like ESC.
            if (const text::utf8::Step st = text::utf8::read(s, i); st.valid && (st.cp < 0x80 || st.cp > 0x9f)) {
                out.append(s, i, st.length);
                i += st.length;
                continue;
            }
            out += printable(std::string_view(&s[i], 1));
        } else if (c < 0x20 || c == 0x7f) {
            out += printable(std::string_view(&s[i], 1));
        } else {
            out += s[i];
        }
        ++i;
    }
    return out;
}

}  // namespace

tl::unexpected<Error> out_of_range(const std::string& option, int64_t value, int64_t lo, int64_t hi, const std::string& unit) {
    return fail(ErrorKind::invalid_argument, option + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + unit +
                                                 ", not " + std::to_string(value));
}

int report_error(const std::string& command, const Error& error) {
    if (error.kind == ErrorKind::invalid_argument) return report_usage_error(command, error);
    std::cerr << ("stormo: " + command + ": " + one_line(error.message) + "\n") << std::flush;
    return kExitFailure;
}

int report_usage_error(const std::string& command, const Error& error) {
    std::cerr << ("stormo: " + command + ": " + one_line(error.message) + " (see 'stormo " + command + " --help')\n")
              << std::flush;
    return kExitUsage;
}

Expected<EngineConfig> resolve_engine_config(const CommonOptions& o) {
    EngineConfig cfg = default_engine_config();
    if (o.config) {
        auto loaded = load_engine_config(*o.config);
        if (!loaded) return tl::unexpected(with_context(loaded.error(), "--config"));
        cfg = std::move(*loaded);
    }
    for (const EngineSetting& s : engine_settings()) {
        const auto given = o.settings.find(s.key);
        if (given == o.settings.end()) continue;
        const SettingSource from{"--" + std::string(s.flag), ErrorKind::invalid_argument, ""};
        for (const std::string& text : given->second) STORMO_TRY(apply_setting(cfg, s, text, from));
    }
    return cfg;
}

PluginSearch plugin_search(const EngineConfig& config, const CommonOptions&) {
    return engine_options(config).setup.search;
}

Expected<PluginRegistry> discover_plugins(const EngineConfig& config, const CommonOptions& options) {
    return PluginRegistry::discover(plugin_search(config, options));
}

SetupRequest setup_request(const EngineConfig& config, const CommonOptions& options) {
    SetupRequest r = engine_options(config).setup;
    r.model_dir = options.model.value_or("");
    return r;
}

Expected<std::unique_ptr<ModelSetup>> open_model_setup(const CommonOptions& options) {
    if (!options.model) return fail(ErrorKind::invalid_argument, kModelRequired);
    auto setup = std::make_unique<ModelSetup>();
    STORMO_TRY_ASSIGN(auto cfg, resolve_engine_config(options));
    setup->config = std::move(cfg);
    if (auto opened = stormo::open_model_setup(setup_request(setup->config, options), *setup); !opened)
        return tl::unexpected(opened.error());
    return setup;
}

}  // namespace stormo::cli
