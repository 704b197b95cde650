// read_model_text and read_tokenizer_files: see model_text_files.hpp.
#include "model/model_text_files.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "model/container_manifest.hpp"
#include "model/gguf_split.hpp"
#include "model/model_path.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

// Caps far above any real file of the kind (a stray /dev/zero must not grow memory without bound).
constexpr uint64_t kTokenizerJsonCap = uint64_t{256} << 20;
constexpr uint64_t kTokenizerConfigCap = uint64_t{64} << 20;  // some list every added token
constexpr uint64_t kChatTemplateCap = uint64_t{4} << 20;

// A regular file no larger than `cap`; `kind` names the file's role in the error for a larger one.
Expected<std::string> read_capped(const std::string& name, uint64_t cap, const std::string& kind) {
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0) {
        const int e = errno;
        return fail(e == ENOENT ? ErrorKind::missing : ErrorKind::io, name + ": " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) return fail(ErrorKind::invalid_argument, name + ": not a regular file");
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(name));
    STORMO_TRY_ASSIGN(const uint64_t size, fd.size(name));
    if (size > cap)
        return fail(ErrorKind::resource, name + ": " + std::to_string(size) + " bytes, over the " + std::to_string(cap >> 20) +
                                             " MiB limit for " + kind);
    std::string bytes(size, '\0');
    if (size > 0) STORMO_TRY(pread_exact(fd.get(), bytes.data(), size, 0, name));
    return bytes;
}

text::TextFile read_text(const fs::path& path, uint64_t cap, const std::string& kind) {
    return text::TextFile{path.string(), read_capped(path.string(), cap, kind)};
}

// Named as a GGUF file, in any case.
bool named_gguf(const std::string& path) {
    std::string tail = path.size() >= 5 ? path.substr(path.size() - 5) : path;
    for (char& c : tail) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return tail == ".gguf";
}

}  // namespace

text::ModelText read_tokenizer_files(const std::string& path) {
    text::ModelText out;
    out.path = path;
    std::error_code ec;
    const bool directory = fs::is_directory(path, ec);
    const fs::path dir(path);
    out.tokenizer_json = read_text(directory ? dir / "tokenizer.json" : dir, kTokenizerJsonCap, "a tokenizer.json");
    const auto absent = [](const fs::path& p) {
        return text::TextFile{p.string(), fail(ErrorKind::missing, p.string() + ": not there")};
    };
    out.tokenizer_config = directory ? read_text(dir / "tokenizer_config.json", kTokenizerConfigCap, "a tokenizer_config.json")
                                     : absent(dir / "tokenizer_config.json");
    out.chat_template = directory ? read_text(dir / "chat_template.jinja", kChatTemplateCap, "a chat template file")
                                  : absent(dir / "chat_template.jinja");
    return out;
}

Expected<text::ModelText> read_model_text(const std::string& path) {
    // A container converted from a GGUF model keeps the tokenizer in the metadata it copied.
    if (holds_container_manifest(path)) {
        STORMO_TRY_ASSIGN(const ContainerManifest manifest, read_container_manifest(path));
        if (manifest.gguf_metadata) return read_model_text((fs::path(path) / *manifest.gguf_metadata).string());
    }
    // The magic decides; a file named .gguf without it gets the GGUF reader's error, which says so.
    if (!starts_with_gguf_magic(path) && !named_gguf(path)) return read_tokenizer_files(path);
    STORMO_TRY_ASSIGN(auto model, GgufModel::open(path));
    auto held = std::make_shared<const GgufModel>(std::move(model));
    text::ModelText out;
    out.path = path;
    out.gguf = &held->metadata();
    out.keeps_gguf = std::move(held);
    return out;
}

}  // namespace stormo
