// The "all experts in RAM" store: every expert is read once at load into one aligned buffer per
// layer, each part 64-byte aligned, in its checkpoint format (never widened), through large
// direct reads (range_reader.hpp) that leave no copy of the file in the page cache.
#include <algorithm>
#include <map>

#include "store/expert_store.hpp"
#include "store/range_reader.hpp"

namespace stormo {
namespace {

constexpr uint64_t kPartAlignment = 64;

uint64_t align_up(uint64_t v) { return (v + kPartAlignment - 1) / kPartAlignment * kPartAlignment; }

// Everything is ready: next() hands out the indices in order.
class ResidentBatch final : public ExpertBatch {
public:
    explicit ResidentBatch(std::vector<const ExpertView*> views) : views_(std::move(views)) {}
    size_t size() const override { return views_.size(); }
    Expected<size_t> next() override {
        if (next_ >= views_.size()) return fail(ErrorKind::internal, "expert batch: every expert was already taken");
        return next_++;
    }
    const ExpertView& view(size_t i) const override { return *views_[i]; }

private:
    std::vector<const ExpertView*> views_;
    size_t next_ = 0;
};

class ResidentExpertStore final : public ExpertStore {
public:
    explicit ResidentExpertStore(const ModelSource& source) : source_(source) {}

    Expected<void> add_layer(ExpertLayerLayout layout) override {
        if (layers_.count(layout.layer))
            return fail(ErrorKind::internal, "experts of layer " + std::to_string(layout.layer) + " declared twice");
        Layer resident;
        uint64_t total = 0;
        for (const auto& expert : layout.locations)
            for (const auto& loc : expert) total += align_up(loc.nbytes);
        resident.buffer = AlignedBuffer(static_cast<size_t>(total), kPartAlignment);
        uint64_t at = 0;
        std::vector<RangeCopy> from_files;
        for (size_t e = 0; e < layout.locations.size(); ++e) {
            ExpertView view;
            view.layer = layout.layer;
            view.expert = static_cast<int>(e);
            for (size_t p = 0; p < layout.locations[e].size(); ++p) {
                const auto& loc = layout.locations[e][p];
                std::byte* dst = resident.buffer.data() + at;
                const std::string what = "tensor \"" + loc.tensor->name + "\" (layer " + std::to_string(layout.layer) +
                                         ", expert " + std::to_string(e) + ")";
                if (loc.offset > loc.tensor->nbytes || loc.nbytes > loc.tensor->nbytes - loc.offset)
                    return fail(ErrorKind::internal, what + ": the expert's bytes run past the tensor's");
                if (source_.in_memory(*loc.tensor)) {
                    if (auto r = source_.read(*loc.tensor, loc.offset, loc.nbytes, dst); !r) return tl::unexpected(r.error());
                } else {
                    from_files.push_back({loc.tensor->file, loc.file_begin(), loc.nbytes, dst, what});
                }
                view.parts.push_back({loc.tensor->dtype, layout.parts[p].expert_shape, dst});
                at += align_up(loc.nbytes);
            }
            resident.experts.push_back(std::move(view));
        }
        if (!from_files.empty()) {
            STORMO_TRY_ASSIGN(ReadBackend * files, file_reader());
            STORMO_TRY(read_ranges(*files, std::move(from_files), window_));
        }
        resident_bytes_ += total;
        total_bytes_ += layout.held_bytes();
        layers_.emplace(layout.layer, std::move(resident));
        return {};
    }

    Expected<void> finish_loading() override {
        reader_.reset();  // every expert is in RAM: the descriptors and the bounce buffer go
        window_ = AlignedBuffer();
        return {};
    }

    Expected<std::unique_ptr<ExpertBatch>> acquire(int layer, std::span<const int32_t> experts) override {
        auto it = layers_.find(layer);
        if (it == layers_.end())
            return fail(ErrorKind::internal, "layer " + std::to_string(layer) + " has no experts in the store");
        std::vector<const ExpertView*> views;
        views.reserve(experts.size());
        for (int32_t e : experts) {
            if (e < 0 || static_cast<size_t>(e) >= it->second.experts.size())
                return fail(ErrorKind::internal, "layer " + std::to_string(layer) + ": expert " +
                                                     std::to_string(e) + " does not exist");
            views.push_back(&it->second.experts[static_cast<size_t>(e)]);
        }
        hits_ += experts.size();
        return std::unique_ptr<ExpertBatch>(std::make_unique<ResidentBatch>(std::move(views)));
    }

    size_t max_batch() const override { return SIZE_MAX; }
    void prefetch(int, std::span<const int32_t>, size_t) override {}
    bool streams() const override { return false; }

    ExpertStoreStats stats() const override {
        ExpertStoreStats s;
        s.hits = hits_;
        return s;
    }
    uint64_t resident_bytes() const override { return resident_bytes_; }
    uint64_t total_expert_bytes() const override { return total_bytes_; }

private:
    // Direct reads when the file system allows them (read_ranges says why), opened on first use.
    Expected<ReadBackend*> file_reader() {
        if (!reader_) {
            STORMO_TRY_ASSIGN(reader_, make_pread_backend(source_.streamable_files(), true));
            window_ = AlignedBuffer(kRangeWindowBytes, 4096);
        }
        return reader_.get();
    }

    struct Layer {
        AlignedBuffer buffer;
        std::vector<ExpertView> experts;
    };
    const ModelSource& source_;
    std::unique_ptr<ReadBackend> reader_;
    AlignedBuffer window_;  // read_ranges' bounce buffer, one for every layer
    std::map<int, Layer> layers_;
    uint64_t hits_ = 0;
    uint64_t resident_bytes_ = 0;
    uint64_t total_bytes_ = 0;
};

}  // namespace

std::unique_ptr<ExpertStore> make_resident_expert_store(const ModelSource& source) {
    return std::make_unique<ResidentExpertStore>(source);
}

}  // namespace stormo
