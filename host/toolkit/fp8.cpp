// Block-scaled FP8 (see stormo/toolkit/fp8.hpp).
#include "stormo/toolkit/fp8.hpp"

#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {

Expected<Fp8Blocks> read_fp8_quantization(const ModelConfig& config, const std::string& family) {
    ConfigReader r(config);
    const auto q = r.optional_object("quantization_config");
    STORMO_TRY(r.status());
    if (!q) return Fp8Blocks{};
    ConfigReader qr(*q);
    const std::string method = qr.string("quant_method");
    STORMO_TRY(qr.status());
    if (method != "fp8")
        return fail(ErrorKind::unsupported, q->source() + ": quant_method \"" + method + "\" is not supported by " +
                                                family + " (fp8, or no quantization_config)");
    if (qr.has("fmt")) {
        const std::string fmt = qr.string("fmt");
        qr.require(!qr.ok() || fmt == "e4m3", "fmt \"" + fmt + "\" is not supported (e4m3)", ErrorKind::unsupported);
    }
    const std::vector<int64_t> block = qr.integers_or_empty("weight_block_size");
    STORMO_TRY(qr.status());
    if (block.size() != 2 || block[0] <= 0 || block[1] <= 0)
        return fail(ErrorKind::unsupported,
                    q->source() + ": field \"weight_block_size\" must be two positive integers (per-tensor or "
                                  "per-channel FP8 scales are not supported)");
    return Fp8Blocks{block[0], block[1]};
}

std::string fp8_scale_name(const std::string& weight_name) { return weight_name + "_scale_inv"; }

Shape fp8_scale_grid(int64_t rows, int64_t cols, const Fp8Blocks& b) {
    return {(rows + b.rows - 1) / b.rows, (cols + b.cols - 1) / b.cols};
}

const std::vector<DType>& fp8_scale_dtypes() {
    static const std::vector<DType> kDtypes = {DType::F32, DType::BF16};
    return kDtypes;
}

WeightView fp8_view(const void* data, const float* scales, size_t rows, size_t cols, const Fp8Blocks& blocks) {
    WeightView v;
    v.format = WeightFormat::FP8_E4M3;
    v.layout = Layout::out_in;
    v.data = data;
    v.rows = rows;
    v.cols = cols;
    v.block_scales = scales;
    v.block_rows = static_cast<size_t>(blocks.rows);
    v.block_cols = static_cast<size_t>(blocks.cols);
    return v;
}

Expected<WeightView> expert_matrix(const ExpertPart& weight, const ExpertPart* scale, size_t rows, size_t cols,
                                   const Fp8Blocks& blocks, std::vector<float>& scales) {
    if (weight.dtype != DType::F8_E4M3) {
        STORMO_TRY_ASSIGN(const WeightFormat format, matrix_format(weight.dtype, "an expert part"));
        return WeightView{format, Layout::out_in, weight.data, nullptr, rows, cols};
    }
    if (scale == nullptr || !blocks.enabled())
        return fail(ErrorKind::internal, "an FP8 expert part arrived without its scales");
    const Shape grid = fp8_scale_grid(static_cast<int64_t>(rows), static_cast<int64_t>(cols), blocks);
    scales = to_f32(scale->dtype, scale->data, static_cast<size_t>(grid[0] * grid[1]));
    return fp8_view(weight.data, scales.data(), rows, cols, blocks);
}

}  // namespace stormo::toolkit
