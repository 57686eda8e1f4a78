#include "kernels.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace trellis {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Both helpers are inlined into each gather loop, so the AVX2 loop never calls code compiled for
// plain SSE with live 256-bit registers (on Intel cores that mix costs a stall per instruction).
__attribute__((always_inline)) inline void SiftDown(double* heap, int32_t size) {
  int32_t i = 0;
  const double v = heap[0];
  for (;;) {
    int32_t child = 2 * i + 1;
    if (child >= size) break;
    if (child + 1 < size && heap[child + 1] < heap[child]) child++;
    if (heap[child] >= v) break;
    heap[i] = heap[child];
    i = child;
  }
  heap[i] = v;
}

// The largest float not above t, so a float lane passes the vector test whenever its exact
// (double) comparison with t could pass. The thresholds are logits (floats) or -Infinity in
// practice; this only keeps the test conservative for any double.
__attribute__((always_inline)) inline float ToFloatBelow(double t) {
  float f = static_cast<float>(t);
  if (static_cast<double>(f) > t) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

#define TRELLIS_GATHER_NAME GatherPlain
#include "gather-loop.inc"
#undef TRELLIS_GATHER_NAME

// The row's maximum, NaN skipped (as `v > max` skips it in script).
double RowMaxPlain(const float* logits, int32_t n) {
  double max = -kInfinity;
  for (int32_t i = 0; i < n; i++)
    if (logits[i] > max) max = logits[i];
  return max;
}

double LogSumExpPlain(const float* logits, int32_t n, double max, const uint8_t* membership,
                      int32_t numSets, double* sums) {
  double total = 0;
  for (int32_t i = 0; i < n; i++) {
    const float v = logits[i];
    if (v != v) continue;
    const double e = std::exp(double(v) - max);
    total += e;
    if (membership && membership[i] != 0)
      for (int32_t k = 0; k < numSets; k++)
        if (membership[i] & (1u << k)) sums[k] += e;
  }
  return total;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")

double RowMaxAvx2(const float* logits, int32_t n) {
  // max_ps returns its second operand when either is NaN, so NaN lanes keep the running max.
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(logits + i), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  double max = -kInfinity;
  for (float v : lanes)
    if (v > max) max = v;
  for (; i < n; i++)
    if (logits[i] > max) max = logits[i];
  return max;
}

// exp(x) for 8 floats x <= 0 (Cephes' expf: range reduction by ln 2, degree-5 polynomial,
// relative error under 2e-7); lanes below -87.3 (exp under float's normal range), -Infinity and
// NaN give 0.
__attribute__((always_inline)) inline __m256 ExpNonPositive(__m256 x) {
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(exponent)), live);
}

double LogSumExpAvx2(const float* logits, int32_t n, double max, const uint8_t* membership,
                     int32_t numSets, double* sums) {
  const __m256 shift = _mm256_set1_ps(float(max));
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // NaN - max is NaN, which ExpNonPositive maps to 0.
    const __m256 e = ExpNonPositive(_mm256_sub_ps(_mm256_loadu_ps(logits + i), shift));
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    if (membership) {
      // A set's own sum may be far below float's range (an answer the model all but rules out
      // still has a log-probability of -100 to compare): its members take exp in double.
      uint64_t bytes;
      std::memcpy(&bytes, membership + i, 8);
      if (bytes != 0) {
        for (int32_t j = 0; j < 8; j++) {
          const uint32_t bits = membership[i + j];
          const float v = logits[i + j];
          if (bits == 0 || v != v) continue;
          const double ed = std::exp(double(v) - max);
          for (int32_t k = 0; k < numSets; k++)
            if (bits & (1u << k)) sums[k] += ed;
        }
      }
    }
  }
  alignas(32) double parts[4];
  _mm256_store_pd(parts, _mm256_add_pd(acc0, acc1));
  double total = (parts[0] + parts[1]) + (parts[2] + parts[3]);
  if (i < n) total += LogSumExpPlain(logits + i, n - i, max, membership ? membership + i : nullptr, numSets, sums);
  return total;
}

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
#define TRELLIS_GATHER_AVX2 1
#define TRELLIS_GATHER_NAME GatherAvx2
#include "gather-loop.inc"
#undef TRELLIS_GATHER_NAME
#undef TRELLIS_GATHER_AVX2
#pragma GCC pop_options

const bool kHasAvx2 = __builtin_cpu_supports("avx2");
const bool kHasAvx2Fma = kHasAvx2 && __builtin_cpu_supports("fma");

template <GatherMode Mode>
void Dispatch(const float* logits, const uint32_t* mask, const uint32_t* exclude, int32_t n,
              int32_t k, int32_t* ids, double* values, double* heap, GatherState* state) {
  if (kHasAvx2) GatherAvx2<Mode>(logits, mask, exclude, n, k, ids, values, heap, state);
  else GatherPlain<Mode>(logits, mask, exclude, n, k, ids, values, heap, state);
}

}  // namespace

void GatherCandidates(GatherMode mode, const float* logits, const uint32_t* mask,
                      const uint32_t* exclude, int32_t n, int32_t k, int32_t* ids, double* values,
                      double* heap, GatherState* state) {
  switch (mode) {
    case GatherMode::Greedy:
      Dispatch<GatherMode::Greedy>(logits, mask, exclude, n, k, ids, values, heap, state);
      break;
    case GatherMode::TopK:
      Dispatch<GatherMode::TopK>(logits, mask, exclude, n, k, ids, values, heap, state);
      break;
    case GatherMode::All:
      Dispatch<GatherMode::All>(logits, mask, exclude, n, k, ids, values, heap, state);
      break;
  }
}

bool KernelsUseAvx2() { return kHasAvx2Fma; }

double LogSumExp(const float* logits, int32_t n, const uint8_t* membership, int32_t numSets,
                 double* setLse) {
  const double max = kHasAvx2Fma ? RowMaxAvx2(logits, n) : RowMaxPlain(logits, n);
  if (!std::isfinite(max)) {
    for (int32_t k = 0; k < numSets; k++) setLse[k] = max;
    return max;
  }
  for (int32_t k = 0; k < numSets; k++) setLse[k] = 0;
  const double total = kHasAvx2Fma ? LogSumExpAvx2(logits, n, max, membership, numSets, setLse)
                                   : LogSumExpPlain(logits, n, max, membership, numSets, setLse);
  for (int32_t k = 0; k < numSets; k++) setLse[k] = max + std::log(setLse[k]);
  return max + std::log(total);
}

}  // namespace trellis
