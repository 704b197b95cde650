// stormo inspect --model DIR [--json]: what stormo would run, without loading weights: the
// family and kernels chosen, the dimensions from config.json, the tensor census by role and
// dtype, the memory plan and which kernel-table entries the plugin provides.
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "distributed/rank_plan.hpp"
#include "cli/options.hpp"
#include "compute/kernel_table.hpp"
#include "compute/worker_pool.hpp"
#include "model/container_check.hpp"
#include "model/container_source.hpp"
#include "model/finite_scan.hpp"
#include "runtime/compact_head.hpp"
#include "runtime/generation.hpp"
#include "runtime/memory_plan.hpp"
#include "store/expert_reads.hpp"
#include "store/expert_store.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/quote.hpp"
#include "tools/expert_layout_probe.hpp"

namespace stormo::cli {
namespace {

constexpr std::array kRoles{TensorRole::embedding, TensorRole::attention, TensorRole::norm,
                            TensorRole::router,    TensorRole::experts,   TensorRole::dense_ffn,
                            TensorRole::head,      TensorRole::other,     TensorRole::draft};

struct Tally {
    uint64_t count = 0;
    uint64_t bytes = 0;
    void add(uint64_t n) {
        ++count;
        bytes += n;
    }
};

struct Census {
    Tally total;
    std::array<Tally, kRoles.size()> by_role{};
    std::map<std::string, Tally> by_dtype;  // sorted by dtype name
    uint64_t expert_bytes() const { return by_role[static_cast<size_t>(TensorRole::experts)].bytes; }
    uint64_t draft_bytes() const { return by_role[static_cast<size_t>(TensorRole::draft)].bytes; }
    // What the engine keeps resident: everything but the routed experts and the unloaded draft layers.
    uint64_t dense_bytes() const { return total.bytes - expert_bytes() - draft_bytes(); }
    // Of the draft layers' bytes, their routed experts' (the store's when the layer is loaded).
    uint64_t draft_expert_bytes = 0;
};

// The run loads the checkpoint's MTP layer (its first draft layer): the speculation mode drafts
// from it and the checkpoint has one (Engine::load_draft_layer).
bool loads_draft_layer(const ModelSetup& s, const ModelSummary& summary) {
    return loads_mtp(s.config.speculate) && !summary.draft_layers.empty();
}

Census take_census(const ModelSource& source, const Family& family, const ModelSummary& summary) {
    Census c;
    for (const TensorInfo& t : source.tensors()) {
        c.total.add(t.nbytes);
        const auto role = static_cast<size_t>(tensor_role(family, summary, t.name));
        if (role < c.by_role.size()) c.by_role[role].add(t.nbytes);
        if (role == static_cast<size_t>(TensorRole::draft) && family.classify(t.name) == TensorRole::experts)
            c.draft_expert_bytes += t.nbytes;
        c.by_dtype[std::string(dtype_name(t.dtype))].add(t.nbytes);
    }
    return c;
}

struct MemoryPlan {
    uint64_t dense_resident = 0;
    uint64_t compact_head = 0;   // the bounded head's int8 copy (--head bounded), made at load
    uint64_t experts = 0;
    uint64_t expert_budget = 0;
    bool all_experts_resident = true;
    std::string budget_setting;  // "all", "auto" or the size, and where it came from
    std::string budget_reason;   // how the budget was reached
    uint64_t expert_slots = 0;   // about: the store's slots also hold alignment padding
    uint64_t kv_per_token = 0;
    int64_t context = 0;
    uint64_t kv_for_context = 0;
    size_t threads = 0;
};

// config.json's expert count against the checkpoint's expert tensors: more experts than bytes
// means the count is wrong, said as such before the family's load trips over a tensor's shape.
Expected<void> check_expert_count(const ModelSetup& s, const Census& c, const ModelSummary& summary) {
    const uint64_t experts_total = static_cast<uint64_t>(summary.n_moe_layers) * static_cast<uint64_t>(summary.n_experts);
    if (experts_total > 0 && c.expert_bytes() / experts_total == 0)
        return fail(ErrorKind::mismatch, s.source->config().source() + ": " + std::to_string(summary.n_moe_layers) +
                                             " MoE layers x " + std::to_string(summary.n_experts) +
                                             " experts, but the checkpoint's expert tensors hold only " +
                                             format_bytes(c.expert_bytes()) + "; the expert count does not match the tensors");
    return {};
}

// slot_bytes: a streaming slot as the store sizes it with O_DIRECT reads (slot_bytes_for over the
// layouts the family declares; buffered reads need no more), so inspect refuses exactly the
// budgets the engine refuses.
Expected<MemoryPlan> plan_memory(const ModelSetup& s, const Census& c, const ModelSummary& summary, uint64_t slot_bytes) {
    MemoryPlan p;
    p.dense_resident = c.dense_bytes();
    const bool draft = loads_draft_layer(s, summary);
    // A loaded MTP layer (when the checkpoint stores several, the engine loads the first).
    const uint64_t draft_share = summary.draft_layers.empty() ? 0 : summary.draft_layers.size();
    if (draft) p.dense_resident += (c.draft_bytes() - c.draft_expert_bytes) / draft_share;
    // The engine makes the copy before it plans the expert budget, where it saves bytes over the
    // head's own tensor (Engine::make_compact_head).
    const auto vocab = static_cast<size_t>(summary.vocab_size), hidden = static_cast<size_t>(summary.hidden_size);
    const uint64_t own_head = c.by_role[static_cast<size_t>(TensorRole::head)].bytes;
    if (s.config.head == HeadRead::bounded && CompactHead::copy_saves_bytes(own_head, vocab, hidden))
        p.compact_head = CompactHead::bytes_for(vocab, hidden);
    p.experts = c.expert_bytes() + (draft ? c.draft_expert_bytes / draft_share : 0);
    p.kv_per_token = static_cast<uint64_t>(summary.kv_floats_per_token) * sizeof(float);
    p.context = s.config.context;
    // The same plan `generate` makes at start (plan_run_memory), except that here the dense part
    // is not loaded yet: it is taken off what is available.
    AvailableMemory available = available_memory();
    const uint64_t loaded = p.dense_resident + p.compact_head;
    available.bytes = available.bytes > loaded ? available.bytes - loaded : 0;
    available.source += p.compact_head > 0 ? " - dense part - compact head" : " - dense part";
    const uint64_t experts_total = static_cast<uint64_t>(summary.n_moe_layers) * static_cast<uint64_t>(summary.n_experts);
    RunMemoryRequest request;
    request.config = &s.source->config();
    // A family that declares no buffers holds kv_floats_per_token for every position.
    request.kv = summary.kv_buffers.empty()
                     ? std::vector<KvBufferDecl>{KvBufferDecl{"kv", summary.kv_floats_per_token, 0}}
                     : summary.kv_buffers;
    // The MTP layer is a sparse layer of the model's own form: one more layer's buffers, the last's.
    if (draft && !summary.kv_buffers.empty() && summary.n_layers > 0) {
        const size_t per_layer = summary.kv_buffers.size() / static_cast<size_t>(summary.n_layers);
        request.kv.insert(request.kv.end(), summary.kv_buffers.end() - static_cast<ptrdiff_t>(per_layer), summary.kv_buffers.end());
    }
    request.context = static_cast<size_t>(p.context);
    request.context_origin = s.config.origin("context");
    request.expert_bytes = p.experts;
    request.expert_budget = s.config.expert_budget;
    request.expert_budget_origin = s.config.origin("expert_budget");
    request.available = available;
    STORMO_TRY_ASSIGN(const RunMemory planned, plan_run_memory(request));
    p.kv_for_context = planned.kv_bytes;
    const ExpertBudget& budget = planned.budget;
    p.expert_budget = budget.all ? p.experts : budget.bytes;
    p.all_experts_resident = budget.all;
    if (!budget.all && slot_bytes > 0) {
        auto minimum = check_budget_minimum(budget.bytes, slot_bytes, static_cast<size_t>(std::max(1, summary.top_k)));
        if (!minimum) {
            const auto origin = s.config.origins.find("expert_budget");
            return tl::unexpected(origin == s.config.origins.end() ? minimum.error()
                                                                   : with_context(minimum.error(), origin->second));
        }
    }
    p.expert_slots = budget.all || experts_total == 0 ? experts_total
                                                      : std::min<uint64_t>(experts_total, budget.bytes / slot_bytes);
    p.budget_reason = describe_budget(budget, p.expert_slots, slot_bytes, true);
    const auto origin = s.config.origins.find("expert_budget");
    p.budget_setting = format_size(s.config.expert_budget) + " (" +
                       (origin == s.config.origins.end() ? std::string("default") : origin->second) + ")";
    p.threads = s.config.threads ? static_cast<size_t>(*s.config.threads) : physical_core_count();
    return p;
}

std::string bytes_text(uint64_t n) { return std::to_string(n) + " bytes (" + format_bytes(n) + ")"; }

std::string pad(std::string s, size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
}

struct Report {
    const ModelSetup& setup;
    const ModelSummary& summary;
    const Census& census;
    const MemoryPlan& plan;
    const std::vector<KernelEntry>& kernels;
    const std::optional<FiniteScan>& check;  // --check
    size_t reads_per_expert;                   // with O_DIRECT's alignment (store/expert_reads.hpp)
    bool container;                            // a directory stormo convert wrote
    const std::optional<ContainerCheck>& hashes;  // --check on a container
    const std::optional<RankPlan>& ranks;         // --ranks N
};

void print_ranks(const RankPlan& plan) {
    std::cout << "\nranks    " << plan.ranks.size() << " (mpirun -np " << plan.ranks.size()
              << ": rank r holds experts [r*n/N, (r+1)*n/N) of every MoE layer; docs/distributed.md)\n";
    for (size_t r = 0; r < plan.ranks.size(); ++r)
        std::cout << "  rank " << pad(std::to_string(r), 6) << pad(std::to_string(plan.ranks[r].experts) + " experts", 16)
                  << bytes_text(plan.ranks[r].bytes) << "\n";
    const auto per_token = [](double expected, uint64_t most) {
        return format_bytes(static_cast<uint64_t>(expected + 0.5)) + " (at most " + format_bytes(most) + ")";
    };
    std::cout << "  sent per token        " << per_token(plan.bytes_out_per_token, plan.max_bytes_out_per_token)
              << " of hidden rows from rank 0, expected under uniform routing\n";
    std::cout << "  returned per token    " << per_token(plan.bytes_back_per_token, plan.max_bytes_back_per_token)
              << " of expert outputs to rank 0\n";
}

std::string reads_note(const Report& r) {
    if (r.reads_per_expert == 0) return "no routed experts";
    if (r.container) return "a stormo container: each expert is one aligned range";
    return "stormo convert lays each expert out as one";
}

void print_text(const Report& r) {
    const ModelSetup& s = r.setup;
    std::cout << "model    " << s.source->directory() << "\n";
    std::cout << "family   " << s.family.plugin->name << " (score " << s.family.score
              << (s.family.forced ? ", forced by " + s.config.origin("family") : "") << ")\n";
    std::cout << "kernels  " << s.kernels.name << " (score " << s.kernels.score
              << (s.kernels.forced ? ", forced by " + s.config.origin("kernels") : ", best usable on this CPU")
              << ")\n";
    std::cout << "threads  " << r.plan.threads << "\n";

    std::cout << "\ndimensions (config.json)\n";
    size_t w = 0;
    for (const auto& [k, v] : r.summary.dimensions) w = std::max(w, k.size());
    for (const auto& [k, v] : r.summary.dimensions) std::cout << "  " << pad(k, w + 2) << v << "\n";
    std::cout << "  " << pad("moe layers", w + 2) << r.summary.n_moe_layers << " of " << r.summary.n_layers
              << "\n";
    const bool draft_loaded = loads_draft_layer(r.setup, r.summary);
    for (size_t i = 0; i < r.summary.draft_layers.size(); ++i)
        std::cout << "  " << pad("draft layer", w + 2) << r.summary.draft_layers[i] << "* (multi-token prediction: "
                  << (draft_loaded && i == 0 ? "loaded for --speculate " + std::string(speculate_mode_name(r.setup.config.speculate))
                                             : std::string("not loaded"))
                  << ")\n";

    std::cout << "\ntensors  " << r.census.total.count << " tensors, " << bytes_text(r.census.total.bytes) << "\n";
    std::cout << "  by role\n";
    for (TensorRole role : kRoles) {
        const Tally& t = r.census.by_role[static_cast<size_t>(role)];
        std::cout << "    " << pad(tensor_role_name(role), 12) << pad(std::to_string(t.count), 7)
                  << bytes_text(t.bytes) << "\n";
    }
    std::cout << "  by dtype\n";
    for (const auto& [dtype, t] : r.census.by_dtype)
        std::cout << "    " << pad(dtype, 12) << pad(std::to_string(t.count), 7) << bytes_text(t.bytes) << "\n";
    std::cout << "  dense    " << bytes_text(r.census.dense_bytes()) << "\n";
    std::cout << "  experts  " << bytes_text(r.census.expert_bytes()) << "\n";
    if (r.census.draft_bytes() > 0)
        std::cout << "  draft    " << bytes_text(r.census.draft_bytes())
                  << (draft_loaded ? " (the first draft layer loaded: counted in the plan below)" : " (not loaded)") << "\n";

    const MemoryPlan& p = r.plan;
    std::cout << "\nmemory plan\n";
    std::cout << "  dense resident        " << bytes_text(p.dense_resident) << "\n";
    std::cout << "  compact head          " << bytes_text(p.compact_head)
              << (p.compact_head > 0                       ? " (int8 copy of the head for greedy steps; --head exact-only: none)"
                  : r.setup.config.head == HeadRead::exact_only ? " (--head exact-only)"
                                                                : " (none: the head's own rows are no larger than an int8 copy)")
              << "\n";
    std::cout << "  routed experts        " << bytes_text(p.experts) << "\n";
    std::cout << "  expert budget         " << bytes_text(p.expert_budget)
              << (p.all_experts_resident ? ", all experts resident" : ", experts stream from disk")
              << "; setting " << p.budget_setting << "\n";
    std::cout << "  budget                " << p.budget_reason << "\n";
    std::cout << "  expert slots          about " << p.expert_slots << "\n";
    std::cout << "  reads per expert      " << r.reads_per_expert << " (" << reads_note(r) << ")\n";
    std::cout << "  KV per token          " << bytes_text(p.kv_per_token) << " (" << r.summary.kv_floats_per_token
              << " floats)\n";
    std::cout << "  KV for context " << pad(std::to_string(p.context), 7) << bytes_text(p.kv_for_context) << "\n";

    std::cout << "\nkernel table (" << s.kernels.name << " over reference)\n";
    size_t ow = 0;
    for (const KernelEntry& k : r.kernels) ow = std::max(ow, k.operation.size());
    for (const KernelEntry& k : r.kernels) std::cout << "  " << pad(k.operation, ow + 2) << k.provider << "\n";

    if (r.check) {
        std::cout << "\ncheck    " << r.check->tensors_scanned << " tensors, " << bytes_text(r.check->bytes_scanned)
                  << " scanned: "
                  << (r.check->non_finite.empty() ? "every value finite" : std::to_string(r.check->non_finite.size()) + " tensors hold NaN or Inf")
                  << "\n";
        for (const NonFiniteTensor& t : r.check->non_finite)
            std::cout << "  " << in_quotes(t.name) << "  " << t.values << " non-finite values\n";
    }
    if (r.hashes) {
        std::cout << "sha256   " << r.hashes->tensors << " tensors and " << r.hashes->files << " files against the manifest: "
                  << (r.hashes->mismatches.empty() ? "every hash matches" : std::to_string(r.hashes->mismatches.size()) + " differ") << "\n";
        for (const HashMismatch& m : r.hashes->mismatches)
            std::cout << "  " << m.what << "  sha256 " << m.found << ", the manifest says " << m.expected << "\n";
    }
    if (r.ranks) print_ranks(*r.ranks);
}

void print_json(const Report& r) {
    const ModelSetup& s = r.setup;
    JsonWriter w;
    w.begin_object();
    w.field("model", s.source->directory());
    w.field("family", s.family.plugin->name).field("family_score", s.family.score).field("family_forced", s.family.forced);
    w.field("kernels", s.kernels.name).field("kernels_score", s.kernels.score).field("kernels_forced", s.kernels.forced);
    w.field("threads", r.plan.threads);
    w.key("dimensions").begin_object();
    for (const auto& [k, v] : r.summary.dimensions) w.field(k, v);
    w.end_object();
    w.field("n_layers", r.summary.n_layers).field("n_moe_layers", r.summary.n_moe_layers);
    w.field("n_experts", r.summary.n_experts).field("top_k", r.summary.top_k);
    w.field("hidden_size", r.summary.hidden_size).field("vocab_size", r.summary.vocab_size);
    w.field("kv_floats_per_token", r.summary.kv_floats_per_token);
    w.key("draft_layers").begin_array();
    for (const std::string& prefix : r.summary.draft_layers) w.value(prefix);
    w.end_array();
    w.field("draft_layer_loaded", loads_draft_layer(r.setup, r.summary));

    w.key("tensors").begin_object();
    w.field("count", r.census.total.count).field("bytes", r.census.total.bytes);
    w.key("by_role").begin_object();
    for (TensorRole role : kRoles) {
        const Tally& t = r.census.by_role[static_cast<size_t>(role)];
        w.key(tensor_role_name(role)).begin_object().field("count", t.count).field("bytes", t.bytes).end_object();
    }
    w.end_object().key("by_dtype").begin_object();
    for (const auto& [dtype, t] : r.census.by_dtype)
        w.key(dtype).begin_object().field("count", t.count).field("bytes", t.bytes).end_object();
    w.end_object();
    w.field("dense_bytes", r.census.dense_bytes()).field("expert_bytes", r.census.expert_bytes());
    w.field("draft_bytes", r.census.draft_bytes());
    w.end_object();

    const MemoryPlan& p = r.plan;
    w.key("memory_plan").begin_object();
    w.field("dense_resident_bytes", p.dense_resident).field("expert_bytes", p.experts);
    w.field("compact_head_bytes", p.compact_head);
    w.field("expert_budget_bytes", p.expert_budget).field("expert_budget_setting", p.budget_setting);
    w.field("all_experts_resident", p.all_experts_resident);
    w.field("expert_budget_reason", p.budget_reason).field("expert_slots", p.expert_slots);
    w.field("kv_bytes_per_token", p.kv_per_token).field("context", p.context);
    w.field("kv_bytes_for_context", p.kv_for_context);
    w.field("reads_per_expert", r.reads_per_expert).field("container", r.container);
    w.end_object();

    if (r.ranks) {
        w.key("ranks").begin_object();
        w.key("shares").begin_array();
        for (const RankShare& share : r.ranks->ranks)
            w.begin_object().field("experts", share.experts).field("bytes", share.bytes).end_object();
        w.end_array();
        w.field("bytes_sent_per_token", r.ranks->bytes_out_per_token).field("max_bytes_sent_per_token", r.ranks->max_bytes_out_per_token);
        w.field("bytes_returned_per_token", r.ranks->bytes_back_per_token)
            .field("max_bytes_returned_per_token", r.ranks->max_bytes_back_per_token);
        w.end_object();
    }

    w.key("kernel_table").begin_array();
    for (const KernelEntry& k : r.kernels)
        w.begin_object().field("operation", k.operation).field("provider", k.provider).end_object();
    w.end_array();
    if (r.check) {
        w.key("check").begin_object();
        w.field("tensors_scanned", r.check->tensors_scanned).field("bytes_scanned", r.check->bytes_scanned);
        w.key("non_finite").begin_array();
        for (const NonFiniteTensor& t : r.check->non_finite)
            w.begin_object().field("tensor", t.name).field("values", t.values).end_object();
        w.end_array();
        if (r.hashes) {
            w.key("sha256").begin_object().field("tensors", r.hashes->tensors).field("files", r.hashes->files);
            w.key("mismatches").begin_array();
            for (const HashMismatch& m : r.hashes->mismatches)
                w.begin_object().field("what", m.what).field("sha256", m.found).field("manifest", m.expected).end_object();
            w.end_array().end_object();
        }
        w.end_object();
    }
    w.end_object();
    std::cout << w.str() << "\n";
}

}  // namespace

int run_inspect(int argc, char** argv) {
    CommonOptions common;
    bool json = false;
    bool check = false;
    int ranks = -1;  // -1: not asked for
    po::options_description own("Options of stormo inspect");
    own.add_options()("json", po::bool_switch(&json), "print one JSON object instead of text")
        ("check", po::bool_switch(&check),
         "also read every tensor and report those holding NaN or Inf (floats, FP8, MXFP4 scales), and on a container "
         "those whose sha256 differs from the manifest's; exit 1 if any")
        ("ranks", po::value<int>(&ranks)->value_name("N"),
         "also print the plan of `mpirun -np N`: each rank's experts and bytes, the bytes a token sends and gets back "
         "(docs/distributed.md)");
    own.add(common_options(common));
    auto parsed = parse_command_line(
        argc, argv, "inspect", "MODEL [--json] [options]",
        "Shows what stormo would run for a model directory, without loading its weights: the family\n"
        "and kernels chosen, the dimensions read from config.json, the tensor census (count and bytes\n"
        "by role and by dtype), the memory plan (dense resident bytes, expert bytes and budget, KV\n"
        "bytes per token and for the context) and which kernel-table entries the plugin provides.\n"
        "--check also reads every tensor and reports those that hold NaN or Inf (exit status 1); on a\n"
        "container it also checks every tensor's and file's sha256 against the manifest.",
        own, {"model"});
    if (!parsed) return report_usage_error("inspect", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (!common.model) return report_usage_error("inspect", Error{ErrorKind::invalid_argument, kModelRequired});
    if (ranks != -1 && (ranks < 1 || ranks > 65536))
        return report_usage_error("inspect", out_of_range("--ranks", ranks, 1, 65536).value());

    auto setup = open_model_setup(common);
    if (!setup) return report_error("inspect", setup.error());
    const ModelSetup& s = **setup;
    const FamilyPlugin& family = *s.family.plugin->family;

    auto summary = family.summarize(s.source->config());
    if (!summary) return report_error("inspect", with_context(summary.error(), s.family.plugin->name));
    const Census census = take_census(*s.source, family, *summary);
    if (auto counted = check_expert_count(s, census, *summary); !counted) return report_error("inspect", counted.error());
    auto probe = probe_expert_layouts(*s.source, family, s.kernels);
    if (!probe) return report_error("inspect", with_context(probe.error(), s.family.plugin->name));
    auto planned = plan_memory(s, census, *summary, slot_bytes_for(probe->layouts, kContainerAlignment));
    if (!planned) return report_error("inspect", planned.error());
    const MemoryPlan& plan = *planned;
    // generate refuses stop ids outside the vocabulary; inspect refuses the same model.
    if (auto stops = stop_ids_of(*s.source, summary->vocab_size); !stops) return report_error("inspect", stops.error());
    const KernelTable table = build_kernel_table(s.kernels);
    const std::vector<KernelEntry> kernels =
        kernel_providers(table, s.kernels, s.config.activations == ActivationRoad::int8);

    std::optional<FiniteScan> scan;
    if (check) {
        auto scanned = scan_non_finite(*s.source);
        if (!scanned) return report_error("inspect", scanned.error());
        scan = std::move(*scanned);
    }
    const bool container = holds_container_manifest(s.source->directory());
    std::optional<ContainerCheck> hashes;
    if (check && container) {
        auto checked = check_container_hashes(s.source->directory(), *s.source);
        if (!checked) return report_error("inspect", checked.error());
        hashes = std::move(*checked);
    }
    const size_t reads = reads_per_expert(probe->layouts, kContainerAlignment);
    std::optional<RankPlan> rank_plan;
    if (ranks > 0) rank_plan = plan_ranks(probe->layouts, ranks, summary->top_k, summary->hidden_size);
    const Report report{s, *summary, census, plan, kernels, scan, reads, container, hashes, rank_plan};
    if (json) print_json(report);
    else print_text(report);
    if (scan && !scan->non_finite.empty())
        return report_error("inspect", Error{ErrorKind::format, "--check: " + std::to_string(scan->non_finite.size()) +
                                                         " tensors hold NaN or Inf, the first " +
                                                         in_quotes(scan->non_finite.front().name)});
    if (hashes && !hashes->mismatches.empty())
        return report_error("inspect", Error{ErrorKind::format, "--check: " + s.source->directory() + ": " + hashes->mismatches.front().what +
                                                                     " does not match its sha256 in the manifest" +
                                                                     (hashes->mismatches.size() > 1
                                                                          ? " (and " + std::to_string(hashes->mismatches.size() - 1) + " more)"
                                                                          : "")});
    return 0;
}

}  // namespace stormo::cli
