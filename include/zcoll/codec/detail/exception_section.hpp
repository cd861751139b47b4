#pragma once
/// A pipeline chunk's exception section, written and read by this one piece of code for the host driver
/// (codec/pipeline.hpp) and the CUDA driver (codec/detail/pipeline_tile.hpp): the lanes that are not
/// coded (fill values and values the quantizer cannot code within the bound), stored exactly.
///
/// | bytes | field                                                                            |
/// |-------|----------------------------------------------------------------------------------|
/// | 2     | entries (u16, ≥ 1)                                                               |
/// | then, per entry, in block order:                                                         |
/// | 2     | first block (u16)                                                                |
/// | 2     | blocks (u16): the run's length for a fill run, 1 for a masked block              |
/// | 1     | type: 0 = fill run (every lane of the blocks is the fill value), 1 = masked block |
/// | 4     | masked block only: fill lanes (u32 mask, bit j = lane j)                         |
/// | 4     | masked block only: outlier lanes (u32 mask, disjoint from the fill lanes)        |
/// | T × n | masked block only: the n outliers' values, in lane order                         |
///
/// Entries name blocks in increasing order without overlap, inside the chunk; masks name lanes inside it.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

/// Why an exception section does not parse.
enum class exception_fault : std::uint8_t {
  none = 0,
  truncated,         // an entry, a mask or a value runs past the chunk
  no_entries,        // the entry count is 0
  blocks_misplaced,  // an entry's blocks are empty, out of order, overlapping or past the chunk's end
  unknown_type,      // not a fill run, or a masked block whose block count is not 1
  bad_masks,         // masks that overlap, are empty, or name lanes past the chunk's end
  no_fill_value,     // fill lanes in a stream that declares no fill value
};

ZCOLL_HOST_DEVICE constexpr const char* to_string(exception_fault fault) {
  switch (fault) {
    case exception_fault::none: return "no fault";
    case exception_fault::truncated: return "an entry runs past the chunk's end";
    case exception_fault::no_entries: return "a section of no entries";
    case exception_fault::blocks_misplaced:
      return "an entry's blocks are empty, out of order or outside the chunk";
    case exception_fault::unknown_type: return "an entry is neither a fill run nor a single masked block";
    case exception_fault::bad_masks: return "a masked block's masks overlap, are empty or name lanes past the chunk's end";
    case exception_fault::no_fill_value: return "fill lanes in a stream without a fill value";
  }
  return "unknown fault";
}

/// Bytes of the section's entry count.
inline constexpr std::size_t exception_count_bytes = 2;

ZCOLL_HOST_DEVICE inline std::byte* put_exception_bytes(std::byte* at, const void* value, std::size_t bytes) {
  std::memcpy(at, value, bytes);
  return at + bytes;
}

/// Writes the section's entry count at `at`; returns the byte after it.
ZCOLL_HOST_DEVICE inline std::byte* write_exception_count(std::byte* at, std::uint16_t entries) {
  return put_exception_bytes(at, &entries, sizeof entries);
}

/// Writes a fill-run entry for blocks [first, first + blocks); returns the byte after it.
ZCOLL_HOST_DEVICE inline std::byte* write_fill_run(std::byte* at, std::uint16_t first, std::uint16_t blocks) {
  const auto type = static_cast<std::uint8_t>(exception_type::fill_run);
  at = put_exception_bytes(at, &first, sizeof first);
  at = put_exception_bytes(at, &blocks, sizeof blocks);
  return put_exception_bytes(at, &type, sizeof type);
}

/// Writes a masked-block entry for `block`, whose 32 values start at `block_start` (lanes past the
/// chunk's end are never named by the masks, so never read); returns the byte after it
/// (masked_block_entry_bytes<T>(outliers) bytes on).
template <floating_value T>
ZCOLL_HOST_DEVICE std::byte* write_masked_block(std::byte* at, std::uint16_t block, block_mask fill,
                                                block_mask outliers, const T* block_start) {
  const std::uint16_t one = 1;
  const auto type = static_cast<std::uint8_t>(exception_type::masked_block);
  at = put_exception_bytes(at, &block, sizeof block);
  at = put_exception_bytes(at, &one, sizeof one);
  at = put_exception_bytes(at, &type, sizeof type);
  at = put_exception_bytes(at, &fill, sizeof fill);
  at = put_exception_bytes(at, &outliers, sizeof outliers);
  for (block_mask rest = outliers; rest != 0; rest &= rest - 1) {
    at = put_exception_bytes(at, block_start + zcoll::countr_zero(rest), sizeof(T));
  }
  return at;
}

// ---- the host encoder's side: a chunk's exceptions, block by block, to entries ----

/// Whether a block of a chunk of `chunk_size` values is all fill, and so joins a fill run.
inline bool joins_fill_run(const block_exceptions& e, std::size_t chunk_size) {
  const std::size_t lanes = chunk_size - std::size_t{e.block} * block_values;
  return all_fill({e.fill, e.outliers}, lanes < block_values ? lanes : block_values);
}

/// Calls run(first, count) for each fill run and block(e) for each masked block, in block order.
template <class Run, class Block>
void for_each_exception_entry(std::span<const block_exceptions> exceptions, std::size_t chunk_size, Run&& run,
                              Block&& block) {
  for (std::size_t i = 0; i < exceptions.size();) {
    if (joins_fill_run(exceptions[i], chunk_size)) {
      std::size_t j = i + 1;
      while (j < exceptions.size() && exceptions[j].block == exceptions[j - 1].block + 1 &&
             joins_fill_run(exceptions[j], chunk_size)) {
        ++j;
      }
      run(exceptions[i].block, j - i);
      i = j;
    } else {
      block(exceptions[i]);
      ++i;
    }
  }
}

/// Bytes of the section for a chunk's exceptions (as the host encoder collects them, in block order).
template <floating_value T>
std::size_t exception_section_bytes(std::span<const block_exceptions> exceptions, std::size_t chunk_size) {
  std::size_t bytes = exception_count_bytes;
  for_each_exception_entry(
      exceptions, chunk_size, [&](std::size_t, std::size_t) { bytes += exception_entry_header_bytes; },
      [&](const block_exceptions& e) { bytes += masked_block_entry_bytes<T>(e.outliers); });
  return bytes;
}

/// Writes the chunk's exception section at `at` (exception_section_bytes of room).
template <floating_value T>
void write_exception_section(std::byte* at, std::span<const block_exceptions> exceptions, std::span<const T> values) {
  std::size_t entries = 0;
  for_each_exception_entry(
      exceptions, values.size(), [&](std::size_t, std::size_t) { ++entries; },
      [&](const block_exceptions&) { ++entries; });
  at = write_exception_count(at, static_cast<std::uint16_t>(entries));
  for_each_exception_entry(
      exceptions, values.size(),
      [&](std::size_t first, std::size_t count) {
        at = write_fill_run(at, static_cast<std::uint16_t>(first), static_cast<std::uint16_t>(count));
      },
      [&](const block_exceptions& e) {
        at = write_masked_block(at, e.block, e.fill, e.outliers, values.data() + std::size_t{e.block} * block_values);
      });
}

// ---- reading ----

/// What applying a section gave: its size in bytes, or a fault and the entry it met it in.
struct exception_section_read {
  std::size_t bytes = 0;
  exception_fault fault = exception_fault::none;
  std::size_t entry = 0;
};

/// The lane visitor of a decoder that needs only the values.
struct ignore_exception_lanes {
  ZCOLL_HOST_DEVICE void operator()(std::size_t, block_mask, block_mask) const {}
};

/// Reads the section at `section` (`available` bytes to the chunk's end) of a chunk of `n` values and
/// checks it: fill_run(first_block, blocks) for each fill run, masked_block(block, fill_lanes, outliers,
/// outlier_values) for each masked block, whose outliers' values (T each, in lane order) are at
/// `outlier_values`, checked to be there. Reads nothing past `available`. The decoders apply it
/// (apply_exception_section); the CUDA add indexes it by block (index_exception_section).
template <floating_value T, class FillRun, class MaskedBlock>
ZCOLL_HOST_DEVICE exception_section_read read_exception_section(const std::byte* section, std::size_t available,
                                                                bool has_fill, std::size_t n, FillRun&& fill_run,
                                                                MaskedBlock&& masked_block) {
  exception_section_read read;
  const auto take = [&](auto& value) {
    if (available - read.bytes < sizeof value) return false;
    std::memcpy(&value, section + read.bytes, sizeof value);
    read.bytes += sizeof value;
    return true;
  };
  const auto fail = [&](exception_fault fault) {
    read.fault = fault;
    return read;
  };
  const std::size_t blocks = (n + block_values - 1) / block_values;
  std::uint16_t entries = 0;
  if (!take(entries)) return fail(exception_fault::truncated);
  if (entries == 0) return fail(exception_fault::no_entries);
  std::size_t next_free_block = 0;
  for (; read.entry < entries; ++read.entry) {
    std::uint16_t first = 0, count = 0;
    std::uint8_t type = 0;
    if (!take(first) || !take(count) || !take(type)) return fail(exception_fault::truncated);
    if (count == 0 || first < next_free_block || std::size_t{first} + count > blocks) {
      return fail(exception_fault::blocks_misplaced);
    }
    next_free_block = std::size_t{first} + count;
    if (type == static_cast<std::uint8_t>(exception_type::fill_run)) {
      if (!has_fill) return fail(exception_fault::no_fill_value);
      fill_run(std::size_t{first}, std::size_t{count});
      continue;
    }
    if (type != static_cast<std::uint8_t>(exception_type::masked_block) || count != 1) {
      return fail(exception_fault::unknown_type);
    }
    block_mask fill_lanes = 0, outliers = 0;
    if (!take(fill_lanes) || !take(outliers)) return fail(exception_fault::truncated);
    const std::size_t begin = std::size_t{first} * block_values;
    const block_mask valid = first_lanes(n - begin < block_values ? n - begin : block_values);
    if ((fill_lanes & outliers) != 0 || ((fill_lanes | outliers) & ~valid) != 0 || (fill_lanes | outliers) == 0) {
      return fail(exception_fault::bad_masks);
    }
    if (fill_lanes != 0 && !has_fill) return fail(exception_fault::no_fill_value);
    const std::size_t value_bytes = sizeof(T) * static_cast<std::size_t>(zcoll::popcount(outliers));
    if (available - read.bytes < value_bytes) return fail(exception_fault::truncated);
    masked_block(std::size_t{first}, fill_lanes, outliers, section + read.bytes);
    read.bytes += value_bytes;
  }
  return read;
}

/// Lanes of block `block` of a chunk of `n` values.
ZCOLL_HOST_DEVICE inline std::size_t lanes_in_block(std::size_t block, std::size_t n) {
  return n - block * block_values < block_values ? n - block * block_values : block_values;
}

/// Writes the masked block's values into `block_start`: `fill` on the fill lanes, the stored outliers
/// (at `outlier_values`) on the outlier lanes.
template <floating_value T>
ZCOLL_HOST_DEVICE void apply_masked_block(T* block_start, block_mask fill_lanes, block_mask outliers, T fill,
                                          const std::byte* outlier_values) {
  set_lanes(block_start, fill_lanes, fill);
  for (block_mask rest = outliers; rest != 0; rest &= rest - 1) {
    std::memcpy(block_start + zcoll::countr_zero(rest), outlier_values, sizeof(T));
    outlier_values += sizeof(T);
  }
}

/// Applies the section at `section` (`available` bytes to the chunk's end) to the chunk's `n` decoded
/// values: fill lanes get `fill` (only when `has_fill`), outliers their stored values; `lanes(block,
/// fill_lanes, outlier_lanes)` is told each block's exception lanes (zcoll::add needs them). Reads
/// nothing past `available`; on a fault the values are partly written.
template <floating_value T, class LaneVisitor = ignore_exception_lanes>
ZCOLL_HOST_DEVICE exception_section_read apply_exception_section(const std::byte* section, std::size_t available,
                                                                 bool has_fill, T fill, T* values, std::size_t n,
                                                                 LaneVisitor&& lanes = {}) {
  return read_exception_section<T>(
      section, available, has_fill, n,
      [&](std::size_t first, std::size_t count) {
        const std::size_t end = (first + count) * block_values < n ? (first + count) * block_values : n;
        for (std::size_t j = first * block_values; j < end; ++j) values[j] = fill;
        for (std::size_t k = first; k < first + count; ++k) lanes(k, first_lanes(lanes_in_block(k, n)), block_mask{0});
      },
      [&](std::size_t block, block_mask fill_lanes, block_mask outliers, const std::byte* outlier_values) {
        apply_masked_block(values + block * block_values, fill_lanes, outliers, fill, outlier_values);
        lanes(block, fill_lanes, outliers);
      });
}

/// What index_exception_section records for a block: no entry, or a fill run's block; any other value
/// is the byte (from the section's start) of the block's outlier values, its two masks just before.
inline constexpr std::uint32_t no_exception_entry = 0;
inline constexpr std::uint32_t fill_run_entry = 0xFFFFFFFF;

/// Checks the section as read_exception_section does and records in entry_of_block[k] (k < the chunk's
/// blocks, cleared first) where block k's exceptions are: so that each thread of a team can apply its
/// own block's (apply_indexed_exceptions) after one thread has read the section.
template <floating_value T>
ZCOLL_HOST_DEVICE exception_section_read index_exception_section(const std::byte* section, std::size_t available,
                                                                 bool has_fill, std::size_t n, std::uint32_t* entry_of_block) {
  const std::size_t blocks = (n + block_values - 1) / block_values;
  for (std::size_t k = 0; k < blocks; ++k) entry_of_block[k] = no_exception_entry;
  return read_exception_section<T>(
      section, available, has_fill, n,
      [&](std::size_t first, std::size_t count) {
        for (std::size_t k = first; k < first + count; ++k) entry_of_block[k] = fill_run_entry;
      },
      [&](std::size_t block, block_mask, block_mask, const std::byte* outlier_values) {
        entry_of_block[block] = static_cast<std::uint32_t>(outlier_values - section);
      });
}

/// A block's exception lanes (fill, outliers) as index_exception_section recorded them (`entry`), for a
/// block of `lanes` lanes, without its values.
ZCOLL_HOST_DEVICE inline exception_masks indexed_exception_masks(const std::byte* section, std::uint32_t entry,
                                                                 std::size_t lanes) {
  if (entry == no_exception_entry) return {};
  if (entry == fill_run_entry) return {first_lanes(lanes), 0};
  block_mask fill_lanes = 0, outliers = 0;
  std::memcpy(&fill_lanes, section + entry - 2 * sizeof(block_mask), sizeof fill_lanes);
  std::memcpy(&outliers, section + entry - sizeof(block_mask), sizeof outliers);
  return {fill_lanes, outliers};
}

/// Applies block `block`'s exceptions as index_exception_section recorded them (`entry`) to its values
/// (`lanes` of them at `block_start`); returns its exception lanes (fill, outliers).
template <floating_value T>
ZCOLL_HOST_DEVICE exception_masks apply_indexed_exceptions(const std::byte* section, std::uint32_t entry, std::size_t lanes,
                                                           T fill, T* block_start) {
  const exception_masks e = indexed_exception_masks(section, entry, lanes);
  if (entry == fill_run_entry) {
    for (std::size_t j = 0; j < lanes; ++j) block_start[j] = fill;
  } else if (entry != no_exception_entry) {
    apply_masked_block(block_start, e.fill, e.outliers, fill, section + entry);
  }
  return e;
}

}  // namespace zcoll::detail
