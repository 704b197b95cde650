#pragma once
// A GGUF file of the out-of-tree toy family's own architecture, "toy" (tests/out_of_tree_plugin/
// toy_gguf.cpp): a two-layer dense decoder of random F32 weights under llama.cpp's tensor names,
// with a byte-level vocabulary (every byte a token, no merges) and a ChatML template, so that
// `stormo run` and `stormo generate` have all they need from the file alone.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gguf_writer.hpp"

namespace stormo::test {

// GPT-2's byte-level alphabet: byte b as the UTF-8 of the code point that stands for it.
inline std::vector<std::string> byte_level_tokens() {
    std::vector<std::string> tokens(256);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        const int cp = printable ? b : next++;
        std::string& s = tokens[static_cast<size_t>(b)];
        if (cp < 0x80) s += static_cast<char>(cp);
        else {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    return tokens;
}

// n float32 values in [-scale, scale), the same every run.
inline std::string random_f32(size_t n, float scale, uint32_t seed) {
    std::string bytes(n * sizeof(float), '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        const float v = (static_cast<float>(x >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
        std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
    }
    return bytes;
}

inline std::string ones_f32(size_t n) {
    std::string bytes(n * sizeof(float), '\0');
    const float one = 1.0f;
    for (size_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * sizeof(float), &one, sizeof one);
    return bytes;
}

inline constexpr uint32_t kToyVocab = 259;  // 256 bytes, <|endoftext|>, <|im_start|>, <|im_end|>

inline void write_toy_gguf(const std::string& path) {
    constexpr uint64_t H = 16, I = 32, layers = 2, V = kToyVocab;
    constexpr uint32_t kGgmlF32 = 0;  // ggml's type id
    GgufBuilder g;
    g.kv_str("general.architecture", "toy");
    g.kv_u32("toy.embedding_length", H).kv_u32("toy.block_count", layers).kv_u32("toy.attention.head_count", 2);
    g.kv_u32("toy.feed_forward_length", I).kv_u32("toy.context_length", 4096);
    g.kv_f32("toy.attention.layer_norm_rms_epsilon", 1e-5f).kv_f32("toy.rope.freq_base", 10000.0f);
    std::vector<std::string> tokens = byte_level_tokens();
    std::vector<int32_t> types(256, 1);
    for (const char* control : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.push_back(control);
        types.push_back(3);
    }
    g.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "qwen2");
    g.kv_strs("tokenizer.ggml.tokens", tokens).kv_array<int32_t>("tokenizer.ggml.token_type", kI32, types);
    g.kv_u32("tokenizer.ggml.eos_token_id", V - 1);
    g.kv_str("tokenizer.chat_template",
             "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    uint32_t seed = 1;
    auto matrix = [&](const std::string& name, uint64_t in, uint64_t out) {
        g.tensor({name, kGgmlF32, {in, out}, random_f32(in * out, 0.5f, seed++)});
    };
    matrix("token_embd.weight", H, V);
    g.tensor({"output_norm.weight", kGgmlF32, {H}, ones_f32(H)});
    for (int l = 0; l < static_cast<int>(layers); ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        g.tensor({b + "attn_norm.weight", kGgmlF32, {H}, ones_f32(H)});
        g.tensor({b + "ffn_norm.weight", kGgmlF32, {H}, ones_f32(H)});
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) matrix(b + m + ".weight", H, H);
        matrix(b + "ffn_gate.weight", H, I);
        matrix(b + "ffn_up.weight", H, I);
        matrix(b + "ffn_down.weight", I, H);
    }
    g.write(path);
}

}  // namespace stormo::test
