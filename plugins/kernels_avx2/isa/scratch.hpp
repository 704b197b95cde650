#pragma once
// Scratch arrays for the ISA files, with no std:: template in sight. Why: a std::vector<float> (or
// std::fill, std::min, placement new) used in a file compiled with -mavx2 makes the compiler emit
// weak (COMDAT) copies of std:: helpers (std::__fill_a1<float*, float>, std::_Construct<float>,
// ...) encoded with AVX. Optimised builds inline them away, but at -O0 they stay out of line, and
// the linker keeps one copy of each symbol for the whole library, possibly the AVX one, which the
// baseline entry points then call: SIGILL during plugin discovery on a CPU without AVX2. So ISA
// code uses this instead. It has internal linkage (an anonymous namespace: each file its own
// copy, never shared), and only the global operator new / delete (ordinary library functions)
// and plain loops. tests/isa_weak_symbols.cmake checks that ISA objects define no weak symbol.
#include <cstddef>

namespace stormo::simd {
namespace {

// A growable array of a trivially copyable T (ints, floats); the contents after resize() are
// unspecified, assign() fills them.
template <class T>
class Scratch {
public:
    Scratch() = default;
    ~Scratch() { release(); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    void resize(size_t n) {
        if (n > capacity_) {
            release();
            data_ = static_cast<T*>(::operator new(n * sizeof(T)));
            capacity_ = n;
        }
        size_ = n;
    }
    void assign(size_t n, T value) {
        resize(n);
        for (size_t i = 0; i < n; ++i) data_[i] = value;
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void release() {
        if (data_ != nullptr) ::operator delete(data_);
        data_ = nullptr;
        size_ = capacity_ = 0;
    }

    T* data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace
}  // namespace stormo::simd
