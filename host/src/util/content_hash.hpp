#pragma once
// XXH3 through Debian's libxxhash: the checksums of session files and prompt-cache blocks, and the
// keys of cached prefixes. It hashes at memory speed (tens of GB/s), so checking a file costs
// nothing beside reading it; SHA-256 (util/sha256.hpp) runs at about 0.5 GB/s here and would make
// a load slower than the disk. Not a defence against someone forging a file on purpose: a file the
// user points at is trusted as much as the model directory.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "stormo/export.hpp"

namespace stormo {

// Incremental XXH3-128.
class STORMO_API ContentHash {
public:
    ContentHash();
    ~ContentHash();
    ContentHash(ContentHash&&) noexcept;
    ContentHash& operator=(ContentHash&&) noexcept;
    ContentHash(const ContentHash&) = delete;
    ContentHash& operator=(const ContentHash&) = delete;

    ContentHash& update(const void* data, size_t size);
    ContentHash& update(std::string_view text) { return update(text.data(), text.size()); }
    // A number, in a fixed width and byte order, so the same values hash the same on every machine.
    ContentHash& update_u64(uint64_t value);
    // The digest so far (more may be added afterwards), as 32 lowercase hex digits.
    std::string hex() const;
    std::array<uint8_t, 16> digest() const;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// XXH3-64 of one buffer: a section's checksum.
STORMO_API uint64_t checksum64(const void* data, size_t size);

}  // namespace stormo
