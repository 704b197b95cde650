// Non-finite scan of a checkpoint; see finite_scan.hpp.
#include "model/finite_scan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stormo/gguf_types.hpp"

namespace stormo {
namespace {

// Counts a dtype's non-finite encodings in raw little-endian bytes; `count` of whole elements.
uint64_t count_non_finite(DType dtype, bool e8m0_scales, const unsigned char* p, size_t count) {
    uint64_t bad = 0;
    switch (dtype) {
        case DType::F64:
            for (size_t i = 0; i < count; ++i) {
                uint64_t v;
                std::memcpy(&v, p + 8 * i, 8);
                bad += (v & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
            }
            break;
        case DType::F32:
            for (size_t i = 0; i < count; ++i) {
                uint32_t v;
                std::memcpy(&v, p + 4 * i, 4);
                bad += (v & 0x7f800000u) == 0x7f800000u;
            }
            break;
        case DType::BF16:
            for (size_t i = 0; i < count; ++i) bad += (p[2 * i + 1] & 0x7f) == 0x7f && (p[2 * i] & 0x80) == 0x80;
            break;
        case DType::F16:
            for (size_t i = 0; i < count; ++i) bad += (p[2 * i + 1] & 0x7c) == 0x7c;
            break;
        case DType::F8_E4M3:  // no infinity; S.1111.111 is NaN
            for (size_t i = 0; i < count; ++i) bad += (p[i] & 0x7f) == 0x7f;
            break;
        case DType::F8_E5M2:
            for (size_t i = 0; i < count; ++i) bad += (p[i] & 0x7c) == 0x7c;
            break;
        case DType::U8:  // E8M0 scales: 0xFF is NaN
            if (e8m0_scales)
                for (size_t i = 0; i < count; ++i) bad += p[i] == 0xff;
            break;
        default: break;
    }
    return bad;
}

bool is_e8m0_scales(const TensorInfo& t) {
    return t.dtype == DType::U8 && t.name.size() >= 6 && t.name.compare(t.name.size() - 6, 6, "scales") == 0;
}

bool can_hold_non_finite(const TensorInfo& t) {
    switch (t.dtype) {
        case DType::F64: case DType::F32: case DType::F16: case DType::BF16: case DType::F8_E4M3: case DType::F8_E5M2:
            return true;
        default: return is_block_dtype(t.dtype) || is_e8m0_scales(t);
    }
}

// A GGUF block type's scales are F16 (NaN or Inf reaches every value they scale), so its blocks
// are decoded as the kernels decode them and the values counted.
Expected<uint64_t> count_non_finite_blocks(DType dtype, const unsigned char* p, size_t n_blocks, std::vector<float>& values) {
    const DTypeBlock b = dtype_block(dtype);
    values.resize(n_blocks * b.values);
    STORMO_TRY(dequantize_gguf(*gguf_type_of(dtype), reinterpret_cast<const std::byte*>(p), values.size(), values.data()));
    return static_cast<uint64_t>(std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }));
}

}  // namespace

Expected<FiniteScan> scan_non_finite(const ModelSource& source) {
    // Read in chunks of whole elements, so a 10 GiB tensor needs 16 MiB of memory.
    constexpr uint64_t kChunk = uint64_t{16} << 20;
    std::vector<unsigned char> buffer;
    std::vector<float> decoded;
    FiniteScan scan;
    for (const TensorInfo& t : source.tensors()) {
        if (!can_hold_non_finite(t)) continue;
        const size_t element = dtype_block(t.dtype).bytes;  // an element, or a block of the block types
        const uint64_t chunk = kChunk / element * element;
        uint64_t bad = 0;
        for (uint64_t offset = 0; offset < t.nbytes; offset += chunk) {
            const uint64_t size = std::min(chunk, t.nbytes - offset);
            buffer.resize(size);
            STORMO_TRY(source.read(t, offset, size, buffer.data()));
            if (is_block_dtype(t.dtype)) {
                STORMO_TRY_ASSIGN(const uint64_t n, count_non_finite_blocks(t.dtype, buffer.data(), size / element, decoded));
                bad += n;
            } else {
                bad += count_non_finite(t.dtype, is_e8m0_scales(t), buffer.data(), size / element);
            }
        }
        ++scan.tensors_scanned;
        scan.bytes_scanned += t.nbytes;
        if (bad) scan.non_finite.push_back({t.name, bad});
    }
    return scan;
}

}  // namespace stormo
