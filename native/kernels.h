// Passes over a whole row of logits (a vocabulary, 152k entries and more), the CPU work of every
// decode step: on a GPU the forward pass takes about a millisecond and these loops in script
// took as long or longer on the slower cores GPU hosts come with (bench/gpu/README.md).
//
// GatherCandidates: the sampler's candidate gathering (src/sampling/gather.ts). Same semantics
// as the TypeScript gather functions, candidate for candidate and in the same order, so the
// native and script paths draw the same tokens; only faster (AVX2 skips groups of 8 logits that
// cannot enter at once: after the first few hundred tokens, nearly all of them).
//
// LogSumExp: categorization's normaliser (src/categorize/logsumexp.ts), log Σ exp over the row and
// over up to 8 token sets in one pass.
#pragma once

#include <cstdint>

namespace trellis {

enum class GatherMode : int32_t { Greedy = 0, TopK = 1, All = 2 };

struct GatherState {
  int32_t count;   // in: candidates already stored; out: after this pass
  double maxValue; // in/out: best value so far
  int32_t argmax;  // in/out: its id (-1 none)
  double floor;    // out: greedy the best value, top_k the heap minimum, all -Infinity
};

// mask/exclude: bitsets of ceil(n / 32) words, or null (every token / none excluded).
// ids/values: room for n candidates; heap: top_k's min-heap of k values, filled with -Infinity by
// the caller.
void GatherCandidates(GatherMode mode, const float* logits, const uint32_t* mask,
                      const uint32_t* exclude, int32_t n, int32_t k, int32_t* ids, double* values,
                      double* heap, GatherState* state);

// Whether GatherCandidates and LogSumExp run their AVX2 paths on this CPU.
bool KernelsUseAvx2();

// log Σ exp(logits[i]) over i < n, NaN counting as -Infinity; with membership (one byte per
// token, bit k for set k < numSets) also setLse[k] = log Σ exp over the tokens of set k (-Infinity
// for an empty set). A row whose maximum is ±Infinity returns it (and sets every setLse to it).
// The AVX2 path takes the row's exps in float (relative error under 2e-7; terms under e^-87.3 of
// the maximum, which cannot move the total, count 0) and sums them in double; set members, whose
// sums may be that small, take exp in double, as the plain path does for every token.
double LogSumExp(const float* logits, int32_t n, const uint8_t* membership, int32_t numSets,
                 double* setLse);

}  // namespace trellis
