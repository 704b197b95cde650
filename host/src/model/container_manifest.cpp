// The container manifest read, parsed, checked and written: see container_manifest.hpp.
#include "model/container_manifest.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "util/json_writer.hpp"
#include "stormo/json.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

// A manifest lists every tensor once, with its pieces; ten thousand experts of a few parts each
// stay far below this.
constexpr uint64_t kManifestReadCap = uint64_t{256} << 20;

// Every type by its name, the block types included (dtype_from_name knows safetensors' only).
std::optional<DType> any_dtype_named(std::string_view name) {
    for (int t = 0; t <= static_cast<int>(kLastDType); ++t)
        if (dtype_name(static_cast<DType>(t)) == name) return static_cast<DType>(t);
    return std::nullopt;
}

// Typed reads of one object's fields; errors name the manifest and the field's path in it.
class Fields {
public:
    Fields(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

    Expected<const Json*> get(std::string_view key, Json::Type type) const {
        const Json* v = object_.find(key);
        if (v == nullptr) return fail(ErrorKind::missing, where_ + ": field " + in_quotes(key) + " is missing");
        const bool ok = v->type() == type || (type == Json::Type::number && v->is_number());
        if (!ok)
            return fail(ErrorKind::format, where_ + ": field " + in_quotes(key) + " must be " + json_type_name(type) + ", found " +
                                               json_type_name(v->type()));
        return v;
    }
    Expected<std::string> text(std::string_view key) const {
        STORMO_TRY_ASSIGN(const Json* v, get(key, Json::Type::string));
        return *v->as_string();
    }
    Expected<uint64_t> count(std::string_view key) const {
        STORMO_TRY_ASSIGN(const Json* v, get(key, Json::Type::integer));
        if (*v->as_int() < 0) return fail(ErrorKind::format, where_ + ": field " + in_quotes(key) + " is negative");
        return static_cast<uint64_t>(*v->as_int());
    }
    Expected<const std::vector<Json>*> array(std::string_view key) const {
        STORMO_TRY_ASSIGN(const Json* v, get(key, Json::Type::array));
        return v->as_array();
    }
    const std::string& where() const { return where_; }

private:
    const Json& object_;
    std::string where_;
};

Expected<Fields> object_at(const Json& v, const std::string& where) {
    if (v.type() != Json::Type::object) return fail(ErrorKind::format, where + " must be an object, found " + json_type_name(v.type()));
    return Fields(v, where);
}

Expected<ContainerTensor> parse_tensor(const Json& v, const std::string& where, uint64_t data_bytes, uint64_t alignment) {
    STORMO_TRY_ASSIGN(const Fields f, object_at(v, where));
    ContainerTensor t;
    STORMO_TRY_ASSIGN(t.name, f.text("name"));
    const std::string what = where + " (" + in_quotes(t.name) + ")";
    STORMO_TRY_ASSIGN(const std::string dtype, f.text("dtype"));
    const auto parsed = any_dtype_named(dtype);
    if (!parsed) return fail(ErrorKind::format, what + ": unknown dtype " + in_quotes(dtype));
    t.dtype = *parsed;
    STORMO_TRY_ASSIGN(const auto* shape, f.array("shape"));
    for (const Json& d : *shape) {
        if (d.type() != Json::Type::integer || *d.as_int() < 0) return fail(ErrorKind::format, what + ": shape holds a non-dimension");
        t.shape.push_back(*d.as_int());
    }
    STORMO_TRY_ASSIGN(t.role, f.text("role"));
    STORMO_TRY_ASSIGN(t.sha256, f.text("sha256"));
    STORMO_TRY_ASSIGN(const auto* pieces, f.array("pieces"));
    for (const Json& p : *pieces) {
        const auto* pair = p.as_array();
        if (pair == nullptr || pair->size() != 2 || (*pair)[0].type() != Json::Type::integer ||
            (*pair)[1].type() != Json::Type::integer || *(*pair)[0].as_int() < 0 || *(*pair)[1].as_int() < 0)
            return fail(ErrorKind::format, what + ": a piece must be [offset, bytes]");
        const ContainerPiece piece{static_cast<uint64_t>(*(*pair)[0].as_int()), static_cast<uint64_t>(*(*pair)[1].as_int())};
        if (piece.offset % alignment != 0)
            return fail(ErrorKind::format, what + ": a piece at offset " + std::to_string(piece.offset) + " is not aligned to " +
                                               std::to_string(alignment));
        if (piece.offset > data_bytes || piece.nbytes > data_bytes - piece.offset)
            return fail(ErrorKind::format, what + ": a piece at offset " + std::to_string(piece.offset) + " runs past the data's " +
                                               std::to_string(data_bytes) + " bytes");
        t.pieces.push_back(piece);
    }
    if (t.pieces.empty()) return fail(ErrorKind::format, what + ": no pieces");
    const auto expected = dtype_bytes(t.dtype, t.shape);
    if (!expected || *expected != t.nbytes())
        return fail(ErrorKind::format, what + ": " + std::to_string(t.nbytes()) + " bytes do not hold a " + std::string(dtype_name(t.dtype)) +
                                           " tensor of its shape");
    return t;
}

// No two pieces share a byte (the safetensors and GGUF readers refuse overlapping tensors too): a
// manifest damaged or edited so would hand a tensor another's bytes, which only the hashes of
// inspect --check would notice.
Expected<void> check_pieces_apart(const ContainerManifest& m, const std::string& path) {
    struct Span {
        uint64_t begin, end;
        size_t tensor;
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < m.tensors.size(); ++i)
        for (const ContainerPiece& p : m.tensors[i].pieces)
            if (p.nbytes > 0) spans.push_back({p.offset, p.offset + p.nbytes, i});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < spans.size(); ++i)
        if (spans[i].begin < spans[i - 1].end)
            return fail(ErrorKind::format, path + ": tensors " + in_quotes(m.tensors[spans[i - 1].tensor].name) + " and " +
                                               in_quotes(m.tensors[spans[i].tensor].name) + " both hold bytes at offset " +
                                               std::to_string(spans[i].begin) + " of the data");
    return {};
}

// The experts list names each (layer, expert) once, its ranges lie apart inside the data, and each
// range is exactly its expert's pieces: from the first piece it holds to the aligned end of the
// last, every piece of a tensor of routed experts in one of them (convert writes them so).
Expected<void> check_expert_ranges(const ContainerManifest& m, const std::string& path) {
    std::vector<size_t> order(m.experts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.experts[a].offset < m.experts[b].offset; });
    std::set<std::pair<int, int>> named;
    auto where = [&](size_t i) {
        return path + ": experts[" + std::to_string(i) + "] (layer " + std::to_string(m.experts[i].layer) + ", expert " +
               std::to_string(m.experts[i].expert) + ")";
    };
    for (size_t k = 0; k < order.size(); ++k) {
        const ContainerExpert& e = m.experts[order[k]];
        if (!named.insert({e.layer, e.expert}).second) return fail(ErrorKind::format, where(order[k]) + " is listed twice");
        if (e.offset > m.data_bytes || e.nbytes > m.data_bytes - e.offset)
            return fail(ErrorKind::format, where(order[k]) + " runs past the data's " + std::to_string(m.data_bytes) + " bytes");
        if (k > 0 && e.offset < m.experts[order[k - 1]].offset + m.experts[order[k - 1]].nbytes)
            return fail(ErrorKind::format, where(order[k]) + " overlaps " + where(order[k - 1]));
    }
    // Per range (in offset order): the first piece's offset and the aligned end of the last.
    std::vector<uint64_t> first(order.size(), UINT64_MAX), last_end(order.size(), 0);
    for (const ContainerTensor& t : m.tensors) {
        if (t.role != "experts") continue;
        for (const ContainerPiece& p : t.pieces) {
            const auto it = std::upper_bound(order.begin(), order.end(), p.offset,
                                             [&](uint64_t offset, size_t i) { return offset < m.experts[i].offset; });
            const size_t k = static_cast<size_t>(it - order.begin());
            const ContainerExpert* e = k > 0 ? &m.experts[order[k - 1]] : nullptr;
            if (e == nullptr || p.offset + p.nbytes > e->offset + e->nbytes)
                return fail(ErrorKind::format, path + ": tensor " + in_quotes(t.name) + ": the piece at offset " +
                                                   std::to_string(p.offset) + " lies in no expert of the experts list");
            first[k - 1] = std::min(first[k - 1], p.offset);
            const uint64_t end = p.offset + p.nbytes;
            last_end[k - 1] = std::max(last_end[k - 1], (end + m.alignment - 1) / m.alignment * m.alignment);
        }
    }
    for (size_t k = 0; k < order.size(); ++k) {
        const ContainerExpert& e = m.experts[order[k]];
        if (first[k] != e.offset || last_end[k] != e.offset + e.nbytes)
            return fail(ErrorKind::format, where(order[k]) + ": its " + std::to_string(e.nbytes) + " bytes at offset " +
                                               std::to_string(e.offset) + " are not its pieces' range");
    }
    return {};
}

}  // namespace

uint64_t ContainerTensor::nbytes() const {
    uint64_t total = 0;
    for (const ContainerPiece& p : pieces) total += p.nbytes;
    return total;
}

Expected<ContainerManifest> parse_container_manifest(std::string_view text, const std::string& path) {
    STORMO_TRY_ASSIGN(const Json root, Json::parse(text, path));
    STORMO_TRY_ASSIGN(const Fields top, object_at(root, path));
    STORMO_TRY_ASSIGN(const std::string format, top.text("format"));
    if (format != kContainerFormat)
        return fail(ErrorKind::format, path + ": field \"format\" is " + in_quotes(format) + ", not " + in_quotes(kContainerFormat));
    ContainerManifest m;
    STORMO_TRY_ASSIGN(const uint64_t version, top.count("format_version"));
    if (version > static_cast<uint64_t>(kContainerFormatVersion) || version == 0)
        return fail(ErrorKind::unsupported, path + ": format version " + std::to_string(version) + " is not one this stormo reads (" +
                                                std::to_string(kContainerFormatVersion) + "): convert the source again with this build");
    m.format_version = static_cast<int64_t>(version);
    STORMO_TRY_ASSIGN(m.alignment, top.count("alignment"));
    if (m.alignment == 0 || (m.alignment & (m.alignment - 1)) != 0)
        return fail(ErrorKind::format, path + ": alignment " + std::to_string(m.alignment) + " is not a power of two");
    STORMO_TRY_ASSIGN(m.data_file, top.text("data_file"));
    if (m.data_file.empty() || m.data_file.find('/') != std::string::npos || m.data_file.starts_with("."))
        return fail(ErrorKind::format, path + ": data_file " + in_quotes(m.data_file) + " is not a file name of the directory");
    STORMO_TRY_ASSIGN(m.data_bytes, top.count("data_bytes"));

    STORMO_TRY_ASSIGN(const Json* source_json, top.get("source", Json::Type::object));
    const Fields source(*source_json, path + ": source");
    STORMO_TRY_ASSIGN(m.source_path, source.text("path"));
    STORMO_TRY_ASSIGN(m.source_kind, source.text("kind"));
    STORMO_TRY_ASSIGN(m.family, source.text("family"));
    STORMO_TRY_ASSIGN(const auto* source_files, source.array("files"));
    for (size_t i = 0; i < source_files->size(); ++i) {
        STORMO_TRY_ASSIGN(const Fields f, object_at((*source_files)[i], path + ": source.files[" + std::to_string(i) + "]"));
        ContainerSourceFile file;
        STORMO_TRY_ASSIGN(file.name, f.text("name"));
        STORMO_TRY_ASSIGN(file.bytes, f.count("bytes"));
        m.source_files.push_back(std::move(file));
    }

    STORMO_TRY_ASSIGN(const auto* files, top.array("files"));
    for (size_t i = 0; i < files->size(); ++i) {
        STORMO_TRY_ASSIGN(const Fields f, object_at((*files)[i], path + ": files[" + std::to_string(i) + "]"));
        ContainerFile file;
        STORMO_TRY_ASSIGN(file.name, f.text("name"));
        if (file.name.empty() || file.name.find('/') != std::string::npos || file.name.starts_with("."))
            return fail(ErrorKind::format, f.where() + ": " + in_quotes(file.name) + " is not a file name of the directory");
        STORMO_TRY_ASSIGN(file.sha256, f.text("sha256"));
        m.files.push_back(std::move(file));
    }
    if (root.find("gguf_metadata") != nullptr) {
        STORMO_TRY_ASSIGN(std::string name, top.text("gguf_metadata"));
        m.gguf_metadata = std::move(name);
    }

    STORMO_TRY_ASSIGN(const auto* tensors, top.array("tensors"));
    std::set<std::string, std::less<>> names;
    for (size_t i = 0; i < tensors->size(); ++i) {
        const std::string where = path + ": tensors[" + std::to_string(i) + "]";
        STORMO_TRY_ASSIGN(auto t, parse_tensor((*tensors)[i], where, m.data_bytes, m.alignment));
        if (!names.insert(t.name).second) return fail(ErrorKind::format, where + ": tensor " + in_quotes(t.name) + " is listed twice");
        m.tensors.push_back(std::move(t));
    }
    STORMO_TRY_ASSIGN(const auto* experts, top.array("experts"));
    for (size_t i = 0; i < experts->size(); ++i) {
        STORMO_TRY_ASSIGN(const Fields f, object_at((*experts)[i], path + ": experts[" + std::to_string(i) + "]"));
        ContainerExpert e;
        STORMO_TRY_ASSIGN(const uint64_t layer, f.count("layer"));
        STORMO_TRY_ASSIGN(const uint64_t expert, f.count("expert"));
        e.layer = static_cast<int>(layer);
        e.expert = static_cast<int>(expert);
        STORMO_TRY_ASSIGN(e.offset, f.count("offset"));
        STORMO_TRY_ASSIGN(e.nbytes, f.count("bytes"));
        m.experts.push_back(e);
    }
    STORMO_TRY(check_pieces_apart(m, path));
    STORMO_TRY(check_expert_ranges(m, path));
    return m;
}

bool holds_container_manifest(const std::string& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && fs::exists(fs::path(dir) / kContainerManifestFile, ec);
}

Expected<ContainerManifest> read_container_manifest(const std::string& dir) {
    const std::string path = (fs::path(dir) / kContainerManifestFile).string();
    STORMO_TRY_ASSIGN(const std::string text, read_file(path, kManifestReadCap, "a container manifest"));
    return parse_container_manifest(text, path);
}

std::string encode_container_manifest(const ContainerManifest& m) {
    JsonWriter w;
    w.begin_object();
    w.field("format", kContainerFormat).field("format_version", m.format_version).field("alignment", m.alignment);
    w.field("data_file", m.data_file).field("data_bytes", m.data_bytes);
    w.key("source").begin_object();
    w.field("path", m.source_path).field("kind", m.source_kind).field("family", m.family);
    w.key("files").begin_array();
    for (const ContainerSourceFile& f : m.source_files) w.begin_object().field("name", f.name).field("bytes", f.bytes).end_object();
    w.end_array().end_object();
    w.key("files").begin_array();
    for (const ContainerFile& f : m.files) w.begin_object().field("name", f.name).field("sha256", f.sha256).end_object();
    w.end_array();
    if (m.gguf_metadata) w.field("gguf_metadata", *m.gguf_metadata);
    w.key("tensors").begin_array();
    for (const ContainerTensor& t : m.tensors) {
        w.begin_object().field("name", t.name).field("dtype", dtype_name(t.dtype));
        w.key("shape").begin_array();
        for (int64_t d : t.shape) w.value(d);
        w.end_array();
        w.field("role", t.role).field("sha256", t.sha256);
        w.key("pieces").begin_array();
        for (const ContainerPiece& p : t.pieces) w.begin_array().value(p.offset).value(p.nbytes).end_array();
        w.end_array().end_object();
    }
    w.end_array();
    w.key("experts").begin_array();
    for (const ContainerExpert& e : m.experts)
        w.begin_object().field("layer", e.layer).field("expert", e.expert).field("offset", e.offset).field("bytes", e.nbytes).end_object();
    w.end_array();
    w.end_object();
    return w.str() + "\n";
}

}  // namespace stormo
