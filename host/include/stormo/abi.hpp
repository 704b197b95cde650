#pragma once
// The plugin ABI identity, checked when the host loads a plugin: the string each side compiles in
// must be equal, or the plugin is refused with both strings in the reason. It covers what can
// break when a plugin and the host are built apart:
//   - the SDK's major version (bumped for any change to a virtual interface: Model, Family,
//     LoadContext, GgufView, Tracer, ThreadPool, the plugin objects);
//   - the compiler and standard library (C++ objects and std:: types cross the boundary);
//   - the tl-expected version (Expected<T> crosses it);
//   - the debug and assertion macros (NDEBUG, _GLIBCXX_ASSERTIONS, _GLIBCXX_DEBUG: the last
//     changes the layout of every std:: container);
//   - a hash of the layout of every struct that crosses the boundary: size and alignment of
//     each, and the offset and size of each member (a member added, removed, resized or moved).
#include <array>
#include <cstddef>
#include <cstdint>

#include <tl/expected.hpp>

#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/family.hpp"
#include "stormo/fp8_codes.hpp"
#include "stormo/json.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/version.hpp"

namespace stormo {

enum class PluginKind : int { model = 1, kernels = 2 };

struct PluginDescription {
    const char* name;        // "gpt_oss", "avx2": unique among loaded plugins
    PluginKind kind;
    const char* version;     // the plugin's own version
    const char* summary;     // one line for `stormo plugins`
    // model plugins: the `architectures` / `model_type` values accepted, comma-separated.
    const char* accepts;
    // kernels plugins: the CPU features compiled for, comma-separated names (cpu_feature_name).
    const char* cpu_features;
};

struct ScoreQuery {
    const ModelConfig* config = nullptr;  // model plugins
    CpuFeatureSet cpu;                     // kernels plugins
};

namespace abi_detail {

constexpr uint64_t kFnvBasis = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

constexpr uint64_t mix(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= kFnvPrime;
    }
    return h;
}

template <class T>
constexpr uint64_t mix_type(uint64_t h) {
    return mix(mix(mix(h, 0x5eedu), sizeof(T)), alignof(T));
}

}  // namespace abi_detail

#define STORMO_ABI_FIELD(T, m) h = ::stormo::abi_detail::mix(::stormo::abi_detail::mix(h, offsetof(T, m)), sizeof(T::m))

// The layout hash of every struct that crosses the plugin boundary. Classes with private members
// (Json, ModelConfig, AlignedBuffer) contribute their size and alignment.
constexpr uint64_t sdk_layout_hash() {
    using abi_detail::mix_type;
    uint64_t h = abi_detail::kFnvBasis;
    h = mix_type<Json>(h);
    h = mix_type<ModelConfig>(h);
    h = mix_type<AlignedBuffer>(h);
    h = mix_type<Error>(h);
    STORMO_ABI_FIELD(Error, kind);
    STORMO_ABI_FIELD(Error, message);
    h = mix_type<Tensor>(h);
    STORMO_ABI_FIELD(Tensor, name);
    STORMO_ABI_FIELD(Tensor, dtype);
    STORMO_ABI_FIELD(Tensor, shape);
    STORMO_ABI_FIELD(Tensor, buffer);
    h = mix_type<CpuFeatureSet>(h);
    STORMO_ABI_FIELD(CpuFeatureSet, bits);
    h = mix_type<PluginDescription>(h);
    STORMO_ABI_FIELD(PluginDescription, name);
    STORMO_ABI_FIELD(PluginDescription, kind);
    STORMO_ABI_FIELD(PluginDescription, version);
    STORMO_ABI_FIELD(PluginDescription, summary);
    STORMO_ABI_FIELD(PluginDescription, accepts);
    STORMO_ABI_FIELD(PluginDescription, cpu_features);
    h = mix_type<ScoreQuery>(h);
    STORMO_ABI_FIELD(ScoreQuery, config);
    STORMO_ABI_FIELD(ScoreQuery, cpu);
    h = mix_type<WeightView>(h);
    STORMO_ABI_FIELD(WeightView, format);
    STORMO_ABI_FIELD(WeightView, layout);
    STORMO_ABI_FIELD(WeightView, data);
    STORMO_ABI_FIELD(WeightView, scales);
    STORMO_ABI_FIELD(WeightView, rows);
    STORMO_ABI_FIELD(WeightView, cols);
    STORMO_ABI_FIELD(WeightView, block_scales);
    STORMO_ABI_FIELD(WeightView, block_rows);
    STORMO_ABI_FIELD(WeightView, block_cols);
    h = mix_type<Q8Rows>(h);
    STORMO_ABI_FIELD(Q8Rows, q);
    STORMO_ABI_FIELD(Q8Rows, scales);
    STORMO_ABI_FIELD(Q8Rows, n_x);
    STORMO_ABI_FIELD(Q8Rows, cols);
    STORMO_ABI_FIELD(Q8Rows, blocks);
    STORMO_ABI_FIELD(Q8Rows, block);
    STORMO_ABI_FIELD(Q8Rows, sums);
    h = mix_type<KernelTable>(h);
    STORMO_ABI_FIELD(KernelTable, matmul);
    STORMO_ABI_FIELD(KernelTable, row_to_f32);
    STORMO_ABI_FIELD(KernelTable, rmsnorm);
    STORMO_ABI_FIELD(KernelTable, softmax);
    STORMO_ABI_FIELD(KernelTable, dot);
    STORMO_ABI_FIELD(KernelTable, axpy);
    STORMO_ABI_FIELD(KernelTable, dot_many);
    STORMO_ABI_FIELD(KernelTable, axpy_many);
    STORMO_ABI_FIELD(KernelTable, silu);
    STORMO_ABI_FIELD(KernelTable, dot_u8i8);
    STORMO_ABI_FIELD(KernelTable, matmul_q8);
    STORMO_ABI_FIELD(KernelTable, dot_rows_i8);
    STORMO_ABI_FIELD(KernelTable, xor_reduce);
    STORMO_ABI_FIELD(KernelTable, dot_rows_q8);
    STORMO_ABI_FIELD(KernelTable, matmul_bf16a);
    h = mix_type<Compute>(h);
    STORMO_ABI_FIELD(Compute, table);
    STORMO_ABI_FIELD(Compute, pool);
    STORMO_ABI_FIELD(Compute, int8_activations);
    h = mix_type<TensorDecl>(h);
    STORMO_ABI_FIELD(TensorDecl, name);
    STORMO_ABI_FIELD(TensorDecl, role);
    STORMO_ABI_FIELD(TensorDecl, dtypes);
    STORMO_ABI_FIELD(TensorDecl, shape);
    h = mix_type<ExpertPartDecl>(h);
    STORMO_ABI_FIELD(ExpertPartDecl, part);
    STORMO_ABI_FIELD(ExpertPartDecl, tensor);
    STORMO_ABI_FIELD(ExpertPartDecl, fused);
    STORMO_ABI_FIELD(ExpertPartDecl, dtypes);
    STORMO_ABI_FIELD(ExpertPartDecl, expert_shape);
    h = mix_type<ExpertPart>(h);
    STORMO_ABI_FIELD(ExpertPart, dtype);
    STORMO_ABI_FIELD(ExpertPart, shape);
    STORMO_ABI_FIELD(ExpertPart, data);
    h = mix_type<ExpertView>(h);
    STORMO_ABI_FIELD(ExpertView, layer);
    STORMO_ABI_FIELD(ExpertView, expert);
    STORMO_ABI_FIELD(ExpertView, parts);
    h = mix_type<KvBufferDecl>(h);
    STORMO_ABI_FIELD(KvBufferDecl, name);
    STORMO_ABI_FIELD(KvBufferDecl, floats_per_position);
    STORMO_ABI_FIELD(KvBufferDecl, window);
    STORMO_ABI_FIELD(KvBufferDecl, kind);
    h = mix_type<LayerPlan>(h);
    STORMO_ABI_FIELD(LayerPlan, kv);
    STORMO_ABI_FIELD(LayerPlan, ffn);
    STORMO_ABI_FIELD(LayerPlan, n_experts);
    STORMO_ABI_FIELD(LayerPlan, top_k);
    STORMO_ABI_FIELD(LayerPlan, shared_experts);
    STORMO_ABI_FIELD(LayerPlan, expert_parts);
    h = mix_type<KvBufferView>(h);
    STORMO_ABI_FIELD(KvBufferView, pages);
    STORMO_ABI_FIELD(KvBufferView, offset);
    STORMO_ABI_FIELD(KvBufferView, page_rows);
    STORMO_ABI_FIELD(KvBufferView, rows);
    STORMO_ABI_FIELD(KvBufferView, width);
    h = mix_type<KvView>(h);
    STORMO_ABI_FIELD(KvView, buffers);
    STORMO_ABI_FIELD(KvView, capacity);
    h = mix_type<SequenceKv>(h);
    STORMO_ABI_FIELD(SequenceKv, first_row);
    STORMO_ABI_FIELD(SequenceKv, n_rows);
    STORMO_ABI_FIELD(SequenceKv, kv);
    h = mix_type<Rows>(h);
    STORMO_ABI_FIELD(Rows, data);
    STORMO_ABI_FIELD(Rows, n);
    STORMO_ABI_FIELD(Rows, width);
    h = mix_type<Routing>(h);
    STORMO_ABI_FIELD(Routing, top_k);
    STORMO_ABI_FIELD(Routing, experts);
    STORMO_ABI_FIELD(Routing, weights);
    h = mix_type<StepContext>(h);
    STORMO_ABI_FIELD(StepContext, positions);
    STORMO_ABI_FIELD(StepContext, tracer);
    h = mix_type<ModelSummary>(h);
    STORMO_ABI_FIELD(ModelSummary, dimensions);
    STORMO_ABI_FIELD(ModelSummary, n_layers);
    STORMO_ABI_FIELD(ModelSummary, n_moe_layers);
    STORMO_ABI_FIELD(ModelSummary, n_experts);
    STORMO_ABI_FIELD(ModelSummary, top_k);
    STORMO_ABI_FIELD(ModelSummary, hidden_size);
    STORMO_ABI_FIELD(ModelSummary, vocab_size);
    STORMO_ABI_FIELD(ModelSummary, kv_floats_per_token);
    STORMO_ABI_FIELD(ModelSummary, kv_buffers);
    h = mix_type<GgufValue>(h);
    STORMO_ABI_FIELD(GgufValue, type);
    STORMO_ABI_FIELD(GgufValue, element_type);
    STORMO_ABI_FIELD(GgufValue, count);
    STORMO_ABI_FIELD(GgufValue, raw);
    STORMO_ABI_FIELD(GgufValue, text);
    STORMO_ABI_FIELD(GgufValue, strings);
    h = mix_type<GgufTensorInfo>(h);
    STORMO_ABI_FIELD(GgufTensorInfo, name);
    STORMO_ABI_FIELD(GgufTensorInfo, type);
    STORMO_ABI_FIELD(GgufTensorInfo, n_dims);
    STORMO_ABI_FIELD(GgufTensorInfo, ne);
    STORMO_ABI_FIELD(GgufTensorInfo, offset);
    STORMO_ABI_FIELD(GgufTensorInfo, nbytes);
    STORMO_ABI_FIELD(GgufTensorInfo, elements);
    h = mix_type<GgufMappedTensor>(h);
    STORMO_ABI_FIELD(GgufMappedTensor, name);
    STORMO_ABI_FIELD(GgufMappedTensor, shape);
    STORMO_ABI_FIELD(GgufMappedTensor, dtype);
    STORMO_ABI_FIELD(GgufMappedTensor, in_file);
    STORMO_ABI_FIELD(GgufMappedTensor, slice_offset);
    STORMO_ABI_FIELD(GgufMappedTensor, slice_bytes);
    STORMO_ABI_FIELD(GgufMappedTensor, values);
    h = mix_type<GgufMappedModel>(h);
    STORMO_ABI_FIELD(GgufMappedModel, config_json);
    STORMO_ABI_FIELD(GgufMappedModel, generation_config_json);
    STORMO_ABI_FIELD(GgufMappedModel, tensors);
    STORMO_ABI_FIELD(GgufMappedModel, left_out);
    h = mix_type<SynthFillSpec>(h);
    STORMO_ABI_FIELD(SynthFillSpec, kind);
    STORMO_ABI_FIELD(SynthFillSpec, center);
    STORMO_ABI_FIELD(SynthFillSpec, half_width);
    STORMO_ABI_FIELD(SynthFillSpec, byte_lo);
    STORMO_ABI_FIELD(SynthFillSpec, byte_hi);
    h = mix_type<SynthTensor>(h);
    STORMO_ABI_FIELD(SynthTensor, name);
    STORMO_ABI_FIELD(SynthTensor, dtype);
    STORMO_ABI_FIELD(SynthTensor, shape);
    STORMO_ABI_FIELD(SynthTensor, fill);
    h = mix_type<SynthPreset>(h);
    STORMO_ABI_FIELD(SynthPreset, name);
    STORMO_ABI_FIELD(SynthPreset, description);
    STORMO_ABI_FIELD(SynthPreset, layers);
    STORMO_ABI_FIELD(SynthPreset, experts);
    STORMO_ABI_FIELD(SynthPreset, experts_per_token);
    h = mix_type<SynthRequest>(h);
    STORMO_ABI_FIELD(SynthRequest, preset);
    STORMO_ABI_FIELD(SynthRequest, layers);
    STORMO_ABI_FIELD(SynthRequest, experts);
    h = mix_type<SynthCheckpoint>(h);
    STORMO_ABI_FIELD(SynthCheckpoint, config_json);
    STORMO_ABI_FIELD(SynthCheckpoint, generation_config_json);
    STORMO_ABI_FIELD(SynthCheckpoint, tensors);
    h = mix_type<E4m3GaussianCodes>(h);
    STORMO_ABI_FIELD(E4m3GaussianCodes, magnitude);
    STORMO_ABI_FIELD(E4m3GaussianCodes, rms);
    return h;
}

#undef STORMO_ABI_FIELD

#if defined(NDEBUG)
#define STORMO_ABI_NDEBUG "ndebug"
#else
#define STORMO_ABI_NDEBUG "assert"
#endif
#if defined(_GLIBCXX_ASSERTIONS)
#define STORMO_ABI_GLIBCXX_ASSERTIONS "+glibcxx-assertions"
#else
#define STORMO_ABI_GLIBCXX_ASSERTIONS ""
#endif
#if defined(_GLIBCXX_DEBUG)
#define STORMO_ABI_GLIBCXX_DEBUG "+glibcxx-debug"
#else
#define STORMO_ABI_GLIBCXX_DEBUG ""
#endif

// "stormo-sdk-3/gcc-12/libstdc++-12-cxx11abi1/tl-expected-1.0.0/ndebug/layout-<16 hex digits>"
#define STORMO_ABI_PREFIX                                                                                     \
    "stormo-sdk-" STORMO_STRINGIFY(STORMO_SDK_MAJOR) "/" STORMO_COMPILER_ID "/" STORMO_STDLIB_ID           \
    "/tl-expected-" STORMO_STRINGIFY(TL_EXPECTED_VERSION_MAJOR) "." STORMO_STRINGIFY(                        \
        TL_EXPECTED_VERSION_MINOR) "." STORMO_STRINGIFY(TL_EXPECTED_VERSION_PATCH) "/" STORMO_ABI_NDEBUG     \
        STORMO_ABI_GLIBCXX_ASSERTIONS STORMO_ABI_GLIBCXX_DEBUG "/layout-"

namespace abi_detail {

inline constexpr char kPrefix[] = STORMO_ABI_PREFIX;

constexpr std::array<char, sizeof(kPrefix) + 16> abi_chars() {
    std::array<char, sizeof(kPrefix) + 16> out{};
    size_t at = 0;
    for (size_t i = 0; i + 1 < sizeof(kPrefix); ++i) out[at++] = kPrefix[i];
    const uint64_t hash = sdk_layout_hash();
    for (int shift = 60; shift >= 0; shift -= 4) out[at++] = "0123456789abcdef"[(hash >> shift) & 0xfu];
    out[at] = '\0';
    return out;
}

inline constexpr std::array<char, sizeof(kPrefix) + 16> kAbiChars = abi_chars();

}  // namespace abi_detail

// The ABI string of whoever compiles this header: the host and each plugin compare theirs.
inline constexpr const char* kStormoAbi = abi_detail::kAbiChars.data();

}  // namespace stormo
