#pragma once
// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file name}}.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

struct SafetensorsIndex {
    std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
    std::vector<std::string> shards;                // distinct shard names, sorted
};

// Parses and checks the index; shard names must stay inside the model directory.
STORMO_API Expected<SafetensorsIndex> parse_safetensors_index(std::string_view text, const std::string& path);

}  // namespace stormo
