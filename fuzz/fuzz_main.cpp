// The libFuzzer targets (fuzz/fuzz_codecs.hpp), one binary for every codec and both targets:
//
// --target=decode: arbitrary bytes into the codec's decoder. Anything but values or zcoll::format_error —
//   a crash, a sanitizer report, a leak, another exception, a hang — is a failure.
// --target=add (codecs whose streams add): arbitrary bytes added to a valid stream; the sum must decode,
//   or add raise format_error or argument_error; anything else is a failure.
// --target=round-trip: arbitrary values through the codec and back (round_trip_input's format); an element
//   that breaks the bound its stream states aborts with the element, and so does any exception but the
//   codec refusing its input with zcoll::argument_error.
//
//   zcoll-fuzz --codec=fzlight --target=decode -max_total_time=60 CORPUS_DIR
//   zcoll-fuzz --write-seeds=OUT_DIR bench/data/*.f32
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <vector>

#include "fuzz_target.hpp"
#include "instances.hpp"

namespace {

/// Every registered codec's targets, from the two halves.
const std::vector<zcoll_fuzz::fuzz_codec>& codecs() {
  static const std::vector<zcoll_fuzz::fuzz_codec> all = [] {
    auto list = zcoll_fuzz::first_half_codecs();
    const auto second = zcoll_fuzz::second_half_codecs();
    list.insert(list.end(), second.begin(), second.end());
    return list;
  }();
  return all;
}

const zcoll_fuzz::fuzz_codec* codec = nullptr;
zcoll_fuzz::target target = zcoll_fuzz::target::decode;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const auto out = zcoll_fuzz::flag(*argc, *argv, "write-seeds"); !out.empty()) {
    std::vector<std::filesystem::path> fields;
    for (int i = 1; i < *argc; ++i) {
      if ((*argv)[i][0] != '-') fields.emplace_back((*argv)[i]);
    }
    const int files = zcoll_fuzz::write_seed_corpora(codecs(), std::filesystem::path(out), fields);
    std::printf("zcoll-fuzz: %d seed files for %zu codecs in %.*s\n", files, codecs().size(),
                static_cast<int>(out.size()), out.data());
    std::exit(0);
  }
  codec = &zcoll_fuzz::codec_from_arguments(*argc, *argv, codecs());
  target = zcoll_fuzz::target_from_arguments(*argc, *argv, codecs());
  if (target == zcoll_fuzz::target::add && codec->add == nullptr) {
    zcoll_fuzz::usage("--target=add: this codec's streams do not add (zcoll::addable_codec)", codecs());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  if (target == zcoll_fuzz::target::decode) {
    try {
      codec->decode(std::as_bytes(input));
    } catch (const zcoll::format_error&) {
      // the expected answer to a damaged stream
    }
    return 0;
  }
  if (target == zcoll_fuzz::target::add) {
    zcoll_fuzz::add_input(*codec, std::as_bytes(input));
    return 0;
  }
  if (const zcoll_fuzz::violation found = zcoll_fuzz::round_trip_input(*codec, input)) {
    std::fprintf(stderr, "zcoll-fuzz: %s\n", zcoll_fuzz::describe(found, codec->name).c_str());
    std::abort();
  }
  return 0;
}
