#pragma once
// NumPy .npy files: the CLI writes float32 logits and hidden states with them, and the tests read
// the transformers references (float32, int32, int64). Little-endian, C order only.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/dtype.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

struct STORMO_API NpyArray {
    Shape shape;
    DType dtype = DType::F32;      // F32, I32 or I64
    std::vector<std::byte> bytes;  // the data as stored: little-endian, C order

    size_t size() const;                // element count
    std::vector<float> floats() const;  // every element widened or converted to float
    std::vector<int64_t> ints() const;  // every element as an integer (floats truncated; NaN -> 0)
};

// Reads a .npy file (format versions 1.0, 2.0 and 3.0 headers); errors name the file.
STORMO_API Expected<NpyArray> read_npy(const std::string& path);
// Parses .npy content already in memory; `name` names it in errors.
STORMO_API Expected<NpyArray> parse_npy(std::string_view content, const std::string& name);

// Writes float32 data of the given shape as a version 1.0 .npy file (2.0 only if the header
// cannot fit 1.0's 16-bit length). data.size() must equal the shape's element count.
STORMO_API Expected<void> write_npy(const std::string& path, const Shape& shape, std::span<const float> data);

}  // namespace stormo
