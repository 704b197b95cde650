// The kernel benchmark. For each case the weights are allocated once, filled with distinct
// pseudo-random values (identical pages could be merged by the hypervisor and then served from
// cache), and read round-robin; the RAM probe runs first, with the same pools, so both figures
// come from the same machine state.
#include "compute/kernel_table.hpp"
#include "compute/matrix_bytes.hpp"
#include "compute/worker_pool.hpp"
#include "stormo/fp8_codes.hpp"
#include "tools/kernel_bench.hpp"

#include "stormo/packed_bf16.hpp"
#include "stormo/tensor.hpp"  // AlignedBuffer

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;

// xorshift64*: fast, and good enough to make every page of weights distinct.
struct Random {
    uint64_t state;
    uint64_t next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
};

// Bytes of a matrix in the engine's own allocation: AlignedBuffer, which asks for huge pages at
// 2 MiB and more as the engine's weights and expert slots do. A std::vector got 4 KiB pages, and
// streaming an 8 GiB set through them measured several times slower than a 256 MiB one: the
// bench then measured page walks that the engine does not pay.
struct Bytes {
    AlignedBuffer buffer;
    void resize(size_t n) { buffer = AlignedBuffer(n); }
    uint8_t* data() { return reinterpret_cast<uint8_t*>(buffer.data()); }
    size_t size() const { return buffer.size(); }
    bool empty() const { return buffer.size() == 0; }
};

// One weight matrix of the set: its bytes and the view over them.
struct BenchMatrix {
    Bytes data;
    Bytes scales;
    std::shared_ptr<AlignedBuffer> packed;  // BF16_PACKED: the packed copy of `data`'s BF16 matrix
    WeightView view;
};

bool is_gguf(WeightFormat f) { return gguf_weight_block(f).values != 0; }

// The inputs a case's matrices get: --cols rounded down to whole blocks (the K-quants' 256-value
// super-blocks do not divide GPT-OSS's 2880; 2816 is the nearest).
size_t case_cols(const BenchMatrixCase& c, size_t cols) {
    const size_t block = is_gguf(c.format) ? gguf_weight_block(c.format).values : 32;
    return cols / block * block;
}

// GGUF blocks: random bytes, then every scale set to a moderate normal value (f16 in [2^-6, 2^-3),
// or E8M0 118..130), so no block decodes to NaN, infinity or subnormals.
void fill_gguf(BenchMatrix& m, WeightFormat f, Random& rng) {
    const WeightBlock b = gguf_weight_block(f);
    const size_t n_blocks = m.view.rows * m.view.cols / b.values;
    m.data.resize(n_blocks * b.bytes);
    for (size_t i = 0; i + 8 <= m.data.size(); i += 8) {
        const uint64_t v = rng.next();
        std::memcpy(m.data.data() + i, &v, 8);
    }
    auto set_f16 = [&](uint8_t* p) {
        const uint16_t bits = static_cast<uint16_t>(((9u + rng.next() % 3u) << 10) | (rng.next() & 0x3FFu));
        std::memcpy(p, &bits, 2);
    };
    for (size_t k = 0; k < n_blocks; ++k) {
        uint8_t* blk = m.data.data() + k * b.bytes;
        switch (f) {
            case WeightFormat::GGUF_Q8_0:
            case WeightFormat::GGUF_Q4_0:
            case WeightFormat::GGUF_Q5_0:
            case WeightFormat::GGUF_IQ4_NL:
            case WeightFormat::GGUF_IQ4_XS:
            case WeightFormat::GGUF_IQ2_XXS:
            case WeightFormat::GGUF_IQ2_XS:
            case WeightFormat::GGUF_IQ2_S:
            case WeightFormat::GGUF_IQ3_XXS:
            case WeightFormat::GGUF_IQ3_S:
            case WeightFormat::GGUF_IQ1_S: set_f16(blk); break;
            case WeightFormat::GGUF_IQ1_M: {  // d's four nibbles are the top nibbles of the four scale words
                uint8_t d[2];
                set_f16(d);
                const unsigned bits = static_cast<unsigned>(d[0]) | static_cast<unsigned>(d[1]) << 8;
                for (unsigned i = 0; i < 4; ++i)
                    blk[48 + 2 * i + 1] = static_cast<uint8_t>((blk[48 + 2 * i + 1] & 0x0F) | ((bits >> (4 * i)) & 0x0F) << 4);
                break;
            }
            case WeightFormat::GGUF_Q4_K:
            case WeightFormat::GGUF_Q5_K:
            case WeightFormat::GGUF_Q4_1:
            case WeightFormat::GGUF_Q5_1: set_f16(blk), set_f16(blk + 2); break;
            case WeightFormat::GGUF_Q6_K: set_f16(blk + 208); break;
            case WeightFormat::GGUF_Q2_K: set_f16(blk + 80), set_f16(blk + 82); break;
            case WeightFormat::GGUF_Q3_K: set_f16(blk + 108); break;
            case WeightFormat::GGUF_MXFP4: blk[0] = static_cast<uint8_t>(118 + rng.next() % 13); break;
            default: break;
        }
    }
}

// FP8 as the hub's checkpoints block it (128 x 128 per scale): the codes of normal weights scaled
// to the block's amax (stormo/fp8_codes.hpp), scales around what amax / 448 gives for weights of a
// few hundredths.
constexpr auto kFp8Block = static_cast<size_t>(kFp8CheckpointBlock);
void fill_fp8(BenchMatrix& m, Random& rng) {
    const E4m3GaussianCodes& codes = e4m3_gaussian_codes();
    const size_t n = m.view.rows * m.view.cols;
    m.data.resize(n);
    for (size_t i = 0; i < n; i += 4) {
        const uint64_t r = rng.next();
        for (size_t b = 0; b < 4 && i + b < n; ++b) m.data.data()[i + b] = codes.pick(static_cast<uint16_t>(r >> (16 * b)));
    }
    const size_t grid = ((m.view.rows + kFp8Block - 1) / kFp8Block) * ((m.view.cols + kFp8Block - 1) / kFp8Block);
    m.scales.resize(grid * sizeof(float));
    for (size_t g = 0; g < grid; ++g) {
        const float s = 1e-4f * static_cast<float>(1 + rng.next() % 100);
        std::memcpy(m.scales.data() + g * sizeof(float), &s, sizeof(float));
    }
}

// Finite values of moderate magnitude (no subnormals, which some units take slow paths for);
// MXFP4 scales around 2^0.
void fill(BenchMatrix& m, const BenchMatrixCase& c, Random& rng) {
    const size_t n = m.view.rows * m.view.cols;
    if (is_gguf(c.format)) {
        fill_gguf(m, c.format, rng);
        return;
    }
    if (c.format == WeightFormat::MXFP4) {
        m.data.resize(n / 2);
        for (size_t i = 0; i + 8 <= m.data.size(); i += 8) {
            const uint64_t v = rng.next();
            std::memcpy(m.data.data() + i, &v, 8);
        }
        m.scales.resize(n / 32);
        for (size_t i = 0; i < m.scales.size(); ++i) m.scales.data()[i] = static_cast<uint8_t>(118 + rng.next() % 13);
        return;
    }
    if (c.format == WeightFormat::FP8_E4M3) {
        fill_fp8(m, rng);
        return;
    }
    const WeightFormat stored = c.format == WeightFormat::BF16_PACKED ? WeightFormat::BF16 : c.format;
    m.data.resize(matrix_bytes(stored, m.view.rows, m.view.cols));
    for (size_t k = 0; k < n; ++k) {
        const uint64_t r = rng.next();
        if (c.format == WeightFormat::F32) {
            const uint32_t bits = static_cast<uint32_t>(((r & 1u) << 31) | ((121u + (r >> 1) % 12u) << 23) | ((r >> 8) & 0x7FFFFFu));
            std::memcpy(m.data.data() + 4 * k, &bits, 4);
        } else if (stored == WeightFormat::BF16) {
            const uint16_t bits = static_cast<uint16_t>(((r & 1u) << 15) | ((121u + (r >> 1) % 12u) << 7) | ((r >> 8) & 0x7Fu));
            std::memcpy(m.data.data() + 2 * k, &bits, 2);
        } else {
            const uint16_t bits = static_cast<uint16_t>(((r & 1u) << 15) | ((9u + (r >> 1) % 12u) << 10) | ((r >> 8) & 0x3FFu));
            std::memcpy(m.data.data() + 2 * k, &bits, 2);
        }
    }
}

Expected<std::vector<BenchMatrix>> make_set(const BenchMatrixCase& c, const KernelBenchOptions& o, Random& rng) {
    const size_t cols = case_cols(c, o.cols);
    if (cols == 0)
        return fail(ErrorKind::invalid_argument, "bench-kernels: --cols " + std::to_string(o.cols) + " holds no whole " +
                                                     std::string(weight_format_name(c.format)) + " block");
    const uint64_t per_matrix = matrix_bytes(c.format, o.rows, cols);  // a packed one: no patch
    const size_t count = static_cast<size_t>(std::max<uint64_t>(2, (o.set_bytes + per_matrix - 1) / per_matrix));
    std::vector<BenchMatrix> set;
    try {
        set.resize(count);
        for (BenchMatrix& m : set) {
            m.view.format = c.format;
            m.view.layout = c.layout;
            m.view.rows = o.rows;
            m.view.cols = cols;
            fill(m, c, rng);
            m.view.data = m.data.data();
            m.view.scales = m.scales.empty() ? nullptr : m.scales.data();
            if (c.format == WeightFormat::FP8_E4M3) {
                m.view.scales = nullptr;
                m.view.block_scales = reinterpret_cast<const float*>(m.scales.data());
                m.view.block_rows = m.view.block_cols = kFp8Block;
            }
            if (c.format == WeightFormat::BF16_PACKED) {
                // The engine's load step on the BF16 matrix just filled (whose 14 high bytes a
                // row's table always holds); the BF16 bytes are dropped as the engine drops them.
                m.view.format = WeightFormat::BF16;
                std::optional<packed_bf16::Packed> p = packed_bf16::pack(m.view, nullptr, 1.0);
                if (!p) return fail(ErrorKind::internal, "bench-kernels: a BF16 matrix did not pack");
                m.packed = std::move(p->storage);
                m.view = p->view;
                m.data.resize(0);
            }
        }
    } catch (const std::exception&) {  // bad_alloc, or a length beyond what a vector holds
        return fail(ErrorKind::resource, "bench-kernels: cannot allocate " + std::to_string(count) + " matrices of " +
                                             std::to_string(per_matrix) + " bytes");
    }
    return set;
}

// Whether the integer road runs format f differently from the float road: integer kernels, or a
// plugin's BF16 activations (the reference's matmul_bf16a entry never runs).
bool has_int8_road(const KernelTable& t, WeightFormat f, Layout l) {
    return l == Layout::out_in && (t.matmul_q8[static_cast<size_t>(f)] != nullptr || runs_bf16_pairs(t, f));
}

// Times calls over the set, round-robin from `next`, in `windows` windows of at least
// min_seconds / windows and one call each.
KernelBenchRow measure(const BenchKernels& kernels, ThreadPool& pool, const std::vector<BenchMatrix>& set, size_t& next,
                       size_t n_x, const std::vector<float>& x, std::vector<float>& y, const KernelBenchOptions& o) {
    const Compute compute{kernels.table, &pool, kernels.int8_activations};
    matmul(compute, set[next++ % set.size()].view, x.data(), n_x, y.data());  // warm the code and the pool
    const double window_seconds = o.min_seconds / std::max(1, o.windows);
    const uint64_t bytes = matrix_bytes(set.front().view);
    std::vector<double> rates;
    KernelBenchRow row;
    for (int w = 0; w < std::max(1, o.windows); ++w) {
        size_t calls = 0;
        const auto t0 = Clock::now();
        double elapsed = 0.0;
        do {
            matmul(compute, set[next++ % set.size()].view, x.data(), n_x, y.data());
            ++calls;
            elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        } while (elapsed < window_seconds);
        rates.push_back(static_cast<double>(bytes) * static_cast<double>(calls) / elapsed);
        row.calls += calls;
    }
    std::sort(rates.begin(), rates.end());
    row.bytes_per_s = rates[rates.size() / 2];
    row.best_bytes_per_s = rates.back();
    row.seconds_per_call = static_cast<double>(bytes) / row.bytes_per_s;
    row.bytes_per_matrix = bytes;
    row.matrices = set.size();
    row.n_x = n_x;
    row.cols = set.front().view.cols;
    row.threads = pool.size();
    return row;
}

}  // namespace

Expected<KernelBenchReport> run_kernel_bench(const std::vector<BenchKernels>& kernels, const KernelBenchOptions& o,
                                             const std::function<void(const KernelBenchRow&)>& progress) {
    if (o.rows == 0 || o.cols == 0 || o.cols % 32 != 0)
        return fail(ErrorKind::invalid_argument, "bench-kernels: --cols must be a positive multiple of 32 (MXFP4 blocks)");
    if (o.threads.empty() || o.n_x.empty() || o.cases.empty() || kernels.empty())
        return fail(ErrorKind::invalid_argument, "bench-kernels: nothing to measure");
    KernelBenchReport report;
    std::map<size_t, std::unique_ptr<WorkerPool>> pools;
    std::map<size_t, double> ram_rate;
    for (size_t t : o.threads) {
        if (t == 0) return fail(ErrorKind::invalid_argument, "bench-kernels: a thread count must be positive");
        auto& pool = pools[t];
        if (!pool) pool = std::make_unique<WorkerPool>(t);
        RamProbeOptions probe;
        probe.bytes = o.ram_probe_bytes;
        probe.repeats = o.ram_repeats;
        probe.streams = o.ram_streams;
        // The widest loop among the tables measured: the probe must read as fast as this CPU can.
        for (const BenchKernels& k : kernels)
            if (k.table != nullptr && k.table->xor_reduce != nullptr && k.table->xor_reduce != reference_kernels().xor_reduce) {
                probe.reduce = k.table->xor_reduce;
                probe.loop = k.name;
            }
        auto ram = measure_ram_read_bandwidth(*pool, probe);
        if (!ram) return tl::unexpected(ram.error());
        ram_rate[t] = ram->bytes_per_s;
        report.ram.push_back(*ram);
    }
    if (o.ram_only) return report;
    Random rng{o.seed * 0x9E3779B97F4A7C15ull + 1};
    const size_t max_n_x = *std::max_element(o.n_x.begin(), o.n_x.end());
    std::vector<float> x(max_n_x * o.cols);
    for (float& v : x) v = static_cast<float>(static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    std::vector<float> y(max_n_x * o.rows);
    for (const BenchMatrixCase& c : o.cases) {
        STORMO_TRY_ASSIGN(auto set, make_set(c, o, rng));
        size_t next = 0;
        for (const BenchKernels& k : kernels) {
            if (k.int8_activations && !has_int8_road(*k.table, c.format, c.layout)) continue;
            for (size_t n_x : o.n_x)
                for (size_t t : o.threads) {
                    KernelBenchRow row = measure(k, *pools[t], set, next, n_x, x, y, o);
                    row.kernels = k.name;
                    row.road = k.int8_activations ? "int8" : "f32";
                    row.format = c.format;
                    row.layout = c.layout;
                    row.ram_bytes_per_s = ram_rate[t];
                    row.ram_fraction = row.bytes_per_s / ram_rate[t];
                    if (progress) progress(row);
                    report.rows.push_back(row);
                }
        }
    }
    return report;
}

}  // namespace stormo
