// batch/ the batch's memory budget: the images in flight together stay under one host budget
// (--memory-limit, by default 3/4 of the host memory available when the batch starts) and one
// budget per CUDA device (--device-memory-limit, by default 3/4 of each device's free memory).
//
//   per image  it is compiled with the whole budget as its own (compile/, planner/strips.hpp):
//              an image that alone would exceed it runs its chains in strips, and one that does
//              not fit even so fails alone, with the planner's error, before it runs
//   together   before it runs, an image reserves the peak its plan estimates (host, and device on
//              its worker's device) and waits while the images in flight hold too much of the
//              budget for it; an image always runs when nothing else holds memory, so the batch
//              always makes progress. The reservation ends when its run ends.
//   isolated   worker processes (isolate.cpp) run one image each at a time: each is compiled
//              with an equal share of the budget, so their sum stays under it
//
// The estimates are the planner's (the run's image buffers and the scratch operators declare);
// codec memory outside them is not counted (docs/guarantees.md says so).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace pixflow::host::batch {

/// A budget in bytes and where it came from, for messages ("--memory-limit", "3/4 of the
/// 20.1 GiB of host memory available"); bytes 0: none.
struct Budget {
    std::size_t bytes = 0;
    std::string from;
};

class MemoryBudget {
  public:
    /// `device` applies to each CUDA device alone.
    MemoryBudget(Budget host, Budget device) : m_host(std::move(host)), m_device(std::move(device)) {}

    /// Memory reserved for one image's run; released when destroyed.
    class Hold {
      public:
        Hold() = default;
        Hold(Hold&& o) noexcept { *this = std::move(o); }
        Hold& operator=(Hold&& o) noexcept;
        ~Hold() { release(); }
        void release();

      private:
        friend class MemoryBudget;
        MemoryBudget* m_owner = nullptr;
        std::size_t m_host = 0, m_dev = 0;
        int m_device = -1;
    };

    /// Reserves `host_bytes` and, on CUDA device `device` (-1: none), `device_bytes`; waits while
    /// the images already holding memory leave too little for it. Never waits when nothing is held
    /// (an image larger than the budget was planned under it, or refused, by compile).
    Hold reserve(std::size_t host_bytes, int device, std::size_t device_bytes);

    const Budget& host() const { return m_host; }
    const Budget& device() const { return m_device; }
    /// The most host / device bytes reserved at once, and how many images had to wait.
    std::size_t peak_host() const;
    std::size_t peak_device() const;
    int waited() const;

  private:
    bool fits(std::size_t host_bytes, int device, std::size_t device_bytes) const;
    void give_back(std::size_t host_bytes, int device, std::size_t device_bytes);

    Budget m_host, m_device;
    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::size_t m_host_used = 0, m_host_peak = 0, m_device_peak = 0;
    std::map<int, std::size_t> m_device_used;
    int m_waited = 0;
};

/// The batch's budgets: the given one (0: none given), else 3/4 of the host memory available
/// now, and of the free memory of CUDA device `device` (no device budget when the batch uses no
/// CUDA or it cannot be read).
Budget host_budget(std::size_t given);
Budget device_budget(std::size_t given, bool uses_cuda, int device);

} // namespace pixflow::host::batch
