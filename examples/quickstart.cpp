// Compress a field with FZLight at a relative error bound, decompress it, and check the bound.
#include <cmath>
#include <vector>

#include <zcoll/fmt.hpp>  // fmt formatters for zcoll's reports (the program links fmt)
#include <zcoll/zcoll.hpp>

int main() {
  std::vector<float> field(1 << 20);
  for (std::size_t i = 0; i < field.size(); ++i) field[i] = std::sin(0.001f * static_cast<float>(i)) * 20.0f;

  const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-4)}};
  std::vector<std::byte> stream(codec.max_compressed_size<float>(field.size()));  // size first, no hidden allocation
  const auto written = zcoll::compress(zcoll::exec::Host{.threads = 2}, codec, field, stream);

  std::vector<float> restored(field.size());
  zcoll::decompress(zcoll::exec::Host{.threads = 2}, codec, written, restored);

  const auto header = zcoll::read_stream_header(written);
  const auto error = zcoll::measure_error<float>(field, restored, header.error_bound);
  fmt::print("{} bytes -> {} bytes (ratio {:.2f}), bound {:.3g}: {}, bound held: {}\n", field.size() * sizeof(float),
             written.size(), static_cast<double>(field.size() * sizeof(float)) / static_cast<double>(written.size()),
             header.error_bound, error, error.bound_held() ? "yes" : "no");
  return error.bound_held() ? 0 : 1;
}
