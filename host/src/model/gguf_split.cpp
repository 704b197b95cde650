// GGUF split models; see gguf_split.hpp.
#include "model/gguf_split.hpp"

#include <cstdio>

#include "stormo/quote.hpp"

namespace stormo {
namespace {

constexpr std::string_view kSplitNo = "split.no";
constexpr std::string_view kSplitCount = "split.count";
constexpr std::string_view kSplitTensors = "split.tensors.count";
constexpr int kMaxParts = 99999;  // five digits in the name

struct SplitName {
    std::string prefix;
    int part = 0;   // from 1
    int count = 0;
};

// "<prefix>-NNNNN-of-MMMMM.gguf", or nothing when the path does not end that way.
std::optional<SplitName> parse_split_name(std::string_view path) {
    constexpr std::string_view kTail = ".gguf";
    constexpr size_t kDigits = 5, kFormLength = 1 + kDigits + 4 + kDigits;  // "-NNNNN-of-MMMMM"
    if (path.size() < kTail.size() + kFormLength || !path.ends_with(kTail)) return std::nullopt;
    const std::string_view form = path.substr(path.size() - kTail.size() - kFormLength, kFormLength);
    if (form[0] != '-' || form.substr(6, 4) != "-of-") return std::nullopt;
    auto number = [](std::string_view digits) -> std::optional<int> {
        int v = 0;
        for (char c : digits) {
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + (c - '0');
        }
        return v;
    };
    auto part = number(form.substr(1, kDigits));
    auto count = number(form.substr(10, kDigits));
    if (!part || !count) return std::nullopt;
    return SplitName{std::string(path.substr(0, path.size() - kTail.size() - kFormLength)), *part, *count};
}

// A split key of the type llama.cpp writes, or an error naming the file and the key.
Expected<int64_t> split_key(const GgufHeader& h, std::string_view key, GgufValueType type) {
    const GgufValue* v = h.find(key);
    if (v == nullptr) return fail(ErrorKind::missing, h.path + ": key " + in_quotes(key) + " is missing (a split model's parts all have it)");
    if (v->type != type)
        return fail(ErrorKind::format, h.path + ": key " + in_quotes(key) + " must be " +
                                           std::string(gguf_value_type_name(type)) + ", found " + v->type_name());
    return *v->as_int();
}

}  // namespace

std::string gguf_split_path(std::string_view prefix, int part, int count) {
    char tail[32];
    std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", part, count);
    return std::string(prefix) + tail;
}

std::optional<std::string> gguf_split_prefix(std::string_view path) {
    auto name = parse_split_name(path);
    if (!name) return std::nullopt;
    return std::move(name->prefix);
}

const GgufTensorRef* GgufModel::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Expected<GgufModel> GgufModel::open(const std::string& path) {
    GgufModel model;
    STORMO_TRY_ASSIGN(auto first, GgufFile::open(path));
    const GgufHeader& h = first.header();
    const auto name = parse_split_name(path);

    int count = 1;
    if (h.find(kSplitCount) != nullptr) {
        STORMO_TRY_ASSIGN(const int64_t n, split_key(h, kSplitCount, GgufValueType::u16));
        count = static_cast<int>(n);
    }
    if (count < 1) return fail(ErrorKind::format, path + ": split.count is 0");
    if (count == 1) {
        model.parts_.push_back(std::make_unique<GgufFile>(std::move(first)));
    } else {
        if (!name || name->count != count)
            return fail(ErrorKind::format, path + ": split.count says the model has " + std::to_string(count) +
                                               " parts, but the file is not named <prefix>-NNNNN-of-" +
                                               (count <= kMaxParts ? gguf_split_path("", 1, count).substr(10, 5) : "?") +
                                               ".gguf as llama.cpp names them");
        // Every part, opened in order (the one given is opened again if it is not the first: simpler
        // than moving it into place, and the mapping is shared by the OS).
        for (int i = 1; i <= count; ++i) {
            const std::string part_path = gguf_split_path(name->prefix, i, count);
            STORMO_TRY_ASSIGN(auto part, GgufFile::open(part_path));
            const GgufHeader& ph = part.header();
            STORMO_TRY_ASSIGN(const int64_t no, split_key(ph, kSplitNo, GgufValueType::u16));
            STORMO_TRY_ASSIGN(const int64_t n, split_key(ph, kSplitCount, GgufValueType::u16));
            if (no != i - 1)
                return fail(ErrorKind::format, part_path + ": split.no is " + std::to_string(no) + " but the name says part " +
                                                   std::to_string(i) + " (split.no " + std::to_string(i - 1) + ")");
            if (n != count)
                return fail(ErrorKind::format, part_path + ": split.count is " + std::to_string(n) + " but " + path +
                                                   " says " + std::to_string(count));
            model.parts_.push_back(std::make_unique<GgufFile>(std::move(part)));
        }
    }

    for (const auto& part : model.parts_)
        for (const GgufTensorInfo& t : part->header().tensors) {
            auto [it, inserted] = model.by_name_.emplace(t.name, model.tensors_.size());
            if (!inserted)
                return fail(ErrorKind::format, "tensor " + in_quotes(t.name) + " appears in both " +
                                                   model.tensors_[it->second].file->path() + " and " + part->path());
            model.tensors_.push_back(GgufTensorRef{part.get(), &t});
        }

    if (count > 1) {
        const GgufHeader& head = model.parts_.front()->header();
        STORMO_TRY_ASSIGN(const int64_t total, split_key(head, kSplitTensors, GgufValueType::i32));
        if (total < 0 || static_cast<uint64_t>(total) != model.tensors_.size())
            return fail(ErrorKind::format, head.path + ": split.tensors.count is " + std::to_string(total) + " but the " +
                                               std::to_string(count) + " parts hold " +
                                               std::to_string(model.tensors_.size()) + " tensors");
    }
    return model;
}

}  // namespace stormo
