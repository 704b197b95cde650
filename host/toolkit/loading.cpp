// Resident tensor loading (see stormo/toolkit/loading.hpp).
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {

Expected<WeightFormat> matrix_format(DType dtype, const std::string& tensor) {
    switch (dtype) {
        case DType::F32: return WeightFormat::F32;
        case DType::BF16: return WeightFormat::BF16;
        case DType::F16: return WeightFormat::F16;
        default: break;
    }
    return fail(ErrorKind::unsupported, "tensor \"" + tensor + "\": dtype " + std::string(dtype_name(dtype)) +
                                            " is not a matrix format stormo computes with");
}

Expected<WeightView> TensorLoader::matrix(const std::string& name, TensorRole role, int64_t rows, int64_t cols) {
    STORMO_TRY_ASSIGN(Tensor t, ctx_.load(TensorDecl{name, role, matrix_dtypes_, Shape{rows, cols}}));
    WeightView view;
    STORMO_TRY_ASSIGN(view.format, matrix_format(t.dtype, name));
    view.layout = Layout::out_in;
    view.data = t.bytes();
    view.rows = static_cast<size_t>(rows);
    view.cols = static_cast<size_t>(cols);
    keep_.push_back(std::move(t));
    return view;
}

Expected<std::vector<float>> TensorLoader::vector(const std::string& name, TensorRole role, int64_t n) {
    STORMO_TRY_ASSIGN(const Tensor t, ctx_.load(TensorDecl{name, role, vector_dtypes_, Shape{n}}));
    return to_f32(t);
}

Expected<Linear> TensorLoader::linear(const std::string& base, TensorRole role, int64_t rows, int64_t cols,
                                      bool with_bias) {
    Linear l;
    STORMO_TRY_ASSIGN(l.weight, matrix(base + ".weight", role, rows, cols));
    if (with_bias) {
        STORMO_TRY_ASSIGN(l.bias, vector(base + ".bias", role, rows));
    }
    return l;
}

}  // namespace stormo::toolkit
