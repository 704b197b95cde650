// BF16_PACKED (stormo/packed_bf16.hpp): packing at load, and the reference decoders of groups and
// rows (the reference matmul runs its float dot over rows decoded by row_bf16_packed).
#include "stormo/packed_bf16.hpp"

#include "reference_kernels/reference.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

namespace stormo {
namespace packed_bf16 {
namespace {

const uint16_t* bf16_row(const WeightView& w, size_t row) {
    return static_cast<const uint16_t*>(w.data) + row * w.cols;
}

// A row's table: its high bytes by falling count (ties to the smaller byte, so packing is
// deterministic), the first kTable of them; unused entries 0. Returns how many values it misses.
size_t choose_table(const uint16_t* row, size_t cols, uint8_t* table) {
    std::array<uint32_t, 256> count{};
    for (size_t i = 0; i < cols; ++i) ++count[row[i] >> 8];
    // The bytes present as (count, 255 - byte) keys: the largest key is the most frequent byte,
    // the smaller byte first among equals. A row holds a handful of them, so sorting them is cheap.
    std::array<uint64_t, 256> keys;
    size_t present = 0;
    for (size_t b = 0; b < 256; ++b)
        if (count[b] > 0) keys[present++] = static_cast<uint64_t>(count[b]) << 8 | (255 - b);
    const size_t used = std::min(present, kTable);
    std::partial_sort(keys.begin(), keys.begin() + used, keys.begin() + present, std::greater<>());
    std::memset(table, 0, kTable);
    size_t covered = 0;
    for (size_t k = 0; k < used; ++k) {
        table[k] = static_cast<uint8_t>(255 - (keys[k] & 0xFFu));
        covered += keys[k] >> 8;
    }
    return cols - covered;
}

// slot_of for every value of a group.
constexpr std::array<uint8_t, kGroup> kSlots = [] {
    std::array<uint8_t, kGroup> s{};
    for (size_t j = 0; j < kGroup; ++j) s[j] = static_cast<uint8_t>(slot_of(j));
    return s;
}();

// Writes one row in the packed layout and its patches (code 0 where the table lacks the byte).
void encode_row(const uint16_t* row, size_t cols, const uint8_t* table, uint8_t* out, uint32_t* patches) {
    std::array<int16_t, 256> code_of;
    code_of.fill(-1);
    for (size_t k = kTable; k-- > 0;) code_of[table[k]] = static_cast<int16_t>(k);  // first entry wins
    std::memset(out, 0, row_bytes(cols));
    uint8_t* lows = out;
    uint8_t* codes = out + codes_offset(cols);
    std::memcpy(out + table_offset(cols), table, kTable);
    size_t n_patches = 0;
    for (size_t i = 0; i < cols; ++i) {
        const size_t g = i / kGroup, s = kSlots[i % kGroup];
        const uint8_t high = static_cast<uint8_t>(row[i] >> 8);
        lows[g * kGroup + s] = static_cast<uint8_t>(row[i] & 0xFFu);
        uint8_t code = 0;
        if (code_of[high] >= 0) code = static_cast<uint8_t>(code_of[high]);
        else patches[n_patches++] = make_patch(i, high);
        uint8_t& byte = codes[g * (kGroup / 2) + s % 32];
        byte = static_cast<uint8_t>(s < 32 ? (byte & 0xF0u) | code : (byte & 0x0Fu) | (code << 4));
    }
}

void over_rows(ThreadPool* pool, size_t rows, const std::function<void(size_t, size_t)>& fn) {
    if (pool != nullptr) pool->parallel_for(rows, 64, fn);
    else fn(0, rows);
}

}  // namespace

std::optional<Packed> pack(const WeightView& bf16, ThreadPool* pool, double max_ratio) {
    const size_t rows = bf16.rows, cols = bf16.cols;
    if (bf16.format != WeightFormat::BF16 || bf16.layout != Layout::out_in || rows == 0 || cols == 0 ||
        cols > kMaxCols)
        return std::nullopt;
    std::vector<uint8_t> tables(rows * kTable);
    std::vector<uint32_t> misses(rows);
    over_rows(pool, rows, [&](size_t begin, size_t end) {
        for (size_t o = begin; o < end; ++o)
            misses[o] = static_cast<uint32_t>(choose_table(bf16_row(bf16, o), cols, tables.data() + o * kTable));
    });
    const uint64_t n_patches = std::accumulate(misses.begin(), misses.end(), uint64_t{0});
    const uint64_t rows_bytes = static_cast<uint64_t>(rows) * row_bytes(cols);
    const uint64_t total = bytes(rows, cols, n_patches);
    if (n_patches >= (uint64_t{1} << 32) ||
        static_cast<double>(total) > max_ratio * 2.0 * static_cast<double>(rows) * static_cast<double>(cols))
        return std::nullopt;

    Packed p;
    p.storage = std::make_shared<AlignedBuffer>(static_cast<size_t>(total));
    std::byte* base = p.storage->data();
    auto* begin_of = reinterpret_cast<uint32_t*>(base + rows_bytes);
    uint32_t* patches = begin_of + rows + 1;
    begin_of[0] = 0;
    for (size_t o = 0; o < rows; ++o) begin_of[o + 1] = begin_of[o] + misses[o];
    over_rows(pool, rows, [&](size_t begin, size_t end) {
        for (size_t o = begin; o < end; ++o)
            encode_row(bf16_row(bf16, o), cols, tables.data() + o * kTable,
                       reinterpret_cast<uint8_t*>(base) + o * row_bytes(cols), patches + begin_of[o]);
    });
    p.view = WeightView{};
    p.view.format = WeightFormat::BF16_PACKED;
    p.view.layout = Layout::out_in;
    p.view.data = base;
    p.view.rows = rows;
    p.view.cols = cols;
    p.view.patch_begin = begin_of;
    p.view.patches = patches;
    return p;
}

uint64_t bytes(size_t rows, size_t cols, uint64_t n_patches) {
    return static_cast<uint64_t>(rows) * row_bytes(cols) + (rows + 1 + n_patches) * sizeof(uint32_t);
}

uint64_t bytes(const WeightView& w) { return bytes(w.rows, w.cols, w.patch_begin != nullptr ? w.patch_begin[w.rows] : 0); }

void decode_groups(const uint8_t* row, size_t n_groups, uint16_t* out) {
    const size_t cols = n_groups * kGroup;
    const uint8_t* lows = row;
    const uint8_t* codes = row + codes_offset(cols);
    const uint8_t* table = row + table_offset(cols);
    for (size_t g = 0; g < n_groups; ++g)
        for (size_t j = 0; j < kGroup; ++j) {
            const size_t s = slot_of(j);
            const uint8_t byte = codes[g * (kGroup / 2) + s % 32];
            const uint8_t code = s < 32 ? (byte & 0x0Fu) : (byte >> 4);
            out[g * kGroup + j] = static_cast<uint16_t>(table[code] << 8 | lows[g * kGroup + s]);
        }
}

}  // namespace packed_bf16

void decode_packed_bf16_row(DecodePackedGroupsFn decode, const WeightView& w, size_t row, uint16_t* out) {
    const uint8_t* packed = static_cast<const uint8_t*>(w.data) + row * packed_bf16::row_bytes(w.cols);
    decode(packed, packed_bf16::groups(w.cols), out);
    for (uint32_t k = w.patch_begin[row]; k < w.patch_begin[row + 1]; ++k) {
        const uint32_t p = w.patches[k];
        uint16_t& v = out[packed_bf16::patch_column(p)];
        v = static_cast<uint16_t>(packed_bf16::patch_high(p) << 8 | (v & 0xFFu));
    }
}

namespace reference {

void row_bf16_packed(const WeightView& w, size_t row, float* out) {
    std::vector<uint16_t> bits(packed_bf16::groups(w.cols) * packed_bf16::kGroup);
    decode_packed_bf16_row(packed_bf16::decode_groups, w, row, bits.data());
    for (size_t i = 0; i < w.cols; ++i) out[i] = bf16_to_f32(bits[i]);
}

}  // namespace reference
}  // namespace stormo
