#include "runtime/dump_tracer.hpp"

#include <span>

#include "util/npy.hpp"

namespace stormo {

void DumpTracer::record(const std::string& name, int layer, const float* data, size_t n_rows, size_t width,
                        std::span<const int64_t> positions) {
    for (size_t r = 0; r < n_rows && r < positions.size(); ++r) {
        if (positions[r] != position_) continue;
        const std::string file = directory_ + "/" + (layer < 0 ? std::string("model") : "layer" + std::to_string(layer)) +
                                 "_" + name + ".npy";
        auto w = write_npy(file, Shape{static_cast<int64_t>(width)}, std::span<const float>(data + r * width, width));
        if (w)
            written_.push_back(file);
        else
            errors_.push_back(w.error().message);
    }
}

}  // namespace stormo
