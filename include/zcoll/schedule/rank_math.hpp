#pragma once
/// The integer arithmetic the schedules share: modular rank offsets and base-2 logarithms, all constexpr.

namespace zcoll::schedule::detail {

/// x mod n in [0, n) for any sign of x (n > 0): ranks count around a ring in both directions.
constexpr int wrap(int x, int n) {
  const int r = x % n;
  return r < 0 ? r + n : r;
}

/// floor(log2 n) for n >= 1: the largest power of two not above n is 1 << floor_log2(n).
constexpr int floor_log2(int n) {
  int k = 0;
  while ((n >> 1) >= (1 << k)) ++k;
  return k;
}

/// ceil(log2 n) for n >= 1 (0 for n = 1): the rounds of a binomial tree over n ranks.
constexpr int ceil_log2(int n) {
  int k = 0;
  while (k < 30 && (1 << k) < n) ++k;
  if ((1 << k) < n) ++k;  // n above 2^30
  return k;
}

/// Whether (ranks, rank, round) name a real step of a schedule with `rounds` rounds; the schedules answer
/// an idle step for anything else, so a caller's loop bounds are never undefined behaviour.
constexpr bool valid_step(int ranks, int rank, int round, int rounds) {
  return ranks >= 1 && rank >= 0 && rank < ranks && round >= 0 && round < rounds;
}

}  // namespace zcoll::schedule::detail
