#pragma once
// `--dump DIR`: writes the named intermediates of one position as .npy files, one per
// (layer, name), to find the first divergence from a reference quickly.
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/family.hpp"

namespace stormo {

class DumpTracer final : public Tracer {
public:
    DumpTracer(std::string directory, int64_t position) : directory_(std::move(directory)), position_(position) {}

    bool wants(int) const override { return true; }
    void record(const std::string& name, int layer, const float* data, size_t n_rows, size_t width,
                std::span<const int64_t> positions) override;

    // The first write error, if any (recording itself cannot fail the forward pass).
    const std::vector<std::string>& errors() const { return errors_; }
    const std::vector<std::string>& written() const { return written_; }

private:
    std::string directory_;
    int64_t position_;
    std::vector<std::string> errors_;
    std::vector<std::string> written_;
};

}  // namespace stormo
