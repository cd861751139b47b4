#pragma once
/// ErrorFeedback<C>: carried-forward error compensation for any codec (quantized-collectives paper,
/// Algorithm 1; DCT-DP's error feedback).
///
/// Each call adds the error left over from the previous call on the same state, compresses the sum and
/// keeps what the receiver will not see:
///
///     z = x + e;   transmit C(z);   e = z - decode(C(z))
///
/// so over many steps the sum of what was transmitted tracks the sum of the inputs however coarse C is.
/// The stream is C's own (same codec id): receivers decode it with C and need not know about the feedback.
///
///     const zcoll::ErrorFeedback<zcoll::Int4> ef{{.shape = {rows, dim}}};
///     zcoll::codec_state<decltype(ef)> residuals;          // the caller's: one entry per tensor
///     auto written = ef.compress(zcoll::exec::Host{}, residuals.at(layer), grad, out);
///
/// The residual is computed in the encode pass where C offers it (C::compress_with_residual, as TopK
/// does: the dropped entries are the residual), so it costs no decode; otherwise it decodes the stream
/// once more, into scratch the state keeps. A state's residual keeps its first length and type; once
/// sized, a call allocates nothing. The codec itself holds no state: one ErrorFeedback serves every
/// tensor and thread, each with its own state entry.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

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

  /// What one tensor carries from call to call: the residual e (and C's own state, when C keeps one).
  struct state {
    std::variant<std::monostate, std::vector<float>, std::vector<double>> residual;
    std::variant<std::monostate, std::vector<float>, std::vector<double>> decoded;  ///< scratch: C(z) decoded
    state_of<C> inner;

    /// The residual as T values (empty before the first call).
    template <floating_value T>
    std::span<const T> residual_values() const {
      const auto* values = std::get_if<std::vector<T>>(&residual);
      return values == nullptr ? std::span<const T>{} : std::span<const T>(*values);
    }
  };

  static std::string name() { return "error-feedback(" + C::name() + ")"; }

  explicit ErrorFeedback(codec_config config = {}) : codec_(std::move(config)) {}
  explicit ErrorFeedback(C codec) : codec_(std::move(codec)) {}

  const codec_config& config() const { return codec_.config(); }
  /// This codec with another error bound, every other setting of C kept (what a reduction hop needs).
  ErrorFeedback with_error_bound(const bound& error_bound) const { return ErrorFeedback(codec_.with_error_bound(error_bound)); }
  const C& inner() const { return codec_; }

  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    return codec_.template max_compressed_size<T>(count);
  }

  /// Compresses in + st's residual into `out` and keeps the new residual in `st`; returns the bytes written.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, state& st, const R& in, std::span<std::byte> out) const {
    using T = std::ranges::range_value_t<R>;
    const std::span<const T> x(std::ranges::data(in), std::ranges::size(in));
    std::vector<T>& residual = sized<T>(st.residual, x.size(), "residuals");
    // z = x + e, in place in the residual buffer; then e = z - decode(C(z)), also in place.
    for (std::size_t i = 0; i < x.size(); ++i) residual[i] = x[i] + residual[i];
    std::span<std::byte> written;
    if constexpr (detail::fuses_residual<C, T>) {
      // The fused encoder reads z and writes the residual over it, element by element.
      written = compress_inner_with_residual(exec, st, std::span<const T>(residual), out, std::span<T>(residual));
    } else {
      written = zcoll::compress(exec, codec_, st.inner, residual, out);
      std::vector<T>& decoded = sized<T>(st.decoded, residual.size(), "decoded values");
      codec_.decompress(exec, written, decoded);
      for (std::size_t i = 0; i < residual.size(); ++i) residual[i] -= decoded[i];
    }
    // A NaN or infinite input travels exactly and leaves no residual: carrying NaN or inf - inf forward
    // would poison every later step of this element.
    for (auto& e : residual) e = std::isfinite(e) ? e : T(0);
    return written;
  }

  /// The codec interface: one step with a fresh state (no residual carried in, none kept).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    state fresh;
    return compress(exec, fresh, in, out);
  }

  /// C's decoder: the stream is C's.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    codec_.decompress(exec, in, std::forward<R>(out));
  }


  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    return codec_.template decompress<T>(in);
  }

 private:
  template <floating_value T>
  std::span<std::byte> compress_inner_with_residual(const exec::Host& exec, state& st, std::span<const T> z,
                                                    std::span<std::byte> out, std::span<T> residual) const {
    if constexpr (stateful_codec<C>) {
      return codec_.compress_with_residual(exec, st.inner, z, out, residual);
    } else {
      return codec_.compress_with_residual(exec, z, out, residual);
    }
  }

  /// The buffer of `slot` as T values of `count`, zeros when made. A slot keeps its first length and type:
  /// a call with another is an argument_error (one state per tensor).
  template <floating_value T>
  static std::vector<T>& sized(std::variant<std::monostate, std::vector<float>, std::vector<double>>& slot,
                               std::size_t count, const char* what) {
    if (std::holds_alternative<std::monostate>(slot)) slot = std::vector<T>(count, T(0));
    auto* values = std::get_if<std::vector<T>>(&slot);
    if (values == nullptr) {
      throw argument_error(std::string("ErrorFeedback::compress: the state carries ") +
                           to_string(value_type_of<T> == value_type::f32 ? value_type::f64 : value_type::f32) + " " +
                           what + ", this call passes " + to_string(value_type_of<T>) + " values");
    }
    if (values->size() != count) {
      throw argument_error("ErrorFeedback::compress: the state carries " + std::to_string(values->size()) + " " +
                           what + ", this call passes " + std::to_string(count) + " values (one state per tensor)");
    }
    return *values;
  }

  C codec_;
};

}  // namespace zcoll
