// Persistent cache files: header, content, atomic replacement.
#include "runtime/disk_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tensorjit/config.h"

namespace tj::rt::disk_cache {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'T', 'J', 'C', 'A', 'C', 'H', 'E', '1'};

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

struct Header {
  char magic[8];
  uint64_t key_hash; // a second, independent hash of the key
  uint64_t size;     // content bytes
  uint64_t checksum; // of the content
};

fs::path entry_path(std::string_view kind, std::string_view key) {
  const std::string& dir = config().cache_dir;
  if (dir.empty()) return {};
  return fs::path(dir) / std::string(kind) / fmt::format("{:016x}.bin", fnv1a(key));
}

// Removes the oldest entries of a kind's folder while it holds more than the bound.
void evict(const fs::path& dir) {
  const auto limit = static_cast<uintmax_t>(std::max<int64_t>(config().cache_max_mb, 0)) << 20;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  uintmax_t total = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".bin") continue;
    total += e.file_size(ec);
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  if (total <= limit) return;
  std::sort(files.begin(), files.end());
  for (const auto& [time, path] : files) {
    if (total <= limit * 3 / 4) break; // room for a while before the next scan
    uintmax_t size = fs::file_size(path, ec);
    if (fs::remove(path, ec)) total -= size;
  }
}

} // namespace

std::optional<std::string> load(std::string_view kind, std::string_view key) {
  fs::path p = entry_path(kind, key);
  if (p.empty()) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  Header h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof(h))) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.key_hash != fnv1a(key, 7) ||
      h.size > (uint64_t{1} << 30))
    return std::nullopt;
  std::string content(h.size, '\0');
  if (!in.read(content.data(), static_cast<std::streamsize>(h.size))) return std::nullopt;
  if (fnv1a(content) != h.checksum) return std::nullopt;
  return content;
}

void store(std::string_view kind, std::string_view key, std::string_view content) {
  fs::path p = entry_path(kind, key);
  if (p.empty()) return;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec) return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.key_hash = fnv1a(key, 7);
  h.size = content.size();
  h.checksum = fnv1a(content);
  // Unique per process and call: concurrent writers never share a temporary file.
  static std::atomic<uint64_t> seq{0};
  fs::path tmp = p;
  tmp += fmt::format(".{}.{}.tmp", getpid(), seq++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(reinterpret_cast<const char*>(&h), sizeof(h));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush()) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  // The bound is checked now and then, not on every store: a scan reads the whole folder.
  static std::atomic<uint64_t> stores{0};
  if (stores++ % 64 == 0) evict(p.parent_path());
}

} // namespace tj::rt::disk_cache
