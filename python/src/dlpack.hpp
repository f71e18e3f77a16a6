// dlpack.hpp: the DLPack ABI (https://github.com/dmlc/dlpack, include/dlpack/dlpack.h), version
// 1.0, written out from the specification: the structs a producer and a consumer of a
// `__dlpack__` capsule exchange. The ABI is stable (plain C structs, fixed layout); Debian 12
// ships only DLPack 0.6 (libdlpack-dev, no versioned tensor), and the GPU machine has no dlpack.h
// at all, so the module carries its own copy. The static_asserts at the end pin the layout.
//
// Capsules (the Python array API standard's `__dlpack__` protocol):
//   "dltensor"            -> DLManagedTensor*           (every DLPack version)
//   "dltensor_versioned"  -> DLManagedTensorVersioned*  (1.0+, when the consumer passes max_version)
// A consumer renames the capsule to "used_dltensor" / "used_dltensor_versioned" when it takes
// the tensor, and then calls its deleter when done; a capsule never consumed calls the deleter
// from its own destructor.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pixflow::dlpack {

constexpr std::uint32_t kMajorVersion = 1;
constexpr std::uint32_t kMinorVersion = 0;

struct PackVersion {
    std::uint32_t major;
    std::uint32_t minor;
};

enum DeviceType : std::int32_t { // DLDeviceType: the values this module meets
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3, // pinned host memory
    kDLCUDAManaged = 13,
};

struct Device {
    std::int32_t device_type; // DeviceType (an enum of int size in the C header)
    std::int32_t device_id;
};

enum DataTypeCode : std::uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2 };

struct DataType {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};

struct Tensor {
    void* data;
    Device device;
    std::int32_t ndim;
    DataType dtype;
    std::int64_t* shape;
    std::int64_t* strides; // in elements; null: compact row-major
    std::uint64_t byte_offset;
};

struct ManagedTensor {
    Tensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(ManagedTensor* self);
};

constexpr std::uint64_t kFlagReadOnly = 1ull << 0;
constexpr std::uint64_t kFlagIsCopied = 1ull << 1;

struct ManagedTensorVersioned {
    PackVersion version;
    void* manager_ctx;
    void (*deleter)(ManagedTensorVersioned* self);
    std::uint64_t flags;
    Tensor dl_tensor;
};

// The C header's layout on LP64 (x86-64, aarch64).
static_assert(sizeof(Device) == 8 && sizeof(DataType) == 4);
static_assert(offsetof(Tensor, device) == 8 && offsetof(Tensor, ndim) == 16 && offsetof(Tensor, dtype) == 20);
static_assert(offsetof(Tensor, shape) == 24 && offsetof(Tensor, strides) == 32 && offsetof(Tensor, byte_offset) == 40);
static_assert(sizeof(Tensor) == 48);
static_assert(offsetof(ManagedTensor, manager_ctx) == 48 && offsetof(ManagedTensor, deleter) == 56);
static_assert(offsetof(ManagedTensorVersioned, manager_ctx) == 8 && offsetof(ManagedTensorVersioned, flags) == 24);
static_assert(offsetof(ManagedTensorVersioned, dl_tensor) == 32);

} // namespace pixflow::dlpack
