#include "cli/options.hpp"

#include <charconv>
#include <iostream>
#include <string_view>

#include "text/utf8.hpp"
#include "util/quote.hpp"

namespace stormo::cli {

po::options_description common_options(CommonOptions& out) {
    po::options_description d("Options every model command accepts");
    d.add_options()
        ("model", po::value<std::string>()->value_name("DIR")->notifier([&out](const std::string& v) { out.model = v; }),
         "Hugging Face model directory (config.json, safetensors shards or index)")
        ("config", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.config = v; }),
         "YAML engine configuration (default: the values of configs/default.yaml)")
        ("kernels", po::value<std::string>()->value_name("NAME")->notifier([&out](const std::string& v) { out.kernels = v; }),
         "auto (default), reference, or a kernels plugin name (avx2, vnni)")
        ("family", po::value<std::string>()->value_name("NAME")->notifier([&out](const std::string& v) { out.family = v; }),
         "auto (default: chosen from config.json) or a model plugin name")
        ("expert-budget", po::value<std::string>()->value_name("SIZE")->notifier([&out](const std::string& v) { out.expert_budget = v; }),
         "RAM for routed experts: bytes, or with KiB/MiB/GiB/TiB; all keeps every expert; auto")
        ("threads", po::value<int>()->value_name("N")->notifier([&out](int v) { out.threads = v; }),
         "compute threads (default: physical cores)")
        ("context", po::value<int64_t>()->value_name("N")->notifier([&out](int64_t v) { out.context = v; }),
         "KV context in tokens; default (context: auto): what the run needs, i.e. the prompt + --max-tokens "
         "for generate, --prompt-tokens + --gen-tokens for bench, the ids for logits, 4096 for inspect")
        ("activations", po::value<std::string>()->value_name("ROAD")->notifier([&out](const std::string& v) { out.activations = v; }),
         "f32 (default) or int8: the integer road for MXFP4 matrices (docs/kernels.md)")
        ("head", po::value<std::string>()->value_name("READ")->notifier([&out](const std::string& v) { out.head = v; }),
         "bounded (default) or exact-only: greedy decoding reads the LM head by bound from an int8 copy, or "
         "computes every logit (docs/head_bound.md)")
        ("dense-bf16", po::value<std::string>()->value_name("FORM")->notifier([&out](const std::string& v) { out.dense_bf16 = v; }),
         "packed (default) or plain: hold dense BF16 matrices losslessly in about 12 bits a value, or "
         "as the checkpoint has them (docs/kernels.md)")
        ("plugins-dir", po::value<std::vector<std::string>>()->value_name("DIR")->composing()
             ->notifier([&out](const std::vector<std::string>& v) { out.plugins_dirs = v; }),
         "another directory to search for plugins (repeatable)")
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
// and cut like every other value in an error (util/quote.hpp). Its text is found in the message
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
    if (o.kernels) {
        if (o.kernels->empty()) return fail(ErrorKind::invalid_argument, "--kernels: needs a name (auto, reference or a plugin)");
        cfg.kernels = *o.kernels;
        cfg.origins["kernels"] = "--kernels";
    }
    if (o.family) {
        if (o.family->empty()) return fail(ErrorKind::invalid_argument, "--family: needs a name (auto or a model plugin)");
        cfg.family = *o.family;
        cfg.origins["family"] = "--family";
    }
    if (o.threads) {
        STORMO_TRY(check_thread_count(*o.threads, "--threads"));
        cfg.threads = *o.threads;
        cfg.origins["threads"] = "--threads";
    }
    if (o.context) {
        if (*o.context <= 0)
            return fail(ErrorKind::invalid_argument, "--context " + std::to_string(*o.context) + ": must be a positive integer");
        if (*o.context > kMaxContext)
            return fail(ErrorKind::invalid_argument, "--context " + std::to_string(*o.context) + ": more than the " +
                                                         std::to_string(kMaxContext) + " positions stormo accepts");
        cfg.context = *o.context;
        cfg.origins["context"] = "--context";
    }
    if (o.activations) {
        const std::optional<ActivationRoad> road = activation_road_from_name(*o.activations);
        if (!road)
            return fail(ErrorKind::invalid_argument, "--activations '" + printable(*o.activations) + "': must be f32 or int8");
        cfg.activations = *road;
        cfg.origins["activations"] = "--activations";
    }
    if (o.head) {
        const std::optional<HeadRead> head = head_read_from_name(*o.head);
        if (!head) return fail(ErrorKind::invalid_argument, "--head '" + printable(*o.head) + "': must be bounded or exact-only");
        cfg.head = *head;
        cfg.origins["head"] = "--head";
    }
    if (o.dense_bf16) {
        const std::optional<DenseBf16> form = dense_bf16_from_name(*o.dense_bf16);
        if (!form) return fail(ErrorKind::invalid_argument, "--dense-bf16 '" + printable(*o.dense_bf16) + "': must be packed or plain");
        cfg.dense_bf16 = *form;
        cfg.origins["dense_bf16"] = "--dense-bf16";
    }
    if (o.expert_budget) {
        auto size = parse_size(*o.expert_budget, "--expert-budget");
        if (!size) {
            Error e = size.error();
            e.kind = ErrorKind::invalid_argument;
            return tl::unexpected(e);
        }
        cfg.expert_budget = *size;
        cfg.origins["expert_budget"] = "--expert-budget";
    }
    return cfg;
}

PluginSearch plugin_search(const EngineConfig& config, const CommonOptions& options) {
    PluginSearch search;
    for (const std::string& d : config.plugins_dirs) search.extra.push_back({d, config.origin("plugins_dirs"), true});
    for (const std::string& d : options.plugins_dirs) search.extra.push_back({d, "--plugins-dir", true});
    return search;
}

Expected<PluginRegistry> discover_plugins(const EngineConfig& config, const CommonOptions& options) {
    return PluginRegistry::discover(plugin_search(config, options));
}

SetupRequest setup_request(const EngineConfig& config, const CommonOptions& options) {
    SetupRequest r;
    r.model_dir = options.model.value_or("");
    r.search = plugin_search(config, options);
    r.family = PluginRequest{config.family, config.origin("family")};
    r.kernels = PluginRequest{config.kernels, config.origin("kernels")};
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
