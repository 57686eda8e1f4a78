#include "llama_api.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <vector>

namespace {

// Release builds carry a version and, for GPU builds, the backend in the name
// (libllama.v0.5.0.so, libllama.cuda.v0.5.0.so); a plain build is libllama.so. Helper libraries
// (libllama-common.so, libggml-base.so, libggml-cpu-*.so) start with "stem-" and must not be
// picked.
std::string FindLibrary(const std::string& dir, const std::string& stem) {
  std::vector<std::string> candidates;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name == stem + ".so") candidates.push_back(name);
      else if (name.rfind(stem + ".", 0) == 0 && name.size() > stem.size() + 4 &&
               name.compare(name.size() - 3, 3, ".so") == 0)
        candidates.push_back(name);
    }
    closedir(d);
  }
  if (candidates.empty()) return "";
  std::sort(candidates.begin(), candidates.end());
  return dir + "/" + candidates.back();
}

}  // namespace

std::string LoadLlamaApi(const std::string& binsDir, LlamaApi& api) {
  const std::string ggmlPath = FindLibrary(binsDir, "libggml");
  const std::string llamaPath = FindLibrary(binsDir, "libllama");
  if (ggmlPath.empty() || llamaPath.empty())
    return "no libggml*.so / libllama*.so in " + binsDir;

  // The libraries carry RUNPATH $ORIGIN, so their own dependencies (libggml-base.so) resolve
  // inside binsDir.
  void* ggml = dlopen(ggmlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!ggml) return std::string("dlopen failed: ") + dlerror();
  void* llama = dlopen(llamaPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!llama) return std::string("dlopen failed: ") + dlerror();

  std::string missing;
#define TRELLIS_RESOLVE(lib, name)                                        \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));     \
  if (!api.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
#define TRELLIS_RESOLVE_GGML(name) TRELLIS_RESOLVE(ggml, name)
#define TRELLIS_RESOLVE_LLAMA(name) TRELLIS_RESOLVE(llama, name)
  TRELLIS_GGML_FUNCTIONS(TRELLIS_RESOLVE_GGML)
  TRELLIS_LLAMA_FUNCTIONS(TRELLIS_RESOLVE_LLAMA)
#undef TRELLIS_RESOLVE_LLAMA
#undef TRELLIS_RESOLVE_GGML
#undef TRELLIS_RESOLVE
  if (!missing.empty()) return "missing symbols in " + binsDir + ": " + missing;
  return "";
}
