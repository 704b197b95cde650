#pragma once
// SHA-256 through OpenSSL's EVP interface, as lowercase hex (the form manifests and hubs use).
#include <cstddef>
#include <memory>
#include <string>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// Incremental hashing, for data that arrives in pieces (a tensor read in chunks).
class STORMO_API Sha256 {
public:
    static Expected<Sha256> create();
    Expected<void> update(const void* data, size_t size);
    Expected<std::string> finish();  // hex digest; the object is spent afterwards

private:
    struct ContextDeleter {
        void operator()(void* ctx) const;
    };
    explicit Sha256(void* ctx) : ctx_(ctx) {}
    std::unique_ptr<void, ContextDeleter> ctx_;
};

STORMO_API Expected<std::string> sha256_hex(const void* data, size_t size);

// Hashes a whole file, streaming it in chunks.
STORMO_API Expected<std::string> sha256_file(const std::string& path);

}  // namespace stormo
