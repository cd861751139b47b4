#include <cmath>
#include <cstdio>
#include <vector>

#include <zcoll/zcoll.hpp>

int main() {
  std::vector<double> data(5000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::cos(0.01 * static_cast<double>(i));
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-6)}};
  const auto stream = codec.compress(data);
  const auto restored = codec.decompress<double>(stream);
  const auto error = zcoll::measure_error<double>(data, restored, 1e-6);
  std::printf("consumer: %zu values, %zu bytes, bound held: %s\n", data.size(), stream.size(),
              error.bound_held() ? "yes" : "no");
  return error.bound_held() && stream.size() < data.size() * sizeof(double) ? 0 : 1;
}
