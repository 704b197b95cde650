// Feature-list parsing, scoring and the create-time check shared by the AVX2-class plugins.
#include "cpu_requirements.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace stormo::simd {
namespace {

// False when the list names a feature this host does not know (then the plugin is unusable).
bool parse_features(const char* list, std::vector<CpuFeature>& out) {
    std::string_view rest = list != nullptr ? list : "";
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) {
            CpuFeature f{};
            if (!cpu_feature_from_name(item, f)) return false;
            out.push_back(f);
        }
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return true;
}

}  // namespace

int score_required_features(const char* features, const ScoreQuery* query) {
    std::vector<CpuFeature> required;
    if (query == nullptr || !parse_features(features, required)) return 0;
    return score_cpu_features(required, query->cpu);
}

bool features_available(const char* features, CpuFeatureSet cpu) {
    std::vector<CpuFeature> required;
    return parse_features(features, required) && missing_cpu_features(required, cpu).empty();
}

bool cpu_meets(const char* plugin, const char* features, Error* error) {
    std::vector<CpuFeature> required;
    if (!parse_features(features, required)) {
        if (error != nullptr)
            *error = Error{ErrorKind::plugin, std::string(plugin) + " kernels: unknown CPU feature in '" +
                                                  features + "'"};
        return false;
    }
    const std::vector<CpuFeature> missing = missing_cpu_features(required, detect_cpu_features());
    if (missing.empty()) return true;
    if (error != nullptr) {
        std::string names;
        for (CpuFeature f : missing) {
            if (!names.empty()) names += ",";
            names += cpu_feature_name(f);
        }
        *error = Error{ErrorKind::unsupported,
                       std::string(plugin) + " kernels need " + features + "; this CPU lacks " + names};
    }
    return false;
}

}  // namespace stormo::simd
