// The raw layouts TorchRec's quantized-comms codecs move (zcoll/torchrec.py): FBGEMM's fused row-wise
// Int8/Int4/Int2 rows and the FP16/BF16/FP8 codes, without zcoll's stream header (QComms' buffers have
// a fixed size and no header). The math is zcoll's own (quantize/rowwise.hpp, quantize/cast.hpp), the
// same the Int8/Int4/Int2 and cast codecs write after their headers.

#include "fused_rows.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "zcoll/core/half_value.hpp"
#include "zcoll/quantize/cast.hpp"
#include "zcoll/quantize/rowwise.hpp"
#include "zcoll/quantize/rowwise_layout.hpp"

namespace zcoll::python {

namespace {

template <class Fn>
decltype(auto) with_bits(int bits, Fn&& fn) {
  if (bits == 8) return fn(std::integral_constant<int, 8>{});
  if (bits == 4) return fn(std::integral_constant<int, 4>{});
  if (bits == 2) return fn(std::integral_constant<int, 2>{});
  throw argument_error("bits = " + std::to_string(bits) + "; expected 8, 4 or 2 (FBGEMM's fused row-wise rates)");
}

template <class Fn>
decltype(auto) with_cast_format(const std::string& format, Fn&& fn) {
  if (format == "fp16") return fn(quantize::fp16{});
  if (format == "bf16") return fn(quantize::bf16{});
  if (format == "fp8-e4m3") return fn(quantize::fp8_e4m3{});
  if (format == "fp8-e5m2") return fn(quantize::fp8_e5m2{});
  throw argument_error("format: '" + format + "'; expected fp16, bf16, fp8-e4m3 or fp8-e5m2");
}

/// The values of `in` as float or double; 16-bit values widened into `wide` (exact).
template <class Fn>
decltype(auto) with_wide_values(dtype d, const held_buffer& in, const char* call, Fn&& fn) {
  return with_dtype(d, [&]<class T>(T) {
    const auto values = in.values<const T>(call);
    if constexpr (half_value<T>) {
      std::vector<float> wide(values.size());
      widen<T>(values, wide);
      return fn(std::span<const float>(wide));
    } else {
      return fn(values);
    }
  });
}

/// Writes float results to `out` of type `d` (rounded once for 16-bit types); the largest error that
/// rounding added.
template <class Fn>
double into_values(dtype d, const held_buffer& out, const char* call, Fn&& decode) {
  return with_dtype(d, [&]<class T>(T) -> double {
    const auto values = out.values<T>(call);
    if constexpr (half_value<T>) {
      std::vector<float> wide(values.size());
      decode(std::span<float>(wide));
      return narrow<T>(wide, values);
    } else {
      decode(values);
      return 0.0;
    }
  });
}

}  // namespace

void bind_fused_rows(py::module_& m) {
  m.def("fused_row_bytes", [](int bits, std::size_t rows, std::size_t dim) {
    return with_bits(bits, [&](auto b) { return quantize::rowwise_layout<b()>::fused_bytes(rows, dim); });
  });
  m.def("quantize_rows", [](int bits, const py::buffer& in, const std::string& d, std::size_t dim, const py::buffer& out) {
    const held_buffer input(in, false, "quantize_rows: input");
    const held_buffer output(out, true, "quantize_rows: out");
    return with_bits(bits, [&](auto b) {
      return with_wide_values(parse_dtype(d, "quantize_rows"), input, "quantize_rows: input", [&](auto values) {
        py::gil_scoped_release unlocked;
        return quantize::quantize_rows<b()>(values, dim, std::span<std::byte>(output.data, output.bytes));
      });
    });
  });
  m.def("dequantize_rows", [](int bits, const py::buffer& in, std::size_t dim, const py::buffer& out, const std::string& d) {
    const held_buffer input(in, false, "dequantize_rows: input");
    const held_buffer output(out, true, "dequantize_rows: out");
    return with_bits(bits, [&](auto b) {
      return into_values(parse_dtype(d, "dequantize_rows"), output, "dequantize_rows: out", [&](auto values) {
        py::gil_scoped_release unlocked;
        quantize::dequantize_rows<b()>(std::span<const std::byte>(input.data, input.bytes), dim, values);
      });
    });
  });
  m.def("cast_encode", [](const std::string& format, const py::buffer& in, const std::string& d, const py::buffer& out) {
    const held_buffer input(in, false, "cast_encode: input");
    const held_buffer output(out, true, "cast_encode: out");
    return with_cast_format(format, [&]<class F>(F) {
      return with_wide_values(parse_dtype(d, "cast_encode"), input, "cast_encode: input", [&](auto values) {
        py::gil_scoped_release unlocked;
        quantize::encode_bytes<F>(values, std::span<std::byte>(output.data, output.bytes));
        using T = typename decltype(values)::value_type;
        T largest = 0;  // the bound the codes hold: rounding_error_bound at the largest finite magnitude
        for (const T v : values) {
          if (std::isfinite(v)) largest = std::max<T>(largest, std::abs(v));
        }
        return quantize::rounding_error_bound<F, T>(largest);
      });
    });
  });
  m.def("cast_decode", [](const std::string& format, const py::buffer& in, const py::buffer& out, const std::string& d) {
    const held_buffer input(in, false, "cast_decode: input");
    const held_buffer output(out, true, "cast_decode: out");
    return with_cast_format(format, [&]<class F>(F) {
      return into_values(parse_dtype(d, "cast_decode"), output, "cast_decode: out", [&](auto values) {
        py::gil_scoped_release unlocked;
        quantize::decode_bytes<F>(std::span<const std::byte>(input.data, input.bytes), values);
      });
    });
  });
}

}  // namespace zcoll::python
