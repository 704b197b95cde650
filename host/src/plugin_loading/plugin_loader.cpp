// Loading a plugin: every way a library can be wrong ends in an Error naming what is wrong,
// never in a crash. Exceptions thrown by plugin code are caught here at the boundary.
#include "plugin_loading/plugin_loader.hpp"

#include <algorithm>
#include <cerrno>
#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>

#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>
#include <vector>

#include "util/file.hpp"  // FileDescriptor, pread_exact

namespace stormo {
namespace {

namespace dll = boost::dll;
using Library = std::shared_ptr<dll::shared_library>;

constexpr std::string_view kFilePrefix = "libstormo-";
constexpr std::string_view kFileSuffix = ".so";

// dlopen maps a library's segments where its program headers say: in a file cut short (a copy or
// a download that stopped) they run past the end, and the loader's first touch of such a page
// kills the process with SIGBUS. Opening a FIFO would wait for a writer forever. So before
// dlopen: a regular file, and a 64-bit ELF file's headers and loaded segments inside it (other
// files are left to dlopen, which refuses them with its own message).
Expected<void> check_library_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return fail(ErrorKind::plugin, std::string("cannot load the library: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return fail(ErrorKind::plugin, "cannot load the library: not a regular file");
    auto file = FileDescriptor::open_read(path);
    if (!file) return fail(ErrorKind::plugin, "cannot load the library: " + file.error().message);
    const auto size = static_cast<uint64_t>(st.st_size);
    auto read_at = [&](void* dst, size_t n, uint64_t offset) { return pread_exact(file->get(), dst, n, offset, path).has_value(); };
    auto cut_short = [&](const std::string& what, uint64_t end) {
        return fail(ErrorKind::plugin, "cannot load the library: the file is cut short (" + what + " ends at byte " +
                                           std::to_string(end) + ", the file has " + std::to_string(size) + ")");
    };
    Elf64_Ehdr eh{};
    if (!read_at(&eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr))
        return {};
    const uint64_t ph_end = eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    if (eh.e_phoff > size || ph_end > size) return cut_short("its program headers", ph_end);
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        if (!read_at(&ph, sizeof ph, eh.e_phoff + uint64_t{i} * sizeof ph)) return cut_short("its program headers", ph_end);
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) continue;
        const uint64_t end = ph.p_offset + ph.p_filesz;
        if (ph.p_offset > size || end > size || end < ph.p_offset) return cut_short("segment " + std::to_string(i), end);
    }
    return {};
}

Expected<Library> open_library(const std::string& path) {
    STORMO_TRY(check_library_file(path));
    auto lib = std::make_shared<dll::shared_library>();
    dll::fs::error_code ec;
    dlerror();  // clear a stale message so the one read below is this load's
    lib->load(dll::fs::path(path), ec, dll::load_mode::rtld_lazy | dll::load_mode::rtld_local);
    if (ec || !lib->is_loaded()) {
        const char* why = dlerror();
        return fail(ErrorKind::plugin, std::string("cannot load the library: ") +
                                           (why != nullptr ? why : ec.message().c_str()));
    }
    return lib;
}

template <class Fn>
Expected<Fn> entry_point(const dll::shared_library& lib, const char* symbol) {
    if (!lib.has(symbol))
        return fail(ErrorKind::plugin, std::string("not a stormo plugin: missing symbol ") + symbol);
    return &lib.get<std::remove_pointer_t<Fn>>(symbol);
}

struct EntryPoints {
    stormo_plugin_abi_fn abi = nullptr;
    stormo_plugin_describe_fn describe = nullptr;
    stormo_plugin_score_fn score = nullptr;
    stormo_plugin_create_fn create = nullptr;
};

Expected<EntryPoints> find_entry_points(const dll::shared_library& lib) {
    EntryPoints e;
    auto abi = entry_point<stormo_plugin_abi_fn>(lib, "stormo_plugin_abi");
    if (!abi) return tl::unexpected(abi.error());
    auto describe = entry_point<stormo_plugin_describe_fn>(lib, "stormo_plugin_describe");
    if (!describe) return tl::unexpected(describe.error());
    auto score = entry_point<stormo_plugin_score_fn>(lib, "stormo_plugin_score");
    if (!score) return tl::unexpected(score.error());
    auto create = entry_point<stormo_plugin_create_fn>(lib, "stormo_plugin_create");
    if (!create) return tl::unexpected(create.error());
    e.abi = *abi;
    e.describe = *describe;
    e.score = *score;
    e.create = *create;
    return e;
}

// What the first differing '/'-separated part of two ABI strings is (stormo/abi.hpp's order).
std::string abi_difference(const std::string& theirs, const std::string& ours) {
    static const char* const kParts[] = {"the SDK version",     "the compiler",      "the standard library",
                                         "the tl-expected version", "the debug macros", "the struct layout"};
    size_t a = 0, b = 0;
    for (const char* part : kParts) {
        const size_t a_end = std::min(theirs.find('/', a), theirs.size());
        const size_t b_end = std::min(ours.find('/', b), ours.size());
        if (theirs.compare(a, a_end - a, ours, b, b_end - b) != 0) return part;
        if (a_end == theirs.size() || b_end == ours.size()) break;
        a = a_end + 1;
        b = b_end + 1;
    }
    return "the ABI string";
}

Expected<void> check_abi(const EntryPoints& e) {
    const char* abi = e.abi();
    const std::string theirs = abi != nullptr ? abi : "(none)";
    if (theirs != kStormoAbi)
        return fail(ErrorKind::plugin, "built for ABI " + theirs + ", this host is " + std::string(kStormoAbi) + " (" +
                                           abi_difference(theirs, kStormoAbi) + " differs)");
    return {};
}

std::vector<std::string> split_list(const char* text) {
    std::vector<std::string> out;
    if (text == nullptr) return out;
    std::string_view rest(text);
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) out.emplace_back(item);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return out;
}

// Copies the description after checking it names the plugin its file name promises.
Expected<void> read_description(const EntryPoints& e, const PluginFileName& expected,
                                LoadedPlugin& out) {
    const PluginDescription* d = e.describe();
    if (d == nullptr) return fail(ErrorKind::plugin, "stormo_plugin_describe returned no description");
    if (d->name == nullptr || *d->name == '\0')
        return fail(ErrorKind::plugin, "its description has no name");
    if (d->kind != PluginKind::model && d->kind != PluginKind::kernels)
        return fail(ErrorKind::plugin, "its description has an unknown kind " +
                                           std::to_string(static_cast<int>(d->kind)));
    if (d->kind != expected.kind || expected.name != d->name)
        return fail(ErrorKind::plugin,
                    std::string("describes itself as ") + plugin_kind_name(d->kind) + " plugin '" +
                        d->name + "' but its file name says " + plugin_kind_name(expected.kind) +
                        " plugin '" + expected.name + "'");
    out.name = d->name;
    out.kind = d->kind;
    out.version = d->version != nullptr ? d->version : "";
    out.summary = d->summary != nullptr ? d->summary : "";
    if (d->kind == PluginKind::model) {
        out.accepts = split_list(d->accepts);
        return {};
    }
    for (const std::string& feature : split_list(d->cpu_features)) {
        CpuFeature f{};
        if (!cpu_feature_from_name(feature, f))
            return fail(ErrorKind::plugin, "its description names an unknown CPU feature '" + feature + "'");
        out.cpu_features.push_back(f);
    }
    return {};
}

// Calls the factory and checks the object is the interface its kind promises. The object's
// deleter holds the library, so the code of its destructor outlives every other owner.
Expected<void> create_object(const EntryPoints& e, const Library& lib, LoadedPlugin& out) {
    Error error{ErrorKind::plugin, ""};
    PluginObject* raw = e.create(&error);
    if (raw == nullptr)
        return fail(ErrorKind::plugin,
                    "its factory failed: " +
                        (error.message.empty() ? std::string("no object and no message") : error.message));
    std::shared_ptr<PluginObject> owner(raw, [lib](PluginObject* p) { delete p; });
    if (out.kind == PluginKind::model) {
        const auto* family = dynamic_cast<const FamilyPlugin*>(owner.get());
        if (family == nullptr)
            return fail(ErrorKind::plugin, "its factory made an object that is not a stormo::FamilyPlugin");
        out.family = std::shared_ptr<const FamilyPlugin>(owner, family);
    } else {
        const auto* kernels = dynamic_cast<const KernelsPlugin*>(owner.get());
        if (kernels == nullptr)
            return fail(ErrorKind::plugin, "its factory made an object that is not a stormo::KernelsPlugin");
        out.kernels = std::shared_ptr<const KernelsPlugin>(owner, kernels);
    }
    return {};
}

std::string feature_list(const std::vector<CpuFeature>& features) {
    std::string out;
    for (CpuFeature f : features) out += (out.empty() ? "" : ", ") + std::string(cpu_feature_name(f));
    return out;
}

// Why a kernels plugin cannot run on `cpu`, or empty when it can. Its code is never run where
// its instructions may be missing, so its factory is not called then.
std::string kernels_unusable_reason(const EntryPoints& e, const LoadedPlugin& plugin, CpuFeatureSet cpu) {
    const std::vector<CpuFeature> missing = missing_cpu_features(plugin.cpu_features, cpu);
    if (!missing.empty()) return "this CPU lacks " + feature_list(missing);
    ScoreQuery q;
    q.cpu = cpu;
    if (e.score(&q) <= 0) return "it scores itself unusable on this CPU";
    return {};
}

Expected<LoadedPlugin> load_checked(const std::string& path, const PluginFileName& expected, CpuFeatureSet cpu) {
    STORMO_TRY_ASSIGN(auto lib, open_library(path));
    STORMO_TRY_ASSIGN(auto entries, find_entry_points(*lib));
    STORMO_TRY(check_abi(entries));

    LoadedPlugin plugin;
    plugin.path = path;
    STORMO_TRY(read_description(entries, expected, plugin));
    if (plugin.kind == PluginKind::kernels) plugin.unusable_reason = kernels_unusable_reason(entries, plugin, cpu);
    if (plugin.unusable_reason.empty()) {
        STORMO_TRY(create_object(entries, lib, plugin));
    }
    plugin.score_fn = entries.score;
    plugin.library = lib;
    return plugin;
}

}  // namespace

std::optional<PluginFileName> parse_plugin_file_name(std::string_view file_name) {
    if (!file_name.starts_with(kFilePrefix) || !file_name.ends_with(kFileSuffix)) return std::nullopt;
    std::string_view middle = file_name.substr(kFilePrefix.size(),
                                               file_name.size() - kFilePrefix.size() - kFileSuffix.size());
    PluginFileName out;
    if (middle.starts_with("model-")) {
        out.kind = PluginKind::model;
        middle.remove_prefix(std::string_view("model-").size());
    } else if (middle.starts_with("kernels-")) {
        out.kind = PluginKind::kernels;
        middle.remove_prefix(std::string_view("kernels-").size());
    } else {
        return std::nullopt;
    }
    if (middle.empty()) return std::nullopt;
    out.name = std::string(middle);
    return out;
}

Expected<LoadedPlugin> load_plugin(const std::string& path, const PluginFileName& expected, CpuFeatureSet cpu) {
    // A plugin's code may throw through its C entry points; that refuses it rather than
    // ending the process.
    try {
        return load_checked(path, expected, cpu);
    } catch (const std::exception& e) {
        return fail(ErrorKind::plugin, std::string("threw while loading: ") + e.what());
    } catch (...) {
        return fail(ErrorKind::plugin, "threw a non-standard exception while loading");
    }
}

int LoadedPlugin::score(const ScoreQuery& query) const {
    if (score_fn == nullptr) return 0;
    try {
        const int s = score_fn(&query);
        return s > 0 ? s : 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace stormo
