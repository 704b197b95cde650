// check_container_hashes: see container_check.hpp.
#include "model/container_check.hpp"

#include <algorithm>
#include <filesystem>

#include "model/container_manifest.hpp"
#include "stormo/quote.hpp"
#include "stormo/tensor.hpp"
#include "util/sha256.hpp"

namespace stormo {
namespace {

constexpr uint64_t kChunkBytes = uint64_t{16} << 20;

Expected<std::string> tensor_sha256(const ModelSource& source, const TensorInfo& t, AlignedBuffer& buffer) {
    STORMO_TRY_ASSIGN(auto hash, Sha256::create());
    for (uint64_t at = 0; at < t.nbytes;) {
        const uint64_t n = std::min<uint64_t>(buffer.size(), t.nbytes - at);
        STORMO_TRY(source.read(t, at, n, buffer.data()));
        STORMO_TRY(hash.update(buffer.data(), n));
        at += n;
    }
    return hash.finish();
}

}  // namespace

Expected<ContainerCheck> check_container_hashes(const std::string& dir, const ModelSource& source) {
    STORMO_TRY_ASSIGN(const ContainerManifest manifest, read_container_manifest(dir));
    ContainerCheck check;
    AlignedBuffer buffer(kChunkBytes, kContainerAlignment);
    for (const ContainerTensor& t : manifest.tensors) {
        const TensorInfo* info = source.find(t.name);
        if (info == nullptr) return fail(ErrorKind::internal, dir + ": tensor " + in_quotes(t.name) + " is not in the opened container");
        STORMO_TRY_ASSIGN(const std::string found, tensor_sha256(source, *info, buffer));
        if (found != t.sha256) check.mismatches.push_back({"tensor " + in_quotes(t.name), t.sha256, found});
        ++check.tensors;
        check.bytes += info->nbytes;
    }
    for (const ContainerFile& f : manifest.files) {
        const std::string path = (std::filesystem::path(dir) / f.name).string();
        STORMO_TRY_ASSIGN(const std::string found, sha256_file(path));
        if (found != f.sha256) check.mismatches.push_back({"file " + f.name, f.sha256, found});
        ++check.files;
    }
    return check;
}

}  // namespace stormo
