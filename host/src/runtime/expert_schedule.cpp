#include "runtime/expert_schedule.hpp"

#include <algorithm>
#include <numeric>

namespace stormo {

ExpertSchedule schedule_experts(std::span<const size_t> rows, size_t threads) {
    ExpertSchedule s;
    s.order.resize(rows.size());
    std::iota(s.order.begin(), s.order.end(), size_t{0});
    std::stable_sort(s.order.begin(), s.order.end(), [&](size_t a, size_t b) { return rows[a] > rows[b]; });
    if (threads < 2 || rows.size() < 2) return s;
    // The pool's threads each take the next expert when free: the least loaded one gets it.
    std::vector<size_t> load(threads, 0);
    size_t total = 0;
    for (size_t i : s.order) {
        const size_t work = rows[i] + 1;
        *std::min_element(load.begin(), load.end()) += work;
        total += work;
    }
    const double even = static_cast<double>(total) / static_cast<double>(threads);
    s.balanced = static_cast<double>(*std::max_element(load.begin(), load.end())) <= even * (1.0 + kExpertScheduleSlack);
    return s;
}

}  // namespace stormo
