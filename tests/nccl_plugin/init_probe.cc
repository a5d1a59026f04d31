// nccl_plugin_init_probe PLUGIN: loads the plugin in a fresh process (init runs once per process) and prints
// "vN init=<result> devices=<count>" for every version, so tests can run init under different environments.
#include <cstdio>
#include <exception>

#include "nccl_plugin/plugin_loader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  try {
    for (const auto& api : megascale::nccl_plugin::loadPlugin(argv[1])) {
      int count = -1;
      const int init = api.init();
      if (init == megascale::nccl_abi::kSuccess) api.devices(&count);
      std::printf("%s init=%d devices=%d\n", api.version.c_str(), init, count);
      if (init == megascale::nccl_abi::kSuccess) api.finalize();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
