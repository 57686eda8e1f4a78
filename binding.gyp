{
  "targets": [
    {
      "target_name": "trellis_llama",
      "sources": ["native/addon.cc", "native/llama_api.cc", "native/kernels.cc"],
      "include_dirs": ["native/llama-include"],
      "cflags_cc": ["-std=c++17", "-O2", "-fvisibility=hidden"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "libraries": ["-ldl"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
