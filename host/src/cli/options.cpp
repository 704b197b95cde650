#include "cli/options.hpp"

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

// One setting's option, made from its row: a value, or a repeatable one for a list.
void add_setting_option(po::options_description& d, const EngineSetting& s, CommonOptions& out) {
    const std::string key(s.key), flag(s.flag), help(s.help), value_name(s.value_name);
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
        ("model", po::value<std::string>()->value_name("DIR")->notifier([&out](const std::string& v) { out.model = v; }),
         "Hugging Face model directory (config.json, safetensors shards or index)")
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

Expected<ParseResult> parse_command_line(int argc, char** argv, const std::string& command,
                                         const std::string& synopsis, const std::string& description,
                                         const po::options_description& options) {
    po::options_description all;
    all.add_options()("help,h", "print this help");
    all.add(options);
    // Words that are not options are collected to be named in the error, not silently ignored.
    po::options_description hidden;
    hidden.add_options()("stormo-positional", po::value<std::vector<std::string>>());
    po::options_description parsed_options;
    parsed_options.add(all).add(hidden);
    po::positional_options_description positional;
    positional.add("stormo-positional", -1);
    po::variables_map vm;
    try {
        // No abbreviations: "--mod" is not taken to mean "--model".
        const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
        po::store(po::command_line_parser(argc, argv).options(parsed_options).positional(positional).style(style).run(),
                  vm);
        if (vm.count("help")) {
            std::cout << "usage: stormo " << command << " " << synopsis << "\n\n"
                      << description << "\n\n"
                      << all << std::flush;
            return ParseResult::help_shown;
        }
        if (vm.count("stormo-positional"))
            return fail(ErrorKind::invalid_argument,
                        "unexpected argument '" + printable(vm["stormo-positional"].as<std::vector<std::string>>().front()) + "'");
        po::notify(vm);
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

int report_error(const Error& error) {
    std::cerr << "stormo: " << one_line(error.message) << std::endl;
    return error.kind == ErrorKind::invalid_argument ? kExitUsage : kExitFailure;
}

int report_usage_error(const std::string& command, const Error& error) {
    std::cerr << "stormo: " << command << ": " << one_line(error.message) << " (see 'stormo " << command
              << " --help')" << std::endl;
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
    if (!options.model) return fail(ErrorKind::invalid_argument, "--model DIR is required");
    auto setup = std::make_unique<ModelSetup>();
    STORMO_TRY_ASSIGN(auto cfg, resolve_engine_config(options));
    setup->config = std::move(cfg);
    if (auto opened = stormo::open_model_setup(setup_request(setup->config, options), *setup); !opened)
        return tl::unexpected(opened.error());
    return setup;
}

}  // namespace stormo::cli
