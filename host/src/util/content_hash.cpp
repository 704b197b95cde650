#include "util/content_hash.hpp"

#include <xxhash.h>

#include <new>

namespace stormo {

struct ContentHash::State {
    State() : xxh(XXH3_createState()) {
        if (xxh == nullptr) throw std::bad_alloc();
        XXH3_128bits_reset(xxh);
    }
    ~State() { XXH3_freeState(xxh); }
    XXH3_state_t* xxh;
};

ContentHash::ContentHash() : state_(std::make_unique<State>()) {}
ContentHash::~ContentHash() = default;
ContentHash::ContentHash(ContentHash&&) noexcept = default;
ContentHash& ContentHash::operator=(ContentHash&&) noexcept = default;

ContentHash& ContentHash::update(const void* data, size_t size) {
    XXH3_128bits_update(state_->xxh, data, size);
    return *this;
}

ContentHash& ContentHash::update_u64(uint64_t value) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
    return update(bytes, sizeof bytes);
}

std::array<uint8_t, 16> ContentHash::digest() const {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_->xxh));
    std::array<uint8_t, 16> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = canonical.digest[i];
    return out;
}

std::string ContentHash::hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (uint8_t b : digest()) {
        out += kDigits[b >> 4];
        out += kDigits[b & 15];
    }
    return out;
}

uint64_t checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace stormo
