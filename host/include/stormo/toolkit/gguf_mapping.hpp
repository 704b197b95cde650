#pragma once
// What every family's GGUF mapping shares (Family::map_gguf, stormo/gguf_view.hpp): metadata reads
// that name the file and key when they fail, tensors with a shape check, the ends and norms every
// architecture has, stacked experts unstacked, and the config.json fields every mapping ends with.
// A family's mapping (plugins/<family>/<family>_gguf.cpp) holds only what is its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/gguf_view.hpp"
#include "stormo/tensor.hpp"

namespace stormo::toolkit::gguf {

using MappedModel = GgufMappedModel;

// Typed reads of "<arch>.<key>" (or of a full key) from the model's metadata; errors name the file
// and the key.
class Keys {
public:
    Keys(const GgufView& file, std::string arch) : file_(file), arch_(std::move(arch)) {}
    // The file's own architecture's keys.
    explicit Keys(const GgufView& file) : Keys(file, file.architecture()) {}
    std::string arch_key(std::string_view key) const { return arch_ + "." + std::string(key); }
    const std::string& arch() const { return arch_; }
    const GgufValue* find(std::string_view full_key) const { return file_.value(full_key); }
    // Non-negative integer of any integer type.
    Expected<uint64_t> count(std::string_view full_key) const;
    Expected<double> number(std::string_view full_key) const;
    Expected<bool> flag(std::string_view full_key) const;
    Expected<std::string> text(std::string_view full_key) const;
    // The same reads with a value for an absent key (a present key of the wrong type still fails).
    Expected<uint64_t> count_or(std::string_view full_key, uint64_t absent) const;
    Expected<double> number_or(std::string_view full_key, double absent) const;
    Expected<bool> flag_or(std::string_view full_key, bool absent) const;
    const std::string& path() const { return file_.path(); }
    // "<file>: key "<arch>.<key>" <what>" as an error of `kind`.
    Error refuse(std::string_view arch_relative_key, const std::string& what, ErrorKind kind = ErrorKind::unsupported) const;

private:
    const GgufView& file_;
    std::string arch_;
};

// llama.cpp's tensor names per layer and transformers' module path per layer.
std::string blk(int layer, std::string_view name);
std::string hf(int layer, std::string_view name);

// block_count bounded by the tensors before anything is sized by it: the last of `layers` layers
// (block_count `blocks` less any the mapping leaves out) must have its attn_norm in the file.
Expected<void> require_last_block(const GgufView& model, const Keys& k, uint64_t blocks, uint64_t layers);

// The tensor's values as float32, after checking that it exists with exactly `ne` (ggml's order,
// fastest dimension first); errors name the file and the tensor.
Expected<std::vector<float>> dequantized(const GgufView& model, const std::string& name, std::vector<uint64_t> ne);

// A tensor the mapping computed (reordered from the file), as float32 values.
void add_values(MappedModel& m, std::string hf_name, Shape shape, std::vector<float> values);

// The GGUF tensor `name` after checking that it exists with exactly `ne`; errors name the file
// and the tensor.
Expected<const GgufTensorInfo*> checked_ne(const GgufView& model, const std::string& name, const std::vector<uint64_t>& ne);

// One tensor as it is (ggml's ne reversed is the row-major shape) into `m` under `hf_name`: the
// file's bytes when the family can take its type (gguf_dtype: F32, F16, BF16 and the block types
// with kernels; a one-dimensional tensor only when F32, since families take small vectors as
// float32), float32 values otherwise.
Expected<void> copy_tensor(const GgufView& model, MappedModel& m, const std::string& gguf_name, std::string hf_name,
                           std::vector<uint64_t> ne);

// The ends every architecture shares, as llama.cpp names them: token_embd, output_norm and, unless
// the embedding is tied, output -> model.embed_tokens, model.norm, lm_head.
Expected<void> copy_ends(const GgufView& model, MappedModel& m, uint64_t hidden, uint64_t vocab);

// Layer l's two norms: attn_norm -> input_layernorm and `post_attention` (llama.cpp's name for the
// norm before the FFN, which differs between architectures) -> post_attention_layernorm.
Expected<void> copy_layer_norms(const GgufView& model, MappedModel& m, int l, uint64_t hidden, std::string_view post_attention);

// A stacked expert tensor, ne {in, out, experts} ([E, out, in] row-major, as llama.cpp's converter
// stacks transformers' per-expert [out, in] matrices), as one [out, in] tensor per expert named
// by `hf_pattern` with "{e}" replaced by the expert id (the hub checkpoints' layout): each
// expert's slice of the file, or float32 values as copy_tensor decides.
Expected<void> unstack_experts(const GgufView& model, MappedModel& m, const std::string& gguf_name,
                               const std::string& hf_pattern, uint64_t in, uint64_t out, uint64_t experts);

// [n, cols, rows] from [n, rows, cols] (row-major): each of the n matrices transposed.
std::vector<float> transpose_each(const std::vector<float>& v, uint64_t n, uint64_t rows, uint64_t cols);

// The vocabulary size: token_embd.weight's rows (a file converted without a tokenizer has no
// token list to count).
Expected<uint64_t> embedding_rows(const GgufView& model, const Keys& k);

// tokenizer.ggml.eos_token_id when present, checked to be a token id below `vocab`.
Expected<std::optional<int64_t>> eos_token_id(const Keys& k, uint64_t vocab);

// How an architecture's YaRN scaling reads in transformers' terms (rope_parameters.truncate), or
// that the mapping refuses it. `deepseek` is truncated YaRN with DeepSeek's mscale and
// mscale_all_dim (DeepSeek's attention multiplies its softmax scale by mscale(factor,
// mscale_all_dim)^2 and its rotation by mscale(factor, mscale) / mscale(factor, mscale_all_dim)):
// llama.cpp's converter writes "<arch>.rope.scaling.yarn_log_multiplier" as 0.1 * mscale_all_dim
// for the architectures it writes through DeepseekV2Model, and llama.cpp's graph leaves the
// rotation unscaled, which is transformers' reading when mscale equals mscale_all_dim; so both are
// that value (divided as float32, as llama.cpp divides it). A yarn_attn_factor other than 1, which
// llama.cpp multiplies into both and transformers' DeepSeek attention has no place for, is refused.
enum class Yarn { refuse, truncate, no_truncate, deepseek };

// config.json's rope_parameters from "<arch>.rope.freq_base" and "<arch>.rope.scaling.*": no
// scaling (absent or "none") is rope_type default; "yarn" as `yarn` says; any other is refused by
// name.
Expected<std::string> rope_parameters(const Keys& k, Yarn yarn);

class JsonObject;

// The fields every mapped config.json ends with: rms_norm_eps ("<arch>.attention.
// layer_norm_rms_epsilon"), tie_word_embeddings (whether output.weight is absent),
// max_position_embeddings ("<arch>.context_length"), rope_parameters (YaRN as `yarn` says) and,
// when the file names one, eos_token_id.
Expected<void> add_common_fields(JsonObject& j, const GgufView& model, const Keys& k, Yarn yarn, std::optional<int64_t> eos);

// The ids generation stops at, as the checkpoint's generation_config.json lists them: the file's
// eos id first, then tokenizer.ggml.eot_token_id and eom_token_id, then every control token whose
// text ends a turn or a reply in a chat format this toolkit knows (kEndOfGenerationTexts in
// host/toolkit/gguf_mapping.cpp); each once, each checked below `vocab`. A GGUF file keeps only
// one eos id, where a checkpoint's generation_config.json lists every id its chat format stops at.
// The chat format travels with the vocabulary and its template, not with the architecture (a
// fine-tune may chat in another format), so the table is a tokenizer fact shared by every family.
Expected<std::vector<int64_t>> end_of_generation_ids(const Keys& k, uint64_t vocab, std::optional<int64_t> eos);

// A mapping's result so far: the config.json `config_json(eos)` writes for the file's eos id
// (tokenizer.ggml.eos_token_id, checked below `vocab`), and a generation config holding the
// end-of-generation ids when there are any.
template <class ConfigJson>
Expected<MappedModel> mapped_config(const Keys& k, uint64_t vocab, ConfigJson&& config_json) {
    STORMO_TRY_ASSIGN(const std::optional<int64_t> eos, eos_token_id(k, vocab));
    STORMO_TRY_ASSIGN(const std::vector<int64_t> stops, end_of_generation_ids(k, vocab, eos));
    MappedModel m;
    STORMO_TRY_ASSIGN(m.config_json, config_json(eos));
    if (!stops.empty()) {
        std::string list;
        for (const int64_t id : stops) list += (list.empty() ? "" : ", ") + std::to_string(id);
        m.generation_config_json = "{\"eos_token_id\": [" + list + "]}";
    }
    return m;
}

// A JSON number that reads back as the same double.
std::string json_number(double v);

// A flat JSON object written field by field (the mapped config's keys and strings need no escapes).
class JsonObject {
public:
    JsonObject& integer(std::string_view key, uint64_t v) { return raw(key, std::to_string(v)); }
    JsonObject& number(std::string_view key, double v) { return raw(key, json_number(v)); }
    JsonObject& flag(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
    JsonObject& text(std::string_view key, std::string_view v);
    JsonObject& raw(std::string_view key, std::string_view json);
    std::string str() const { return "{" + body_ + "}"; }

private:
    std::string body_;
};

}  // namespace stormo::toolkit::gguf
