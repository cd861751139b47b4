// transport::Mpi under mpirun, on 1, 2, 3, 4 and 7 ranks (tests/transport/CMakeLists.txt). Every rank
// runs every test case; each case works on its own duplicate of MPI_COMM_WORLD, so a message a failed
// case leaves behind cannot be received by the next one.
#include <catch2/catch.hpp>

#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zcoll/transport/concepts.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/mpi.hpp"

static_assert(zcoll::transport::byte_transport<zcoll::transport::Mpi>);
static_assert(!std::copy_constructible<zcoll::transport::Mpi::request>);
static_assert(std::movable<zcoll::transport::Mpi::request>);

namespace {

using zcoll::transport::Mpi;
using zcoll::transport::mpi_config;

/// A transport on a fresh duplicate of MPI_COMM_WORLD (collective: every rank calls it).
Mpi fresh(mpi_config config = {}) {
  return Mpi(boost::mpi::communicator(boost::mpi::communicator(), boost::mpi::comm_duplicate), config);
}

/// The byte at `index` of the message `from` sends `to` with `tag` and `size_bytes`: differs between
/// messages, so a message delivered to the wrong receive or out of order shows.
std::byte pattern(int from, int to, int tag, std::size_t size_bytes, std::size_t index) {
  const std::size_t mixed = index * 131 + static_cast<std::size_t>(from) * 17 + static_cast<std::size_t>(to) * 29 +
                            static_cast<std::size_t>(tag) * 7 + size_bytes * 3 + (index >> 8) * 5;
  return static_cast<std::byte>(mixed & 0xFF);
}

std::vector<std::byte> message(int from, int to, int tag, std::size_t size_bytes) {
  std::vector<std::byte> bytes(size_bytes);
  for (std::size_t i = 0; i < size_bytes; ++i) bytes[i] = pattern(from, to, tag, size_bytes, i);
  return bytes;
}

/// Whether `bytes` is the message `from` sends `to` (one CHECK per message, not per byte).
bool is_message(std::span<const std::byte> bytes, int from, int to, int tag, std::size_t size_bytes) {
  if (bytes.size() != size_bytes) return false;
  for (std::size_t i = 0; i < size_bytes; ++i) {
    if (bytes[i] != pattern(from, to, tag, size_bytes, i)) return false;
  }
  return true;
}

int right(const Mpi& t) { return (t.rank() + 1) % t.size(); }
int left(const Mpi& t) { return (t.rank() + t.size() - 1) % t.size(); }

/// Sends one message right and receives one from the left, both of `size_bytes`; checks the content.
void ring(Mpi& t, int tag, std::size_t size_bytes) {
  const auto out = message(t.rank(), right(t), tag, size_bytes);
  std::vector<std::byte> in(size_bytes);
  auto recv = t.irecv_async(left(t), tag, in);
  auto send = t.isend_async(right(t), tag, out);
  CHECK(recv.pending());
  t.wait(send);
  t.wait(recv);
  CHECK_FALSE(recv.pending());
  CHECK_FALSE(send.pending());
  INFO("rank " << t.rank() << " of " << t.size() << ", tag " << tag << ", " << size_bytes << " bytes");
  CHECK(is_message(in, left(t), t.rank(), tag, size_bytes));
}

}  // namespace

TEST_CASE("Mpi: rank, size and the communicator match MPI_COMM_WORLD", "[transport][mpi]") {
  boost::mpi::communicator world;
  Mpi t = fresh();
  CHECK(t.rank() == world.rank());
  CHECK(t.size() == world.size());
  CHECK(t.tag_upper_bound() >= 32767);
  CHECK(t.max_part_bytes() == static_cast<std::size_t>(INT_MAX));
  CHECK(t.communicator().size() == world.size());
  int size = 0;
  MPI_Comm_size(t.native_handle(), &size);
  CHECK(size == world.size());
  int compare = MPI_UNEQUAL;
  MPI_Comm_compare(t.native_handle(), MPI_COMM_WORLD, &compare);
  CHECK(compare == MPI_CONGRUENT);
  // Copies share the communicator; a moved-to transport works like the original.
  Mpi copy = t;
  CHECK(copy.native_handle() == t.native_handle());
  Mpi moved = std::move(copy);
  ring(moved, 1, 64);
}

TEST_CASE("Mpi: takes_device_memory is Open MPI's MPIX_Query_cuda_support, the same on copies, splits and behind "
          "AnyTransport",
          "[transport][mpi]") {
  Mpi t = fresh();
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  CHECK(t.takes_device_memory() == (MPIX_Query_cuda_support() == 1));
#else
  CHECK_FALSE(t.takes_device_memory());  // an MPI zcoll does not ask
#endif
  const Mpi copy = t;
  CHECK(copy.takes_device_memory() == t.takes_device_memory());
  CHECK(t.split(0, t.rank()).takes_device_memory() == t.takes_device_memory());
  const zcoll::transport::AnyTransport any(t);
  CHECK(any.takes_device_memory() == t.takes_device_memory());
  CHECK(zcoll::transport::takes_device_memory(t) == t.takes_device_memory());
}

TEST_CASE("Mpi: ring exchange of messages of 0 bytes to 1 MiB", "[transport][mpi]") {
  Mpi t = fresh();
  for (std::size_t size_bytes : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) ring(t, 3, size_bytes);
}

TEST_CASE("Mpi: every rank sends a distinct message to every rank, several tags and sizes", "[transport][mpi]") {
  Mpi t = fresh();
  const std::vector<int> tags = {0, 1, 7, t.tag_upper_bound()};
  const std::vector<std::size_t> sizes = {0, 1, 1000, std::size_t{1} << 20};
  std::vector<std::vector<std::byte>> out;
  std::vector<std::vector<std::byte>> in;
  std::vector<Mpi::request> requests;
  struct expected_message {
    int from, tag;
    std::size_t size_bytes;
  };
  std::vector<expected_message> expected;
  // Size and tag vary together so that every (peer, tag) pair carries one message, of a size both sides
  // know: the receiver posts all its receives before any wait.
  for (int peer = 0; peer < t.size(); ++peer) {
    for (std::size_t k = 0; k < tags.size(); ++k) {
      const std::size_t size_bytes = sizes[(k + static_cast<std::size_t>(peer + t.rank())) % sizes.size()];
      in.emplace_back(size_bytes);
      requests.push_back(t.irecv_async(peer, tags[k], in.back()));
      expected.push_back({peer, tags[k], size_bytes});
    }
  }
  for (int peer = 0; peer < t.size(); ++peer) {
    for (std::size_t k = 0; k < tags.size(); ++k) {
      const std::size_t size_bytes = sizes[(k + static_cast<std::size_t>(peer + t.rank())) % sizes.size()];
      out.push_back(message(t.rank(), peer, tags[k], size_bytes));
      requests.push_back(t.isend_async(peer, tags[k], out.back()));
    }
  }
  for (auto& r : requests) t.wait(r);
  for (std::size_t m = 0; m < expected.size(); ++m) {
    INFO("rank " << t.rank() << " from " << expected[m].from << " tag " << expected[m].tag << ", " << expected[m].size_bytes
                 << " bytes");
    CHECK(is_message(in[m], expected[m].from, t.rank(), expected[m].tag, expected[m].size_bytes));
  }
}

TEST_CASE("Mpi: messages on one tag arrive in the order they were sent", "[transport][mpi]") {
  for (std::size_t max_part_bytes : {std::size_t{INT_MAX}, std::size_t{7}}) {
    Mpi t = fresh({.max_part_bytes = max_part_bytes});
    constexpr int messages = 24;
    constexpr int tag = 11;
    const auto size_of = [](int m) { return static_cast<std::size_t>((m * 37) % 50); };
    std::vector<std::vector<std::byte>> in;
    std::vector<std::vector<std::byte>> out;
    std::vector<Mpi::request> receives;
    std::vector<Mpi::request> sends;
    for (int m = 0; m < messages; ++m) {
      in.emplace_back(size_of(m));
      receives.push_back(t.irecv_async(left(t), tag, in.back()));
    }
    for (int m = 0; m < messages; ++m) {
      // The message index goes into the tag argument of the pattern: each message's bytes differ.
      out.push_back(message(t.rank(), right(t), m, size_of(m)));
      sends.push_back(t.isend_async(right(t), tag, out.back()));
    }
    // Completed in reverse: the matching was fixed when the receives were posted.
    for (int m = messages - 1; m >= 0; --m) t.wait(receives[static_cast<std::size_t>(m)]);
    for (auto& s : sends) t.wait(s);
    for (int m = 0; m < messages; ++m) {
      INFO("max_part_bytes " << max_part_bytes << ", message " << m);
      CHECK(is_message(in[static_cast<std::size_t>(m)], left(t), t.rank(), m, size_of(m)));
    }
  }
}

TEST_CASE("Mpi: messages longer than max_part_bytes go in parts and arrive whole", "[transport][mpi]") {
  SECTION("7-byte parts, every size from 0 to 100 bytes on one tag") {
    Mpi t = fresh({.max_part_bytes = 7});
    CHECK(t.max_part_bytes() == 7);
    std::vector<std::vector<std::byte>> in;
    std::vector<std::vector<std::byte>> out;
    std::vector<Mpi::request> requests;
    for (std::size_t size_bytes = 0; size_bytes <= 100; ++size_bytes) {
      in.emplace_back(size_bytes);
      requests.push_back(t.irecv_async(left(t), 5, in.back()));
      out.push_back(message(t.rank(), right(t), 5, size_bytes));
      requests.push_back(t.isend_async(right(t), 5, out.back()));
    }
    for (auto& r : requests) t.wait(r);
    for (std::size_t size_bytes = 0; size_bytes <= 100; ++size_bytes) {
      INFO(size_bytes << " bytes");
      CHECK(is_message(in[size_bytes], left(t), t.rank(), 5, size_bytes));
    }
  }
  SECTION("1 MiB in 1021-byte parts") {
    // Not 7-byte parts: 150 000 outstanding sends take Open MPI 4.1 about 40 s to drain (its queue of
    // pending sends is rescanned per completion, quadratic); the splitting is the same at any part size.
    Mpi t = fresh({.max_part_bytes = 1021});
    ring(t, 6, std::size_t{1} << 20);
  }
  SECTION("1 MiB + 3 bytes in 4 KiB parts, completed by test()") {
    Mpi t = fresh({.max_part_bytes = 4096});
    const std::size_t size_bytes = (std::size_t{1} << 20) + 3;
    const auto out = message(t.rank(), right(t), 8, size_bytes);
    std::vector<std::byte> in(size_bytes);
    auto recv = t.irecv_async(left(t), 8, in);
    auto send = t.isend_async(right(t), 8, out);
    while (!t.test(send) || !t.test(recv)) {
    }
    CHECK(is_message(in, left(t), t.rank(), 8, size_bytes));
  }
  SECTION("a split transport keeps max_part_bytes") {
    Mpi t = fresh({.max_part_bytes = 7});
    Mpi sub = t.split(0, t.rank());
    CHECK(sub.max_part_bytes() == 7);
    ring(sub, 2, 50);
  }
}

TEST_CASE("Mpi: a received message of another size raises transport_error, and the transport goes on", "[transport][mpi]") {
  using Catch::Matchers::Contains;
  // Open MPI 4.1 does not flag a short message (under about 1 KB) that a rank sends to itself into a
  // receive posted before the send: the receive completes with the first bytes and MPI_SUCCESS, and
  // its status gives no way to tell (tests/transport: probed with Open MPI 4.1.4). On one rank the
  // longer-message cases therefore post the send first, the order in which Open MPI reports the
  // truncation; the shorter-message cases are detected in either order.
  const auto mismatch = [](Mpi& t, int tag, std::size_t sent_bytes, std::size_t expected_bytes, const std::string& what) {
    const bool send_first = t.size() == 1 && sent_bytes > expected_bytes;
    for (int round = 0; round < 2; ++round) {
      const auto out = message(t.rank(), right(t), tag, sent_bytes);
      std::vector<std::byte> in(expected_bytes);
      Mpi::request send;
      if (send_first) send = t.isend_async(right(t), tag, out);
      auto recv = t.irecv_async(left(t), tag, in);
      if (!send_first) send = t.isend_async(right(t), tag, out);
      if (round == 0) {
        CHECK_THROWS_AS(t.wait(recv), zcoll::transport_error);
      } else {
        CHECK_THROWS_WITH(t.wait(recv), Contains("peer " + std::to_string(left(t))) && Contains("tag " + std::to_string(tag)) &&
                                            Contains(std::to_string(expected_bytes)) && Contains(what));
        if (sent_bytes > expected_bytes) {
          // A truncation is MPI's error: its MPI_Error_string text is carried along.
          auto again = t.isend_async(right(t), tag, out);
          auto recv_again = t.irecv_async(left(t), tag, in);
          CHECK_THROWS_WITH(t.wait(recv_again), Contains("truncated", Catch::CaseSensitive::No));
          t.wait(again);
        }
      }
      CHECK_FALSE(recv.pending());
      t.wait(send);  // the send itself completed normally
    }
  };
  SECTION("longer message, one part") {
    Mpi t = fresh();
    mismatch(t, 4, 10, 8, "is longer than the 8 bytes expected");
    ring(t, 4, 10);
  }
  SECTION("shorter message, one part") {
    Mpi t = fresh();
    mismatch(t, 4, 8, 10, "has 8 bytes, expected 10");
    ring(t, 4, 10);
  }
  SECTION("empty message where bytes are expected") {
    Mpi t = fresh();
    mismatch(t, 4, 0, 3, "has 0 bytes, expected 3");
    ring(t, 4, 0);
  }
  SECTION("shorter message in 7-byte parts") {
    Mpi t = fresh({.max_part_bytes = 7});
    mismatch(t, 4, 10, 14, "has 10 bytes, expected 14 in 2 parts");
    ring(t, 4, 14);
  }
  SECTION("longer message in 7-byte parts") {
    Mpi t = fresh({.max_part_bytes = 7});
    mismatch(t, 4, 14, 10, "(part 2 of 2) is longer than the 3 bytes expected");
    ring(t, 4, 14);
  }
  SECTION("test() raises it too") {
    Mpi t = fresh();
    const auto out = message(t.rank(), right(t), 9, 5);
    std::vector<std::byte> in(6);
    auto recv = t.irecv_async(left(t), 9, in);
    auto send = t.isend_async(right(t), 9, out);
    bool raised = false;
    try {
      while (!t.test(recv)) {
      }
    } catch (const zcoll::transport_error&) {
      raised = true;
    }
    CHECK(raised);
    CHECK(t.test(recv));  // no longer pending
    t.wait(send);
    ring(t, 9, 5);
  }
}

TEST_CASE("Mpi: test() becomes true once the message has arrived", "[transport][mpi]") {
  Mpi t = fresh();
  const std::size_t size_bytes = 4096;
  std::vector<std::byte> in(size_bytes);
  auto recv = t.irecv_async(left(t), 2, in);
  MPI_Barrier(t.native_handle());  // nobody has sent yet
  CHECK_FALSE(t.test(recv));
  CHECK(recv.pending());
  MPI_Barrier(t.native_handle());
  const auto out = message(t.rank(), right(t), 2, size_bytes);
  auto send = t.isend_async(right(t), 2, out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool received = false;
  while (!(received = t.test(recv)) && std::chrono::steady_clock::now() < deadline) {
  }
  CHECK(received);
  CHECK(t.test(recv));  // stays true
  t.wait(recv);         // and wait() returns at once
  t.wait(send);
  CHECK(is_message(in, left(t), t.rank(), 2, size_bytes));

  Mpi::request nothing;
  CHECK_FALSE(nothing.pending());
  CHECK(t.test(nothing));
  t.wait(nothing);
  // A moved-from request is complete; the moved-to one carries the message.
  auto recv2 = t.irecv_async(left(t), 3, in);
  auto send2 = t.isend_async(right(t), 3, out);
  Mpi::request moved = std::move(recv2);
  CHECK_FALSE(recv2.pending());
  t.wait(moved);
  t.wait(send2);
  CHECK(is_message(in, left(t), t.rank(), 2, size_bytes));
}

TEST_CASE("Mpi: a pending receive that is dropped is cancelled", "[transport][mpi]") {
  Mpi t = fresh();
  std::vector<std::byte> in(16);
  {
    auto never = t.irecv_async(left(t), 12, in);  // nobody sends on tag 12 before the barrier
    CHECK(never.pending());
  }  // cancelled here; must not hang
  MPI_Barrier(t.native_handle());
  ring(t, 12, 16);  // and the cancelled receive does not swallow the next message on that tag
}

TEST_CASE("Mpi: split into even and odd ranks", "[transport][mpi]") {
  Mpi t = fresh();
  const int parity = t.rank() % 2;
  int same_parity = 0;
  int same_parity_above = 0;
  for (int q = 0; q < t.size(); ++q) {
    if (q % 2 == parity) {
      ++same_parity;
      if (q > t.rank()) ++same_parity_above;
    }
  }
  SECTION("ordered by a reversed key") {
    Mpi sub = t.split(parity, t.size() - t.rank());
    CHECK(sub.size() == same_parity);
    CHECK(sub.rank() == same_parity_above);
    // Ring on the sub-group carrying world ranks: the left neighbour in the reversed order is the next
    // world rank of the same parity above this one (wrapping to the lowest).
    const int world_rank = t.rank();
    int from = -1;
    auto recv = sub.irecv_async(left(sub), 0, std::as_writable_bytes(std::span(&from, 1)));
    auto send = sub.isend_async(right(sub), 0, std::as_bytes(std::span(&world_rank, 1)));
    sub.wait(recv);
    sub.wait(send);
    const int expected_from = same_parity_above == 0 ? parity : t.rank() + 2;  // the highest wraps to the lowest
    CHECK(from == expected_from);
    ring(sub, 1, 1000);
  }
  SECTION("one color, key 0: the same order as the parent") {
    Mpi sub = t.split(0, 0);
    CHECK(sub.size() == t.size());
    CHECK(sub.rank() == t.rank());
    int compare = MPI_IDENT;
    MPI_Comm_compare(sub.native_handle(), t.native_handle(), &compare);
    CHECK(compare == MPI_CONGRUENT);
    ring(sub, 1, 1000);
  }
  SECTION("sub-groups of sub-groups, traffic on both levels at once") {
    Mpi sub = t.split(parity, t.rank());
    Mpi subsub = sub.split(sub.rank() % 2, sub.rank());
    const auto out = message(t.rank(), right(t), 5, 300);
    std::vector<std::byte> in(300);
    auto recv = t.irecv_async(left(t), 5, in);
    auto send = t.isend_async(right(t), 5, out);
    ring(subsub, 5, 200);
    ring(sub, 5, 100);
    t.wait(recv);
    t.wait(send);
    CHECK(is_message(in, left(t), t.rank(), 5, 300));
  }
}

// ---------------------------------------------------------------------------------------------------
// Native baselines against references computed locally.

namespace {

/// Rank r's element i: small multiples of 1/4, so sums over up to 7 ranks are exact in float and any
/// reduction order gives the same bits.
template <class T>
T value(int r, std::size_t i) {
  return static_cast<T>(static_cast<int>((static_cast<std::size_t>(r) * 31 + i * 7) % 97) - 48) / T(4);
}

template <class T>
std::vector<T> values(int r, std::size_t count, std::size_t first = 0) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = value<T>(r, first + i);
  return v;
}

template <class T>
void check_baselines(Mpi& t) {
  const int p = t.size();
  const auto ranks = static_cast<std::size_t>(p);
  const int me = t.rank();
  INFO((std::is_same_v<T, float> ? "float" : "double") << ", max_part_bytes " << t.max_part_bytes() << ", rank " << me << " of "
                                                       << p);
  const auto each_op = [&](auto op) {
    INFO("op " << decltype(op)::name);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1003}}) {
      INFO("allreduce of " << count);
      auto data = values<T>(me, count);
      t.allreduce(std::span(data), op);
      std::vector<T> expected = values<T>(0, count);
      for (int r = 1; r < p; ++r) {
        for (std::size_t i = 0; i < count; ++i) expected[i] = op(expected[i], value<T>(r, i));
      }
      CHECK(data == expected);
    }
    for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{37}}) {
      INFO("reduce_scatter_block of " << block << " per rank");
      const auto in = values<T>(me, ranks * block);
      std::vector<T> out(block, T(-1));
      t.reduce_scatter_block(std::span<const T>(in), std::span(out), op);
      std::vector<T> expected = values<T>(0, block, static_cast<std::size_t>(me) * block);
      for (int r = 1; r < p; ++r) {
        for (std::size_t i = 0; i < block; ++i) {
          expected[i] = op(expected[i], value<T>(r, static_cast<std::size_t>(me) * block + i));
        }
      }
      CHECK(out == expected);
    }
  };
  each_op(zcoll::op::sum);
  each_op(zcoll::op::min);
  each_op(zcoll::op::max);
  for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{37}}) {
    INFO("block of " << block << " per rank");
    std::vector<T> every_rank;  // rank r's values, rank after rank
    for (int r = 0; r < p; ++r) {
      const auto v = values<T>(r, block);
      every_rank.insert(every_rank.end(), v.begin(), v.end());
    }
    {
      const auto mine = values<T>(me, block);
      std::vector<T> all(ranks * block, T(-1));
      t.allgather(std::span<const T>(mine), std::span(all));
      CHECK(all == every_rank);
    }
    for (int root = 0; root < p; ++root) {
      INFO("root " << root);
      std::vector<T> scattered(block, T(-1));
      const auto source = values<T>(1000 + root, ranks * block);
      t.scatter(std::span<const T>(me == root ? source : std::vector<T>{}), std::span(scattered), root);
      CHECK(scattered == values<T>(1000 + root, block, static_cast<std::size_t>(me) * block));

      const auto mine = values<T>(me, block);
      std::vector<T> gathered(me == root ? ranks * block : 0, T(-1));
      t.gather(std::span<const T>(mine), std::span(gathered), root);
      if (me == root) CHECK(gathered == every_rank);

      for (std::size_t count : {std::size_t{0}, block * 27 + 2}) {
        auto data = me == root ? values<T>(root, count) : std::vector<T>(count, T(-1));
        t.bcast(std::span(data), root);
        CHECK(data == values<T>(root, count));
      }
    }
    {
      // Block q of rank p's input is values(p * 100 + q).
      std::vector<T> in;
      for (int q = 0; q < p; ++q) {
        const auto v = values<T>(me * 100 + q, block);
        in.insert(in.end(), v.begin(), v.end());
      }
      std::vector<T> out(ranks * block, T(-1));
      t.alltoall(std::span<const T>(in), std::span(out));
      std::vector<T> expected;
      for (int q = 0; q < p; ++q) {
        const auto v = values<T>(q * 100 + me, block);
        expected.insert(expected.end(), v.begin(), v.end());
      }
      CHECK(out == expected);
    }
  }
  for (std::size_t base : {std::size_t{0}, std::size_t{3}}) {
    INFO("alltoallv with counts (p + 2q + " << base << ") % 6");
    // Rank p sends (p + 2q + base) % 6 elements to rank q: uneven, with empty blocks.
    const auto count = [&](int from, int to) {
      return (static_cast<std::size_t>(from) + 2 * static_cast<std::size_t>(to) + base) % 6;
    };
    std::vector<std::size_t> send_counts(ranks);
    std::vector<std::size_t> recv_counts(ranks);
    std::vector<T> in;
    std::vector<T> expected;
    for (int q = 0; q < p; ++q) {
      send_counts[static_cast<std::size_t>(q)] = count(me, q);
      recv_counts[static_cast<std::size_t>(q)] = count(q, me);
      const auto v = values<T>(me * 100 + q, count(me, q));
      in.insert(in.end(), v.begin(), v.end());
      const auto w = values<T>(q * 100 + me, count(q, me));
      expected.insert(expected.end(), w.begin(), w.end());
    }
    std::vector<T> out(expected.size(), T(-1));
    t.alltoallv(std::span<const T>(in), std::span<const std::size_t>(send_counts), std::span(out),
                std::span<const std::size_t>(recv_counts));
    CHECK(out == expected);
  }
}

}  // namespace

TEST_CASE("Mpi: native baselines match references computed locally", "[transport][mpi][native]") {
  // 12-byte parts: 3 floats or 1 double per MPI call, so blocks of 3 and 37 take the split paths
  // (strided datatypes, one MPI_Reduce per root, MPI_Alltoallw) and blocks of 1 the single calls.
  for (std::size_t max_part_bytes : {std::size_t{INT_MAX}, std::size_t{12}}) {
    Mpi t = fresh({.max_part_bytes = max_part_bytes});
    check_baselines<float>(t);
    check_baselines<double>(t);
  }
}

TEST_CASE("Mpi: alltoallv splits when one rank only has a count above max_part_bytes", "[transport][mpi][native]") {
  // All ranks must take the same path although only rank 0's counts are long.
  Mpi t = fresh({.max_part_bytes = 16});
  const auto ranks = static_cast<std::size_t>(t.size());
  const auto count = [](int from, int to) { return from == 0 ? std::size_t{9} + static_cast<std::size_t>(to) : std::size_t{1}; };
  std::vector<std::size_t> send_counts(ranks);
  std::vector<std::size_t> recv_counts(ranks);
  std::vector<double> in;
  std::vector<double> expected;
  for (int q = 0; q < t.size(); ++q) {
    send_counts[static_cast<std::size_t>(q)] = count(t.rank(), q);
    recv_counts[static_cast<std::size_t>(q)] = count(q, t.rank());
    const auto v = values<double>(t.rank() * 100 + q, count(t.rank(), q));
    in.insert(in.end(), v.begin(), v.end());
    const auto w = values<double>(q * 100 + t.rank(), count(q, t.rank()));
    expected.insert(expected.end(), w.begin(), w.end());
  }
  std::vector<double> out(expected.size());
  t.alltoallv(std::span<const double>(in), std::span<const std::size_t>(send_counts), std::span(out),
              std::span<const std::size_t>(recv_counts));
  CHECK(out == expected);
}

TEST_CASE("Mpi: argument errors name the argument and the expected value", "[transport][mpi]") {
  using Catch::Matchers::Contains;
  Mpi t = fresh();
  std::vector<std::byte> bytes(4);
  const std::string p = std::to_string(t.size());
  CHECK_THROWS_WITH(t.isend_async(0, -1, bytes), Contains("tag -1 is out of range") && Contains("MPI_TAG_UB"));
  CHECK_THROWS_WITH(t.irecv_async(0, -1, bytes), Contains("irecv_async: tag -1"));
  if (t.tag_upper_bound() < INT_MAX) {
    CHECK_THROWS_AS(t.isend_async(0, t.tag_upper_bound() + 1, bytes), zcoll::argument_error);
  }
  CHECK_THROWS_WITH(t.isend_async(-1, 0, bytes), Contains("peer -1 is out of range, expected [0, " + p + ")"));
  CHECK_THROWS_WITH(t.irecv_async(t.size(), 0, bytes), Contains("peer " + p + " is out of range"));
  CHECK_THROWS_WITH(fresh({.max_part_bytes = 0}), Contains("max_part_bytes 0 is outside [1, "));
  CHECK_THROWS_AS(fresh({.max_part_bytes = std::size_t{INT_MAX} + 1}), zcoll::argument_error);
  CHECK_THROWS_WITH(t.split(-1, 0), Contains("split: color -1 is negative"));
  CHECK_THROWS_AS(Mpi(boost::mpi::communicator(MPI_COMM_NULL, boost::mpi::comm_attach)), zcoll::argument_error);

  std::vector<float> block(3);
  std::vector<float> wrong(3 * static_cast<std::size_t>(t.size()) + 1);
  std::vector<float> right_size(3 * static_cast<std::size_t>(t.size()));
  CHECK_THROWS_WITH(t.allgather(std::span<const float>(block), std::span(wrong)),
                    Contains("allgather: all.size() " + std::to_string(wrong.size()) + ", expected size() " + p + " × mine 3"));
  CHECK_THROWS_WITH(t.reduce_scatter_block(std::span<const float>(wrong), std::span(block), zcoll::op::sum),
                    Contains("reduce_scatter_block: in.size()"));
  CHECK_THROWS_WITH(t.bcast(std::span(block), t.size()), Contains("bcast: root " + p + " is out of range, expected [0, " + p + ")"));
  CHECK_THROWS_WITH(t.bcast(std::span(block), -1), Contains("bcast: root -1"));
  CHECK_THROWS_WITH(t.scatter(std::span<const float>(right_size), std::span(block), -2), Contains("scatter: root -2"));
  CHECK_THROWS_WITH(t.gather(std::span<const float>(block), std::span(right_size), t.size()), Contains("gather: root " + p));
  // The buffer of all blocks is checked on the root only (every rank is root 0 of its own check here).
  if (t.rank() == 0) {
    CHECK_THROWS_WITH(t.scatter(std::span<const float>(wrong), std::span(block), 0), Contains("scatter: all_on_root.size()"));
    CHECK_THROWS_WITH(t.gather(std::span<const float>(block), std::span(wrong), 0), Contains("gather: all_on_root.size()"));
  }
  if (t.size() > 1) {
    CHECK_THROWS_WITH(t.alltoall(std::span<const float>(wrong), std::span(wrong)), Contains("is not divisible by size() " + p));
  }
  CHECK_THROWS_WITH(t.alltoall(std::span<const float>(right_size), std::span(wrong)),
                    Contains("alltoall: out.size() " + std::to_string(wrong.size()) + ", expected size() " + p));
  std::vector<std::size_t> counts(static_cast<std::size_t>(t.size()), 1);
  std::vector<std::size_t> short_counts(static_cast<std::size_t>(t.size()) + 1, 1);
  std::vector<double> in(static_cast<std::size_t>(t.size()));
  std::vector<double> out(static_cast<std::size_t>(t.size()));
  std::vector<double> too_long(static_cast<std::size_t>(t.size()) + 2);
  CHECK_THROWS_WITH(t.alltoallv(std::span<const double>(in), std::span<const std::size_t>(short_counts), std::span(out),
                                std::span<const std::size_t>(counts)),
                    Contains("expected size() " + p + " each"));
  CHECK_THROWS_WITH(t.alltoallv(std::span<const double>(too_long), std::span<const std::size_t>(counts), std::span(out),
                                std::span<const std::size_t>(counts)),
                    Contains("alltoallv: in.size() " + std::to_string(too_long.size()) + ", expected the sum of send_counts " + p));
  CHECK_THROWS_WITH(t.alltoallv(std::span<const double>(in), std::span<const std::size_t>(counts), std::span(too_long),
                                std::span<const std::size_t>(counts)),
                    Contains("alltoallv: out.size()"));
  // Nothing was posted by the failed calls: the transport still works.
  ring(t, 0, 8);
}

// Hidden test cases, run by their own ctest entries (tests/transport/CMakeLists.txt), which expect
// the job to fail.

TEST_CASE("Mpi: a failure on rank 1 only", "[.mpi-failure-propagates]") {
  boost::mpi::communicator world;
  INFO("rank " << world.rank() << " fails on purpose");
  CHECK(world.rank() != 1);
}

TEST_CASE("Mpi: abort() on the last rank ends a job whose other ranks wait for it", "[.mpi-abort]") {
  Mpi t = fresh();
  if (t.rank() == t.size() - 1) t.abort(42);
  std::vector<std::byte> in(1);
  auto never = t.irecv_async(t.size() - 1, 0, in);
  t.wait(never);  // would hang without the abort
}
