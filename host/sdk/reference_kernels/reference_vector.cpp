// Reference vector kernels: norms, softmax, dot, axpy, SiLU and the integer dot. Sums run in
// float over ascending index; the order of the remaining operations follows transformers' code
// (noted per kernel) so the float results stay as close to torch's as a scalar loop can.
// Products round before adds whatever the host flags: the build compiles this file with
// -ffp-contract=off.

#include <cmath>

#include "reference_kernels/reference.hpp"

namespace stormo::reference {

// GptOssRMSNorm / Qwen3MoeRMSNorm: variance = mean(x^2) in float32, h = x * rsqrt(variance + eps),
// out = weight * h. The mean divides the ascending sum by n (as torch's CPU mean does).
void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out) {
    if (n == 0) return;
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i] * x[i];
    const float variance = sum / static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(variance + eps);
    for (size_t i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * inv);
}

// exp(x - max) then a division by the ascending sum: dividing (not multiplying by 1/sum) rounds
// once per element, as torch's softmax does.
void softmax(float* x, size_t n) {
    if (n == 0) return;
    float max = x[0];
    for (size_t i = 1; i < n; ++i)
        if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    for (size_t i = 0; i < n; ++i) x[i] = x[i] / sum;
}

float dot(const float* a, const float* b, size_t n) {
    float acc = 0.0f;
    for (size_t i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

void axpy(float a, const float* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride) {
    for (size_t a = 0; a < n_q; ++a)
        for (size_t j = 0; j < n_rows; ++j)
            scores[a * scores_stride + j] = dot(q + a * q_stride, rows + j * row_stride, n);
}

void axpy_many(const float* weights, size_t n_y, size_t weights_stride, const float* rows, size_t n_rows,
               size_t row_stride, size_t n, float* y, size_t y_stride) {
    for (size_t a = 0; a < n_y; ++a)
        for (size_t j = 0; j < n_rows; ++j) axpy(weights[a * weights_stride + j], rows + j * row_stride, y + a * y_stride, n);
}

// torch's silu: x / (1 + exp(-x)).
void silu(float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// Unsigned x signed bytes summed modulo 2^32, exactly what VPDPBUSD accumulates.
int32_t dot_u8i8(const uint8_t* a, const int8_t* b, size_t n) {
    uint32_t acc = 0;
    for (size_t i = 0; i < n; ++i)
        acc += static_cast<uint32_t>(static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]));
    return static_cast<int32_t>(acc);
}

}  // namespace stormo::reference
