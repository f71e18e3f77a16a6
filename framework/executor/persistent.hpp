// executor/ persistent memory: the blocks a node keeps from one call of its operator to the next
// (pf_host.persistent, ABI 1.6), one store per Executor, freed with it.
//
// A block belongs to one node and, while a call holds it, to that call alone: calls of one node
// that run at once (strips on several streams or GPUs) take different blocks. A block's device
// work is ordered by an event: the stream of the next call that takes it waits for the last
// call's work. A block that a failed call held is zeroed (and its state
// reset) before it is used again, so no call ever sees a half-updated block.
#pragma once

#include "device/device.hpp"
#include "executor/buffers.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace pixflow::host {

class PersistentStore {
  public:
    struct Block;
    PersistentStore();
    PersistentStore(const PersistentStore&) = delete;
    PersistentStore& operator=(const PersistentStore&) = delete;
    ~PersistentStore();

    /// A block of `bytes` on `device` (PF_HOST on the CPU, where `stream` is nullptr; else the
    /// stream's device) for a call of node v on `stream`: the block this node's last call of the
    /// same bytes left, or a zeroed one (state 0). The block's memory is counted in `counter`
    /// while it exists. Throws on a CUDA failure or when out of memory.
    Block& take(NodeId v, std::int32_t device, std::size_t bytes, const Stream* stream, DeviceMemoryCounter& counter);
    /// The call that took b has returned (ok: with PF_OK) and enqueued all of its work on
    /// `stream`: b goes back to the store, zeroed before its next use unless ok.
    void give_back(Block& b, const Stream* stream, bool ok);
    /// Bytes the store holds on devices (not the host).
    std::size_t device_bytes() const;

  private:
    mutable std::mutex m_mu;
    std::vector<std::unique_ptr<Block>> m_blocks;
};

struct PersistentStore::Block {
    NodeId v;
    std::int32_t device = 0;  ///< PF_HOST or a CUDA device
    std::size_t capacity = 0; ///< bytes allocated
    std::size_t bytes = 0;    ///< bytes of its last call (the data a caller of other bytes never sees)
    std::uint64_t state = 0;  ///< pf_host.persistent's *state
    DeviceBuffer dev;         ///< device blocks
    std::unique_ptr<unsigned char, void (*)(void*)> host{nullptr, &std::free}; ///< host blocks
    Event done;         ///< device blocks: the end of the last call's work (none before the first)
    bool busy = false;  ///< held by a call
    bool dirty = false; ///< its last call failed: zero before use
    /// The block's memory (null while it has none).
    void* data() const { return device == PF_HOST ? static_cast<void*>(host.get()) : dev.get(); }
};

} // namespace pixflow::host
