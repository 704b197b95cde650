// The dense steps (see stormo/toolkit/dense.hpp).
#include "stormo/toolkit/dense.hpp"

#include "stormo/toolkit/swiglu.hpp"

namespace stormo::toolkit {

Expected<void> embed_tokens(const Compute& c, const WeightView& embedding, std::span<const int32_t> tokens, Rows out,
                            const std::string& who) {
    const size_t vocab = embedding.rows;
    for (size_t r = 0; r < tokens.size(); ++r)
        if (tokens[r] < 0 || static_cast<size_t>(tokens[r]) >= vocab)
            return fail(ErrorKind::invalid_argument, who + ": token id " + std::to_string(tokens[r]) + " at position " +
                                                         std::to_string(r) + " is outside the vocabulary [0, " +
                                                         std::to_string(vocab) + ")");
    if (out.n < tokens.size() || out.width != embedding.cols)
        return fail(ErrorKind::internal, who + ": embed output rows do not match the tokens and hidden_size");
    const RowToF32Fn decode = c.table->row_to_f32[static_cast<size_t>(embedding.format)];
    if (decode == nullptr)
        return fail(ErrorKind::unsupported,
                    who + ": no row decoder for the embedding format " + weight_format_name(embedding.format));
    for (size_t r = 0; r < tokens.size(); ++r) decode(embedding, static_cast<size_t>(tokens[r]), out.row(r));
    return {};
}

void rms_norm_rows(const Compute& c, const std::vector<float>& weight, float eps, const Rows& in, Rows out) {
    for (size_t r = 0; r < in.n; ++r) c.table->rmsnorm(in.row(r), weight.data(), in.width, eps, out.row(r));
}

void build_norm(const Compute& c, const DecoderNorms& norms, Model::NormSite site, int layer, const Rows& in, Rows out) {
    const size_t l = static_cast<size_t>(layer);
    const std::vector<float>& weight = site == Model::NormSite::final       ? norms.final_norm
                                       : site == Model::NormSite::attention ? norms.input.at(l)
                                                                            : norms.post_attention.at(l);
    rms_norm_rows(c, weight, norms.eps, in, out);
}

void build_head(const Compute& c, const WeightView& head, const Rows& normed, Rows logits) {
    const size_t f = static_cast<size_t>(head.format);
    Compute road = c;
    if (c.table == nullptr || f >= kWeightFormatCount || c.table->matmul_q8[f] == nullptr) road.int8_activations = false;
    matmul(road, head, normed.data, normed.n, logits.data);
}

void build_swiglu_mlp(const Compute& c, const SwigluMlp& w, const Rows& in, Rows out) {
    const size_t n = in.n, inter = w.gate.rows;
    std::vector<float> gate(n * inter), up(n * inter);
    const MatmulOut gate_up[] = {{w.gate, gate.data()}, {w.up, up.data()}};  // one call of the pool
    matmul_many(c, gate_up, in.data, n);
    swiglu(gate.data(), up.data(), n * inter, c.table->silu);
    matmul(c, w.down, gate.data(), n, out.data);
}

}  // namespace stormo::toolkit
