// The default thread count: physical cores this process may run on. SMT siblings share one core's
// FMA units and caches, so a second thread per core adds little to matrix kernels and costs a
// wake-up per call. Cores are the distinct (package, core) pairs in sysfs topology, restricted
// to the CPUs in the process's affinity mask (a container or taskset may allow fewer).
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compute/worker_pool.hpp"

namespace stormo {
namespace {

bool read_topology_id(int cpu, const char* field, long& out) {
    const std::string path =
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + field;
    std::ifstream in(path);
    return static_cast<bool>(in >> out);
}

size_t fallback_count() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace

size_t physical_core_count() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return fallback_count();
    std::set<std::pair<long, long>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        long package = 0;
        long core = 0;
        // Without topology (an unusual kernel or a sandbox hiding sysfs) count CPUs instead.
        if (!read_topology_id(cpu, "physical_package_id", package) ||
            !read_topology_id(cpu, "core_id", core))
            return std::max<size_t>(1, static_cast<size_t>(CPU_COUNT(&allowed)));
        cores.emplace(package, core);
    }
    return cores.empty() ? fallback_count() : cores.size();
}

std::vector<int> cpus_by_core() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
    std::vector<int> first;     // the first CPU seen of each core
    std::vector<int> siblings;  // the rest
    std::set<std::pair<long, long>> seen;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        long package = 0;
        long core = cpu;  // without topology every CPU counts as its own core
        read_topology_id(cpu, "physical_package_id", package);
        read_topology_id(cpu, "core_id", core);
        (seen.emplace(package, core).second ? first : siblings).push_back(cpu);
    }
    first.insert(first.end(), siblings.begin(), siblings.end());
    return first;
}

}  // namespace stormo
