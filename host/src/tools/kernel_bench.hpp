#pragma once
// The kernel benchmark behind `stormo bench-kernels`: weight bytes streamed per second by each
// kernel table's matrix kernels, per (format, layout) and number of activation rows, at several
// thread counts, as a fraction of the RAM read bandwidth measured in the same run with the same
// threads. Matrices are read round-robin from a set much larger than the caches, so every call
// streams its weights from RAM, as decode does with the experts a token routes to.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/kernels.hpp"
#include "tools/bandwidth.hpp"

namespace stormo {

// One kernel table to measure, on the float road or the integer road.
struct BenchKernels {
    std::string name;                   // "reference", "avx2", "vnni"
    const KernelTable* table = nullptr;
    bool int8_activations = false;
};

struct BenchMatrixCase {
    WeightFormat format = WeightFormat::MXFP4;
    Layout layout = Layout::out_in;
};

struct KernelBenchOptions {
    std::vector<size_t> threads{1, 2};
    std::vector<size_t> n_x{1, 8, 32};  // 1: matrix x vector (decode); more: matrix x rows (prefill)
    std::vector<BenchMatrixCase> cases{{WeightFormat::MXFP4, Layout::out_in},
                                       {WeightFormat::BF16, Layout::out_in},
                                       {WeightFormat::BF16, Layout::in_out},
                                       {WeightFormat::F32, Layout::out_in}};
    size_t rows = 5760;                  // outputs (GPT-OSS-20B's fused gate_up)
    size_t cols = 2880;                  // inputs (its hidden size)
    uint64_t set_bytes = uint64_t{256} << 20;  // weights per case, read round-robin
    double min_seconds = 0.3;            // timed per measurement (split into `windows`)
    int windows = 3;                     // the median window's rate is reported
    uint64_t ram_probe_bytes = uint64_t{512} << 20;
    int ram_repeats = 5;
    std::vector<size_t> ram_streams{1, 2, 4};  // stream counts per thread the RAM probe tries
    bool ram_only = false;               // measure the RAM probe only (scripts/memory-bound-check.sh)
    uint64_t seed = 1;
};

struct KernelBenchRow {
    std::string kernels;
    std::string road;                    // "f32" or "int8"
    WeightFormat format = WeightFormat::F32;
    Layout layout = Layout::out_in;
    size_t n_x = 1;
    size_t cols = 0;                     // inputs: --cols rounded down to the format's blocks
    size_t threads = 1;
    size_t matrices = 0;                 // in the round-robin set
    uint64_t bytes_per_matrix = 0;       // weights (and MXFP4 scales) one call streams
    size_t calls = 0;                    // over every window
    double seconds_per_call = 0.0;       // median window
    double bytes_per_s = 0.0;            // median window
    double best_bytes_per_s = 0.0;       // best window
    double ram_bytes_per_s = 0.0;        // the RAM probe's best at the same thread count
    double ram_fraction = 0.0;           // bytes_per_s / ram_bytes_per_s
};

struct KernelBenchReport {
    std::vector<RamBandwidth> ram;       // one per thread count, in the order asked
    std::vector<KernelBenchRow> rows;
};

// Runs every (case, kernels, road, n_x, threads) combination; the int8 road only where a table
// has a matmul_q8 entry for the format (others would repeat the float road). `progress` sees each
// row as it is measured.
STORMO_API Expected<KernelBenchReport> run_kernel_bench(const std::vector<BenchKernels>& kernels,
                                                        const KernelBenchOptions& options,
                                                        const std::function<void(const KernelBenchRow&)>& progress);

}  // namespace stormo
