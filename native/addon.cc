// N-API addon over the llama.cpp C API for our own decode loop (see src/model/native.ts for the
// JS-side contract). Hot-path rules: batch input arrives as typed arrays in one call, logits leave
// as zero-copy Float32Arrays over llama.cpp's own output buffer. Those views are detached at the
// next decode so a stale view reads as empty instead of touching reallocated memory.
#include <node_api.h>

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels.h"
#include "llama_api.h"

namespace {

LlamaApi g_api;
bool g_loaded = false;
std::string g_binsDir;

// llama.cpp logs a lot on load; by default only the last error lines are kept, to make thrown
// messages useful. TRELLIS_LLAMA_LOG=1 forwards everything to stderr.
bool g_logToStderr = false;
std::mutex g_logMutex;
std::string g_lastError;
ggml_log_level g_lastLevel = GGML_LOG_LEVEL_NONE;

void LogCallback(ggml_log_level level, const char* text, void*) {
  if (g_logToStderr) fputs(text, stderr);
  std::lock_guard<std::mutex> lock(g_logMutex);
  if (level != GGML_LOG_LEVEL_CONT) g_lastLevel = level;
  if (g_lastLevel == GGML_LOG_LEVEL_ERROR) {
    if (level != GGML_LOG_LEVEL_CONT && g_lastError.size() > 2000) g_lastError.clear();
    g_lastError += text;
  }
}

std::string TakeLastError() {
  std::lock_guard<std::mutex> lock(g_logMutex);
  std::string message;
  message.swap(g_lastError);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

void ClearLastError() {
  std::lock_guard<std::mutex> lock(g_logMutex);
  g_lastError.clear();
}

napi_value Throw(napi_env env, const std::string& message) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, nullptr, message.c_str());
  return nullptr;
}

#define CHECK_NAPI(env, call)                                   \
  do {                                                          \
    if ((call) != napi_ok) return Throw(env, "N-API call failed: " #call); \
  } while (0)

#define CHECK_ARG(env, cond, message)        \
  do {                                                          \
    if (!(cond)) {                                              \
      napi_throw_type_error(env, nullptr, message);             \
      return nullptr;                                           \
    }                                                           \
  } while (0)

bool GetInt32(napi_env env, napi_value value, int32_t* out) {
  return napi_get_value_int32(env, value, out) == napi_ok;
}

bool GetBool(napi_env env, napi_value value, bool* out) {
  return napi_get_value_bool(env, value, out) == napi_ok;
}

bool GetString(napi_env env, napi_value value, std::string* out) {
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, nullptr, 0, &length) != napi_ok) return false;
  out->resize(length);
  size_t written = 0;
  if (napi_get_value_string_utf8(env, value, out->data(), length + 1, &written) != napi_ok)
    return false;
  out->resize(written);
  return true;
}

bool IsNullish(napi_env env, napi_value value) {
  napi_valuetype type;
  napi_typeof(env, value, &type);
  return type == napi_undefined || type == napi_null;
}

template <typename T>
bool GetTypedArray(napi_env env, napi_value value, napi_typedarray_type expected, T** data,
                   size_t* length) {
  bool isTypedArray = false;
  if (napi_is_typedarray(env, value, &isTypedArray) != napi_ok || !isTypedArray) return false;
  napi_typedarray_type type;
  void* raw = nullptr;
  if (napi_get_typedarray_info(env, value, &type, length, &raw, nullptr, nullptr) != napi_ok)
    return false;
  if (type != expected) return false;
  *data = static_cast<T*>(raw);
  return true;
}

napi_value MakeString(napi_env env, const std::string& s) {
  napi_value out;
  napi_create_string_utf8(env, s.data(), s.size(), &out);
  return out;
}

napi_value MakeNumber(napi_env env, double d) {
  napi_value out;
  napi_create_double(env, d, &out);
  return out;
}

napi_value MakeBool(napi_env env, bool b) {
  napi_value out;
  napi_get_boolean(env, b, &out);
  return out;
}

napi_value MakeNull(napi_env env) {
  napi_value out;
  napi_get_null(env, &out);
  return out;
}

// A copied typed array (small results: tokenize, pieces, attribute tables).
napi_value MakeTypedArrayCopy(napi_env env, napi_typedarray_type type, const void* src,
                              size_t count, size_t elementSize) {
  void* data = nullptr;
  napi_value buffer, array;
  if (napi_create_arraybuffer(env, count * elementSize, &data, &buffer) != napi_ok) return nullptr;
  if (count) memcpy(data, src, count * elementSize);
  if (napi_create_typedarray(env, type, count, buffer, 0, &array) != napi_ok) return nullptr;
  return array;
}

void SetProperty(napi_env env, napi_value object, const char* name, napi_value value) {
  napi_set_named_property(env, object, name, value);
}

// ---------------------------------------------------------------------------------------------
// Model

struct Model {
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
  int liveContexts = 0;
};

napi_ref g_modelConstructor = nullptr;

// Type tags make unwrap refuse a Context passed where a Model is expected (and vice versa).
const napi_type_tag kModelTag = {0x7472656c6c69734dULL, 0x6f64656c00000001ULL};
const napi_type_tag kContextTag = {0x7472656c6c697343ULL, 0x6f6e746578740002ULL};

bool HasTag(napi_env env, napi_value object, const napi_type_tag& tag) {
  bool matches = false;
  return napi_check_object_type_tag(env, object, &tag, &matches) == napi_ok && matches;
}

void FinalizeModel(napi_env, void* data, void*) {
  Model* m = static_cast<Model*>(data);
  // Contexts hold a strong reference to their model's JS object, so by the time this runs every
  // context of this model has been finalized or disposed.
  if (m->model) g_api.llama_model_free(m->model);
  delete m;
}

Model* UnwrapModel(napi_env env, napi_value object) {
  if (!HasTag(env, object, kModelTag)) return nullptr;
  void* data = nullptr;
  if (napi_unwrap(env, object, &data) != napi_ok) return nullptr;
  return static_cast<Model*>(data);
}

Model* LiveModel(napi_env env, napi_callback_info info, size_t* argc, napi_value* argv) {
  napi_value self;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) != napi_ok) return nullptr;
  Model* m = UnwrapModel(env, self);
  if (!m) {
    Throw(env, "not a Model");
    return nullptr;
  }
  if (!m->model) {
    Throw(env, "model is disposed");
    return nullptr;
  }
  return m;
}

// new Model(path, vocabOnly, gpuLayers, useMmap)
napi_value ModelNew(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], self;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, &self, nullptr));
  if (!g_loaded) return Throw(env, "llama.cpp libraries not loaded: call init(binsDir) first");
  std::string path;
  bool vocabOnly = false, useMmap = true;
  int32_t gpuLayers = 0;
  CHECK_ARG(env, argc == 4, "Model(path, vocabOnly, gpuLayers, useMmap)");
  CHECK_ARG(env, GetString(env, argv[0], &path), "path must be a string");
  CHECK_ARG(env, GetBool(env, argv[1], &vocabOnly), "vocabOnly must be a boolean");
  CHECK_ARG(env, GetInt32(env, argv[2], &gpuLayers), "gpuLayers must be an integer");
  CHECK_ARG(env, GetBool(env, argv[3], &useMmap), "useMmap must be a boolean");

  llama_model_params params = g_api.llama_model_default_params();
  params.vocab_only = vocabOnly;
  params.n_gpu_layers = gpuLayers;
  params.load_mode = useMmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  ClearLastError();
  llama_model* model = g_api.llama_model_load_from_file(path.c_str(), params);
  if (!model) {
    std::string detail = TakeLastError();
    return Throw(env, "failed to load model " + path + (detail.empty() ? "" : ": " + detail));
  }
  Model* m = new Model();
  m->model = model;
  m->vocab = g_api.llama_model_get_vocab(model);
  if (napi_wrap(env, self, m, FinalizeModel, nullptr, nullptr) != napi_ok) {
    g_api.llama_model_free(model);
    delete m;
    return Throw(env, "napi_wrap failed");
  }
  napi_type_tag_object(env, self, &kModelTag);
  return self;
}

napi_value ModelDispose(napi_env env, napi_callback_info info) {
  napi_value self;
  size_t argc = 0;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, nullptr, &self, nullptr));
  Model* m = UnwrapModel(env, self);
  if (!m) return Throw(env, "not a Model");
  if (m->liveContexts > 0) return Throw(env, "dispose the model's contexts first");
  if (m->model) g_api.llama_model_free(m->model);
  m->model = nullptr;
  m->vocab = nullptr;
  return nullptr;
}

napi_value ModelInfo(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Model* m = LiveModel(env, info, &argc, nullptr);
  if (!m) return nullptr;
  napi_value out;
  CHECK_NAPI(env, napi_create_object(env, &out));
  char desc[256] = {0};
  g_api.llama_model_desc(m->model, desc, sizeof desc);
  SetProperty(env, out, "nVocab", MakeNumber(env, g_api.llama_vocab_n_tokens(m->vocab)));
  SetProperty(env, out, "nCtxTrain", MakeNumber(env, g_api.llama_model_n_ctx_train(m->model)));
  SetProperty(env, out, "nEmbd", MakeNumber(env, g_api.llama_model_n_embd(m->model)));
  SetProperty(env, out, "nLayer", MakeNumber(env, g_api.llama_model_n_layer(m->model)));
  SetProperty(env, out, "description", MakeString(env, desc));
  SetProperty(env, out, "sizeBytes", MakeNumber(env, double(g_api.llama_model_size(m->model))));
  SetProperty(env, out, "nParams", MakeNumber(env, double(g_api.llama_model_n_params(m->model))));
  SetProperty(env, out, "bos", MakeNumber(env, g_api.llama_vocab_bos(m->vocab)));
  SetProperty(env, out, "eos", MakeNumber(env, g_api.llama_vocab_eos(m->vocab)));
  SetProperty(env, out, "addBos", MakeBool(env, g_api.llama_vocab_get_add_bos(m->vocab)));
  SetProperty(env, out, "vocabType", MakeNumber(env, int(g_api.llama_vocab_type(m->vocab))));
  return out;
}

// tokenize(text, addSpecial, parseSpecial) -> Int32Array
napi_value ModelTokenize(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  Model* m = LiveModel(env, info, &argc, argv);
  if (!m) return nullptr;
  std::string text;
  bool addSpecial = false, parseSpecial = false;
  CHECK_ARG(env, argc == 3, "tokenize(text, addSpecial, parseSpecial)");
  CHECK_ARG(env, GetString(env, argv[0], &text), "text must be a string");
  CHECK_ARG(env, GetBool(env, argv[1], &addSpecial), "addSpecial must be a boolean");
  CHECK_ARG(env, GetBool(env, argv[2], &parseSpecial), "parseSpecial must be a boolean");
  std::vector<llama_token> tokens(text.size() + 8);
  int32_t n = g_api.llama_tokenize(m->vocab, text.data(), int32_t(text.size()), tokens.data(),
                                   int32_t(tokens.size()), addSpecial, parseSpecial);
  if (n < 0) {
    if (n == INT32_MIN) return Throw(env, "tokenize: text too long");
    tokens.resize(size_t(-n));
    n = g_api.llama_tokenize(m->vocab, text.data(), int32_t(text.size()), tokens.data(),
                             int32_t(tokens.size()), addSpecial, parseSpecial);
    if (n < 0) return Throw(env, "tokenize failed");
  }
  return MakeTypedArrayCopy(env, napi_int32_array, tokens.data(), size_t(n), sizeof(llama_token));
}

// tokenPiece(token, special) -> Uint8Array (the token's text as llama.cpp renders it)
napi_value ModelTokenPiece(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Model* m = LiveModel(env, info, &argc, argv);
  if (!m) return nullptr;
  int32_t token = 0;
  bool special = false;
  CHECK_ARG(env, argc == 2, "tokenPiece(token, special)");
  CHECK_ARG(env, GetInt32(env, argv[0], &token), "token must be an integer");
  CHECK_ARG(env, GetBool(env, argv[1], &special), "special must be a boolean");
  CHECK_ARG(env, token >= 0 && token < g_api.llama_vocab_n_tokens(m->vocab), "token out of range");
  std::vector<char> piece(64);
  int32_t n = g_api.llama_token_to_piece(m->vocab, token, piece.data(), int32_t(piece.size()), 0,
                                         special);
  if (n < 0) {
    piece.resize(size_t(-n));
    n = g_api.llama_token_to_piece(m->vocab, token, piece.data(), int32_t(piece.size()), 0,
                                   special);
    if (n < 0) return Throw(env, "token_to_piece failed");
  }
  return MakeTypedArrayCopy(env, napi_uint8_array, piece.data(), size_t(n), 1);
}

// tokenAttributes() -> Uint32Array of llama_token_attr bit sets, one per token
napi_value ModelTokenAttributes(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Model* m = LiveModel(env, info, &argc, nullptr);
  if (!m) return nullptr;
  const int32_t n = g_api.llama_vocab_n_tokens(m->vocab);
  std::vector<uint32_t> attrs(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; i++) attrs[i] = uint32_t(g_api.llama_vocab_get_attr(m->vocab, i));
  return MakeTypedArrayCopy(env, napi_uint32_array, attrs.data(), attrs.size(), 4);
}

// eogTokens() -> Int32Array of every end-of-generation token id
napi_value ModelEogTokens(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Model* m = LiveModel(env, info, &argc, nullptr);
  if (!m) return nullptr;
  const int32_t n = g_api.llama_vocab_n_tokens(m->vocab);
  std::vector<int32_t> eog;
  for (int32_t i = 0; i < n; i++)
    if (g_api.llama_vocab_is_eog(m->vocab, i)) eog.push_back(i);
  return MakeTypedArrayCopy(env, napi_int32_array, eog.data(), eog.size(), 4);
}

// chatTemplate(name | null) -> string | null
napi_value ModelChatTemplate(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  Model* m = LiveModel(env, info, &argc, argv);
  if (!m) return nullptr;
  std::string name;
  bool named = argc >= 1 && !IsNullish(env, argv[0]);
  if (named) CHECK_ARG(env, GetString(env, argv[0], &name), "name must be a string");
  const char* tmpl = g_api.llama_model_chat_template(m->model, named ? name.c_str() : nullptr);
  return tmpl ? MakeString(env, tmpl) : MakeNull(env);
}

// meta(key) -> string | null
napi_value ModelMeta(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  Model* m = LiveModel(env, info, &argc, argv);
  if (!m) return nullptr;
  std::string key;
  CHECK_ARG(env, argc == 1 && GetString(env, argv[0], &key), "meta(key: string)");
  std::vector<char> value(256);
  int32_t n = g_api.llama_model_meta_val_str(m->model, key.c_str(), value.data(), value.size());
  if (n < 0) return MakeNull(env);
  if (size_t(n) >= value.size()) {
    value.resize(size_t(n) + 1);
    n = g_api.llama_model_meta_val_str(m->model, key.c_str(), value.data(), value.size());
  }
  return MakeString(env, std::string(value.data(), size_t(n)));
}

// metaKeys() -> string[]
napi_value ModelMetaKeys(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Model* m = LiveModel(env, info, &argc, nullptr);
  if (!m) return nullptr;
  const int32_t count = g_api.llama_model_meta_count(m->model);
  napi_value out;
  CHECK_NAPI(env, napi_create_array_with_length(env, size_t(count), &out));
  std::vector<char> key(512);
  for (int32_t i = 0; i < count; i++) {
    int32_t n = g_api.llama_model_meta_key_by_index(m->model, i, key.data(), key.size());
    if (n < 0) continue;
    if (size_t(n) >= key.size()) {
      key.resize(size_t(n) + 1);
      n = g_api.llama_model_meta_key_by_index(m->model, i, key.data(), key.size());
    }
    napi_set_element(env, out, uint32_t(i), MakeString(env, std::string(key.data(), size_t(n))));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Context

struct Context {
  llama_context* ctx = nullptr;
  Model* model = nullptr;
  napi_ref modelRef = nullptr;
  llama_batch batch{};
  int32_t nBatch = 0;
  int32_t nVocab = 0;
  int32_t nSeqMax = 0;
  // An embedding context (llama_context_params.embeddings): every row is an output, and the
  // pooled vectors (or, without pooling, each row's) are read instead of logits.
  bool embeddings = false;
  int32_t nEmbd = 0;

  // Rows of the last decode, and which of them produced logits.
  int32_t lastTokens = 0;
  std::vector<int8_t> lastWantLogits;
  // Logits views handed out since the last decode (detached at the next one), and per batch
  // row the index of its view in handedOut, so asking twice returns the same view.
  std::vector<napi_ref> handedOut;
  std::vector<int32_t> rowView;

  bool busy = false;
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  int32_t asyncResult = 0;
};

void ReleaseLogitsViews(napi_env env, Context* c) {
  for (napi_ref ref : c->handedOut) {
    napi_value buffer = nullptr;
    if (napi_get_reference_value(env, ref, &buffer) == napi_ok && buffer)
      napi_detach_arraybuffer(env, buffer);
    napi_delete_reference(env, ref);
  }
  c->handedOut.clear();
  std::fill(c->rowView.begin(), c->rowView.end(), -1);
}

void DestroyContext(napi_env env, Context* c) {
  if (!c->ctx) return;
  if (env) ReleaseLogitsViews(env, c);
  g_api.llama_batch_free(c->batch);
  g_api.llama_free(c->ctx);
  c->ctx = nullptr;
  c->model->liveContexts--;
  if (env && c->modelRef) napi_delete_reference(env, c->modelRef);
  c->modelRef = nullptr;
}

void FinalizeContext(napi_env env, void* data, void*) {
  Context* c = static_cast<Context*>(data);
  // A context is only collectable when no async decode is in flight: the pending work holds a
  // reference to the JS object (see DecodeAsync).
  DestroyContext(env, c);
  delete c;
}

Context* UnwrapContext(napi_env env, napi_value object) {
  if (!HasTag(env, object, kContextTag)) return nullptr;
  void* data = nullptr;
  if (napi_unwrap(env, object, &data) != napi_ok) return nullptr;
  return static_cast<Context*>(data);
}

Context* ReadyContext(napi_env env, napi_callback_info info, size_t* argc, napi_value* argv,
                      napi_value* selfOut = nullptr) {
  napi_value self;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) != napi_ok) return nullptr;
  Context* c = UnwrapContext(env, self);
  if (!c) {
    Throw(env, "not a Context");
    return nullptr;
  }
  if (!c->ctx) {
    Throw(env, "context is disposed");
    return nullptr;
  }
  if (c->busy) {
    Throw(env, "context is busy with an asynchronous decode");
    return nullptr;
  }
  if (selfOut) *selfOut = self;
  return c;
}

// new Context(model, nCtx, nBatch, nUbatch, nSeqMax, threads, threadsBatch, flashAttn, kvUnified,
//             embeddings, poolingType); poolingType -1 = the model's own (llama_pooling_type)
napi_value ContextNew(napi_env env, napi_callback_info info) {
  size_t argc = 11;
  napi_value argv[11], self;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, &self, nullptr));
  CHECK_ARG(env, argc == 11,
            "Context(model, nCtx, nBatch, nUbatch, nSeqMax, threads, threadsBatch, flashAttn, "
            "kvUnified, embeddings, poolingType)");
  Model* m = UnwrapModel(env, argv[0]);
  CHECK_ARG(env, m != nullptr, "model must be a Model");
  if (!m->model) return Throw(env, "model is disposed");
  int32_t nCtx, nBatch, nUbatch, nSeqMax, threads, threadsBatch, flashAttn;
  bool kvUnified, embeddings;
  int32_t poolingType;
  CHECK_ARG(env, GetInt32(env, argv[1], &nCtx) && nCtx >= 0, "nCtx must be an integer >= 0");
  CHECK_ARG(env, GetInt32(env, argv[2], &nBatch) && nBatch > 0, "nBatch must be > 0");
  CHECK_ARG(env, GetInt32(env, argv[3], &nUbatch) && nUbatch > 0, "nUbatch must be > 0");
  CHECK_ARG(env, GetInt32(env, argv[4], &nSeqMax) && nSeqMax > 0, "nSeqMax must be > 0");
  CHECK_ARG(env, GetInt32(env, argv[5], &threads) && threads > 0, "threads must be > 0");
  CHECK_ARG(env, GetInt32(env, argv[6], &threadsBatch) && threadsBatch > 0,
            "threadsBatch must be > 0");
  CHECK_ARG(env, GetInt32(env, argv[7], &flashAttn), "flashAttn must be -1, 0 or 1");
  CHECK_ARG(env, GetBool(env, argv[8], &kvUnified), "kvUnified must be a boolean");
  CHECK_ARG(env, GetBool(env, argv[9], &embeddings), "embeddings must be a boolean");
  CHECK_ARG(env, GetInt32(env, argv[10], &poolingType) && poolingType >= -1 && poolingType <= 4,
            "poolingType must be -1 (the model's) or a llama_pooling_type (0..4)");

  llama_context_params params = g_api.llama_context_default_params();
  params.n_ctx = uint32_t(nCtx);
  params.n_batch = uint32_t(nBatch);
  params.n_ubatch = uint32_t(nUbatch);
  params.n_seq_max = uint32_t(nSeqMax);
  params.n_threads = threads;
  params.n_threads_batch = threadsBatch;
  params.flash_attn_type = llama_flash_attn_type(flashAttn);
  params.kv_unified = kvUnified;
  params.embeddings = embeddings;
  params.pooling_type = static_cast<enum llama_pooling_type>(poolingType);
  params.no_perf = true;
  ClearLastError();
  llama_context* ctx = g_api.llama_init_from_model(m->model, params);
  if (!ctx) {
    std::string detail = TakeLastError();
    return Throw(env, "failed to create context" + (detail.empty() ? "" : ": " + detail));
  }
  Context* c = new Context();
  c->ctx = ctx;
  c->model = m;
  c->nBatch = int32_t(g_api.llama_n_batch(ctx));
  c->nSeqMax = int32_t(g_api.llama_n_seq_max(ctx));
  c->nVocab = g_api.llama_vocab_n_tokens(m->vocab);
  c->embeddings = embeddings;
  c->nEmbd = g_api.llama_model_n_embd_out(m->model);
  // Rows may belong to several sequences (a shared prompt decoded once for all of them).
  c->batch = g_api.llama_batch_init(c->nBatch, 0, c->nSeqMax);
  c->lastWantLogits.assign(size_t(c->nBatch), 0);
  c->rowView.assign(size_t(c->nBatch), -1);
  m->liveContexts++;
  napi_create_reference(env, argv[0], 1, &c->modelRef);
  if (napi_wrap(env, self, c, FinalizeContext, nullptr, nullptr) != napi_ok) {
    DestroyContext(env, c);
    delete c;
    return Throw(env, "napi_wrap failed");
  }
  napi_type_tag_object(env, self, &kContextTag);
  return self;
}

napi_value ContextDispose(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  napi_value self;
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, nullptr, &self, nullptr));
  Context* c = UnwrapContext(env, self);
  if (!c) return Throw(env, "not a Context");
  if (c->busy) return Throw(env, "context is busy with an asynchronous decode");
  DestroyContext(env, c);
  return nullptr;
}

napi_value ContextInfo(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Context* c = ReadyContext(env, info, &argc, nullptr);
  if (!c) return nullptr;
  napi_value out;
  CHECK_NAPI(env, napi_create_object(env, &out));
  SetProperty(env, out, "nCtx", MakeNumber(env, g_api.llama_n_ctx(c->ctx)));
  SetProperty(env, out, "nBatch", MakeNumber(env, c->nBatch));
  SetProperty(env, out, "nSeqMax", MakeNumber(env, c->nSeqMax));
  SetProperty(env, out, "nVocab", MakeNumber(env, c->nVocab));
  SetProperty(env, out, "nEmbd", MakeNumber(env, c->nEmbd));
  SetProperty(env, out, "embeddings", MakeBool(env, c->embeddings));
  SetProperty(env, out, "poolingType", MakeNumber(env, int(g_api.llama_pooling_type(c->ctx))));
  return out;
}

// Validates the batch arrays and copies them into the context's reusable llama_batch.
// Arguments: nTokens, tokens: Int32Array, positions: Int32Array, seqIds: Int32Array,
// wantLogits: Uint8Array.
bool FillBatch(napi_env env, Context* c, size_t argc, napi_value* argv) {
  int32_t n = 0;
  int32_t *tokens, *positions, *seqIds;
  uint8_t* want;
  size_t lenTokens, lenPositions, lenSeq, lenWant;
  // Optional: seqCounts[i] sequences for row i, the first from seqIds, the others taken in
  // order from extraSeqs.
  int32_t *seqCounts = nullptr, *extraSeqs = nullptr;
  size_t lenCounts = 0, lenExtra = 0;
  const bool shared = argc == 7;
  if (shared && (!GetTypedArray(env, argv[5], napi_int32_array, &seqCounts, &lenCounts) ||
                 !GetTypedArray(env, argv[6], napi_int32_array, &extraSeqs, &lenExtra))) {
    napi_throw_type_error(env, nullptr, "decode: seqCounts and extraSeqs must be Int32Arrays");
    return false;
  }
  if ((argc != 5 && argc != 7) || !GetInt32(env, argv[0], &n) ||
      !GetTypedArray(env, argv[1], napi_int32_array, &tokens, &lenTokens) ||
      !GetTypedArray(env, argv[2], napi_int32_array, &positions, &lenPositions) ||
      !GetTypedArray(env, argv[3], napi_int32_array, &seqIds, &lenSeq) ||
      !GetTypedArray(env, argv[4], napi_uint8_array, &want, &lenWant)) {
    napi_throw_type_error(env, nullptr,
                          "decode(nTokens, tokens: Int32Array, positions: Int32Array, "
                          "seqIds: Int32Array, wantLogits: Uint8Array)");
    return false;
  }
  if (n <= 0 || n > c->nBatch) {
    Throw(env, "decode: nTokens must be in 1.." + std::to_string(c->nBatch));
    return false;
  }
  if (lenTokens < size_t(n) || lenPositions < size_t(n) || lenSeq < size_t(n) ||
      lenWant < size_t(n)) {
    Throw(env, "decode: arrays shorter than nTokens");
    return false;
  }
  if (shared && lenCounts < size_t(n)) {
    Throw(env, "decode: seqCounts shorter than nTokens");
    return false;
  }
  size_t extraAt = 0;
  for (int32_t i = 0; i < n; i++) {
    if (tokens[i] < 0 || tokens[i] >= c->nVocab) {
      Throw(env, "decode: token " + std::to_string(tokens[i]) + " out of range");
      return false;
    }
    if (seqIds[i] < 0 || seqIds[i] >= c->nSeqMax) {
      Throw(env, "decode: sequence id " + std::to_string(seqIds[i]) + " out of range");
      return false;
    }
    c->batch.token[i] = tokens[i];
    c->batch.pos[i] = positions[i];
    const int32_t count = shared ? seqCounts[i] : 1;
    if (count < 1 || count > c->nSeqMax || (count > 1 && extraAt + size_t(count - 1) > lenExtra)) {
      Throw(env, "decode: bad sequence count " + std::to_string(count) + " for row " + std::to_string(i));
      return false;
    }
    c->batch.n_seq_id[i] = count;
    c->batch.seq_id[i][0] = seqIds[i];
    for (int32_t k = 1; k < count; k++) {
      const int32_t extra = extraSeqs[extraAt++];
      if (extra < 0 || extra >= c->nSeqMax) {
        Throw(env, "decode: sequence id " + std::to_string(extra) + " out of range");
        return false;
      }
      c->batch.seq_id[i][k] = extra;
    }
    // llama.cpp requires every row of an embedding context to be an output (a pooled vector
    // averages them all); their logits are never read there.
    c->batch.logits[i] = want[i] || c->embeddings ? 1 : 0;
    c->lastWantLogits[i] = want[i] ? 1 : 0;
  }
  c->batch.n_tokens = n;
  c->lastTokens = 0;  // no logits readable until this decode succeeds
  ReleaseLogitsViews(env, c);
  return true;
}

std::string DecodeError(int32_t status) {
  return "llama_decode failed with status " + std::to_string(status);
}

// decode(nTokens, tokens, positions, seqIds, wantLogits) -> 0 ok, 1 no KV slot (shrink the batch
// or free sequences), 2 aborted; throws on errors.
napi_value ContextDecode(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  if (!FillBatch(env, c, argc, argv)) return nullptr;
  ClearLastError();
  const int32_t status = g_api.llama_decode(c->ctx, c->batch);
  if (status < 0) {
    std::string detail = TakeLastError();
    return Throw(env, DecodeError(status) + (detail.empty() ? "" : ": " + detail));
  }
  if (status == 0) c->lastTokens = c->batch.n_tokens;
  return MakeNumber(env, status);
}

struct AsyncDecode {
  Context* context;
  napi_ref self;  // keeps the context's JS object alive while the work is in flight
};

void DecodeExecute(napi_env, void* data) {
  Context* c = static_cast<AsyncDecode*>(data)->context;
  c->asyncResult = g_api.llama_decode(c->ctx, c->batch);
  // Logits are read on the main thread right after; make sure a GPU backend has finished.
  g_api.llama_synchronize(c->ctx);
}

void DecodeComplete(napi_env env, napi_status status, void* data) {
  AsyncDecode* job = static_cast<AsyncDecode*>(data);
  Context* c = job->context;
  c->busy = false;
  napi_delete_async_work(env, c->work);
  c->work = nullptr;
  napi_deferred deferred = c->deferred;
  c->deferred = nullptr;
  napi_delete_reference(env, job->self);
  delete job;
  if (status != napi_ok) {
    napi_value error;
    napi_create_string_utf8(env, "async decode cancelled", NAPI_AUTO_LENGTH, &error);
    napi_value errObj;
    napi_create_error(env, nullptr, error, &errObj);
    napi_reject_deferred(env, deferred, errObj);
    return;
  }
  if (c->asyncResult < 0) {
    std::string detail = TakeLastError();
    napi_value message, errObj;
    std::string text = DecodeError(c->asyncResult) + (detail.empty() ? "" : ": " + detail);
    napi_create_string_utf8(env, text.c_str(), text.size(), &message);
    napi_create_error(env, nullptr, message, &errObj);
    napi_reject_deferred(env, deferred, errObj);
    return;
  }
  if (c->asyncResult == 0) c->lastTokens = c->batch.n_tokens;
  napi_resolve_deferred(env, deferred, MakeNumber(env, c->asyncResult));
}

// decodeAsync(...same as decode) -> Promise<number>; the decode runs on the libuv thread pool and
// the context refuses every other call until it settles.
napi_value ContextDecodeAsync(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], self;
  Context* c = ReadyContext(env, info, &argc, argv, &self);
  if (!c) return nullptr;
  if (!FillBatch(env, c, argc, argv)) return nullptr;
  ClearLastError();
  napi_value promise, name;
  CHECK_NAPI(env, napi_create_promise(env, &c->deferred, &promise));
  CHECK_NAPI(env, napi_create_string_utf8(env, "trellis.decode", NAPI_AUTO_LENGTH, &name));
  AsyncDecode* job = new AsyncDecode{c, nullptr};
  napi_create_reference(env, self, 1, &job->self);
  napi_status st = napi_create_async_work(env, nullptr, name, DecodeExecute, DecodeComplete, job,
                                          &c->work);
  if (st == napi_ok) st = napi_queue_async_work(env, c->work);
  if (st != napi_ok) {
    napi_delete_reference(env, job->self);
    delete job;
    return Throw(env, "failed to queue async decode");
  }
  c->busy = true;
  return promise;
}

// The context of a method taking one integer (a row, a sequence id), or nullptr with an
// exception pending.
Context* ReadyContextWithIndex(napi_env env, napi_callback_info info, const char* usage,
                               int32_t* index) {
  size_t argc = 1;
  napi_value argv[1];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  CHECK_ARG(env, argc == 1 && GetInt32(env, argv[0], index), usage);
  return c;
}

// logits(row) -> Float32Array of nVocab over llama.cpp's buffer; valid until the next decode.
napi_value ContextLogits(napi_env env, napi_callback_info info) {
  int32_t row = -1;
  Context* c = ReadyContextWithIndex(env, info, "logits(row: number)", &row);
  if (!c) return nullptr;
  if (row < 0 || row >= c->lastTokens || !c->lastWantLogits[row])
    return Throw(env, "logits: row " + std::to_string(row) +
                          " did not ask for logits in the last successful decode");
  if (c->rowView[row] >= 0) {
    napi_value buffer, array;
    CHECK_NAPI(env, napi_get_reference_value(env, c->handedOut[c->rowView[row]], &buffer));
    CHECK_NAPI(env, napi_create_typedarray(env, napi_float32_array, size_t(c->nVocab), buffer, 0,
                                           &array));
    return array;
  }
  float* logits = g_api.llama_get_logits_ith(c->ctx, row);
  if (!logits) return Throw(env, "llama_get_logits_ith returned no logits");
  napi_value buffer, array;
  CHECK_NAPI(env, napi_create_external_arraybuffer(env, logits, size_t(c->nVocab) * sizeof(float),
                                                   nullptr, nullptr, &buffer));
  napi_ref ref;
  CHECK_NAPI(env, napi_create_reference(env, buffer, 1, &ref));
  c->rowView[row] = int32_t(c->handedOut.size());
  c->handedOut.push_back(ref);
  CHECK_NAPI(env, napi_create_typedarray(env, napi_float32_array, size_t(c->nVocab), buffer, 0,
                                         &array));
  return array;
}

// embeddingSeq(seq) -> Float32Array (a copy of n_embd floats), the pooled vector of `seq` in
// the last successful decode of an embedding context with pooling; null when the decode held no
// row of `seq`.
napi_value ContextEmbeddingSeq(napi_env env, napi_callback_info info) {
  int32_t seq = -1;
  Context* c = ReadyContextWithIndex(env, info, "embeddingSeq(seq: number)", &seq);
  if (!c) return nullptr;
  CHECK_ARG(env, seq >= 0 && seq < c->nSeqMax, "embeddingSeq: sequence id out of range");
  if (!c->embeddings) return Throw(env, "embeddingSeq: not an embedding context");
  const enum llama_pooling_type pooling = g_api.llama_pooling_type(c->ctx);
  if (pooling == LLAMA_POOLING_TYPE_NONE || pooling == LLAMA_POOLING_TYPE_RANK)
    return Throw(env, "embeddingSeq: the context pools no sequence vectors (pooling none or rank)");
  if (c->lastTokens == 0) return MakeNull(env);
  const float* embd = g_api.llama_get_embeddings_seq(c->ctx, seq);
  if (!embd) return MakeNull(env);
  return MakeTypedArrayCopy(env, napi_float32_array, embd, size_t(c->nEmbd), sizeof(float));
}

// embeddingRow(row) -> Float32Array (a copy of n_embd floats): one row's output vector in the
// last successful decode of an embedding context without pooling.
napi_value ContextEmbeddingRow(napi_env env, napi_callback_info info) {
  int32_t row = -1;
  Context* c = ReadyContextWithIndex(env, info, "embeddingRow(row: number)", &row);
  if (!c) return nullptr;
  if (!c->embeddings) return Throw(env, "embeddingRow: not an embedding context");
  if (g_api.llama_pooling_type(c->ctx) != LLAMA_POOLING_TYPE_NONE)
    return Throw(env, "embeddingRow: the context pools its rows (read embeddingSeq)");
  if (row < 0 || row >= c->lastTokens)
    return Throw(env, "embeddingRow: row " + std::to_string(row) + " was not in the last successful decode");
  const float* embd = g_api.llama_get_embeddings_ith(c->ctx, row);
  if (!embd) return Throw(env, "llama_get_embeddings_ith returned no embedding");
  return MakeTypedArrayCopy(env, napi_float32_array, embd, size_t(c->nEmbd), sizeof(float));
}

bool GetSeqArgs(napi_env env, size_t argc, napi_value* argv, size_t need, int32_t* out) {
  if (argc < need) return false;
  for (size_t i = 0; i < need; i++)
    if (!GetInt32(env, argv[i], &out[i])) return false;
  return true;
}

// seqRemove(seq, p0, p1) -> boolean; seq -1 = every sequence, p < 0 = open end.
napi_value ContextSeqRemove(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  int32_t a[3];
  CHECK_ARG(env, GetSeqArgs(env, argc, argv, 3, a), "seqRemove(seq, p0, p1)");
  return MakeBool(env, g_api.llama_memory_seq_rm(g_api.llama_get_memory(c->ctx), a[0], a[1], a[2]));
}

// seqCopy(src, dst, p0, p1)
napi_value ContextSeqCopy(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  int32_t a[4];
  CHECK_ARG(env, GetSeqArgs(env, argc, argv, 4, a), "seqCopy(src, dst, p0, p1)");
  CHECK_ARG(env, a[0] >= 0 && a[0] < c->nSeqMax && a[1] >= 0 && a[1] < c->nSeqMax,
            "seqCopy: sequence id out of range");
  g_api.llama_memory_seq_cp(g_api.llama_get_memory(c->ctx), a[0], a[1], a[2], a[3]);
  return nullptr;
}

// seqKeep(seq): drop every other sequence
napi_value ContextSeqKeep(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  int32_t a[1];
  CHECK_ARG(env, GetSeqArgs(env, argc, argv, 1, a), "seqKeep(seq)");
  g_api.llama_memory_seq_keep(g_api.llama_get_memory(c->ctx), a[0]);
  return nullptr;
}

// seqPosRange(seq) -> [min, max], both -1 when the sequence is empty
napi_value ContextSeqPosRange(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  int32_t a[1];
  CHECK_ARG(env, GetSeqArgs(env, argc, argv, 1, a), "seqPosRange(seq)");
  llama_memory_t mem = g_api.llama_get_memory(c->ctx);
  napi_value out;
  CHECK_NAPI(env, napi_create_array_with_length(env, 2, &out));
  napi_set_element(env, out, 0, MakeNumber(env, g_api.llama_memory_seq_pos_min(mem, a[0])));
  napi_set_element(env, out, 1, MakeNumber(env, g_api.llama_memory_seq_pos_max(mem, a[0])));
  return out;
}

napi_value ContextClearMemory(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  Context* c = ReadyContext(env, info, &argc, nullptr);
  if (!c) return nullptr;
  g_api.llama_memory_clear(g_api.llama_get_memory(c->ctx), true);
  return nullptr;
}

napi_value ContextSetThreads(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  Context* c = ReadyContext(env, info, &argc, argv);
  if (!c) return nullptr;
  int32_t a[2];
  CHECK_ARG(env, GetSeqArgs(env, argc, argv, 2, a) && a[0] > 0 && a[1] > 0,
            "setThreads(threads, threadsBatch)");
  g_api.llama_set_n_threads(c->ctx, a[0], a[1]);
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Module

bool HasGpuDevice() {
  for (size_t i = 0, n = g_api.ggml_backend_dev_count(); i < n; i++) {
    const auto type = g_api.ggml_backend_dev_type(g_api.ggml_backend_dev_get(i));
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) return true;
  }
  return false;
}

// init(binsDir, logToStderr, fallbackBackend) -> { binsDir, devices: [{ name, description, type }],
// gpuOffload }. fallbackBackend ("" for none) is one backend library loaded only when binsDir gave
// no GPU device: node-llama-cpp's CUDA package ships a second libggml-cuda.so (the -ext package's
// fallback/) for drivers the first one does not start on.
// Loading twice from a different directory is refused: one process, one llama.cpp build.
napi_value Init(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string binsDir;
  std::string fallbackBackend;
  bool logToStderr = false;
  CHECK_ARG(env, argc == 3 && GetString(env, argv[0], &binsDir) &&
                     GetBool(env, argv[1], &logToStderr) && GetString(env, argv[2], &fallbackBackend),
            "init(binsDir: string, logToStderr: boolean, fallbackBackend: string)");
  g_logToStderr = logToStderr;
  if (g_loaded && binsDir != g_binsDir)
    return Throw(env, "llama.cpp already loaded from " + g_binsDir);
  if (!g_loaded) {
    std::string error = LoadLlamaApi(binsDir, g_api);
    if (!error.empty()) return Throw(env, error);
    g_api.llama_log_set(LogCallback, nullptr);
    // Picks the best CPU variant (libggml-cpu-<arch>.so) plus any GPU backend in the directory.
    g_api.ggml_backend_load_all_from_path(binsDir.c_str());
    if (!fallbackBackend.empty() && !HasGpuDevice()) g_api.ggml_backend_load(fallbackBackend.c_str());
    g_api.llama_backend_init();
    g_loaded = true;
    g_binsDir = binsDir;
  }
  napi_value out, devices;
  CHECK_NAPI(env, napi_create_object(env, &out));
  const size_t count = g_api.ggml_backend_dev_count();
  CHECK_NAPI(env, napi_create_array_with_length(env, count, &devices));
  for (size_t i = 0; i < count; i++) {
    ggml_backend_dev_t dev = g_api.ggml_backend_dev_get(i);
    napi_value d;
    napi_create_object(env, &d);
    SetProperty(env, d, "name", MakeString(env, g_api.ggml_backend_dev_name(dev)));
    SetProperty(env, d, "description", MakeString(env, g_api.ggml_backend_dev_description(dev)));
    const char* type = "other";
    switch (g_api.ggml_backend_dev_type(dev)) {
      case GGML_BACKEND_DEVICE_TYPE_CPU: type = "cpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_GPU: type = "gpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_IGPU: type = "igpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_ACCEL: type = "accel"; break;
      default: break;
    }
    SetProperty(env, d, "type", MakeString(env, type));
    napi_set_element(env, devices, uint32_t(i), d);
  }
  SetProperty(env, out, "binsDir", MakeString(env, g_binsDir));
  SetProperty(env, out, "devices", devices);
  SetProperty(env, out, "gpuOffload", MakeBool(env, g_api.llama_supports_gpu_offload()));
  return out;
}


// gatherCandidates(mode, logits, mask, exclude, n, k, ids, values, heap, state): the sampler's
// gather pass (native/kernels.h). mask/exclude: Uint32Array or null; state: Float64Array
// [count, maxValue, argmax, floor], read and written. Needs no llama.cpp: the sampler uses it
// whenever the addon is built. Every length is checked, so a bad call throws instead of writing
// out of bounds.
napi_value GatherCandidatesFn(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  int32_t mode = -1, n = 0, k = 0;
  float* logits = nullptr;
  uint32_t* mask = nullptr;
  uint32_t* exclude = nullptr;
  int32_t* ids = nullptr;
  double* values = nullptr;
  double* heap = nullptr;
  double* state = nullptr;
  size_t logitsLen = 0, maskLen = 0, excludeLen = 0, idsLen = 0, valuesLen = 0, heapLen = 0, stateLen = 0;
  const char* usage =
      "gatherCandidates(mode: 0|1|2, logits: Float32Array, mask: Uint32Array | null, exclude: "
      "Uint32Array | null, n, k, ids: Int32Array, values: Float64Array, heap: Float64Array, state: "
      "Float64Array)";
  CHECK_ARG(env,
            argc == 10 && GetInt32(env, argv[0], &mode) && mode >= 0 && mode <= 2 &&
                GetTypedArray(env, argv[1], napi_float32_array, &logits, &logitsLen) &&
                (IsNullish(env, argv[2]) || GetTypedArray(env, argv[2], napi_uint32_array, &mask, &maskLen)) &&
                (IsNullish(env, argv[3]) || GetTypedArray(env, argv[3], napi_uint32_array, &exclude, &excludeLen)) &&
                GetInt32(env, argv[4], &n) && GetInt32(env, argv[5], &k) &&
                GetTypedArray(env, argv[6], napi_int32_array, &ids, &idsLen) &&
                GetTypedArray(env, argv[7], napi_float64_array, &values, &valuesLen) &&
                GetTypedArray(env, argv[8], napi_float64_array, &heap, &heapLen) &&
                GetTypedArray(env, argv[9], napi_float64_array, &state, &stateLen),
            usage);
  const size_t words = (size_t(n) + 31) / 32;
  const auto gatherMode = static_cast<trellis::GatherMode>(mode);
  CHECK_ARG(env,
            n > 0 && logitsLen >= size_t(n) && (!mask || maskLen >= words) &&
                (!exclude || excludeLen >= words) && stateLen >= 4 &&
                (gatherMode != trellis::GatherMode::TopK || (k > 0 && heapLen >= size_t(k))),
            "gatherCandidates: array shorter than n, its mask words or k");
  const double stored = state[0];
  CHECK_ARG(env, stored >= 0 && stored <= double(n) && idsLen >= size_t(n) + size_t(stored) &&
                     valuesLen >= size_t(n) + size_t(stored),
            "gatherCandidates: ids/values need room for count + n candidates");
  trellis::GatherState s{int32_t(stored), state[1], int32_t(state[2]), state[3]};
  trellis::GatherCandidates(gatherMode, logits, mask, exclude, n, k, ids, values, heap, &s);
  state[0] = s.count;
  state[1] = s.maxValue;
  state[2] = s.argmax;
  state[3] = s.floor;
  return nullptr;
}

// logSumExp(logits: Float32Array, membership: Uint8Array | null, numSets, setLse: Float64Array |
// null) -> log Σ exp over logits; setLse[k] the same over set k (native/kernels.h).
napi_value LogSumExpFn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK_NAPI(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  float* logits = nullptr;
  uint8_t* membership = nullptr;
  double* setLse = nullptr;
  size_t logitsLen = 0, membershipLen = 0, setLen = 0;
  int32_t numSets = 0;
  CHECK_ARG(env,
            argc == 4 && GetTypedArray(env, argv[0], napi_float32_array, &logits, &logitsLen) &&
                (IsNullish(env, argv[1]) || GetTypedArray(env, argv[1], napi_uint8_array, &membership, &membershipLen)) &&
                GetInt32(env, argv[2], &numSets) &&
                (IsNullish(env, argv[3]) || GetTypedArray(env, argv[3], napi_float64_array, &setLse, &setLen)),
            "logSumExp(logits: Float32Array, membership: Uint8Array | null, numSets: number, setLse: Float64Array | null)");
  CHECK_ARG(env,
            logitsLen > 0 && logitsLen < size_t(INT32_MAX) && numSets >= 0 && numSets <= 8 &&
                (numSets == 0 || (membership && membershipLen >= logitsLen && setLse && setLen >= size_t(numSets))),
            "logSumExp: numSets in 0..8 needs a membership byte per logit and numSets outputs");
  return MakeNumber(env, trellis::LogSumExp(logits, int32_t(logitsLen), numSets > 0 ? membership : nullptr, numSets, setLse));
}

#define METHOD(name, fn) \
  { name, nullptr, fn, nullptr, nullptr, nullptr, napi_default, nullptr }

napi_value ModuleInit(napi_env env, napi_value exports) {
  napi_property_descriptor modelMethods[] = {
      METHOD("dispose", ModelDispose),
      METHOD("info", ModelInfo),
      METHOD("tokenize", ModelTokenize),
      METHOD("tokenPiece", ModelTokenPiece),
      METHOD("tokenAttributes", ModelTokenAttributes),
      METHOD("eogTokens", ModelEogTokens),
      METHOD("chatTemplate", ModelChatTemplate),
      METHOD("meta", ModelMeta),
      METHOD("metaKeys", ModelMetaKeys),
  };
  napi_value modelClass;
  if (napi_define_class(env, "Model", NAPI_AUTO_LENGTH, ModelNew, nullptr,
                        sizeof modelMethods / sizeof modelMethods[0], modelMethods,
                        &modelClass) != napi_ok)
    return nullptr;
  napi_create_reference(env, modelClass, 1, &g_modelConstructor);

  napi_property_descriptor contextMethods[] = {
      METHOD("dispose", ContextDispose),
      METHOD("info", ContextInfo),
      METHOD("decode", ContextDecode),
      METHOD("decodeAsync", ContextDecodeAsync),
      METHOD("logits", ContextLogits),
      METHOD("embeddingSeq", ContextEmbeddingSeq),
      METHOD("embeddingRow", ContextEmbeddingRow),
      METHOD("seqRemove", ContextSeqRemove),
      METHOD("seqCopy", ContextSeqCopy),
      METHOD("seqKeep", ContextSeqKeep),
      METHOD("seqPosRange", ContextSeqPosRange),
      METHOD("clearMemory", ContextClearMemory),
      METHOD("setThreads", ContextSetThreads),
  };
  napi_value contextClass;
  if (napi_define_class(env, "Context", NAPI_AUTO_LENGTH, ContextNew, nullptr,
                        sizeof contextMethods / sizeof contextMethods[0], contextMethods,
                        &contextClass) != napi_ok)
    return nullptr;

  napi_value initFn;
  napi_create_function(env, "init", NAPI_AUTO_LENGTH, Init, nullptr, &initFn);
  napi_set_named_property(env, exports, "init", initFn);
  napi_value gatherFn;
  napi_create_function(env, "gatherCandidates", NAPI_AUTO_LENGTH, GatherCandidatesFn, nullptr, &gatherFn);
  napi_set_named_property(env, exports, "gatherCandidates", gatherFn);
  napi_value logSumExpFn;
  napi_create_function(env, "logSumExp", NAPI_AUTO_LENGTH, LogSumExpFn, nullptr, &logSumExpFn);
  napi_set_named_property(env, exports, "logSumExp", logSumExpFn);
  napi_set_named_property(env, exports, "kernelsUseAvx2", MakeBool(env, trellis::KernelsUseAvx2()));
  napi_set_named_property(env, exports, "Model", modelClass);
  napi_set_named_property(env, exports, "Context", contextClass);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, ModuleInit)
