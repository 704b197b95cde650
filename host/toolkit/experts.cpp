// Three-matrix SwiGLU experts (see stormo/toolkit/experts.hpp).
#include "stormo/toolkit/experts.hpp"

#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {
namespace {

constexpr const char* kProjections[] = {"gate_proj", "up_proj", "down_proj"};
constexpr size_t kProjectionCount = 3;

}  // namespace

std::string expert_tensor_name(const std::string& pattern, int expert) {
    const size_t at = pattern.find("{e}");
    if (at == std::string::npos) return pattern;
    std::string name = pattern.substr(0, at);
    name += std::to_string(expert);
    name += pattern.substr(at + 3);
    return name;
}

std::vector<ExpertPartDecl> swiglu_expert_parts(const LoadContext& ctx,
                                                const std::function<std::string(const char* projection)>& pattern,
                                                int64_t hidden, int64_t inter, const std::vector<DType>& dtypes,
                                                const Fp8Blocks& blocks) {
    const bool fp8 = blocks.enabled() && ctx.has_tensor(expert_tensor_name(fp8_scale_name(pattern(kProjections[0])), 0));
    const Shape shapes[kProjectionCount] = {{inter, hidden}, {inter, hidden}, {hidden, inter}};
    std::vector<ExpertPartDecl> parts;
    for (size_t p = 0; p < kProjectionCount; ++p) {
        const std::string weight = pattern(kProjections[p]);
        parts.push_back(ExpertPartDecl{kProjections[p], weight, false,
                                       fp8 ? std::vector<DType>{DType::F8_E4M3} : with_gguf_blocks(dtypes), shapes[p]});
        if (fp8)
            parts.push_back(ExpertPartDecl{std::string(kProjections[p]) + "_scale", fp8_scale_name(weight), false,
                                           fp8_scale_dtypes(), fp8_scale_grid(shapes[p][0], shapes[p][1], blocks)});
    }
    return parts;
}

Expected<void> build_swiglu_expert(const Compute& c, const ExpertView& expert, size_t hidden, size_t inter,
                                   const Fp8Blocks& blocks, const std::string& who, const Rows& in, Rows out) {
    const auto& p = expert.parts;
    const bool fp8 = p.size() == 2 * kProjectionCount;
    if (p.size() != kProjectionCount && !fp8)
        return fail(ErrorKind::internal, who + " layer " + std::to_string(expert.layer) + " expert " +
                                             std::to_string(expert.expert) + ": the parts do not match their declaration");
    const size_t stride = fp8 ? 2 : 1;
    const size_t rows[kProjectionCount] = {inter, inter, hidden}, cols[kProjectionCount] = {hidden, hidden, inter};
    std::vector<float> scales[kProjectionCount];
    WeightView views[kProjectionCount];
    for (size_t k = 0; k < kProjectionCount; ++k) {
        STORMO_TRY_ASSIGN(views[k], expert_matrix(p[k * stride], fp8 ? &p[k * stride + 1] : nullptr, rows[k], cols[k],
                                                  blocks, scales[k]));
    }
    build_swiglu_mlp(c, SwigluMlp{views[0], views[1], views[2]}, in, out);
    return {};
}

}  // namespace stormo::toolkit
