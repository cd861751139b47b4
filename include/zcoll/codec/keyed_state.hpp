#pragma once
/// The state a codec carries from one call to the next, owned by the caller. Codecs are immutable values,
/// safe to share between threads; the three that learn from earlier calls — ErrorFeedback (residuals),
/// TopK (the threshold and its life span), Hybrid (the candidate chosen for a table) — take their state
/// as an argument, each as its own `C::state`, kept per tensor or table in one keyed form:
///
///     const zcoll::ErrorFeedback<zcoll::Int4> ef{{.shape = {rows, dim}}};
///     zcoll::codec_state<decltype(ef)> state;              // one entry per key, made on first use
///     zcoll::compress(zcoll::exec::Host{}, ef, state.at(layer), grad, out);   // <zcoll/codec/compress.hpp>
///
/// An entry is sized by its first call and allocates nothing on later calls of the same size. Two calls
/// may use two entries at once; one entry serves one call at a time (one tensor, one stream of steps).

#include <cstddef>
#include <cstdint>
#include <map>
#include <ranges>
#include <span>

#include "zcoll/core/exec.hpp"

namespace zcoll {

/// Names a tensor (error feedback, top-K) or a table (Hybrid) whose state an entry keeps.
using state_key = std::uint64_t;

/// Entries of one kind of state by key. std::map: a reference to an entry stays valid while others are
/// added, so two threads may work on two entries they took before.
template <class State>
class keyed_state {
 public:
  /// The entry of `key`, made with its defaults on first use.
  State& at(state_key key) { return entries_[key]; }
  /// The entry of `key`, or nullptr when there is none.
  const State* find(state_key key) const {
    const auto found = entries_.find(key);
    return found == entries_.end() ? nullptr : &found->second;
  }
  /// Forgets the entry of `key` (a tensor re-initialised, a table whose data changed), or every entry.
  void erase(state_key key) { entries_.erase(key); }
  void clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<state_key, State> entries_;
};

/// A codec that carries state: C::state, and compress(exec, state, in, out) beside the stateless
/// compress(exec, in, out), which behaves as a call with a fresh state.
template <class C>
concept stateful_codec = requires { typename C::state; };

/// The state of a codec without any: nothing.
struct no_state {};

namespace detail {
template <class C>
struct state_type {
  using type = no_state;
};
template <stateful_codec C>
struct state_type<C> {
  using type = typename C::state;
};
}  // namespace detail

/// C::state, or no_state for a codec that keeps none.
template <class C>
using state_of = typename detail::state_type<C>::type;

/// The keyed state of codec C.
template <class C>
using codec_state = keyed_state<state_of<C>>;

}  // namespace zcoll
