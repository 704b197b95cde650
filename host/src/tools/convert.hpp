#pragma once
// `stormo convert`: any model the engine reads, rewritten as a stormo container laid out for
// streaming (docs/convert.md): each routed expert's parts adjacent in one range aligned for
// O_DIRECT, in their source types (the same bytes), the dense tensors together, the config and
// the tokenizer beside them, and a manifest with every tensor's sha256, written last.
//
// It streams: tensors are copied in chunks through one buffer, so memory stays at a chunk however
// large the model. The container is built in a temporary directory beside DIR whose files are
// flushed to the disk, the manifest last, and renamed to DIR only when whole: a crash, a kill or a
// full disk leave no DIR that loads (the temporary one has no manifest, and an error removes it).
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/model_setup.hpp"
#include "runtime/load_meter.hpp"
#include "stormo/error.hpp"

namespace stormo {

// One chunk as it is written: the tensor it belongs to and the bytes the copy holds in RAM.
struct ConvertChunk {
    const std::string& tensor;
    uint64_t bytes = 0;
    uint64_t buffer_bytes = 0;
};

inline constexpr uint64_t kConvertChunkBytes = uint64_t{16} << 20;

struct ConvertRequest {
    SetupRequest setup;  // SRC as setup.model_dir (as --model takes it), the plugins, the family
    std::string out;     // DIR
    bool force = false;  // replace an existing DIR
    uint64_t chunk_bytes = kConvertChunkBytes;
    LoadProgress progress;  // (bytes written, bytes to write)
    // Called after each chunk is written; an error stops the conversion as a failed write does
    // (tests: a full disk at a chosen chunk, the memory the copy holds).
    std::function<Expected<void>(const ConvertChunk&)> on_chunk;
};

struct ConvertResult {
    std::string dir;
    uint64_t tensors = 0;
    uint64_t experts = 0;
    uint64_t data_bytes = 0;
    size_t source_reads_per_expert = 0;     // with O_DIRECT's alignment (store/expert_reads.hpp)
    size_t container_reads_per_expert = 0;
};

Expected<ConvertResult> convert_model(const ConvertRequest& request);

}  // namespace stormo
