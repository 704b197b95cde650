// The tokenizer and chat template a GGUF file carries (tokenizer.ggml.*, tokenizer.chat_template)
// against the same references the tokenizer.json ones pass: vocabulary-only GGUF files that
// llama.cpp's converter wrote from the reference tokenizers (tests/data/gguf/README.md) must encode,
// decode and render every reference case as transformers did.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf_writer.hpp"
#include "jinja/chat_template.hpp"
#include "jinja/chat_value.hpp"
#include "model/gguf_model_view.hpp"
#include "model/gguf_split.hpp"
#include "safetensors_writer.hpp"
#include "stormo/toolkit/gguf_mapping.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer_reference_support.hpp"

namespace stormo {
namespace {

using ::testing::HasSubstr;
using text::ChatTemplate;
using text::Tokenizer;
using text::Value;

std::string vocab_gguf(const std::string& name) { return std::string(STORMO_GGUF_UNPACKED_DIR) + "/" + name + "-vocab.gguf"; }
std::string reference_path(const std::string& name, const std::string& file) {
    return test::kTokenizerData + "/" + name + "/reference/" + file;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// llama.cpp's converter writes an added token as a control token when tokenizer.json says it is
// special or when it merely looks special (<|...|>, does_token_look_special): Qwen3's six FIM and
// repository tokens, which tokenizer.json lists with special: false, become control tokens in
// every GGUF file of the model, and the file keeps nothing that tells them apart. Decoding with
// special tokens skipped therefore drops them too, as llama.cpp does.
size_t relabeled_by_converter(const std::string& name) { return name == "qwen3" ? 6 : 0; }

class GgufTokenizer : public ::testing::TestWithParam<std::string> {
protected:
    // The ids the GGUF tokenizer calls special and the tokenizer.json one does not.
    static std::vector<int32_t> relabeled(const Tokenizer& gguf, const Tokenizer& json) {
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < static_cast<int32_t>(std::min(gguf.size(), json.size())); ++id)
            if (gguf.is_special(id) != json.is_special(id)) ids.push_back(id);
        return ids;
    }

    // Loaded once per suite: each takes a noticeable fraction of a second.
    static const Tokenizer& from_gguf(const std::string& name) {
        static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
        auto& slot = loaded[name];
        if (!slot) {
            auto t = Tokenizer::load(vocab_gguf(name));
            EXPECT_TRUE(t) << t.error().message;
            if (!t) return test::reference_tokenizer(name);  // the expectations then fail by content
            slot = std::make_unique<Tokenizer>(std::move(*t));
        }
        return *slot;
    }
};

TEST_P(GgufTokenizer, EncodesEveryReferenceCaseAsTheReference) {
    const Tokenizer& tok = from_gguf(GetParam());
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference_path(GetParam(), "encode.json")).value().get_array().value();
    size_t checked = 0;
    for (simdjson::dom::element c : cases) {
        const std::string id = test::json_text(c["id"]);
        const std::string text = test::json_text(c["text"]);
        EXPECT_EQ(test::ids_to_string(tok.encode(text, true)), test::ids_to_string(test::json_ids(c["ids"])))
            << GetParam() << " case " << id << " (specials matched)";
        EXPECT_EQ(test::ids_to_string(tok.encode(text, false)), test::ids_to_string(test::json_ids(c["ids_plain"])))
            << GetParam() << " case " << id << " (plain)";
        ++checked;
    }
    EXPECT_GT(checked, 200u);
}

// Every case decodes exactly; with special tokens skipped, exactly too, except that the tokens
// the converter relabeled as control (see above) are skipped as well.
TEST_P(GgufTokenizer, DecodesEveryReferenceCaseAsTheReference) {
    const Tokenizer& tok = from_gguf(GetParam());
    const std::vector<int32_t> relabeled_ids = relabeled(tok, test::reference_tokenizer(GetParam()));
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference_path(GetParam(), "decode.json")).value().get_array().value();
    size_t checked = 0, touched = 0;
    for (simdjson::dom::element c : cases) {
        const auto ids = test::json_ids(c["ids"]);
        const auto plain = tok.decode(ids, false);
        const auto skipped = tok.decode(ids, true);
        ASSERT_TRUE(plain && skipped) << GetParam() << " case " << test::json_text(c["id"]);
        EXPECT_EQ(*plain, test::json_text(c["text"])) << GetParam() << " case " << test::json_text(c["id"]);
        // The reference's text, less the relabeled tokens: the tokenizer.json tokenizer (which
        // passes the same case, TokenizerReference) decoding the ids without them.
        std::vector<int32_t> kept;
        for (int32_t id : ids)
            if (std::find(relabeled_ids.begin(), relabeled_ids.end(), id) == relabeled_ids.end()) kept.push_back(id);
        touched += ids.size() - kept.size();
        const auto expected = test::reference_tokenizer(GetParam()).decode(kept, true);
        ASSERT_TRUE(expected);
        if (kept.size() == ids.size()) {
            EXPECT_EQ(*expected, test::json_text(c["text_skip_special"])) << GetParam() << " case " << test::json_text(c["id"]);
        }
        EXPECT_EQ(*skipped, *expected) << GetParam() << " case " << test::json_text(c["id"]);
        ++checked;
    }
    EXPECT_GT(checked, 200u);
    std::printf("[ %s ] %zu decode cases, %zu ids among them relabeled as control by the converter\n", GetParam().c_str(),
                checked, touched);
}

// The same ids with the same texts as the tokenizer.json one, id by id, and the same special
// ones but for the converter's relabeled control tokens, each of which looks special.
TEST_P(GgufTokenizer, HasTheTokenizerJsonsVocabulary) {
    const Tokenizer& tok = from_gguf(GetParam());
    const Tokenizer& json = test::reference_tokenizer(GetParam());
    ASSERT_EQ(tok.size(), json.size());
    size_t differ = 0;
    for (int32_t id = 0; id < static_cast<int32_t>(tok.size()); ++id) {
        const auto a = tok.token_bytes(id), b = json.token_bytes(id);
        if ((a.has_value() != b.has_value() || (a && *a != *b)) && ++differ <= 5) ADD_FAILURE() << GetParam() << " id " << id << " differs";
    }
    EXPECT_EQ(differ, 0u);
    const std::vector<int32_t> relabeled_ids = relabeled(tok, json);
    EXPECT_EQ(relabeled_ids.size(), relabeled_by_converter(GetParam()));
    for (int32_t id : relabeled_ids) {
        const std::string text = *tok.token_bytes(id);
        EXPECT_TRUE(tok.is_special(id) && !json.is_special(id)) << id;
        EXPECT_TRUE(text.starts_with("<|") && text.ends_with("|>")) << id << " " << text;
    }
}

TEST_P(GgufTokenizer, ChatTemplateRendersEveryReferenceCase) {
    auto chat_template = ChatTemplate::load(vocab_gguf(GetParam()));
    ASSERT_TRUE(chat_template) << chat_template.error().message;
    auto cases = text::parse_json_value(read_text(reference_path(GetParam(), "chat.json")), "chat.json");
    ASSERT_TRUE(cases) << cases.error().message;
    size_t checked = 0;
    for (const Value& c : cases->as_list()) {
        auto rendered = chat_template->render(*c.find("messages"), *c.find("options"));
        ASSERT_TRUE(rendered) << GetParam() << " case " << c.find("name")->as_string() << ": " << rendered.error().message;
        EXPECT_EQ(*rendered, c.find("text")->as_string()) << GetParam() << " case " << c.find("name")->as_string();
        ++checked;
    }
    EXPECT_EQ(checked, 7u);
    // The special tokens the tokenizer_config.json names, here from the ids the GGUF keys name.
    auto from_dir = ChatTemplate::load(test::kTokenizerData + "/" + GetParam());
    ASSERT_TRUE(from_dir) << from_dir.error().message;
    EXPECT_EQ(chat_template->eos_token(), from_dir->eos_token());
}

// A GGUF file keeps one eos id; generation must still stop where the checkpoint's
// generation_config.json says: gpt-oss's lists 200002 <|return|> and 199999 <|endoftext|> (the
// reference tokenizer's generation_config.json), Qwen3-30B-A3B's 151645 <|im_end|> and 151643
// <|endoftext|>. The eos id comes first, as the files' tokenizer.ggml.eos_token_id.
TEST_P(GgufTokenizer, EndsGenerationWhereTheCheckpointsGenerationConfigDoes) {
    auto model = GgufModel::open(vocab_gguf(GetParam()));
    ASSERT_TRUE(model) << model.error().message;
    const GgufModelView view(*model, "");
    const toolkit::gguf::Keys keys(view, "");
    const uint64_t vocab = from_gguf(GetParam()).size();
    auto eos = toolkit::gguf::eos_token_id(keys, vocab);
    ASSERT_TRUE(eos) << eos.error().message;
    auto ids = toolkit::gguf::end_of_generation_ids(keys, vocab, *eos);
    ASSERT_TRUE(ids) << ids.error().message;
    const std::vector<int64_t> expected =
        GetParam() == "gpt-oss" ? std::vector<int64_t>{200002, 199999} : std::vector<int64_t>{151645, 151643};
    EXPECT_EQ(*ids, expected);
}

// A GGUF header without tensors or a file, as a family's mapping sees a model.
class MetadataOnly final : public GgufView {
public:
    explicit MetadataOnly(const GgufHeader& h) : h_(h) {}
    const std::string& path() const override { return h_.path; }
    const std::string& architecture() const override { return arch_; }
    const GgufValue* value(std::string_view key) const override { return h_.find(key); }
    const std::vector<const GgufTensorInfo*>& tensors() const override { return none_; }
    const GgufTensorInfo* tensor(std::string_view) const override { return nullptr; }
    const std::string& file_of(const GgufTensorInfo&) const override { return h_.path; }
    std::span<const std::byte> bytes(const GgufTensorInfo&) const override { return {}; }

private:
    const GgufHeader& h_;
    std::string arch_;
    std::vector<const GgufTensorInfo*> none_;
};

// An end-of-turn or end-of-message id the vocabulary does not hold is refused, naming the file
// and the key, rather than stopping on a token that can never come.
TEST(GgufEndOfGeneration, AnIdOutsideTheVocabularyNamesTheFileAndTheKey) {
    for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
        const uint32_t id = 64;  // one past a 64-token vocabulary
        GgufHeader header;
        header.path = "/models/tiny.gguf";
        GgufValue value;
        value.type = GgufValueType::u32;
        value.raw = std::as_bytes(std::span<const uint32_t>(&id, 1));
        header.metadata.emplace(key, value);
        const MetadataOnly view(header);
        const toolkit::gguf::Keys keys(view, "");
        auto ids = toolkit::gguf::end_of_generation_ids(keys, 64, std::optional<int64_t>(2));
        ASSERT_FALSE(ids) << key;
        EXPECT_EQ(ids.error().message, std::string("/models/tiny.gguf: ") + key + " must be a token id below 64");
    }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GgufTokenizer, ::testing::Values("gpt-oss", "qwen3"));

// `bytes` (a vocabulary-only GGUF file: no tensor offsets to move) with tokenizer.ggml.pre set to `pre`.
std::string with_pre(const std::string& bytes, std::string_view pre) {
    const std::string key = "tokenizer.ggml.pre";
    const size_t value = bytes.find(key) + key.size() + 4;  // after the key and its type id
    uint64_t length = 0;
    std::memcpy(&length, bytes.data() + value, 8);
    std::string out = bytes.substr(0, value);
    test::put_u64(out, pre.size());
    out += pre;
    return out + bytes.substr(value + 8 + length);
}

// `from` replaced by `to` exactly once in `text`.
std::string replaced_once(const std::string& text, std::string_view from, std::string_view to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
    if (at == std::string::npos) return text;
    return text.substr(0, at) + std::string(to) + text.substr(at + from.size());
}

// GLM's files say "glm4" (older ones "chatglm-bpe"): Llama 3's split regex, no normalizer, merges
// applied to every word. No GLM tokenizer is among the references, so the name is checked on the
// gpt-oss vocabulary: its converter file with the name changed must encode every reference text
// exactly as its tokenizer.json does with that regex in place of o200k's and ignore_merges off.
// The two regexes split differently (o200k splits "camelCase" words, GLM's does not), so the
// check also counts the cases whose ids changed.
TEST(GgufTokenizerPreNames, Glm4IsLlama3sSplitWithoutNormalizer) {
    test::TempDir dir;
    const std::string source = test::kTokenizerData + "/gpt-oss";
    for (const char* f : {"tokenizer_config.json", "special_tokens_map.json"})
        std::filesystem::copy_file(source + "/" + f, dir.file(f));
    std::string json = read_text(source + "/tokenizer.json");
    const std::string o200k =
        R"([^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";
    const std::string glm4 =
        R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";
    json = replaced_once(replaced_once(json, o200k, glm4), R"("ignore_merges": true)", R"("ignore_merges": false)");
    std::ofstream(dir.file("tokenizer.json"), std::ios::binary) << json;
    auto reference = Tokenizer::load(dir.path());
    ASSERT_TRUE(reference) << reference.error().message;

    const std::string vocab = read_text(vocab_gguf("gpt-oss"));
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference_path("gpt-oss", "encode.json")).value().get_array().value();
    for (const char* name : {"glm4", "chatglm-bpe"}) {
        std::ofstream(dir.file(std::string(name) + ".gguf"), std::ios::binary) << with_pre(vocab, name);
        auto tok = Tokenizer::load(dir.file(std::string(name) + ".gguf"));
        ASSERT_TRUE(tok) << tok.error().message;
        size_t checked = 0, changed = 0;
        for (simdjson::dom::element c : cases) {
            const std::string text = test::json_text(c["text"]);
            for (bool specials : {true, false}) {
                const auto ids = tok->encode(text, specials);
                EXPECT_EQ(test::ids_to_string(ids), test::ids_to_string(reference->encode(text, specials)))
                    << name << " case " << test::json_text(c["id"]) << (specials ? " (specials matched)" : " (plain)");
                if (test::ids_to_string(ids) != test::ids_to_string(test::json_ids(c[specials ? "ids" : "ids_plain"]))) ++changed;
            }
            ++checked;
        }
        EXPECT_GT(checked, 200u);
        EXPECT_GT(changed, 0u) << "no case tells GLM's split from o200k's";
        std::printf("[ %s ] %zu cases, %zu encodings differ from o200k's\n", name, checked, changed);
    }
}

TEST(GgufTokenizerErrors, RefusesFilesWithoutAUsableTokenizer) {
    test::TempDir dir;
    test::GgufBuilder none;
    none.kv_str("general.architecture", "gpt-oss").kv_str("tokenizer.ggml.model", "none");
    none.write(dir.file("none.gguf"));
    auto n = Tokenizer::load(dir.file("none.gguf"));
    ASSERT_FALSE(n);
    EXPECT_THAT(n.error().message, HasSubstr("none.gguf: the file holds no tokenizer"));

    test::GgufBuilder spm;
    spm.kv_str("tokenizer.ggml.model", "llama");
    spm.write(dir.file("spm.gguf"));
    auto s = Tokenizer::load(dir.file("spm.gguf"));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().kind, ErrorKind::unsupported);
    EXPECT_THAT(s.error().message, HasSubstr("tokenizer.ggml.model \"llama\" is not supported"));

    test::GgufBuilder pre;
    pre.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "falcon");
    pre.write(dir.file("pre.gguf"));
    auto p = Tokenizer::load(dir.file("pre.gguf"));
    ASSERT_FALSE(p);
    EXPECT_THAT(p.error().message, HasSubstr("tokenizer.ggml.pre \"falcon\" is not supported (known: gpt-4o, qwen2, glm4, chatglm-bpe)"));

    test::GgufBuilder lengths;
    lengths.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "qwen2");
    lengths.kv_strs("tokenizer.ggml.tokens", {"a", "b"}).kv_array<int32_t>("tokenizer.ggml.token_type", test::kI32, {1});
    lengths.kv_strs("tokenizer.ggml.merges", {});
    lengths.write(dir.file("lengths.gguf"));
    auto l = Tokenizer::load(dir.file("lengths.gguf"));
    ASSERT_FALSE(l);
    EXPECT_THAT(l.error().message, HasSubstr("tokenizer.ggml.token_type has 1 entries, tokenizer.ggml.tokens 2"));

    test::GgufBuilder merge;
    merge.kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "qwen2");
    merge.kv_strs("tokenizer.ggml.tokens", {"a", "b"}).kv_array<int32_t>("tokenizer.ggml.token_type", test::kI32, {1, 1});
    merge.kv_strs("tokenizer.ggml.merges", {"a b"});
    merge.write(dir.file("merge.gguf"));
    auto m = Tokenizer::load(dir.file("merge.gguf"));
    ASSERT_FALSE(m);
    EXPECT_THAT(m.error().message, HasSubstr("merge.gguf: tokenizer.ggml.merges[0]: token 'ab' is not in model.vocab"));

    auto t = ChatTemplate::load(dir.file("none.gguf"));
    ASSERT_FALSE(t);
    EXPECT_THAT(t.error().message, HasSubstr("none.gguf: no chat template (tokenizer.chat_template is missing)"));
}

}  // namespace
}  // namespace stormo
