// Which of a chunk's measured candidates get a second timing before they
// are stored.
//
// The best of many noisy timings leans towards a lucky one, and a fast
// candidate timed in an unlucky moment is lost behind a slower one. Both
// errors decide which kernel a session keeps, so the candidates that might
// be the task's new best get a second look: those faster than the best so
// far, and those within `margin` of it (a near tie is decided by noise).
#pragma once

#include <cstddef>
#include <vector>

namespace tunedb::search {

// The next candidates to time again, fastest first, at most `max_at_once`:
// unconfirmed ones whose median (seconds; +inf for a failure) is below
// best * (1 + margin). Empty when the fastest such candidate is already
// confirmed, or there is none: then the chunk's best is one that was looked
// at twice.
std::vector<std::size_t> NextContenders(const std::vector<double>& medians, const std::vector<bool>& confirmed,
                                        double best, double margin, int max_at_once);

}  // namespace tunedb::search
