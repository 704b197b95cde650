#pragma once
// The kernel table: the hot operations, one function pointer per (operation, weight format).
// The host's scalar reference kernels fill every entry and define the result; a kernels plugin
// overrides the entries its ISA does faster. Every matrix kernel computes a range of output rows,
// each row by one thread in one fixed order, so the host's pool can split work without changing bits.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "stormo/export.hpp"

namespace stormo {

enum class WeightFormat : uint8_t {
    F32,    // float32
    BF16,   // bfloat16
    F16,    // IEEE half
    MXFP4,  // E2M1 nibbles (low nibble = even element), E8M0 scale per 32 values
    FP8_E4M3,  // E4M3 bytes, one float scale per block of block_rows x block_cols (weight_scale_inv)
    // ggml's block layouts as GGUF files store them (stormo/gguf_types.hpp, docs/gguf.md): `data`
    // holds each row's blocks in order, row o at o * (cols / block values) * block bytes; the scales
    // live inside the blocks. cols must be a whole number of blocks.
    GGUF_Q8_0,   // f16 d + 32 int8 (34 bytes per 32 values)
    GGUF_Q4_0,   // f16 d + 16 bytes: elements 0-15 low nibbles, 16-31 high; (q - 8) * d (18 / 32)
    GGUF_Q4_K,   // super-blocks of 256: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 of nibbles (144)
    GGUF_Q5_K,   // as Q4_K plus 32 bytes of fifth bits (176 / 256)
    GGUF_Q6_K,   // 128 bytes low nibbles, 64 of high bits, 16 int8 scales, f16 d (210 / 256)
    GGUF_MXFP4,  // E8M0 byte (255 is 2^127) + 16 bytes: elements 0-15 low nibbles, 16-31 high (17 / 32)
    // A BF16 matrix held losslessly in about 12 bits a value (stormo/packed_bf16.hpp): per value its
    // low byte and a 4-bit code into its row's 16 most frequent high bytes, the rare others patched.
    // Built at load from BF16 out_in matrices; every kernel gives it the BF16 matrix's bits.
    BF16_PACKED,
    // More of ggml's block layouts, appended so that the values above stay (SDK 9.2); the float
    // road only (matmul_q8 has no entry for them: the integer road leaves them on floats).
    GGUF_Q4_1,  // f16 d, f16 m + 16 bytes of nibbles as Q4_0's; d * q + m (20 / 32)
    GGUF_Q5_0,  // f16 d, 4 bytes of fifth bits (bit j of the u32: element j), nibbles as Q4_0; d * (q - 16) (22 / 32)
    GGUF_Q5_1,  // f16 d, f16 m, fifth bits and nibbles as Q5_0; d * q + m (24 / 32)
    GGUF_Q2_K,  // 16 bytes of 4-bit scale | min << 4 per 16 values, 64 of 2-bit codes, f16 d, f16 dmin (84 / 256)
    GGUF_Q3_K,  // 32 bytes of high-bit masks, 64 of 2-bit codes, 12 of 6-bit scales, f16 d (110 / 256)
    GGUF_IQ4_NL,  // f16 d + nibbles as Q4_0's, each an index into ggml's kvalues_iq4nl; d * kvalues[q] (18 / 32)
    GGUF_IQ4_XS,  // f16 d, 2 + 4 bytes of 6-bit scales, 8 x 16 bytes of IQ4_NL's nibbles; (d * (sc - 32)) * kvalues[q] per 32 (136 / 256)
    // The i-quants below 4 bits (SDK 9.3): each value a lattice grid entry's (stormo/gguf_iq_grids.hpp)
    // times a sub-block scale, signed by stored or parity-completed sign bits; IQ1's scale times
    // (grid + delta). Float road only, as the types above. Per 256 values:
    GGUF_IQ2_XXS,  // f16 d, per 32: u32 of 4 grid bytes, u32 of 4 x 7-bit sign indices + 4-bit scale (66)
    GGUF_IQ2_XS,   // f16 d, 32 u16 (9-bit grid index, 7-bit sign index), 8 bytes of 4-bit scales per 16 (74)
    GGUF_IQ2_S,    // f16 d, 32 grid bytes, 32 sign bytes, 8 bytes of index bits 8-9, 8 of 4-bit scales per 16 (82)
    GGUF_IQ3_XXS,  // f16 d, 64 grid bytes (4 values each), per 32 a u32 of 4 x 7-bit sign indices + scale (98)
    GGUF_IQ3_S,    // f16 d, 64 grid bytes, 8 of index bit 8, 32 sign bytes, 4 of 4-bit scales per 32 (110)
    GGUF_IQ1_S,    // f16 d, 32 grid bytes, per 32 a u16: index bits 8-10 x 4, 3-bit scale, delta's sign (50)
    GGUF_IQ1_M,    // 32 grid bytes, 16 of index bits 8-10 + delta sign, 4 u16 of 3-bit scales per 16 and d (56)
    count
};
constexpr size_t kWeightFormatCount = static_cast<size_t>(WeightFormat::count);
STORMO_API const char* weight_format_name(WeightFormat f);

// The block of a GGUF block format (values and bytes per block; a row of cols values takes
// cols / values * bytes bytes); {0, 0} for the other formats.
struct WeightBlock {
    size_t values = 0;
    size_t bytes = 0;
};
STORMO_API WeightBlock gguf_weight_block(WeightFormat f);

// How a matrix of `rows` outputs x `cols` inputs is laid out in memory.
enum class Layout : uint8_t {
    out_in,  // row o holds the `cols` weights of output o (nn.Linear, MXFP4 blocks)
    in_out,  // row i holds input i's weight for every output (GPT-OSS BF16 experts: [in, out])
    count
};
constexpr size_t kLayoutCount = static_cast<size_t>(Layout::count);

// A weight matrix y = W x with W of shape [rows (outputs), cols (inputs)].
struct WeightView {
    WeightFormat format = WeightFormat::F32;
    Layout layout = Layout::out_in;
    const void* data = nullptr;    // elements, or for MXFP4 the nibble blocks [rows, cols/32, 16]
    const uint8_t* scales = nullptr;  // MXFP4 only: E8M0 exponents [rows, cols/32]
    size_t rows = 0;
    size_t cols = 0;
    // FP8_E4M3 only: W[o, i] = e4m3(data[o, i]) * block_scales[(o / block_rows) * grid_cols +
    // i / block_cols], grid_cols = ceil(cols / block_cols); edge blocks may be partial. The product
    // is rounded to float, as torch's dequantization rounds it.
    const float* block_scales = nullptr;
    size_t block_rows = 0;
    size_t block_cols = 0;
    // BF16_PACKED only: row o's patches are patches[patch_begin[o] .. patch_begin[o + 1]), each
    // (column << 8 | high byte), ascending by column (stormo/packed_bf16.hpp).
    const uint32_t* patch_begin = nullptr;
    const uint32_t* patches = nullptr;
};

// y[r * y_stride + o] = sum_i W[o, i] * x[r * x_stride + i] for o in [o_begin, o_end), r < n_x.
// The reference accumulates in float in ascending i; a row's value never depends on n_x.
using MatmulFn = void (*)(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                          size_t y_stride, size_t o_begin, size_t o_end);
// Decodes row `row` of an out_in matrix (embedding lookup) into cols floats.
using RowToF32Fn = void (*)(const WeightView& w, size_t row, float* out);
// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]
using RmsNormFn = void (*)(const float* x, const float* weight, size_t n, float eps, float* out);
// In place, numerically stable (max subtracted first).
using SoftmaxFn = void (*)(float* x, size_t n);
using DotFn = float (*)(const float* a, const float* b, size_t n);
// y[i] += a * x[i]
using AxpyFn = void (*)(float a, const float* x, float* y, size_t n);
// Attention's two loops over a run of cached rows (keys, then values), for several query heads at
// once: the heads that share a KV head read the same rows, and one call replaces a call per row.
// scores[a * scores_stride + j] = dot(q + a * q_stride, rows + j * row_stride, n) for a < n_q and
// j < n_rows, each value the bits the same table's dot gives that pair.
using DotManyFn = void (*)(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows,
                           size_t row_stride, size_t n, float* scores, size_t scores_stride);
// For each a < n_y, rows j = 0, 1, ... in order: axpy(weights[a * weights_stride + j],
// rows + j * row_stride, y + a * y_stride, n), the bits of the same table's axpy called per row.
using AxpyManyFn = void (*)(const float* weights, size_t n_y, size_t weights_stride, const float* rows,
                            size_t n_rows, size_t row_stride, size_t n, float* y, size_t y_stride);
// In place x[i] = x[i] * sigmoid(x[i]).
using SiluFn = void (*)(float* x, size_t n);
// The integer road: sum_i a[i] * b[i] (unsigned x signed bytes) in 32-bit two's complement,
// wrapping modulo 2^32 like VPDPBUSD; exact whenever n <= 65793 (65793 * 255 * 128 < 2^31).
using DotI8Fn = int32_t (*)(const uint8_t* a, const int8_t* b, size_t n);

// The integer road's matrix kernels (opt-in: `activations: int8`). Activation rows are quantized
// once per matmul call by quantize_q8 in blocks of `block` values, the size the weight format asks
// for (q8_block_values): kQ8Block (32, as llama.cpp's Q8_0: MXFP4, GGUF Q8_0, Q4_0, MXFP4) or
// kQ8KBlock (256, as llama.cpp's Q8_K: GGUF's K-quants, which also need the sums of every 16
// values). Per block a float scale d and int8 values q with x ~ q * d. A row holds
// ceil(cols / block) blocks; a partial last block is padded with q = 0. docs/kernels.md defines
// the rounding and the float order.
inline constexpr size_t kQ8Block = 32;
inline constexpr size_t kQ8KBlock = 256;
inline constexpr size_t kQ8SumValues = 16;  // values per entry of Q8Rows::sums
struct Q8Rows {
    const int8_t* q = nullptr;      // [n_x, blocks * block]: row r starts at q + r * blocks * block
    const float* scales = nullptr;  // [n_x, blocks]: row r starts at scales + r * blocks
    size_t n_x = 0;
    size_t cols = 0;
    size_t blocks = 0;              // ceil(cols / block)
    size_t block = kQ8Block;        // values per block: kQ8Block or kQ8KBlock
    // [n_x, blocks * block / 16]: sum of each 16 consecutive q (row r at sums + r * blocks * block
    // / 16); set for kQ8KBlock rows (the K-quants' minimums and offsets use them), else nullptr.
    const int16_t* sums = nullptr;
};
// The activation block the integer road uses against format f (kQ8KBlock for GGUF_Q4_K, Q5_K and
// Q6_K, kQ8Block otherwise).
STORMO_API size_t q8_block_values(WeightFormat f);
// Whether x was quantized as format f's integer kernels need it (its block size, and the per-16
// sums for kQ8KBlock, over w.cols values); kernels given other rows fill their outputs with NaN.
inline bool q8_rows_fit(WeightFormat f, const Q8Rows& x) {
    return x.block == q8_block_values(f) && (x.block != kQ8KBlock || x.sums != nullptr);
}
// y[r * y_stride + o] = W[o, :] . x[r, :] for o in [o_begin, o_end), r < x.n_x, from integer dot
// products per 32-block and a fixed float order after them; bit-exact across implementations.
// Any int8 value is accepted in q (-128 included); quantize_q8 produces [-127, 127].
using MatmulQ8Fn = void (*)(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                            size_t o_end);

// The bounded head's cheap pass (docs/head_bound.md): int8 rows of `cols` values, row o at
// q + o * cols; y[o] = sum_i float(q[o * cols + i]) * x[i] for o in [o_begin, o_end), one x row.
// The reference sums in ascending i with each product rounded (no fused multiply-add); an ISA
// version may sum in any order with or without FMA: its caller bounds the rounding of any order
// (|error| <= gamma_{2 cols} * sum_i |q_i x_i|) and never depends on the bits.
using DotRowsI8Fn = void (*)(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end);
// The RAM read probe's loop (tools/bandwidth.hpp): the XOR of every 8-byte word of [p, p + n),
// n a multiple of 256 and p 64-byte aligned. ISA versions read with the widest loads they have
// and several independent accumulators; every version gives the same value.
using XorReduceFn = uint64_t (*)(const void* p, size_t n);
// The bounded head's integer cheap pass (docs/head_bound.md, "The integer pass"): the same int8
// rows against activation rows the host quantized to p_i in [-127, 127], stored as u_i = p_i + 128:
// y[r * y_stride + o] = sum_i q[o * cols + i] * (u[r * u_stride + i] - 128) for o in [o_begin,
// o_end) and r < n_x, exact in 32 bits (the caller keeps cols <= kDotRowsQ8MaxCols); every
// version gives the reference's bits.
using DotRowsQ8Fn = void (*)(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
// |sum| <= cols * 127 * 127 < 2^31 up to here.
inline constexpr size_t kDotRowsQ8MaxCols = 131072;
// The integer road's activation quantizer, quantize_q8's signature and bits (declared below): ISA
// versions give the same q, scales and sums bit for bit.
using QuantizeQ8Fn = void (*)(const float* x, size_t n_x, size_t x_stride, size_t cols, size_t block, int8_t* q,
                              float* scales, int16_t* sums);

struct KernelTable {
    std::array<std::array<MatmulFn, kLayoutCount>, kWeightFormatCount> matmul{};
    std::array<RowToF32Fn, kWeightFormatCount> row_to_f32{};
    RmsNormFn rmsnorm = nullptr;
    SoftmaxFn softmax = nullptr;
    DotFn dot = nullptr;
    AxpyFn axpy = nullptr;
    // A plugin that installs dot and axpy installs these two with the same bits (tests check it).
    DotManyFn dot_many = nullptr;
    AxpyManyFn axpy_many = nullptr;
    SiluFn silu = nullptr;
    DotI8Fn dot_u8i8 = nullptr;
    // The integer road: matmul_q8[format] covers out_in matrices; nullptr leaves that format on
    // the float road. Whether the road runs at all is the host's choice (Compute::int8_activations).
    std::array<MatmulQ8Fn, kWeightFormatCount> matmul_q8{};
    QuantizeQ8Fn quantize_q8 = nullptr;  // x for matmul_q8, once per call
    DotRowsI8Fn dot_rows_i8 = nullptr;
    XorReduceFn xor_reduce = nullptr;
    // The host runs the head's cheap pass on this where a table has it, else on dot_rows_i8.
    DotRowsQ8Fn dot_rows_q8 = nullptr;
    // The integer road's BF16 activations (docs/kernels.md): for BF16 and BF16_PACKED out_in
    // matrices, y = W . bf16(x), x rounded by bf16_activations::round_bits and subnormal weights
    // read as zeros (reference::matmul_bf16_pairs_out_in is the definition; an ISA version sums in
    // its own fixed order, one per (row, output) whatever n_x and the output range are). The
    // reference table's entries are the definition; stormo::matmul runs an entry only where a
    // kernels plugin replaced it (pairs of BF16 products an instruction, as AVX512-BF16's
    // vdpbf16ps), and elsewhere keeps those matrices on the float road.
    std::array<MatmulFn, kWeightFormatCount> matmul_bf16a{};
};

// The scalar reference: the definition every ISA plugin is tested against.
STORMO_API const KernelTable& reference_kernels();

// The host's persistent pool, as plugins see it. parallel_for splits [0, n) into contiguous
// chunks of at least `grain`, runs fn(begin, end) on the workers and the caller, and returns when
// all are done. Callers must make each index's result independent of the chunking (every matrix
// kernel does). Only the host creates pools.
class STORMO_API ThreadPool {
public:
    virtual ~ThreadPool();
    virtual size_t size() const = 0;
    virtual void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) = 0;
};

// What a family's math runs on: the selected kernel table and the pool.
struct Compute {
    const KernelTable* table = nullptr;
    ThreadPool* pool = nullptr;
    // Set by the host when the engine runs the integer road (`activations: int8`): matmul then
    // quantizes x once per call and uses the table's matmul_q8 where an entry exists.
    bool int8_activations = false;
};

// Matrix x rows over the pool: y [n_x, w.rows] = x [n_x, w.cols] * W^T. With int8_activations
// set and a matmul_q8 entry for the format (out_in), x is quantized once and the integer kernel
// runs; with int8_activations set and a plugin's matmul_bf16a entry (BF16, BF16_PACKED out_in),
// that kernel runs on x as it is (it rounds to BF16 itself); otherwise the float kernel. A (format, layout) no kernel exists for (MXFP4 in_out, which
// no loader builds) fills y with NaN: this call has no error channel, and NaN fails every check.
STORMO_API void matmul(const Compute& c, const WeightView& w, const float* x, size_t n_x, float* y);

// Several matrices over the same rows x (q, k and v; an expert's gate and up), in one call of the
// pool instead of one each: out.y [n_x, out.w.rows] = x * out.w^T for every out. Every output row
// gets the bits matmul would give it (one kernel call per row, in its fixed order; on the integer
// road x is quantized once per activation block size). The matrices share cols.
struct MatmulOut {
    WeightView w;
    float* y = nullptr;
};
STORMO_API void matmul_many(const Compute& c, std::span<const MatmulOut> outs, const float* x, size_t n_x);

// The integer road's quantizer (the definition; docs/kernels.md): row r of x (x + r * x_stride,
// `cols` values) into q (row r at q + r * blocks * block) and scales (row r at scales + r *
// blocks), blocks = ceil(cols / block), block = kQ8Block or kQ8KBlock. Per block: amax = max |x|;
// d = amax / 127; q = x / d rounded to nearest, ties to even, clamped to [-127, 127]. A block with
// a NaN or infinite value gets d = NaN (so every output it touches is NaN); a block whose d is 0
// gets q = 0. When `sums` is not null it receives the sum of every 16 consecutive q (row r at
// sums + r * blocks * block / 16).
STORMO_API void quantize_q8(const float* x, size_t n_x, size_t x_stride, size_t cols, size_t block, int8_t* q,
                            float* scales, int16_t* sums);
// quantize_q8's frame, which ISA versions share with it: the rows, their blocks (the last one
// partial when cols is not a multiple of block) and the sums, with one block's n <= block values
// quantized by `quantize_block` into its `block` q values (zeros past n) and its scale.
using QuantizeBlockFn = void (*)(const float* x, size_t n, size_t block, int8_t* q, float* scale);
STORMO_API void quantize_q8_blocks(QuantizeBlockFn quantize_block, const float* x, size_t n_x, size_t x_stride,
                                   size_t cols, size_t block, int8_t* q, float* scales, int16_t* sums);

// BF16_PACKED's row decoder, which the reference and the ISA tiles' patched rows share: `decode`
// turns the packed row's groups of 64 values (stormo/packed_bf16_layout.hpp) into BF16 bits, then
// the row's patches are applied. out receives groups(cols) * 64 values, those past cols unspecified.
using DecodePackedGroupsFn = void (*)(const uint8_t* row, size_t groups, uint16_t* out);
STORMO_API void decode_packed_bf16_row(DecodePackedGroupsFn decode, const WeightView& w, size_t row, uint16_t* out);

}  // namespace stormo
