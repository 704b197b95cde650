#pragma once
// The loop of the u8 x s8 dot product, written once over an `Ops` type so the same blocking and
// tail handling run natively (isa/dot_u8i8.cpp, VPDPBUSD) and under SIMDe's emulation of the
// instruction in the unit tests, where they are checked bit for bit against the scalar reference.
//
// Ops provides: a 256-bit vector type V; zero(); load(const void*) (32 unaligned bytes);
// dpbusd(acc, u8 bytes, s8 bytes) (per 32-bit lane, acc + four u8*s8 products, wrapping);
// add(V, V) (32-bit lanes, wrapping); sum(V) -> int32_t (the 8 lanes, wrapping).
// Integer sums wrap modulo 2^32 whatever their order, so any blocking gives the reference's bits.
#include <cstddef>
#include <cstdint>

namespace stormo::simd {
namespace {

template <class Ops>
int32_t dot_u8i8_blocks(const uint8_t* a, const int8_t* b, size_t n) {
    typename Ops::V acc0 = Ops::zero();
    typename Ops::V acc1 = Ops::zero();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = Ops::dpbusd(acc0, Ops::load(a + i), Ops::load(b + i));
        acc1 = Ops::dpbusd(acc1, Ops::load(a + i + 32), Ops::load(b + i + 32));
    }
    if (i + 32 <= n) {
        acc0 = Ops::dpbusd(acc0, Ops::load(a + i), Ops::load(b + i));
        i += 32;
    }
    if (i < n) {  // zero padding adds 0 * 0 products
        uint8_t tail_a[32] = {};
        int8_t tail_b[32] = {};
        __builtin_memcpy(tail_a, a + i, n - i);
        __builtin_memcpy(tail_b, b + i, n - i);
        acc1 = Ops::dpbusd(acc1, Ops::load(tail_a), Ops::load(tail_b));
    }
    return Ops::sum(Ops::add(acc0, acc1));
}

}  // namespace
}  // namespace stormo::simd
