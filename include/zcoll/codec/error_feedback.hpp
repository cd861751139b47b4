#pragma once
/// ErrorFeedback<C>: carried-forward error compensation for any codec (quantized-collectives paper,
/// Algorithm 1; DCT-DP's error feedback).
///
/// Each call adds the error left over from the previous call with the same key, compresses the sum and
/// keeps what the receiver will not see:
///
///     z = x + e[key];   transmit C(z);   e[key] = z - decode(C(z))
///
/// so over many steps the sum of what was transmitted tracks the sum of the inputs however coarse C is.
/// The stream is C's own (same codec id): receivers decode it with C and need not know about the feedback.
///
/// The residual is computed in the encode pass where C offers it (C::compress_with_residual, as TopK
/// does: the dropped entries are the residual), so it costs no decode; otherwise it decodes the stream
/// once more. Keys name tensors (one residual per key); a key's residual keeps its first length and type.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// Names the tensor whose residual a compression carries forward.
using feedback_key = std::uint64_t;

namespace detail {
/// C fuses the residual into its encode pass: compress_with_residual(exec, in, out, residual) writes
/// in - decode(stream) into residual, which may be `in` itself.
template <class C, class T>
concept fuses_residual = requires(const C& c, const exec::Host& exec, std::span<const T> in, std::span<std::byte> out,
                                  std::span<T> residual) {
  { c.compress_with_residual(exec, in, out, residual) } -> std::same_as<std::span<std::byte>>;
};
}  // namespace detail

template <codec C>
class ErrorFeedback {
 public:
  using codec_type = C;
  static constexpr codec_id id = C::id;
  static constexpr bool uses_error_bound = C::uses_error_bound;

  static std::string name() { return "error-feedback(" + C::name() + ")"; }

  explicit ErrorFeedback(codec_config config = {}) : codec_(std::move(config)) {}
  explicit ErrorFeedback(C codec) : codec_(std::move(codec)) {}
  ErrorFeedback(const ErrorFeedback& other) : codec_(other.codec_) {
    const std::lock_guard lock(other.mutex_);
    residuals_ = other.residuals_;
  }

  const codec_config& config() const { return codec_.config(); }
  const C& inner() const { return codec_; }

  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    return codec_.template max_compressed_size<T>(count);
  }

  /// Compresses in + e[key] into `out` and keeps the new residual under `key`; returns the bytes written.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out,
                                feedback_key key) const {
    using T = std::ranges::range_value_t<R>;
    const std::span<const T> x(std::ranges::data(in), std::ranges::size(in));
    std::vector<T>& residual = residual_for<T>(key, x.size());
    // z = x + e, in place in the residual buffer; then e = z - decode(C(z)), also in place.
    for (std::size_t i = 0; i < x.size(); ++i) residual[i] = x[i] + residual[i];
    std::span<std::byte> written;
    if constexpr (detail::fuses_residual<C, T>) {
      // The fused encoder reads z and writes the residual over it, element by element.
      written = codec_.compress_with_residual(exec, std::span<const T>(residual), out, std::span<T>(residual));
    } else {
      written = codec_.compress(exec, residual, out);
      std::vector<T> decoded(residual.size());
      codec_.decompress(exec, written, decoded);
      for (std::size_t i = 0; i < residual.size(); ++i) residual[i] -= decoded[i];
    }
    // A NaN or infinite input travels exactly and leaves no residual: carrying NaN or inf - inf forward
    // would poison every later step of this element.
    for (auto& e : residual) e = std::isfinite(e) ? e : T(0);
    return written;
  }

  /// The codec interface: feedback under key 0.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    return compress(exec, in, out, feedback_key{0});
  }

  /// C's decoder: the stream is C's.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    codec_.decompress(exec, in, std::forward<R>(out));
  }

  /// Convenience: a new vector holding the stream (key 0), one thread.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::vector<std::byte> compress(const R& in, feedback_key key = 0) const {
    return compress_to_vector(*this, in, key);
  }

  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    return codec_.template decompress<T>(in);
  }

  /// The residual carried under `key` (empty if none yet): a copy, for inspection and checkpoints.
  template <floating_value T>
  std::vector<T> residual(feedback_key key) const {
    const std::lock_guard lock(mutex_);
    const auto found = residuals_.find(key);
    if (found == residuals_.end()) return {};
    const auto* values = std::get_if<std::vector<T>>(&found->second);
    if (values == nullptr) {
      throw argument_error("ErrorFeedback::residual: key " + std::to_string(key) + " holds " +
                           to_string(value_type_of<T> == value_type::f32 ? value_type::f64 : value_type::f32) +
                           " values");
    }
    return *values;
  }

  /// Forgets the residual of `key` (a tensor that is re-initialised), or of every key.
  void reset(feedback_key key) const {
    const std::lock_guard lock(mutex_);
    residuals_.erase(key);
  }
  void reset() const {
    const std::lock_guard lock(mutex_);
    residuals_.clear();
  }

 private:
  /// The residual vector of `key`, created as zeros on first use. Calls with different keys may run
  /// at once; two calls with one key at once are a caller error (one tensor, one stream of steps).
  template <floating_value T>
  std::vector<T>& residual_for(feedback_key key, std::size_t count) const {
    const std::lock_guard lock(mutex_);
    auto [entry, inserted] = residuals_.try_emplace(key, std::vector<T>(count, T(0)));
    auto* values = std::get_if<std::vector<T>>(&entry->second);
    if (values == nullptr) {
      throw argument_error("ErrorFeedback::compress: key " + std::to_string(key) + " carries " +
                           to_string(value_type_of<T> == value_type::f32 ? value_type::f64 : value_type::f32) +
                           " residuals, this call passes " + to_string(value_type_of<T>) + " values");
    }
    if (values->size() != count) {
      throw argument_error("ErrorFeedback::compress: key " + std::to_string(key) + " carries " +
                           std::to_string(values->size()) + " residuals, this call passes " + std::to_string(count) +
                           " values (one key per tensor)");
    }
    return *values;
  }

  C codec_;
  mutable std::mutex mutex_;
  // std::map: references to a key's vector stay valid while other keys are added.
  mutable std::map<feedback_key, std::variant<std::vector<float>, std::vector<double>>> residuals_;
};

}  // namespace zcoll
