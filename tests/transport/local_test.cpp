#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

#include "zcoll/transport/any.hpp"
#include "zcoll/transport/concepts.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;

static_assert(zcoll::transport::byte_transport<Local>);
static_assert(zcoll::transport::byte_transport<zcoll::transport::AnyTransport>);

namespace {

std::vector<std::byte> pattern(int from, int to, int tag, std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((from * 131 + to * 17 + tag * 7 + i) & 0xFF);
  return bytes;
}

}  // namespace

TEST_CASE("Local: every rank sends a distinct message to every other rank", "[transport][local]") {
  for (int ranks : {1, 2, 3, 4, 7, 16}) {
    std::atomic<int> checked{0};
    run_local(ranks, [&](Local& t) {
      REQUIRE(t.size() == ranks);
      std::vector<std::vector<std::byte>> inbox(static_cast<std::size_t>(ranks));
      std::vector<Local::request> requests;
      // Receives posted before the sends, for some peers after: both matching paths are used.
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == t.rank() || peer % 2 == 1) continue;
        inbox[static_cast<std::size_t>(peer)].resize(100 + static_cast<std::size_t>(peer));
        requests.push_back(t.irecv_async(peer, 3, inbox[static_cast<std::size_t>(peer)]));
      }
      std::vector<std::vector<std::byte>> outbox;
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == t.rank()) continue;
        outbox.push_back(pattern(t.rank(), peer, 3, 100 + static_cast<std::size_t>(t.rank())));
        auto s = t.isend_async(peer, 3, outbox.back());
        t.wait(s);
      }
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == t.rank() || peer % 2 == 0) continue;
        inbox[static_cast<std::size_t>(peer)].resize(100 + static_cast<std::size_t>(peer));
        requests.push_back(t.irecv_async(peer, 3, inbox[static_cast<std::size_t>(peer)]));
      }
      for (auto& r : requests) t.wait(r);
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == t.rank()) continue;
        REQUIRE(inbox[static_cast<std::size_t>(peer)] == pattern(peer, t.rank(), 3, 100 + static_cast<std::size_t>(peer)));
        ++checked;
      }
    });
    CHECK(checked == ranks * (ranks - 1));
  }
}

TEST_CASE("Local: messages of one source and tag arrive in order, and match receives in posting order",
          "[transport][local]") {
  run_local(2, [](Local& t) {
    constexpr int messages = 50;
    if (t.rank() == 0) {
      for (int m = 0; m < messages; ++m) {
        const auto bytes = pattern(0, 1, m, 16);
        t.isend_async(1, 9, bytes);
      }
    } else {
      std::vector<std::vector<std::byte>> got(messages, std::vector<std::byte>(16));
      std::vector<Local::request> requests;
      for (int m = 0; m < messages; ++m) requests.push_back(t.irecv_async(0, 9, got[static_cast<std::size_t>(m)]));
      // Waiting in reverse order must not change which message each receive got.
      for (int m = messages - 1; m >= 0; --m) t.wait(requests[static_cast<std::size_t>(m)]);
      for (int m = 0; m < messages; ++m) REQUIRE(got[static_cast<std::size_t>(m)] == pattern(0, 1, m, 16));
    }
  });
}

TEST_CASE("Local: tags separate messages; empty messages work; test() completes", "[transport][local]") {
  run_local(2, [](Local& t) {
    const int peer = 1 - t.rank();
    std::vector<std::byte> a(8), b(0), c(3);
    auto ra = t.irecv_async(peer, 1, a);
    auto rb = t.irecv_async(peer, 2, b);
    auto rc = t.irecv_async(peer, 3, c);
    const auto pa = pattern(peer, t.rank(), 1, 8), pc = pattern(peer, t.rank(), 3, 3);
    const auto sa = pattern(t.rank(), peer, 1, 8), sc = pattern(t.rank(), peer, 3, 3);
    t.isend_async(peer, 3, sc);
    t.isend_async(peer, 2, std::span<const std::byte>{});
    t.isend_async(peer, 1, sa);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!t.test(ra) && std::chrono::steady_clock::now() < deadline) {
    }
    REQUIRE(t.test(ra));
    t.wait(rb);
    t.wait(rc);
    REQUIRE(a == pa);
    REQUIRE(c == pc);
  });
}

TEST_CASE("Local: a message of another size than the receive is a transport_error", "[transport][local]") {
  REQUIRE_THROWS_AS(run_local(2,
                              [](Local& t) {
                                if (t.rank() == 0) {
                                  const auto bytes = pattern(0, 1, 0, 10);
                                  t.isend_async(1, 0, bytes);
                                } else {
                                  std::vector<std::byte> small(4);
                                  auto r = t.irecv_async(0, 0, small);
                                  t.wait(r);
                                }
                              }),
                    zcoll::transport_error);
}

TEST_CASE("Local: a failing rank aborts the others' waits and its own exception comes back", "[transport][local]") {
  struct rank_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_AS(run_local(5,
                              [](Local& t) {
                                if (t.rank() == 3) throw rank_failure("rank 3 gives up");
                                std::vector<std::byte> never(1);
                                auto r = t.irecv_async(3, 0, never);  // rank 3 never sends
                                t.wait(r);
                              }),
                    rank_failure);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("Local: split makes sub-groups by color, ordered by key", "[transport][local]") {
  run_local(7, [](Local& t) {
    const int color = t.rank() % 2;
    Local sub = t.split(color, -t.rank());  // reverse order within each color
    const int members = color == 0 ? 4 : 3;
    REQUIRE(sub.size() == members);
    // Ranks of one color sorted by descending world rank.
    std::vector<int> world;
    for (int r = 6; r >= 0; --r) {
      if (r % 2 == color) world.push_back(r);
    }
    REQUIRE(world[static_cast<std::size_t>(sub.rank())] == t.rank());
    // Traffic inside the sub-group: a ring of world ranks.
    const int next = (sub.rank() + 1) % sub.size(), prev = (sub.rank() - 1 + sub.size()) % sub.size();
    int got = -1;
    auto r = sub.irecv_async(prev, 5, std::as_writable_bytes(std::span(&got, 1)));
    const int mine = t.rank();
    sub.isend_async(next, 5, std::as_bytes(std::span(&mine, 1)));
    sub.wait(r);
    REQUIRE(got == world[static_cast<std::size_t>(prev)]);
    // A second split of the sub-group works too.
    Local single = sub.split(sub.rank(), 0);
    REQUIRE(single.size() == 1);
    REQUIRE(single.rank() == 0);
  });
}

TEST_CASE("Local: argument errors name the peer", "[transport][local]") {
  run_local(2, [](Local& t) {
    std::vector<std::byte> buffer(1);
    ZCOLL_LOCKED(REQUIRE_THROWS_AS(t.isend_async(2, 0, buffer), zcoll::argument_error));
    ZCOLL_LOCKED(REQUIRE_THROWS_AS(t.irecv_async(-1, 0, buffer), zcoll::argument_error));
  });
  REQUIRE_THROWS_AS(run_local(0, [](Local&) {}), zcoll::argument_error);
}

#include "zcoll/transport/throttled.hpp"

TEST_CASE("Throttled: a send holds the link for latency + bytes / bandwidth, one message after another; the "
          "receive completes when the link has delivered",
          "[transport][throttled]") {
  using zcoll::transport::Throttled;
  static_assert(zcoll::transport::byte_transport<Throttled<Local>>);
  const auto start = std::chrono::steady_clock::now();  // before either rank sends or receives
  run_local(2, [&](Local& t) {
    Throttled link(t, {.latency_s = 0.002, .bandwidth_bytes_per_s = 100e6});  // 2 ms + 10 ms per MB
    std::vector<std::byte> block(1'000'000);
    if (t.rank() == 0) {
      auto a = link.isend_async(1, 0, block);
      auto b = link.isend_async(1, 0, block);
      link.wait(a);
      const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      link.wait(b);
      const double both = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      CHECK(first >= 0.012);
      CHECK(both >= 0.024);  // the second message waits for the first
    } else {
      // A receive completes no earlier than the link delivers: the receiver cannot use the bytes sooner.
      std::vector<std::byte> in(block.size());
      for (int m = 0; m < 2; ++m) {
        auto r = link.irecv_async(0, 0, in);
        link.wait(r);
        const double arrived = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        CHECK(arrived >= 0.012 * (m + 1));
        CHECK(link.test(r));
      }
    }
  });
  REQUIRE_THROWS_AS(Throttled<Local>(Local(nullptr, 0), {.latency_s = 0, .bandwidth_bytes_per_s = 0}),
                    zcoll::argument_error);
}

TEST_CASE("Local: a receive destroyed before it completes is cancelled, and its message goes to the next one",
          "[transport][local]") {
  // A rank that leaves a collective by an exception destroys its pending receives with the buffers they
  // point into: no later message may be copied there (ThreadSanitizer saw it happen before the fix).
  run_local(2, [](Local& t) {
    std::vector<std::byte> go(1), message(4, std::byte{7}), kept(4);
    if (t.rank() == 1) {
      {
        std::vector<std::byte> gone(4);
        auto abandoned = t.irecv_async(0, 5, gone);
      }  // request, then buffer, destroyed
      auto ready = t.isend_async(0, 6, go);  // only now may rank 0 send
      t.wait(ready);
      auto r = t.irecv_async(0, 5, kept);
      t.wait(r);
      REQUIRE(kept[0] == std::byte{7});
    } else {
      auto ready = t.irecv_async(1, 6, go);
      t.wait(ready);
      auto s = t.isend_async(1, 5, message);
      t.wait(s);
    }
  });
}

#include "support/device_memory_transport.hpp"

TEST_CASE("takes_device_memory: Local does not; a transport that says it does is heard through Throttled and "
          "AnyTransport",
          "[transport][local]") {
  using zcoll::transport::Throttled;
  run_local(1, [](Local& t) {
    REQUIRE_FALSE(zcoll::transport::takes_device_memory(t));
    REQUIRE_FALSE(zcoll::transport::AnyTransport(t).takes_device_memory());
    auto blocks = std::make_shared<zcoll_test::DeviceMemoryTransport<Local>::messages>();
    for (const bool takes : {false, true}) {
      const zcoll_test::DeviceMemoryTransport<Local> aware(t, takes, blocks);
      const Throttled<zcoll_test::DeviceMemoryTransport<Local>> link(aware, {});
      REQUIRE(zcoll::transport::takes_device_memory(aware) == takes);
      REQUIRE(link.takes_device_memory() == takes);
      REQUIRE(zcoll::transport::AnyTransport(link).takes_device_memory() == takes);
    }
  });
}
