// What NCCL sees before calling anything: the exported tables and the layouts of the structs it shares with us.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "plugin_fixture.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

TEST(PluginLibrary, ExportsEveryVersionFromV8ToV11) {
  EXPECT_EQ(versionNames(), (std::vector<std::string>{"v8", "v9", "v10", "v11"}));
}

TEST(PluginLibrary, LoadingAMissingLibraryNamesIt) {
  try {
    loadPlugin("/nonexistent/libnccl-net-nothing.so");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("libnccl-net-nothing.so"), std::string::npos) << e.what();
  }
}

// The declared layouts, from NCCL's documented field lists (a mismatch here would corrupt NCCL's view).
TEST(PluginAbi, PropertiesLayoutsMatchTheDocumentedFieldOrder) {
  EXPECT_EQ(offsetof(PropertiesV8, speed), 32u);
  EXPECT_EQ(sizeof(PropertiesV8), 64u);
  EXPECT_EQ(offsetof(PropertiesV9, vprops), 64u);
  EXPECT_EQ(offsetof(PropertiesV9, max_p2p_bytes), 88u);
  EXPECT_EQ(sizeof(PropertiesV9), 104u);
  EXPECT_EQ(offsetof(PropertiesV11, max_multi_request_size), 104u);
  EXPECT_EQ(offsetof(NetV11, finalize), offsetof(NetV11, makeVDevice) + sizeof(void*));
  EXPECT_EQ(sizeof(NetV8), 19 * sizeof(void*));
  EXPECT_EQ(sizeof(NetV11), 22 * sizeof(void*));
}

}  // namespace
}  // namespace megascale::nccl_plugin
