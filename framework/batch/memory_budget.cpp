// batch/ the batch's memory budget (see memory_budget.hpp).
#include "batch/memory_budget.hpp"

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "planner/strips.hpp"

#include <algorithm>

namespace pixflow::host::batch {

MemoryBudget::Hold& MemoryBudget::Hold::operator=(Hold&& o) noexcept {
    if (this != &o) {
        release();
        m_owner = o.m_owner;
        m_host = o.m_host;
        m_dev = o.m_dev;
        m_device = o.m_device;
        o.m_owner = nullptr;
    }
    return *this;
}

void MemoryBudget::Hold::release() {
    if (m_owner) m_owner->give_back(m_host, m_device, m_dev);
    m_owner = nullptr;
}

bool MemoryBudget::fits(std::size_t host_bytes, int device, std::size_t device_bytes) const {
    bool host_ok = !m_host.bytes || m_host_used == 0 || m_host_used + host_bytes <= m_host.bytes;
    bool dev_ok = true;
    if (device >= 0 && m_device.bytes) {
        auto it = m_device_used.find(device);
        std::size_t used = it == m_device_used.end() ? 0 : it->second;
        dev_ok = used == 0 || used + device_bytes <= m_device.bytes;
    }
    return host_ok && dev_ok;
}

MemoryBudget::Hold MemoryBudget::reserve(std::size_t host_bytes, int device, std::size_t device_bytes) {
    std::unique_lock lk(m_mu);
    if (!fits(host_bytes, device, device_bytes)) {
        ++m_waited;
        m_cv.wait(lk, [&] { return fits(host_bytes, device, device_bytes); });
    }
    m_host_used += host_bytes;
    m_host_peak = std::max(m_host_peak, m_host_used);
    if (device >= 0) {
        std::size_t& used = m_device_used[device];
        used += device_bytes;
        m_device_peak = std::max(m_device_peak, used);
    }
    Hold h;
    h.m_owner = this;
    h.m_host = host_bytes;
    h.m_dev = device_bytes;
    h.m_device = device;
    return h;
}

void MemoryBudget::give_back(std::size_t host_bytes, int device, std::size_t device_bytes) {
    {
        std::lock_guard lk(m_mu);
        m_host_used -= host_bytes;
        if (device >= 0) m_device_used[device] -= device_bytes;
    }
    m_cv.notify_all();
}

std::size_t MemoryBudget::peak_host() const {
    std::lock_guard lk(m_mu);
    return m_host_peak;
}
std::size_t MemoryBudget::peak_device() const {
    std::lock_guard lk(m_mu);
    return m_device_peak;
}
int MemoryBudget::waited() const {
    std::lock_guard lk(m_mu);
    return m_waited;
}

Budget host_budget(std::size_t given) {
    if (given) return {given, "--memory-limit"};
    if (std::size_t avail = available_host_bytes())
        return {avail / 4 * 3, "3/4 of the " + bytes_text(double(avail)) +
                                   " of host memory available when the batch started; --memory-limit sets it"};
    return {};
}

Budget device_budget(std::size_t given, bool uses_cuda, int device) {
    if (!uses_cuda) return {};
    if (given) return {given, "--device-memory-limit"};
    try {
        if (std::size_t free = device_free_bytes(device))
            return {free / 4 * 3, "3/4 of the " + bytes_text(double(free)) +
                                      " of device memory free when the batch started; --device-memory-limit sets it"};
    } catch (const std::exception&) {}
    return {};
}

} // namespace pixflow::host::batch
