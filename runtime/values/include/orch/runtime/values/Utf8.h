// Text that came from outside (a server's reply, a file name) made safe to write into JSON:
// bytes that are not well-formed UTF-8 become U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace orch::runtime {

/// `text` with every byte that does not belong to a well-formed UTF-8 sequence (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD.
std::string validUtf8(std::string_view text);

} // namespace orch::runtime
