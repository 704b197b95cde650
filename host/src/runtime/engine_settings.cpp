// The engine settings table: one row per key, with its check and where its value goes.
#include "runtime/engine_settings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>

#include "runtime/engine.hpp"
#include "stormo/quote.hpp"

namespace stormo {
namespace {

using Why = std::optional<std::string>;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<int64_t> integer(std::string_view text) {
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return v;
}

std::optional<bool> boolean(std::string_view text) {
    const std::string s = lower(text);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    return std::nullopt;
}

Why must_be(std::string_view expected) { return "must be " + std::string(expected); }

// The row's own `expected`, for the checks that have nothing more to say.
Why refused(const EngineSetting& self) { return must_be(self.expected); }

// A plugin name (kernels, family): any text but the empty one.
template <std::string EngineConfig::*Field>
Why set_name(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    if (text.empty()) return "needs " + std::string(self.expected);
    c.*Field = std::string(text);
    return std::nullopt;
}

// One of a few named values, read by the value's own `from_name`.
template <class T, T EngineConfig::*Field, std::optional<T> (*FromName)(std::string_view)>
Why set_named(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<T> v = FromName(text);
    if (!v) return refused(self);
    c.*Field = *v;
    return std::nullopt;
}

Why set_threads(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    if (lower(text) == "auto") {
        c.threads.reset();
        return std::nullopt;
    }
    const std::optional<int64_t> v = integer(text);
    if (!v || *v <= 0) return refused(self);
    if (Why over = thread_count_problem(*v)) return over;
    c.threads = static_cast<int>(*v);
    return std::nullopt;
}

Why set_expert_budget(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting&) {
    auto size = read_size(text);
    if (!size) return size.error();
    c.expert_budget = *size;
    return std::nullopt;
}

// A relative directory in a file is relative to that file, not to the working directory.
std::string resolve_against(const std::string& file, std::string_view dir) {
    namespace fs = std::filesystem;
    const fs::path p(dir);
    if (file.empty() || p.is_absolute()) return std::string(dir);
    const fs::path base = fs::path(file).parent_path();
    if (base.empty() || !fs::exists(file)) return std::string(dir);
    return (base / p).lexically_normal().string();
}

Why add_plugins_dir(EngineConfig& c, std::string_view text, const SettingSource& source, const EngineSetting&) {
    if (text.empty()) return "needs a directory name";
    c.plugins_dirs.push_back(resolve_against(source.file, text));
    c.plugins_dir_origins.push_back(source.origin);
    return std::nullopt;
}

Why set_context(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    if (lower(text) == "auto") {
        // auto: the run's own need (see EngineConfig::context); not a given context.
        c.context = default_engine_config().context;
        c.origins.erase("context");
        return std::nullopt;
    }
    const std::optional<int64_t> v = integer(text);
    if (!v || *v <= 0) return refused(self);
    if (*v > kMaxContext) return "more than the " + std::to_string(kMaxContext) + " positions stormo accepts";
    c.context = *v;
    return std::nullopt;
}

Why set_eviction(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<EvictionPolicy> policy = eviction_policy_from_text(text);
    if (!policy) return refused(self);
    c.eviction = *policy;
    return std::nullopt;
}

Why set_hotness_decay(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    double d = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !(d > 0.0 && d < 1.0))
        return refused(self);
    c.hotness_decay = d;
    return std::nullopt;
}

Why set_hotness_margin(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<double> m = hotness_margin_from_text(text);
    if (!m) return refused(self);
    c.hotness_margin = *m;
    return std::nullopt;
}

template <bool EngineConfig::*Field>
Why set_flag(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting&) {
    const std::optional<bool> v = boolean(text);
    if (!v) return must_be("a boolean (true or false)");
    c.*Field = *v;
    return std::nullopt;
}

Why set_io_threads(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<int64_t> v = integer(text);
    if (!v || *v <= 0 || *v > 256) return refused(self);
    c.io_threads = static_cast<int>(*v);
    return std::nullopt;
}

Why set_draft_max(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<int64_t> v = integer(text);
    if (!v || *v < 1 || *v > static_cast<int64_t>(SpeculationSettings::kDraftMaxLimit)) return refused(self);
    c.draft_max = static_cast<int>(*v);
    return std::nullopt;
}

Why set_rank_timeout(EngineConfig& c, std::string_view text, const SettingSource&, const EngineSetting& self) {
    const std::optional<int64_t> v = integer(text);
    if (!v || *v < 1 || *v > 86400) return refused(self);
    c.rank_timeout = static_cast<int>(*v);
    return std::nullopt;
}

using Form = EngineSetting::Form;

// Documentation order; the help texts are the command line's.
const std::array<EngineSetting, 21> kSettings{{
    {"kernels", "kernels", "NAME", Form::one, "auto", "a name (auto, reference or a plugin)",
     "auto (default), reference, or a kernels plugin name (avx2, vnni)", set_name<&EngineConfig::kernels>,
     [](const EngineConfig& c, EngineOptions& o) { o.setup.kernels = PluginRequest{c.kernels, c.origin("kernels")}; }},
    {"family", "family", "NAME", Form::one, "auto", "a name (auto or a model plugin)",
     "auto (default: chosen from config.json) or a model plugin name", set_name<&EngineConfig::family>,
     [](const EngineConfig& c, EngineOptions& o) { o.setup.family = PluginRequest{c.family, c.origin("family")}; }},
    {"threads", "threads", "N", Form::one, "auto", "a positive integer or auto",
     "compute threads (default: physical cores)", set_threads,
     [](const EngineConfig& c, EngineOptions& o) { o.threads = c.threads ? static_cast<size_t>(*c.threads) : 0; }},
    {"expert_budget", "expert-budget", "SIZE", Form::one, "auto", "a size (bytes, 8GiB, all or auto)",
     "RAM for routed experts: bytes, or with KiB/MiB/GiB/TiB; all keeps every expert; auto", set_expert_budget,
     [](const EngineConfig& c, EngineOptions& o) {
         o.expert_budget = c.expert_budget;
         o.expert_budget_origin = c.origin("expert_budget");
     }},
    {"plugins_dirs", "plugins-dir", "DIR", Form::list, "[]", "a list of directories",
     "another directory to search for plugins (repeatable)", add_plugins_dir,
     [](const EngineConfig& c, EngineOptions& o) {
         for (size_t i = 0; i < c.plugins_dirs.size(); ++i)
             o.setup.search.extra.push_back({c.plugins_dirs[i], c.plugins_dir_origins[i], true});
     }},
    {"context", "context", "N", Form::one, "auto", "a positive integer or auto",
     "KV context in tokens; default (context: auto): what the run needs, i.e. the prompt + --max-tokens "
     "for generate and run, --prompt-tokens + --gen-tokens for bench, the ids for logits; for chat and serve "
     "as long as memory allows up to the model's max_position_embeddings; 4096 for inspect and pipe (-c, --ctx-size)",
     set_context,
     [](const EngineConfig& c, EngineOptions& o) {
         o.context = static_cast<size_t>(c.context);
         o.context_origin = c.origin("context");
     }},
    {"eviction", "eviction", "POLICY", Form::one, "adaptive", "adaptive, hotness, lru or next-use",
     "adaptive (default), hotness, lru or next-use: which cached expert the store evicts (adaptive: hotness at "
     "--hotness-decay or at 0.6, whichever hit more over the last tokens in a shadow of the cache; next-use: the one "
     "whose next use is expected farthest away; docs/expert_store.md)", set_eviction,
     [](const EngineConfig& c, EngineOptions& o) { o.eviction.policy = c.eviction; }},
    {"hotness_decay", "hotness-decay", "D", Form::one, "0.95", "a number between 0 and 1 (exclusive)",
     "the share of an expert's heat kept per step of its layer (hotness and next-use eviction, adaptive's slow candidate; 0.95)", set_hotness_decay,
     [](const EngineConfig& c, EngineOptions& o) { o.eviction.decay = c.hotness_decay; }},
    {"hotness_margin", "hotness-margin", "M", Form::one, "0.25", "a number from 0 to 100, or off",
     "how much hotter (a share) a newly read expert must be than the coldest cached one to take its place "
     "for good; otherwise it is held on probation and leaves first (hotness eviction; next-use: how much sooner its "
     "next use must be expected; 0.25; off: always)",
     set_hotness_margin, [](const EngineConfig& c, EngineOptions& o) { o.eviction.margin = c.hotness_margin; }},
    {"prefetch", "prefetch", "BOOL", Form::one, "true", "a boolean (true or false)",
     "true (default) or false: read the experts the next layer is predicted to need while this one computes",
     set_flag<&EngineConfig::prefetch>,
     [](const EngineConfig& c, EngineOptions& o) { o.pipeline.prefetch = c.prefetch; }},
    {"async_compute", "async-compute", "BOOL", Form::one, "true", "a boolean (true or false)",
     "true (default) or false: compute each expert as its bytes arrive (the same bits either way)",
     set_flag<&EngineConfig::async_compute>,
     [](const EngineConfig& c, EngineOptions& o) { o.pipeline.async_compute = c.async_compute; }},
    {"direct_io", "direct-io", "BOOL", Form::one, "true", "a boolean (true or false)",
     "true (default) or false: read experts with O_DIRECT, bypassing the page cache",
     set_flag<&EngineConfig::direct_io>, [](const EngineConfig& c, EngineOptions& o) { o.direct_io = c.direct_io; }},
    {"io_threads", "io-threads", "N", Form::one, "4", "an integer from 1 to 256",
     "expert reads kept in flight (4)", set_io_threads,
     [](const EngineConfig& c, EngineOptions& o) { o.io_threads = static_cast<size_t>(c.io_threads); }},
    {"activations", "activations", "ROAD", Form::one, "f32", "f32 or int8",
     "f32 (default) or int8: the integer road for MXFP4 matrices (docs/kernels.md)", set_named<ActivationRoad, &EngineConfig::activations, activation_road_from_name>,
     [](const EngineConfig& c, EngineOptions& o) { o.activations = c.activations; }},
    {"head", "head", "READ", Form::one, "bounded", "bounded or exact-only",
     "bounded (default) or exact-only: greedy decoding reads the LM head by bound from an int8 copy, or "
     "computes every logit (docs/head_bound.md)",
     set_named<HeadRead, &EngineConfig::head, head_read_from_name>, [](const EngineConfig& c, EngineOptions& o) { o.head = c.head; }},
    {"dense_bf16", "dense-bf16", "FORM", Form::one, "packed", "packed or plain",
     "packed (default) or plain: hold dense BF16 matrices losslessly in about 12 bits a value, or "
     "as the checkpoint has them (docs/kernels.md)",
     set_named<DenseBf16, &EngineConfig::dense_bf16, dense_bf16_from_name>, [](const EngineConfig& c, EngineOptions& o) { o.dense_bf16 = c.dense_bf16; }},
    {"pin_threads", "pin-threads", "BOOL", Form::one, "false", "a boolean (true or false)",
     "false (default) or true: pin the compute pool's workers to CPUs", set_flag<&EngineConfig::pin_threads>,
     [](const EngineConfig& c, EngineOptions& o) { o.pin_threads = c.pin_threads; }},
    {"speculate", "speculate", "MODE", Form::one, "off", "auto, off, context, mtp or grammar",
     "off (default), auto, context, grammar or mtp: speculative decoding, drafts verified in one pass; the "
     "same token ids either way (docs/speculation.md)",
     set_named<SpeculateMode, &EngineConfig::speculate, speculate_mode_from_name>,
     [](const EngineConfig& c, EngineOptions& o) { o.speculation.mode = c.speculate; }},
    {"draft_max", "draft-max", "N", Form::one, "8", "an integer from 1 to 64",
     "drafts a speculative verify step carries at most (8)", set_draft_max,
     [](const EngineConfig& c, EngineOptions& o) { o.speculation.draft_max = static_cast<size_t>(c.draft_max); }},
    {"rank_timeout", "rank-timeout", "SECONDS", Form::one, "60", "an integer from 1 to 86400",
     "under mpirun: how long rank 0 waits for another rank's answer before it fails naming that rank (60; "
     "docs/distributed.md)", set_rank_timeout,
     [](const EngineConfig& c, EngineOptions& o) { o.rank_timeout_seconds = c.rank_timeout; }},
    {"rank_split", "rank-split", "RULE", Form::one, "even", "even or weighted",
     "under mpirun: even (default) or weighted: each rank's share of every layer's experts follows the memory "
     "and disk bandwidth it measures at start (docs/distributed.md)",
     set_named<RankSplit, &EngineConfig::rank_split, rank_split_from_name>,
     [](const EngineConfig& c, EngineOptions& o) { o.rank_split = c.rank_split; }},
}};

// A plain integer reads as it is ("--threads 0"); any other value is quoted, escaped and cut.
std::string shown(std::string_view text) {
    const std::string_view digits = !text.empty() && text.front() == '-' ? text.substr(1) : text;
    const bool plain = !digits.empty() && digits.size() <= 20 &&
                       std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    return plain ? std::string(text) : "'" + printable(text) + "'";
}

}  // namespace

std::span<const EngineSetting> engine_settings() { return kSettings; }

const EngineSetting* find_engine_setting(std::string_view key) {
    for (const EngineSetting& s : kSettings)
        if (s.key == key) return &s;
    return nullptr;
}

Expected<void> apply_setting(EngineConfig& config, const EngineSetting& setting, std::string_view text,
                             const SettingSource& source) {
    config.origins[std::string(setting.key)] = source.origin;
    if (const Why why = setting.set(config, text, source, setting))
        return fail(source.kind, source.origin + " " + shown(text) + ": " + *why);
    return {};
}

EngineOptions engine_options(const EngineConfig& config) {
    EngineOptions o;
    for (const EngineSetting& s : kSettings) s.fill(config, o);
    return o;
}

}  // namespace stormo
