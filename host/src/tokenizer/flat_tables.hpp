#pragma once
// Open-addressing hash tables for the BPE model's two hot lookups: a token's text to its id and a
// pair of ids to their merge. One flat array each, linear probing, built once and then read-only.
// std::unordered_map's node per entry costs a cache miss and an allocation per lookup and insert:
// with 200k tokens and 450k merges that dominated both loading and encoding.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stormo::text {

namespace detail {
// A power of two with the table at most half full.
inline size_t table_capacity(size_t entries) {
    size_t cap = 16;
    while (cap < entries * 2) cap <<= 1;
    return cap;
}
// Spreads a 64-bit key over the table (the pair keys' low bits alone cluster).
inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}
}  // namespace detail

// Token text -> id. The texts live in the caller's vector (indexed by id), which must outlive
// the index and not change; the index keeps the vector's buffer, which moving the vector keeps.
class TokenIndex {
public:
    TokenIndex() = default;
    explicit TokenIndex(const std::vector<std::string>& tokens) : tokens_(tokens.data()) {
        size_t n = 0;
        for (const std::string& t : tokens) n += t.empty() ? 0 : 1;
        slots_.assign(detail::table_capacity(n), Slot{});
        mask_ = slots_.size() - 1;
        for (size_t id = 0; id < tokens.size(); ++id)
            if (!tokens[id].empty()) insert(tokens[id], static_cast<int32_t>(id));
    }

    std::optional<int32_t> find(std::string_view text) const {
        if (slots_.empty()) return std::nullopt;
        const uint64_t h = hash(text);
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.id < 0) return std::nullopt;
            if (s.hash == h && tokens_[s.id] == text) return s.id;
        }
    }

private:
    struct Slot {
        uint64_t hash = 0;
        int32_t id = -1;
    };
    static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
    // A text listed under two ids keeps the first id.
    void insert(std::string_view text, int32_t id) {
        const uint64_t h = hash(text);
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.id < 0) {
                s = Slot{h, id};
                return;
            }
            if (s.hash == h && tokens_[s.id] == text) return;
        }
    }
    const std::string* tokens_ = nullptr;
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

// (left id, right id) -> the merge's rank and the id it makes.
class MergeTable {
public:
    struct Merge {
        int32_t rank = -1;
        int32_t new_id = -1;
    };
    MergeTable() = default;
    explicit MergeTable(size_t expected) : slots_(detail::table_capacity(expected)), mask_(slots_.size() - 1) {}

    // A pair listed again replaces the earlier entry, as the reference's map does.
    void insert_or_assign(int32_t a, int32_t b, Merge m) {
        const uint64_t k = key(a, b);
        for (size_t i = detail::mix(k) & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.merge.rank < 0 || s.key == k) {
                s = Slot{k, m};
                return;
            }
        }
    }
    const Merge* find(int32_t a, int32_t b) const {
        if (slots_.empty()) return nullptr;
        const uint64_t k = key(a, b);
        for (size_t i = detail::mix(k) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.merge.rank < 0) return nullptr;
            if (s.key == k) return &s.merge;
        }
    }

private:
    static uint64_t key(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    struct Slot {
        uint64_t key = 0;
        Merge merge;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

}  // namespace stormo::text
