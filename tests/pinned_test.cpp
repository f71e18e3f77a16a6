// Pinned host buffers (framework/device): huge pages registered with the driver, the staging of
// every upload and download. These tests need a GPU and skip, saying so, without one.
#include "device/device.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace pixflow::host;

namespace {
// A byte pattern that differs between buffers and positions.
unsigned char pattern(std::size_t i, unsigned seed) {
    return static_cast<unsigned char>((i * 131u + seed * 17u + (i >> 12)) & 0xFF);
}
} // namespace

TEST(PinnedCuda, BuffersOfEverySizeArePinnedAlignedAndCarryTheirBytesBothWays) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    set_device(0);
    Stream s(0);
    const std::size_t mib2 = std::size_t(2) << 20;
    for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(4095), std::size_t(4097), mib2 - 1, mib2,
                              mib2 + 1, std::size_t(2048) * 2048 * 3}) {
        SCOPED_TRACE(std::to_string(bytes) + " bytes");
        auto* p = static_cast<unsigned char*>(pinned_alloc(bytes));
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(host_is_pinned(p));
        if (bytes) EXPECT_TRUE(host_is_pinned(p + bytes - 1)); // the whole range, not only its start
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (bytes >= mib2 ? mib2 : 4096), 0u);
        if (bytes) {
            for (std::size_t i = 0; i < bytes; ++i) p[i] = pattern(i, unsigned(bytes));
            void* d = device_alloc_async(bytes, s);
            copy_2d_async(d, std::int64_t(bytes), p, std::int64_t(bytes), bytes, 1, s); // up
            s.synchronize();
            std::fill(p, p + bytes, 0);
            copy_2d_async(p, std::int64_t(bytes), d, std::int64_t(bytes), bytes, 1, s); // and back
            device_free_async(d, s);
            s.synchronize();
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < bytes; ++i) wrong += p[i] != pattern(i, unsigned(bytes));
            EXPECT_EQ(wrong, 0u);
        }
        pinned_free(p);
    }
    // and the test can tell: ordinary memory is not pinned
    std::vector<unsigned char> plain(1 << 20);
    EXPECT_FALSE(host_is_pinned(plain.data()));
}

TEST(PinnedCuda, TheHostAllocFallbackIsPinnedCarriesItsBytesAndIsFreedAsSuch) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    set_device(0);
    Stream s(0);
    ::setenv("PIXFLOW_PINNED", "hostalloc", 1);
    const std::size_t bytes = (std::size_t(3) << 20) + 5;
    auto* p = static_cast<unsigned char*>(pinned_alloc(bytes));
    ::unsetenv("PIXFLOW_PINNED");
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(host_is_pinned(p));
    auto* q = static_cast<unsigned char*>(pinned_alloc(bytes)); // registered, beside it
    EXPECT_TRUE(host_is_pinned(q));
    for (std::size_t i = 0; i < bytes; ++i) p[i] = pattern(i, 3);
    void* d = device_alloc_async(bytes, s);
    copy_2d_async(d, std::int64_t(bytes), p, std::int64_t(bytes), bytes, 1, s);
    copy_2d_async(q, std::int64_t(bytes), d, std::int64_t(bytes), bytes, 1, s);
    device_free_async(d, s);
    s.synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < bytes; ++i) wrong += q[i] != pattern(i, 3);
    EXPECT_EQ(wrong, 0u);
    pinned_free(p); // cudaFreeHost: a wrong free (std::free of it, or unregistering) would throw or crash
    pinned_free(q);
}

TEST(PinnedCuda, AnUnknownPinningChoiceIsNamedInAWarningAndTheDefaultIsUsed) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    set_device(0);
    ::setenv("PIXFLOW_PINNED", "hugepages", 1);
    testing::internal::CaptureStderr();
    void* p = pinned_alloc(std::size_t(2) << 20);
    const std::string err = testing::internal::GetCapturedStderr();
    ::unsetenv("PIXFLOW_PINNED");
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(host_is_pinned(p));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (std::size_t(2) << 20), 0u); // the registered path's alignment
    EXPECT_NE(err.find("PIXFLOW_PINNED=hugepages"), std::string::npos) << err;
    EXPECT_NE(err.find("register, hostalloc"), std::string::npos) << err;
    pinned_free(p);
}

TEST(PinnedCuda, ThreadsTakeDistinctBuffersFromTheCacheAtOnceAndReuseThem) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    set_device(0);
    PinnedCache cache;
    const int n = 8;
    const std::size_t bytes = std::size_t(5) << 20; // over two huge pages, not a multiple of one
    std::vector<void*> got(n);
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t)
        threads.emplace_back([&, t] {
            auto* p = static_cast<unsigned char*>(cache.take(bytes));
            for (std::size_t i = 0; i < bytes; i += 4096) p[i] = static_cast<unsigned char>(t);
            got[t] = p;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(std::set<void*>(got.begin(), got.end()).size(), std::size_t(n));
    for (int t = 0; t < n; ++t) {
        EXPECT_TRUE(host_is_pinned(got[t]));
        const auto* p = static_cast<const unsigned char*>(got[t]);
        int wrong = 0;
        for (std::size_t i = 0; i < bytes; i += 4096) wrong += p[i] != t;
        EXPECT_EQ(wrong, 0) << "buffer " << t << " was written by another thread";
    }
    EXPECT_EQ(cache.pinned_count(), std::size_t(n));
    for (void* p : got) cache.give(p);
    std::vector<void*> again(n);
    for (int t = 0; t < n; ++t) again[t] = cache.take(bytes);
    EXPECT_EQ(cache.pinned_count(), std::size_t(n)) << "the cache pinned new buffers instead of reusing its own";
    EXPECT_EQ(std::set<void*>(again.begin(), again.end()), std::set<void*>(got.begin(), got.end()));
    for (void* p : again) cache.give(p);
}
