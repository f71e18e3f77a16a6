// api/ pixflow::Image: an owning host image, tightly packed and 64-byte aligned.
#include <pixflow/pixflow.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace pixflow {
namespace {

void* allocate(std::size_t bytes) {
    void* p = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return p;
}

} // namespace

Image::Image(int width, int height, int channels, DType dtype) {
    if (width < 1 || height < 1 || channels < 1 || channels > 4 || dtype_size(dtype) == 0)
        throw UserError("Image(" + std::to_string(width) + ", " + std::to_string(height) + ", " +
                        std::to_string(channels) + ", " + dtype_name(dtype) +
                        "): an image is at least 1x1 with 1 to 4 channels of a known dtype");
    m_view.width = width;
    m_view.height = height;
    m_view.channels = channels;
    m_view.dtype = dtype;
    m_view.device = PF_HOST;
    m_view.pitch = std::int64_t(m_view.row_bytes());
    m_view.data = allocate(size_bytes());
}

Image::Image(const Image& o) : m_view(o.m_view) {
    if (o.empty()) return;
    m_view.data = allocate(size_bytes());
    std::memcpy(m_view.data, o.m_view.data, size_bytes());
}

Image& Image::operator=(const Image& o) {
    if (this != &o) *this = Image(o);
    return *this;
}

Image::Image(Image&& o) noexcept : m_view(o.m_view) { o.m_view = ImageView(); }

Image& Image::operator=(Image&& o) noexcept {
    std::swap(m_view, o.m_view);
    return *this;
}

Image::~Image() { std::free(m_view.data); }

bool operator==(const Image& a, const Image& b) {
    return a.width() == b.width() && a.height() == b.height() && a.channels() == b.channels() &&
           a.dtype() == b.dtype() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

} // namespace pixflow
