// Discovery: which directories are searched, in which order, and what is recorded for each
// library found there.
#include "plugin_loading/plugin_registry.hpp"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <system_error>

#include "plugin_loading/plugin_loader.hpp"

#ifndef STORMO_PLUGIN_RELATIVE_DIR
#error "STORMO_PLUGIN_RELATIVE_DIR must be defined by the build (lib/stormo/plugins)"
#endif

namespace stormo {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginPathVariable = "STORMO_PLUGIN_PATH";

std::vector<std::string> split_colon_list(const char* text) {
    std::vector<std::string> out;
    if (text == nullptr) return out;
    std::string_view rest(text);
    while (true) {
        const size_t colon = rest.find(':');
        const std::string_view item = rest.substr(0, colon);
        if (!item.empty()) out.emplace_back(item);
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return out;
}

// The library files of one directory that the glob libstormo-{model,kernels}-*.so matches,
// sorted by name so discovery is deterministic.
std::vector<fs::path> plugin_files(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!parse_plugin_file_name(name)) continue;
        std::error_code type_ec;
        if (it->is_directory(type_ec)) continue;
        out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string canonical_or_same(const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.lexically_normal().string() : c.string();
}

}  // namespace

std::string builtin_plugin_dir() {
    boost::dll::fs::error_code ec;
    const boost::dll::fs::path program = boost::dll::program_location(ec);
    if (ec) return {};
    const fs::path dir = fs::path(program.parent_path().string()) / ".." / STORMO_PLUGIN_RELATIVE_DIR;
    return dir.lexically_normal().string();
}

std::vector<PluginDir> plugin_search_dirs(const PluginSearch& search) {
    std::vector<PluginDir> dirs;
    if (search.builtin) {
        if (std::string d = builtin_plugin_dir(); !d.empty()) dirs.push_back({d, "built-in", false});
    }
    if (search.environment) {
        for (std::string& d : split_colon_list(std::getenv(kPluginPathVariable)))
            dirs.push_back({std::move(d), kPluginPathVariable, false});
    }
    dirs.insert(dirs.end(), search.extra.begin(), search.extra.end());
    return dirs;
}

Expected<PluginRegistry> PluginRegistry::discover(const PluginSearch& search) {
    PluginRegistry registry;
    const CpuFeatureSet cpu = search.cpu ? *search.cpu : detect_cpu_features();
    std::set<std::string> seen_dirs;
    std::set<std::string> seen_files;
    for (const PluginDir& dir : plugin_search_dirs(search)) {
        std::error_code ec;
        if (!fs::is_directory(dir.path, ec)) {
            if (dir.required)
                return fail(ErrorKind::config, dir.origin + " " + dir.path + ": no such directory");
            continue;
        }
        // The same directory named twice (say the built-in one again in STORMO_PLUGIN_PATH) is
        // searched once: its plugins are not duplicates of themselves.
        if (!seen_dirs.insert(canonical_or_same(dir.path)).second) continue;
        registry.searched_.push_back(dir);
        for (const fs::path& file : plugin_files(dir.path)) {
            if (!seen_files.insert(canonical_or_same(file)).second) continue;
            registry.add_library(fs::absolute(file).lexically_normal().string(), cpu);
        }
    }
    return registry;
}

void PluginRegistry::add_library(const std::string& path, CpuFeatureSet cpu) {
    const std::string file_name = fs::path(path).filename().string();
    const std::optional<PluginFileName> expected = parse_plugin_file_name(file_name);
    if (!expected) {
        rejected_.push_back({path, "unknown", file_name,
                             "not a plugin file name (libstormo-model-<name>.so or libstormo-kernels-<name>.so)"});
        return;
    }
    const std::string kind = plugin_kind_name(expected->kind);
    // Names are unique: the first library found keeps the name, and the second is refused
    // before any of its code runs.
    if (const LoadedPlugin* first = find(expected->name); first != nullptr) {
        rejected_.push_back({path, kind, expected->name,
                             "duplicate plugin name '" + expected->name + "': already loaded from " +
                                 first->path + ", so " + path + " is refused"});
        return;
    }
    Expected<LoadedPlugin> loaded = load_plugin(path, *expected, cpu);
    if (!loaded) {
        rejected_.push_back({path, kind, expected->name, loaded.error().message});
        return;
    }
    plugins_.push_back(std::move(*loaded));
}

const LoadedPlugin* PluginRegistry::find(std::string_view name) const {
    for (const LoadedPlugin& p : plugins_)
        if (p.name == name) return &p;
    return nullptr;
}

std::vector<const LoadedPlugin*> PluginRegistry::of_kind(PluginKind kind) const {
    std::vector<const LoadedPlugin*> out;
    for (const LoadedPlugin& p : plugins_)
        if (p.kind == kind) out.push_back(&p);
    return out;
}

std::vector<const Family*> PluginRegistry::families() const {
    std::vector<const Family*> out;
    for (const LoadedPlugin& p : plugins_)
        if (p.family) out.push_back(p.family.get());
    return out;
}

}  // namespace stormo
