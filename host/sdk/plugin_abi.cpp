// The host side of plugin.hpp: kind names, the out-of-line key functions of the plugin
// interfaces (one vtable and one typeinfo, in the core library, for every plugin), and the
// scoring rule every model plugin shares.
#include <string>
#include <string_view>
#include <vector>

#include "stormo/family_plugin.hpp"
#include "stormo/kernels_plugin.hpp"

namespace stormo {

const char* plugin_kind_name(PluginKind k) {
    switch (k) {
        case PluginKind::model: return "model";
        case PluginKind::kernels: return "kernels";
    }
    return "unknown";
}

PluginObject::~PluginObject() = default;
FamilyPlugin::~FamilyPlugin() = default;
KernelsPlugin::~KernelsPlugin() = default;

namespace {

std::vector<std::string_view> split_accepts(const char* accepts) {
    std::vector<std::string_view> out;
    if (accepts == nullptr) return out;
    std::string_view rest(accepts);
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) out.push_back(item);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return out;
}

bool contains(const std::vector<std::string_view>& list, std::string_view value) {
    for (std::string_view v : list)
        if (v == value) return true;
    return false;
}

}  // namespace

int score_model_config(const ModelConfig& config, const char* accepts) {
    const std::vector<std::string_view> names = split_accepts(accepts);
    // Read the two fields leniently: a config without them simply does not match.
    if (const Json* archs = config.root().find("architectures"); archs != nullptr) {
        if (const std::vector<Json>* list = archs->as_array(); list != nullptr) {
            for (const Json& a : *list) {
                const std::optional<std::string> s = a.as_string();
                if (s && contains(names, *s)) return 100;
            }
        }
    }
    if (const Json* type = config.root().find("model_type"); type != nullptr) {
        const std::optional<std::string> s = type->as_string();
        if (s && contains(names, *s)) return 50;
    }
    return 0;
}

}  // namespace stormo
