// SHA-256 via OpenSSL EVP; see sha256.hpp.
#include "util/sha256.hpp"

#include <algorithm>
#include <vector>

#include <openssl/evp.h>

#include "util/file.hpp"

namespace stormo {
namespace {

EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

std::string to_hex(const unsigned char* digest, unsigned int size) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(size * 2u);
    for (unsigned int i = 0; i < size; ++i) {
        hex.push_back(kDigits[digest[i] >> 4]);
        hex.push_back(kDigits[digest[i] & 0x0F]);
    }
    return hex;
}

}  // namespace

void Sha256::ContextDeleter::operator()(void* ctx) const { EVP_MD_CTX_free(as_ctx(ctx)); }

Expected<Sha256> Sha256::create() {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr) return fail(ErrorKind::resource, "sha256: cannot allocate an OpenSSL digest context");
    Sha256 hasher(ctx);
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
        return fail(ErrorKind::internal, "sha256: OpenSSL EVP_DigestInit_ex failed");
    return hasher;
}

Expected<void> Sha256::update(const void* data, size_t size) {
    if (!ctx_) return fail(ErrorKind::internal, "sha256: update after finish");
    if (EVP_DigestUpdate(as_ctx(ctx_.get()), data, size) != 1)
        return fail(ErrorKind::internal, "sha256: OpenSSL EVP_DigestUpdate failed");
    return {};
}

Expected<std::string> Sha256::finish() {
    if (!ctx_) return fail(ErrorKind::internal, "sha256: finish called twice");
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    const int ok = EVP_DigestFinal_ex(as_ctx(ctx_.get()), digest, &size);
    ctx_.reset();
    if (ok != 1) return fail(ErrorKind::internal, "sha256: OpenSSL EVP_DigestFinal_ex failed");
    return to_hex(digest, size);
}

Expected<std::string> sha256_hex(const void* data, size_t size) {
    STORMO_TRY_ASSIGN(auto hasher, Sha256::create());
    STORMO_TRY(hasher.update(data, size));
    return hasher.finish();
}

Expected<std::string> sha256_file(const std::string& path) {
    STORMO_TRY_ASSIGN(auto file, FileDescriptor::open_read(path));
    auto size = file.size(path);
    if (!size) return tl::unexpected(size.error());
    STORMO_TRY_ASSIGN(auto hasher, Sha256::create());
    std::vector<std::byte> chunk(size_t{4} << 20);
    for (uint64_t offset = 0; offset < *size;) {
        const uint64_t n = std::min<uint64_t>(chunk.size(), *size - offset);
        STORMO_TRY(pread_exact(file.get(), chunk.data(), n, offset, path));
        STORMO_TRY(hasher.update(chunk.data(), n));
        offset += n;
    }
    return hasher.finish();
}

}  // namespace stormo
