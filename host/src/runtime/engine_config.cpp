// YAML engine configuration and the size syntax shared with the command line.
#include "runtime/engine_config.hpp"

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

#include "util/file.hpp"
#include "util/quote.hpp"

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

// A value from the file or the command line in an error: escaped and cut (util/quote.hpp), so
// invalid UTF-8, terminal escapes or a 10 MB scalar cost one short line.
std::string quoted_value(std::string_view s) { return "'" + printable(s) + "'"; }

Error size_error(std::string_view option, std::string_view text, const std::string& why) {
    return Error{ErrorKind::config, std::string(option) + " " + quoted_value(text) + ": " + why};
}

}  // namespace

Expected<SizeSpec> parse_size(std::string_view text, std::string_view option) {
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
        return tl::unexpected(size_error(option, text,
                                         "not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)"));
    const std::string_view unit = trim(t.substr(i));
    const std::optional<uint64_t> mult = unit_multiplier(unit);
    if (!mult)
        return tl::unexpected(size_error(option, text, "unknown unit " + quoted_value(unit) +
                                                           " (use KiB, MiB, GiB, TiB or K, M, G, T)"));
    uint64_t n = 0;
    if (!whole.empty()) {
        const auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), n);
        if (ec != std::errc() || ptr != whole.data() + whole.size())
            return tl::unexpected(size_error(option, text, "the number is too large"));
    }
    if (n > std::numeric_limits<uint64_t>::max() / *mult)
        return tl::unexpected(size_error(option, text, "the size is too large"));
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

std::string format_size(const SizeSpec& size) {
    switch (size.kind) {
        case SizeSpec::Kind::all: return "all";
        case SizeSpec::Kind::automatic: return "auto";
        case SizeSpec::Kind::bytes: return format_bytes(size.bytes);
    }
    return "auto";
}

const char* activation_road_name(ActivationRoad r) { return r == ActivationRoad::int8 ? "int8" : "f32"; }

std::optional<ActivationRoad> activation_road_from_name(std::string_view name) {
    const std::string l = lower(trim(name));
    if (l == "f32") return ActivationRoad::f32;
    if (l == "int8") return ActivationRoad::int8;
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

Expected<void> check_thread_count(int64_t threads, const std::string& origin) {
    if (threads <= 0) return fail(ErrorKind::invalid_argument, origin + " " + std::to_string(threads) + ": must be a positive integer");
    if (threads > max_threads())
        return fail(ErrorKind::invalid_argument, origin + " " + std::to_string(threads) + ": more than the " +
                                                     std::to_string(max_threads()) +
                                                     " threads stormo starts (8 per logical CPU, at most 1024)");
    return {};
}

const std::vector<std::string>& engine_config_keys() {
    static const std::vector<std::string> keys{"kernels", "family", "threads", "expert_budget",
                                               "plugins_dirs", "context", "eviction", "hotness_decay",
                                               "prefetch", "async_compute", "direct_io", "io_threads",
                                               "activations", "head", "dense_bf16", "pin_threads"};
    return keys;
}

EngineConfig default_engine_config() { return EngineConfig{}; }

namespace {

std::string known_keys() {
    std::string out;
    for (const std::string& k : engine_config_keys()) out += (out.empty() ? "" : ", ") + k;
    return out;
}

// Reads one key's value; each error names the file, the key and the expected type.
class KeyReader {
public:
    KeyReader(const std::string& source, const std::string& key, const YAML::Node& node)
        : source_(source), key_(key), node_(node) {}

    Error wrong(const std::string& expected) const {
        std::string got;
        if (node_.IsNull()) got = "no value";
        else if (node_.IsSequence()) got = "a list";
        else if (node_.IsMap()) got = "a map";
        else got = quoted_value(node_.Scalar());
        return Error{ErrorKind::config,
                     source_ + ": key '" + key_ + "' must be " + expected + ", got " + got};
    }

    Expected<std::string> string() const {
        if (!node_.IsScalar() || node_.Scalar().empty()) return tl::unexpected(wrong("a non-empty string"));
        return node_.Scalar();
    }

    Expected<int64_t> positive_integer() const {
        if (!node_.IsScalar()) return tl::unexpected(wrong("a positive integer"));
        const std::string& s = node_.Scalar();
        int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || ptr != s.data() + s.size() || v <= 0)
            return tl::unexpected(wrong("a positive integer"));
        return v;
    }

    Expected<bool> boolean() const {
        if (!node_.IsScalar()) return tl::unexpected(wrong("a boolean (true or false)"));
        const std::string s = lower(node_.Scalar());
        if (s == "true" || s == "yes" || s == "on") return true;
        if (s == "false" || s == "no" || s == "off") return false;
        return tl::unexpected(wrong("a boolean (true or false)"));
    }

    Expected<std::vector<std::string>> strings() const {
        if (!node_.IsSequence()) return tl::unexpected(wrong("a list of strings"));
        std::vector<std::string> out;
        for (const YAML::Node& item : node_) {
            if (!item.IsScalar() || item.Scalar().empty()) return tl::unexpected(wrong("a list of strings"));
            out.push_back(item.Scalar());
        }
        return out;
    }

    std::string origin() const { return key_ + " in " + source_; }

private:
    const std::string& source_;
    const std::string& key_;
    const YAML::Node& node_;
};

// Relative plugin directories in a file are relative to that file, not to the working directory.
std::string resolve_against(const std::string& source, const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path p(dir);
    if (p.is_absolute()) return dir;
    const fs::path base = fs::path(source).parent_path();
    if (base.empty() || !fs::exists(source)) return dir;
    return (base / p).lexically_normal().string();
}

Expected<void> apply_key(EngineConfig& cfg, const std::string& key, const KeyReader& r,
                         const std::string& source) {
    if (key == "kernels" || key == "family") {
        auto v = r.string();
        if (!v) return tl::unexpected(v.error());
        (key == "kernels" ? cfg.kernels : cfg.family) = *v;
    } else if (key == "threads") {
        if (auto s = r.string(); s && lower(*s) == "auto") {
            cfg.threads.reset();
        } else {
            auto v = r.positive_integer();
            if (!v) return tl::unexpected(r.wrong("a positive integer or auto"));
            if (*v > max_threads())
                return tl::unexpected(r.wrong("a thread count up to " + std::to_string(max_threads()) +
                                              " (8 per logical CPU, at most 1024)"));
            cfg.threads = static_cast<int>(*v);
        }
    } else if (key == "expert_budget") {
        auto s = r.string();
        if (!s) return tl::unexpected(r.wrong("a size (bytes, 8GiB, all or auto)"));
        auto v = parse_size(*s, r.origin());
        if (!v) return tl::unexpected(v.error());
        cfg.expert_budget = *v;
    } else if (key == "plugins_dirs") {
        auto v = r.strings();
        if (!v) return tl::unexpected(v.error());
        cfg.plugins_dirs.clear();
        for (const std::string& d : *v) cfg.plugins_dirs.push_back(resolve_against(source, d));
    } else if (key == "context") {
        if (auto s = r.string(); s && lower(*s) == "auto") {
            // auto: the run's own need (see EngineConfig::context); not a given context.
            cfg.context = default_engine_config().context;
            cfg.origins.erase(key);
            return {};
        }
        auto v = r.positive_integer();
        if (!v) return tl::unexpected(r.wrong("a positive integer or auto"));
        if (*v > kMaxContext) return tl::unexpected(r.wrong("a context up to " + std::to_string(kMaxContext) + " positions"));
        cfg.context = *v;
    } else if (key == "eviction") {
        auto v = r.string();
        if (!v || (*v != "lru" && *v != "hotness")) return tl::unexpected(r.wrong("lru or hotness"));
        cfg.eviction = *v == "lru" ? EvictionPolicy::lru : EvictionPolicy::hotness;
    } else if (key == "prefetch" || key == "direct_io" || key == "async_compute" || key == "pin_threads") {
        auto v = r.boolean();
        if (!v) return tl::unexpected(v.error());
        (key == "prefetch"        ? cfg.prefetch
         : key == "direct_io"     ? cfg.direct_io
         : key == "async_compute" ? cfg.async_compute
                                  : cfg.pin_threads) = *v;
    } else if (key == "io_threads") {
        auto v = r.positive_integer();
        if (!v) return tl::unexpected(v.error());
        if (*v > 256) return tl::unexpected(r.wrong("a positive integer up to 256"));
        cfg.io_threads = static_cast<int>(*v);
    } else if (key == "activations") {
        auto v = r.string();
        const std::optional<ActivationRoad> road = v ? activation_road_from_name(*v) : std::nullopt;
        if (!road) return tl::unexpected(r.wrong("f32 or int8"));
        cfg.activations = *road;
    } else if (key == "head") {
        auto v = r.string();
        const std::optional<HeadRead> head = v ? head_read_from_name(*v) : std::nullopt;
        if (!head) return tl::unexpected(r.wrong("bounded or exact-only"));
        cfg.head = *head;
    } else if (key == "dense_bf16") {
        auto v = r.string();
        const std::optional<DenseBf16> form = v ? dense_bf16_from_name(*v) : std::nullopt;
        if (!form) return tl::unexpected(r.wrong("packed or plain"));
        cfg.dense_bf16 = *form;
    } else if (key == "hotness_decay") {
        auto text = r.string();
        double d = 0.0;
        try {
            size_t used = 0;
            d = text ? std::stod(*text, &used) : 0.0;
            if (text && used != text->size()) d = 0.0;
        } catch (const std::exception&) {
            d = 0.0;
        }
        if (!(d > 0.0 && d < 1.0)) return tl::unexpected(r.wrong("a number between 0 and 1 (exclusive)"));
        cfg.hotness_decay = d;
    } else {
        return fail(ErrorKind::config, source + ": unknown key " + quoted_value(key) + " (known keys: " + known_keys() + ")");
    }
    cfg.origins[key] = r.origin();
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
            if (auto ok = apply_key(cfg, key, KeyReader(source_name, key, value), source_name); !ok)
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
