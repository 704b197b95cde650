#include "runtime/memory_plan.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/session.hpp"

namespace stormo {
namespace {

uint64_t status_field_kib(const char* field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    const std::string prefix = std::string(field) + ":";
    while (std::getline(status, line))
        if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
    return 0;
}

uint64_t meminfo_available() {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line))
        if (line.rfind("MemAvailable:", 0) == 0) return std::stoull(line.substr(13)) * 1024;
    return 0;
}

// A limit file's value; 0 when unlimited ("max", or v1's huge sentinel) or unreadable.
uint64_t read_limit(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") return 0;
    try {
        const uint64_t v = std::stoull(text);
        return v >= (uint64_t{1} << 60) ? 0 : v;
    } catch (const std::exception&) {
        return 0;
    }
}

struct CgroupLimit {
    uint64_t bytes = 0;
    std::string where;
};

struct CgroupMounts {
    std::string v2;         // the cgroup2 mount point, if any
    std::string v1_memory;  // the v1 memory controller's mount point, if any
};

// Mount points from /proc/self/mountinfo: "... mount_point ... - fstype source options".
CgroupMounts cgroup_mounts() {
    CgroupMounts m;
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mountinfo, line)) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, mount_point;
        fields >> id >> parent >> dev >> root >> mount_point;
        const auto dash = line.find(" - ");
        if (dash == std::string::npos) continue;
        std::istringstream tail(line.substr(dash + 3));
        std::string fstype, source, options;
        tail >> fstype >> source >> options;
        if (fstype == "cgroup2" && m.v2.empty()) m.v2 = mount_point;
        if (fstype == "cgroup" && ("," + options + ",").find(",memory,") != std::string::npos) m.v1_memory = mount_point;
    }
    return m;
}

// The tightest memory limit over the process's cgroup and its ancestors.
CgroupLimit cgroup_limit() {
    const CgroupMounts mounts = cgroup_mounts();
    std::ifstream cgroups("/proc/self/cgroup");
    std::string line;
    CgroupLimit best;
    auto consider = [&](const std::string& root, std::string path, const char* file, const char* version) {
        if (root.empty()) return;
        for (;;) {
            const std::string dir = path == "/" ? root : root + path;
            const uint64_t v = read_limit(dir + "/" + file);
            if (v && (best.bytes == 0 || v < best.bytes)) best = {v, std::string("cgroup ") + version + " " + dir};
            if (path.empty() || path == "/") break;
            const auto slash = path.find_last_of('/');
            path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
        }
    };
    while (std::getline(cgroups, line)) {
        // "hierarchy:controllers:path"
        const auto a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty())
            consider(mounts.v2, path, "memory.max", "v2");
        else if (("," + controllers + ",").find(",memory,") != std::string::npos)
            consider(mounts.v1_memory, path, "memory.limit_in_bytes", "v1");
    }
    return best;
}

}  // namespace

uint64_t current_rss_bytes() { return status_field_kib("VmRSS"); }
uint64_t peak_rss_bytes() { return status_field_kib("VmHWM"); }

AvailableMemory available_memory() {
    AvailableMemory m{meminfo_available(), "MemAvailable"};
    const CgroupLimit limit = cgroup_limit();
    if (limit.bytes) {
        const uint64_t rss = current_rss_bytes();
        const uint64_t left = limit.bytes > rss ? limit.bytes - rss : 0;
        if (left < m.bytes) m = {left, limit.where + " limit " + format_bytes(limit.bytes) + " minus this process's RSS"};
    }
    return m;
}

uint64_t memory_reserve(uint64_t available) { return (uint64_t{512} << 20) + available / 20; }

ExpertBudget plan_expert_budget(const SizeSpec& requested, uint64_t total_expert_bytes, uint64_t kv_bytes,
                                const AvailableMemory& available) {
    ExpertBudget b;
    if (requested.kind == SizeSpec::Kind::all) {
        b.all = true;
        b.bytes = total_expert_bytes;
        b.reason = "all experts resident (asked)";
        return b;
    }
    if (requested.kind == SizeSpec::Kind::bytes) {
        b.bytes = requested.bytes;
        b.all = requested.bytes >= total_expert_bytes;
        b.reason = format_bytes(requested.bytes) + " (asked)" + (b.all ? ": holds every expert" : "");
        return b;
    }
    const uint64_t reserve = memory_reserve(available.bytes);
    const uint64_t spoken_for = kv_bytes + reserve;
    b.bytes = available.bytes > spoken_for ? available.bytes - spoken_for : 0;
    b.all = b.bytes >= total_expert_bytes;
    b.reason = "auto: " + format_bytes(available.bytes) + " available (" + available.source + ") - KV " +
               format_bytes(kv_bytes) + " - reserve " + format_bytes(reserve) + " = " + format_bytes(b.bytes) +
               (b.all ? ": holds every expert (" + format_bytes(total_expert_bytes) + ")" : "");
    return b;
}

Expected<void> check_budget_fits(const SizeSpec& requested, const ExpertBudget& budget, uint64_t total_expert_bytes,
                                 const AvailableMemory& available, const std::string& origin) {
    if (requested.kind == SizeSpec::Kind::automatic) return {};
    const uint64_t resident = std::min(budget.bytes, total_expert_bytes);
    if (resident <= available.bytes) return {};
    const std::string asked = requested.kind == SizeSpec::Kind::all ? "all" : format_bytes(requested.bytes);
    return fail(ErrorKind::resource, origin + " " + asked + ": the experts it keeps in RAM need " +
                                         format_bytes(resident) + ", but " + format_bytes(available.bytes) +
                                         " is available (" + available.source +
                                         "); ask for less, or leave the budget auto");
}

Expected<void> check_context_fits(uint64_t context, const std::string& origin, const ModelConfig& config,
                                  uint64_t kv_bytes, const AvailableMemory& available) {
    if (config.has("max_position_embeddings")) {
        STORMO_TRY_ASSIGN(const int64_t max_positions, config.integer("max_position_embeddings"));
        if (max_positions <= 0)
            return fail(ErrorKind::format, config.source() + ": field \"max_position_embeddings\" holds " +
                                               std::to_string(max_positions) + ", not a number of positions");
        if (context > static_cast<uint64_t>(max_positions))
            return fail(ErrorKind::invalid_argument, origin + " " + std::to_string(context) +
                                                         ": more positions than the model's max_position_embeddings (" +
                                                         std::to_string(max_positions) + ", " + config.source() + ")");
    }
    if (kv_bytes > available.bytes)
        return fail(ErrorKind::resource, origin + " " + std::to_string(context) + ": its KV cache needs " +
                                             format_bytes(kv_bytes) + ", but " + format_bytes(available.bytes) +
                                             " is available (" + available.source + "); ask for a smaller context");
    return {};
}

std::string describe_budget(const ExpertBudget& budget, uint64_t slots, uint64_t slot_bytes, bool estimated) {
    std::string out = budget.reason;
    if (!budget.all && slot_bytes > 0)
        out += std::string("; ") + (estimated ? "about " : "") + std::to_string(slots) + " slots of " + format_bytes(slot_bytes);
    return out;
}

uint64_t kv_cache_bytes(std::span<const KvBufferDecl> buffers, size_t context, size_t rewind_slack) {
    uint64_t total = 0;
    for (const KvBufferDecl& b : buffers) {
        const size_t rows = Session::rows_for(b, context, Session::kDefaultMaxBlock, rewind_slack);
        total += static_cast<uint64_t>(rows) * b.floats_per_position * sizeof(float);
    }
    return total;
}

Expected<SequencePlan> plan_sequences(size_t asked, size_t max_auto, const std::string& origin, uint64_t kv_per_sequence,
                                      size_t context, uint64_t min_expert_bytes, const AvailableMemory& available) {
    if (asked == 1) return SequencePlan{1, origin + " 1 (asked)"};
    const uint64_t reserve = memory_reserve(available.bytes);
    const uint64_t spoken_for = reserve + min_expert_bytes;
    const uint64_t room = available.bytes > spoken_for ? available.bytes - spoken_for : 0;
    const uint64_t fit = kv_per_sequence > 0 ? room / kv_per_sequence : UINT64_MAX;
    const auto layout = [&](size_t n) {
        return "KV " + std::to_string(n) + " x " + format_bytes(kv_per_sequence) + " at a context of " +
               std::to_string(context) + " beside the dense part, a " + format_bytes(min_expert_bytes) +
               " expert budget and a reserve of " + format_bytes(reserve) + " in " + format_bytes(available.bytes) +
               " available (" + available.source + ")";
    };
    if (asked > 1) {
        if (asked <= fit) return SequencePlan{asked, origin + " " + std::to_string(asked) + " (asked: " + layout(asked) + ")"};
        return fail(ErrorKind::resource,
                    origin + " " + std::to_string(asked) + ": " + layout(asked) + " do not fit; " +
                        (fit >= 2 ? "ask for " + origin + " " + std::to_string(fit) + " or less" : "ask for " + origin + " 1") +
                        ", or a smaller context");
    }
    const size_t chosen = static_cast<size_t>(std::clamp<uint64_t>(fit, 1, std::max<size_t>(1, max_auto)));
    std::string reason = "chosen from memory: " + layout(chosen);
    if (fit < 1) reason = "chosen from memory: the KV of one more context of " + format_bytes(kv_per_sequence) +
                          " does not fit beside the dense part, a " + format_bytes(min_expert_bytes) +
                          " expert budget and a reserve of " + format_bytes(reserve) + " in " +
                          format_bytes(available.bytes) + " available (" + available.source + ")";
    else if (fit > chosen) reason += "; at most " + std::to_string(max_auto) + " unless asked";
    return SequencePlan{chosen, origin + " " + std::to_string(chosen) + " (" + reason + ")"};
}

Expected<uint64_t> max_positions_of(const ModelConfig& config) {
    if (!config.has("max_position_embeddings")) return uint64_t{0};
    STORMO_TRY_ASSIGN(const int64_t max_positions, config.integer("max_position_embeddings"));
    return max_positions > 0 ? static_cast<uint64_t>(max_positions) : uint64_t{0};
}

ContextChoice choose_context(const ContextRequest& r) {
    const uint64_t reserve = memory_reserve(r.available.bytes);
    const uint64_t room = r.available.bytes > reserve ? r.available.bytes - reserve : 0;
    const uint64_t experts = r.expert_budget.kind == SizeSpec::Kind::bytes ? std::min(r.expert_budget.bytes, r.expert_bytes)
                                                                           : r.expert_bytes;
    const uint64_t beside_experts = room > experts ? room - experts : 0;
    const uint64_t kv_room = r.expert_budget.kind == SizeSpec::Kind::automatic ? std::max(beside_experts, room / 8) : beside_experts;
    const size_t sequences = std::max<size_t>(1, r.sequences);
    const size_t limit = r.max_positions > 0 ? static_cast<size_t>(std::min<uint64_t>(r.max_positions, SIZE_MAX)) : r.fallback;
    const auto fits = [&](size_t context) { return kv_cache_bytes(r.kv, context, r.rewind_slack) * sequences <= kv_room; };
    // The longest context that fits (the KV grows with the context, by steps where windows are full).
    size_t low = 0, high = limit;
    while (low < high) {
        const size_t mid = low + (high - low + 1) / 2;
        if (fits(mid)) low = mid;
        else high = mid - 1;
    }
    // Whole blocks of positions read better in messages and leave nothing odd to the last page.
    size_t context = low == limit ? low : low / Session::kDefaultMaxBlock * Session::kDefaultMaxBlock;
    const std::string limit_text = r.max_positions > 0 ? "the model's max_position_embeddings " + std::to_string(r.max_positions)
                                                       : "no max_position_embeddings in config.json, so " + std::to_string(limit);
    const std::string kv_text = (sequences > 1 ? std::to_string(sequences) + " x " : std::string()) + "KV " +
                                format_bytes(kv_cache_bytes(r.kv, std::max<size_t>(context, 1), r.rewind_slack));
    ContextChoice choice;
    if (context >= limit) {
        choice = {limit, "chosen: " + limit_text + ", whose " + kv_text + " fits in memory"};
    } else {
        choice = {context, "chosen from memory: " + kv_text + " of " + format_bytes(kv_room) + " the experts leave in " +
                               format_bytes(r.available.bytes) + " available (" + r.available.source + "); " + limit_text};
    }
    if (choice.context < r.need) choice = {r.need, "what this run needs"};
    if (choice.context == 0) choice = {std::min<size_t>(limit, Session::kDefaultMaxBlock), "no memory to spare: one block"};
    return choice;
}

Expected<RunMemory> plan_run_memory(const RunMemoryRequest& r) {
    RunMemory m;
    m.context = r.context;
    m.context_reason = r.context_origin;
    if (r.context == 0) {
        ContextRequest c;
        c.kv = r.kv;
        c.rewind_slack = r.rewind_slack;
        c.sequences = r.sequences == 0 ? r.max_auto_sequences : r.sequences;
        STORMO_TRY_ASSIGN(c.max_positions, max_positions_of(*r.config));
        c.need = r.context_need;
        c.expert_bytes = r.expert_bytes;
        c.expert_budget = r.expert_budget;
        c.available = r.available;
        const ContextChoice chosen = choose_context(c);
        m.context = chosen.context;
        m.context_reason = chosen.reason;
    }
    m.kv_bytes_per_sequence = kv_cache_bytes(r.kv, m.context, r.rewind_slack);
    m.expert_bytes = r.expert_bytes;
    STORMO_TRY(check_context_fits(m.context, r.context_origin, *r.config, m.kv_bytes_per_sequence, r.available));
    // The experts several sequences must leave room for: the budget asked, else a minimum.
    const uint64_t min_experts = r.expert_budget.kind == SizeSpec::Kind::all     ? r.expert_bytes
                                 : r.expert_budget.kind == SizeSpec::Kind::bytes ? std::min(r.expert_budget.bytes, r.expert_bytes)
                                                                                 : std::min(kMinExpertBudget, r.expert_bytes);
    STORMO_TRY_ASSIGN(const SequencePlan sequences,
                      plan_sequences(r.sequences, r.max_auto_sequences, r.sequences_origin, m.kv_bytes_per_sequence,
                                     m.context, min_experts, r.available));
    m.sequences = sequences.sequences;
    m.sequences_reason = sequences.reason;
    m.kv_bytes = m.kv_bytes_per_sequence * m.sequences;
    m.budget = plan_expert_budget(r.expert_budget, r.expert_bytes, m.kv_bytes, r.available);
    STORMO_TRY(check_budget_fits(r.expert_budget, m.budget, r.expert_bytes, r.available, r.expert_budget_origin));
    return m;
}

}  // namespace stormo
