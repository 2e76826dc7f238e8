// The persistent cache of compiled code: one file per entry under
// config().cache_dir/<kind>/, written atomically (temporary file, then rename)
// and checked on load (magic, size, checksum of the content and of the key),
// so a torn or corrupted file is a miss, never bad code. Each kind's folder
// is kept under config().cache_max_mb by removing its oldest entries.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace tj::rt::disk_cache {

// `key` is the full identity of the entry (source text, compiler, options,
// target); entries are found by its hash and checked against it.
std::optional<std::string> load(std::string_view kind, std::string_view key);
// Best effort: an unwritable cache directory is not an error.
void store(std::string_view kind, std::string_view key, std::string_view content);

} // namespace tj::rt::disk_cache
