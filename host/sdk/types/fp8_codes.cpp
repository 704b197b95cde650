#include "stormo/fp8_codes.hpp"

#include <cmath>

#include "stormo/dtype.hpp"

namespace stormo {
namespace {

constexpr double kAmaxSigmas = 4.5;  // a 128 x 128 block's largest |weight|, in standard deviations
constexpr double kLargestCode = 448.0;

E4m3GaussianCodes build() {
    E4m3GaussianCodes c;
    const double sigma = kLargestCode / kAmaxSigmas;  // of the scaled weights, in code units
    // P(|v| < t) for the half-normal |v|, v ~ N(0, sigma^2).
    auto below = [&](double t) { return std::erf(t / (sigma * std::sqrt(2.0))); };
    // Codes 0x00-0x7E grow with the byte; each takes the magnitudes that round to it (the midpoints
    // to its neighbours), the last everything above, clamped as a checkpoint's quantizer clamps.
    size_t next = 0;
    double sum_sq = 0.0;
    for (unsigned code = 0; code <= 0x7E; ++code) {
        const double v = f8_e4m3_to_f32(static_cast<uint8_t>(code));
        const double upper = code == 0x7E ? 1.0 : below(0.5 * (v + f8_e4m3_to_f32(static_cast<uint8_t>(code + 1))));
        const auto end = static_cast<size_t>(std::lround(upper * 32768.0));
        for (; next < end && next < c.magnitude.size(); ++next) {
            c.magnitude[next] = static_cast<uint8_t>(code);
            sum_sq += v * v;
        }
    }
    c.rms = std::sqrt(sum_sq / static_cast<double>(c.magnitude.size()));
    return c;
}

}  // namespace

const E4m3GaussianCodes& e4m3_gaussian_codes() {
    static const E4m3GaussianCodes codes = build();
    return codes;
}

}  // namespace stormo
