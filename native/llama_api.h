// The llama.cpp / ggml C functions the addon uses, resolved at run time with dlsym from a chosen
// bins directory (CPU package by default, a CUDA/Vulkan package when asked for). Nothing is
// linked at build time, so the backend is a run-time choice. Types come from the vendored headers
// (native/llama-include) via decltype, so a signature mismatch is a compile error, not a crash.
#pragma once

#include <string>

#include "ggml-backend.h"
#include "llama.h"

#define TRELLIS_GGML_FUNCTIONS(X)          \
  X(ggml_backend_load_all_from_path)       \
  X(ggml_backend_load)                     \
  X(ggml_backend_dev_count)                \
  X(ggml_backend_dev_get)                  \
  X(ggml_backend_dev_name)                 \
  X(ggml_backend_dev_description)          \
  X(ggml_backend_dev_type)

#define TRELLIS_LLAMA_FUNCTIONS(X)         \
  X(llama_backend_init)                    \
  X(llama_log_set)                         \
  X(llama_model_default_params)            \
  X(llama_context_default_params)          \
  X(llama_model_load_from_file)            \
  X(llama_model_free)                      \
  X(llama_init_from_model)                 \
  X(llama_free)                            \
  X(llama_model_get_vocab)                 \
  X(llama_model_n_ctx_train)               \
  X(llama_model_n_embd)                    \
  X(llama_model_n_embd_out)                \
  X(llama_model_n_layer)                   \
  X(llama_model_meta_val_str)              \
  X(llama_model_meta_count)                \
  X(llama_model_meta_key_by_index)         \
  X(llama_model_chat_template)             \
  X(llama_model_desc)                      \
  X(llama_model_size)                      \
  X(llama_model_n_params)                  \
  X(llama_supports_gpu_offload)            \
  X(llama_vocab_n_tokens)                  \
  X(llama_vocab_type)                      \
  X(llama_vocab_get_attr)                  \
  X(llama_vocab_is_eog)                    \
  X(llama_vocab_bos)                       \
  X(llama_vocab_eos)                       \
  X(llama_vocab_get_add_bos)               \
  X(llama_tokenize)                        \
  X(llama_token_to_piece)                  \
  X(llama_n_ctx)                           \
  X(llama_n_batch)                         \
  X(llama_n_seq_max)                       \
  X(llama_batch_init)                      \
  X(llama_batch_free)                      \
  X(llama_decode)                          \
  X(llama_get_logits_ith)                  \
  X(llama_get_embeddings_ith)              \
  X(llama_get_embeddings_seq)              \
  X(llama_pooling_type)                    \
  X(llama_get_memory)                      \
  X(llama_memory_clear)                    \
  X(llama_memory_seq_rm)                   \
  X(llama_memory_seq_cp)                   \
  X(llama_memory_seq_keep)                 \
  X(llama_memory_seq_pos_min)              \
  X(llama_memory_seq_pos_max)              \
  X(llama_set_n_threads)                   \
  X(llama_synchronize)

struct LlamaApi {
#define TRELLIS_DECLARE_FN(name) decltype(&::name) name = nullptr;
  TRELLIS_GGML_FUNCTIONS(TRELLIS_DECLARE_FN)
  TRELLIS_LLAMA_FUNCTIONS(TRELLIS_DECLARE_FN)
#undef TRELLIS_DECLARE_FN
};

// Loads libggml-base, libggml and libllama from binsDir and resolves every function above. The
// caller then loads the ggml backends (ggml_backend_load_all_from_path).
// Returns an empty string on success, otherwise what went wrong.
std::string LoadLlamaApi(const std::string& binsDir, LlamaApi& api);
