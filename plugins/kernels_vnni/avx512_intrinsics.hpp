#pragma once
// <immintrin.h> for the files built with AVX-512 flags. GCC 12's avx512fintrin.h builds its
// "undefined" vectors by self-initialisation, so intrinsics that take one (_mm512_cvtepu16_epi32,
// _mm512_slli_epi32, ...) warn "used uninitialized" where they are inlined (GCC bug 105593, fixed
// in 12.3 and 13); the value is never read. Silenced for the files that include this header only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
