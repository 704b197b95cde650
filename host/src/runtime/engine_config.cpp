// YAML engine configuration and the size syntax shared with the command line.
#include "runtime/engine_config.hpp"
#include "runtime/engine_settings.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::optional<uint64_t> unit_multiplier(std::string_view unit) {
    const std::string u = lower(unit);
    if (u.empty() || u == "b") return uint64_t{1};
    if (u == "k" || u == "kib") return uint64_t{1} << 10;
    if (u == "m" || u == "mib") return uint64_t{1} << 20;
    if (u == "g" || u == "gib") return uint64_t{1} << 30;
    if (u == "t" || u == "tib") return uint64_t{1} << 40;
    return std::nullopt;
}

// A value from the file or the command line in an error: escaped and cut (stormo/quote.hpp), so
// invalid UTF-8, terminal escapes or a 10 MB scalar cost one short line.
std::string quoted_value(std::string_view s) { return "'" + printable(s) + "'"; }

}  // namespace

tl::expected<SizeSpec, std::string> read_size(std::string_view text) {
    const std::string_view t = trim(text);
    const std::string l = lower(t);
    if (l == "all") return SizeSpec{SizeSpec::Kind::all, 0};
    if (l == "auto") return SizeSpec{SizeSpec::Kind::automatic, 0};
    size_t i = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    const std::string_view whole = t.substr(0, i);
    std::string_view fraction;
    if (i < t.size() && t[i] == '.') {
        const size_t start = ++i;
        while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
        fraction = t.substr(start, i - start);
    }
    if (whole.empty() && fraction.empty())
        return tl::unexpected(std::string("not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)"));
    const std::string_view unit = trim(t.substr(i));
    const std::optional<uint64_t> mult = unit_multiplier(unit);
    if (!mult) return tl::unexpected("unknown unit " + quoted_value(unit) + " (use KiB, MiB, GiB, TiB or K, M, G, T)");
    uint64_t n = 0;
    if (!whole.empty()) {
        const auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), n);
        if (ec != std::errc() || ptr != whole.data() + whole.size())
            return tl::unexpected(std::string("the number is too large"));
    }
    if (n > std::numeric_limits<uint64_t>::max() / *mult) return tl::unexpected(std::string("the size is too large"));
    uint64_t bytes = n * *mult;
    if (!fraction.empty()) {
        // The fraction of a unit, rounded down to whole bytes.
        long double f = 0;
        long double scale = 0.1L;
        for (char c : fraction) {
            f += static_cast<long double>(c - '0') * scale;
            scale /= 10;
        }
        bytes += static_cast<uint64_t>(std::floor(f * static_cast<long double>(*mult)));
    }
    return SizeSpec{SizeSpec::Kind::bytes, bytes};
}

Expected<SizeSpec> parse_size(std::string_view text, std::string_view option) {
    auto size = read_size(text);
    if (!size) return fail(ErrorKind::config, std::string(option) + " " + quoted_value(text) + ": " + size.error());
    return *size;
}

std::string format_size(const SizeSpec& size) {
    switch (size.kind) {
        case SizeSpec::Kind::all: return "all";
        case SizeSpec::Kind::automatic: return "auto";
        case SizeSpec::Kind::bytes: return format_bytes(size.bytes);
    }
    return "auto";
}

const char* activation_road_name(ActivationRoad r) { return r == ActivationRoad::int8 ? "int8" : "f32"; }

std::optional<SpeculateMode> speculate_mode_from_name(std::string_view text) {
    if (text == "off") return SpeculateMode::off;
    if (text == "auto") return SpeculateMode::automatic;
    if (text == "context") return SpeculateMode::context;
    if (text == "grammar") return SpeculateMode::grammar;
    if (text == "mtp") return SpeculateMode::mtp;
    return std::nullopt;
}

const char* speculate_mode_name(SpeculateMode mode) {
    switch (mode) {
        case SpeculateMode::off: return "off";
        case SpeculateMode::automatic: return "auto";
        case SpeculateMode::context: return "context";
        case SpeculateMode::grammar: return "grammar";
        case SpeculateMode::mtp: return "mtp";
    }
    return "off";
}

std::optional<ActivationRoad> activation_road_from_name(std::string_view name) {
    const std::string l = lower(trim(name));
    if (l == "f32") return ActivationRoad::f32;
    if (l == "int8") return ActivationRoad::int8;
    return std::nullopt;
}

const char* rank_split_name(RankSplit s) { return s == RankSplit::weighted ? "weighted" : "even"; }

std::optional<RankSplit> rank_split_from_name(std::string_view name) {
    const std::string l = lower(trim(name));
    if (l == "even") return RankSplit::even;
    if (l == "weighted") return RankSplit::weighted;
    return std::nullopt;
}

const char* head_read_name(HeadRead h) { return h == HeadRead::exact_only ? "exact-only" : "bounded"; }

std::optional<HeadRead> head_read_from_name(std::string_view name) {
    const std::string l = lower(trim(name));
    if (l == "bounded") return HeadRead::bounded;
    if (l == "exact-only" || l == "exact_only") return HeadRead::exact_only;
    return std::nullopt;
}

const char* dense_bf16_name(DenseBf16 d) { return d == DenseBf16::plain ? "plain" : "packed"; }

std::optional<DenseBf16> dense_bf16_from_name(std::string_view name) {
    const std::string l = lower(trim(name));
    if (l == "packed") return DenseBf16::packed;
    if (l == "plain") return DenseBf16::plain;
    return std::nullopt;
}

std::string EngineConfig::origin(std::string_view key) const {
    if (auto it = origins.find(key); it != origins.end()) return it->second;
    return std::string(key) + " (default)";
}

int max_threads() {
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<int>(std::min<unsigned>(8 * cpus, 1024));
}

std::optional<std::string> thread_count_problem(int64_t threads) {
    if (threads <= max_threads()) return std::nullopt;
    return "more than the " + std::to_string(max_threads()) + " threads stormo starts (8 per logical CPU, at most 1024)";
}

Expected<void> check_thread_count(int64_t threads, const std::string& origin) {
    if (threads <= 0) return fail(ErrorKind::invalid_argument, origin + " " + std::to_string(threads) + ": must be a positive integer");
    if (auto over = thread_count_problem(threads))
        return fail(ErrorKind::invalid_argument, origin + " " + std::to_string(threads) + ": " + *over);
    return {};
}

const std::vector<std::string>& engine_config_keys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> out;
        for (const EngineSetting& s : engine_settings()) out.emplace_back(s.key);
        return out;
    }();
    return keys;
}

EngineConfig default_engine_config() { return EngineConfig{}; }

namespace {

std::string known_keys() {
    std::string out;
    for (const std::string& k : engine_config_keys()) out += (out.empty() ? "" : ", ") + k;
    return out;
}

// What a YAML node holds instead of the value expected, for an error.
std::string node_kind(const YAML::Node& node) {
    if (node.IsNull()) return "no value";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a map";
    return quoted_value(node.Scalar());
}

// One key's value, through the settings table: a scalar is the text an option would take, a
// sequence the texts a repeated option would. Its errors are the command line's, naming the
// key and the file where the option would be named.
Expected<void> apply_key(EngineConfig& cfg, const std::string& key, const YAML::Node& node,
                         const std::string& source) {
    const EngineSetting* setting = find_engine_setting(key);
    if (!setting)
        return fail(ErrorKind::config, source + ": unknown key " + quoted_value(key) + " (known keys: " + known_keys() + ")");
    const SettingSource from{key + " in " + source, ErrorKind::config, source};
    const auto wrong = [&] {
        return fail(ErrorKind::config,
                    from.origin + ": must be " + std::string(setting->expected) + ", got " + node_kind(node));
    };
    if (setting->form == EngineSetting::Form::one) {
        if (!node.IsScalar()) return wrong();
        return apply_setting(cfg, *setting, node.Scalar(), from);
    }
    if (!node.IsSequence()) return wrong();
    for (const YAML::Node& item : node)
        if (!item.IsScalar()) return wrong();
    cfg.origins[key] = from.origin;  // an empty list is given too
    for (const YAML::Node& item : node) STORMO_TRY(apply_setting(cfg, *setting, item.Scalar(), from));
    return {};
}

// yaml-cpp's messages can quote the input (an anchor's name, a key): escaped and cut like a value.
std::string yaml_message(const YAML::Exception& e) { return printable(e.msg, 200); }

// Where each document of a YAML stream starts; nothing else is kept.
class DocumentStarts final : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

std::string at_mark(const std::string& source, const YAML::Mark& mark) {
    return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The one document of the file: YAML::Load reads the first and silently ignores a second one
// (after "---" or "..."), whose settings would then not apply without a word. The documents are
// counted with the parser itself, two at most: yaml-cpp 0.7's LoadAll never ends on a stray ','
// (it hands out empty documents at the same place forever, growing), and neither would a loop
// to the end. A second document that starts where the first did is that case: nothing can be
// read there, and YAML::Load would have returned an empty configuration.
Expected<YAML::Node> parse_yaml(std::string_view text, const std::string& source) {
    try {
        std::istringstream in{std::string(text)};
        YAML::Parser parser(in);
        DocumentStarts starts;
        while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
        }
        if (starts.marks.size() == 2 && starts.marks[1].pos == starts.marks[0].pos)
            return fail(ErrorKind::format, at_mark(source, starts.marks[0]) + ": invalid YAML: nothing can be read here");
        if (starts.marks.size() == 2)
            return fail(ErrorKind::config, source + ": holds more than one YAML document (the second starts at line " +
                                               std::to_string(starts.marks[1].line + 1) +
                                               "); an engine configuration is one document");
        return YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        return fail(ErrorKind::format, at_mark(source, e.mark) + ": invalid YAML: " + yaml_message(e));
    }
}

}  // namespace

Expected<EngineConfig> parse_engine_config(std::string_view yaml_text, const std::string& source_name) {
    STORMO_TRY_ASSIGN(auto root, parse_yaml(yaml_text, source_name));
    EngineConfig cfg = default_engine_config();
    cfg.source = source_name;
    if (root.IsNull()) return cfg;  // an empty file (or only comments): every default
    if (!root.IsMap())
        return fail(ErrorKind::config, source_name + ": an engine configuration must be a map of keys (" +
                                           known_keys() + ")");
    std::set<std::string> seen;
    try {
        for (const auto& entry : root) {
            if (!entry.first.IsScalar())
                return fail(ErrorKind::config, source_name + ": keys must be plain names (" + known_keys() + ")");
            const std::string key = entry.first.Scalar();
            if (!seen.insert(key).second)
                return fail(ErrorKind::config, source_name + ": key " + quoted_value(key) + " appears twice");
            const YAML::Node value = entry.second;
            if (auto ok = apply_key(cfg, key, value, source_name); !ok)
                return tl::unexpected(ok.error());
        }
    } catch (const YAML::Exception& e) {
        return fail(ErrorKind::format, source_name + ": " + yaml_message(e));
    }
    return cfg;
}

Expected<EngineConfig> load_engine_config(const std::string& path) {
    // A regular file of bounded size: a directory, a FIFO or /dev/zero is refused, not read.
    auto text = read_file(path, kConfigReadCap, "an engine configuration");
    if (!text) return tl::unexpected(text.error());
    return parse_engine_config(*text, path);
}

}  // namespace stormo
