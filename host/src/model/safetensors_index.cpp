// Sharded checkpoint index parsing; see safetensors_index.hpp.
#include "model/safetensors_index.hpp"

#include <algorithm>
#include <filesystem>

#include "stormo/json.hpp"
#include "stormo/quote.hpp"

namespace stormo {
namespace {

// A relative path with no ".." component: an index must not point outside its directory.
bool stays_inside(const std::string& name) {
    const std::filesystem::path p(name);
    if (name.empty() || p.is_absolute() || !p.has_filename()) return false;
    return std::none_of(p.begin(), p.end(), [](const std::filesystem::path& part) { return part == ".."; });
}

}  // namespace

Expected<SafetensorsIndex> parse_safetensors_index(std::string_view text, const std::string& path) {
    STORMO_TRY_ASSIGN(auto root, Json::parse(text, path));
    if (root.type() != Json::Type::object)
        return fail(ErrorKind::format, path + ": expected a JSON object, found " + json_type_name(root.type()));
    const Json* weight_map = root.find("weight_map");
    if (weight_map == nullptr) return fail(ErrorKind::format, path + ": field \"weight_map\" is missing");
    const auto* entries = weight_map->as_object();
    if (entries == nullptr)
        return fail(ErrorKind::format, path + ": field \"weight_map\" must be an object, found " +
                                           json_type_name(weight_map->type()));

    SafetensorsIndex index;
    for (const auto& [tensor, shard] : *entries) {
        auto name = shard.as_string();
        if (!name)
            return fail(ErrorKind::format, path + ": weight_map entry for tensor " + in_quotes(tensor) +
                                               " must be a string, found " + json_type_name(shard.type()));
        if (!stays_inside(*name))
            return fail(ErrorKind::format, path + ": shard " + in_quotes(*name) + " for tensor " + in_quotes(tensor) +
                                               " must be a file name inside the model directory");
        index.shards.push_back(*name);
        index.weight_map.emplace(tensor, std::move(*name));
    }
    std::sort(index.shards.begin(), index.shards.end());
    index.shards.erase(std::unique(index.shards.begin(), index.shards.end()), index.shards.end());
    return index;
}

}  // namespace stormo
