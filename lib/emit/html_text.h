// Turning arbitrary bytes (node names, op types, paths, messages) into text that a browser shows
// as written: the report page and the placement graph both show names taken from models, which may
// hold any bytes. DisplayText makes them valid, visible UTF-8 (invalid bytes and control or
// direction-changing characters become visible marks, never backslash escapes, which a reader
// would take for an escape the page forgot to apply), EscapeHtml makes that text safe inside
// HTML or SVG element content and quoted attribute values. Shared by graph_svg and report_html so
// a name reads the same in the picture and in the tables.
#pragma once

#include <string>
#include <string_view>

namespace porttool::emit {

// `raw` as valid UTF-8 with nothing invisible: each byte of an invalid UTF-8 sequence becomes
// "⟨0xNN⟩"; C0 controls (newline, tab, ...) and DEL become their Unicode control pictures
// ("␊", "␉", "␡"); C1 controls, zero-width and bidirectional-override characters, the byte-order
// mark and private-use code points become "⟨U+XXXX⟩" (a name must not reorder or hide the text
// around it). Backslashes are kept as they are, so an ordinary name can be copied back to a
// command line.
std::string DisplayText(std::string_view raw);

// `text` with & < > " ' replaced by character references (valid in element content and in quoted
// attribute values alike).
std::string EscapeHtml(std::string_view text);

// EscapeHtml(DisplayText(raw)).
inline std::string HtmlText(std::string_view raw) { return EscapeHtml(DisplayText(raw)); }

// The first `max_chars` code points of a DisplayText result, with "…" in place of the rest.
// Never splits a code point.
std::string TruncateDisplay(std::string_view text, size_t max_chars);

}  // namespace porttool::emit
