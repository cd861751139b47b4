// The Catch2 runner of the ISA variant executables (zcoll-tests-portable, zcoll-tests-avx2). It is compiled
// without the variant's ISA flags, so it can check the CPU before any variant code runs:
//
//     zcoll-tests-avx2 --zcoll-require-cpu avx2 [Catch2 options]
//
// exits with 77 (registered as SKIP_RETURN_CODE) when the CPU lacks a listed feature.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int skip_exit_code = 77;

bool cpu_supports(const std::string& feature) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (feature == "avx2") return __builtin_cpu_supports("avx2");
  if (feature == "avx512f") return __builtin_cpu_supports("avx512f");
  if (feature == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (feature == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (feature == "avx512vbmi") return __builtin_cpu_supports("avx512vbmi");
  if (feature == "gfni") return __builtin_cpu_supports("gfni");
#endif
  std::fprintf(stderr, "zcoll-tests: cannot check CPU feature '%s'\n", feature.c_str());
  return false;
}

}  // namespace

int main(int argc, char* argv[]) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--zcoll-require-cpu") == 0 && i + 1 < argc) {
      std::string list = argv[++i];
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        const std::string feature = list.substr(start, end - start);
        if (!feature.empty() && !cpu_supports(feature)) {
          std::printf("skipped: this CPU lacks %s\n", feature.c_str());
          return skip_exit_code;
        }
        start = end + 1;
      }
      continue;
    }
    args.push_back(argv[i]);
  }
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
