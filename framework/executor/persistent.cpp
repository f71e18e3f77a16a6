// executor/ persistent memory: blocks kept between a node's calls (persistent.hpp).
#include "executor/persistent.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace pixflow::host {

PersistentStore::PersistentStore() = default;

// Each DeviceBuffer's cudaFree waits for the device, so no queued work still uses a block.
PersistentStore::~PersistentStore() = default;

PersistentStore::Block& PersistentStore::take(NodeId v, std::int32_t device, std::size_t bytes, const Stream* stream,
                                              DeviceMemoryCounter& counter) {
    std::lock_guard lk(m_mu);
    // This node's free block on this device: the one of the same bytes, else the largest.
    Block* b = nullptr;
    for (auto& c : m_blocks) {
        if (c->v != v || c->device != device || c->busy) continue;
        if (!b || (c->bytes == bytes && b->bytes != bytes) || (b->bytes != bytes && c->capacity > b->capacity))
            b = c.get();
    }
    if (!b) {
        m_blocks.push_back(std::make_unique<Block>());
        b = m_blocks.back().get();
        b->v = v;
        b->device = device;
        if (device != PF_HOST) b->done = Event(true, false);
    }
    // Device blocks: this call's stream runs after the block's last work (on the same stream a
    // no-op; before the first record `done` holds no work, so no wait; always made, since a
    // caller's destroyed stream's handle may come back as another).
    if (device != PF_HOST) b->done.wait_on(*stream);
    bool zero = b->dirty || b->bytes != bytes;
    if (b->capacity < bytes) { // grows (never shrinks: a batch of mixed sizes does not reallocate each time)
        if (device == PF_HOST) {
            unsigned char* p = static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
            if (!p) throw std::bad_alloc();
            b->host.reset(p);
        } else {
            const std::size_t old = b->capacity;
            b->dev = DeviceBuffer(); // frees the old block first (cudaFree waits for its last work)
            b->capacity = 0;
            counter.add(-(long long)old);
            b->dev = DeviceBuffer(bytes, device);
            counter.add((long long)bytes);
        }
        b->capacity = bytes;
        zero = true;
    }
    if (zero) {
        b->dirty = true; // until the clear below is enqueued
        b->bytes = bytes;
        b->state = 0;
        if (device == PF_HOST)
            std::memset(b->data(), 0, bytes);
        else
            memset_async(b->data(), 0, bytes, *stream);
        b->dirty = false;
    }
    b->busy = true;
    return *b;
}

void PersistentStore::give_back(Block& b, const Stream* stream, bool ok) {
    std::lock_guard lk(m_mu);
    if (b.device != PF_HOST) b.done.record(*stream);
    if (!ok) b.dirty = true;
    b.busy = false;
}

std::size_t PersistentStore::device_bytes() const {
    std::lock_guard lk(m_mu);
    std::size_t n = 0;
    for (auto& b : m_blocks)
        if (b->device != PF_HOST) n += b->capacity;
    return n;
}

} // namespace pixflow::host
