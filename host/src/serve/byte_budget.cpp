#include "serve/byte_budget.hpp"

namespace stormo::serve {

ByteBudget::Lease& ByteBudget::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        budget_ = other.budget_;
        bytes_ = other.bytes_;
        other.budget_ = nullptr;
    }
    return *this;
}

void ByteBudget::Lease::release() {
    if (budget_) budget_->give_back(bytes_);
    budget_ = nullptr;
}

std::optional<ByteBudget::Lease> ByteBudget::try_take(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (bytes > capacity_ - used_) return std::nullopt;
    used_ += bytes;
    return Lease(this, bytes);
}

uint64_t ByteBudget::in_use() const {
    std::lock_guard lock(mutex_);
    return used_;
}

void ByteBudget::give_back(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    used_ -= bytes;
}

}  // namespace stormo::serve
