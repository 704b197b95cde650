#pragma once
// `stormo inspect --check` on a container: every tensor's bytes and every copied file hashed again
// and compared with the sha256 the manifest recorded when the container was written.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

struct HashMismatch {
    std::string what;  // "tensor \"NAME\"" or "file NAME"
    std::string expected;
    std::string found;
};

struct ContainerCheck {
    uint64_t tensors = 0;
    uint64_t files = 0;
    uint64_t bytes = 0;
    std::vector<HashMismatch> mismatches;  // tensors in the manifest's order, then files
};

// `source` is the container at `dir` opened (model/container_source.hpp); its tensors are read in
// chunks, never whole.
STORMO_API Expected<ContainerCheck> check_container_hashes(const std::string& dir, const ModelSource& source);

}  // namespace stormo
