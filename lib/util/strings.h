// Small string helpers shared by the library and the CLI: splitting, joining, edit distance for
// "did you mean" suggestions, and C-identifier sanitising.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::util {

std::vector<std::string> Split(std::string_view text, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// The first `shown` parts joined with ", " and " and N more" for the rest: a list in text output
// that stays one readable line on a model with hundreds of matches.
std::string JoinFirst(const std::vector<std::string>& parts, size_t shown = 5);
// Every occurrence of `from` (non-empty) replaced by `to`, left to right, never rescanning `to`.
std::string ReplaceAll(std::string text, std::string_view from, std::string_view to);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);

// Levenshtein distance; used to suggest the closest node or tensor names.
size_t EditDistance(std::string_view a, std::string_view b);
// Up to `limit` candidates close to `name`: substring matches first, then names within
// max(2, |name| / 3) edits. Empty when nothing is close (better no suggestion than a random one).
std::vector<std::string> ClosestNames(std::string_view name, const std::vector<std::string>& pool,
                                      size_t limit = 5);

// A count with thousands separators: 99990 -> "99,990".
std::string GroupDigits(uint64_t count);

// Human-readable byte count: "1.50 MiB".
std::string FormatBytes(uint64_t bytes);
// A duration in milliseconds to three significant figures, never in exponent form: "0.0123 ms",
// "1.25 ms", "42.1 ms", "1234 ms". Two fixed decimals read 0.01 ms for 12 us and hid the figure.
std::string FormatMs(double ms);

// `text` safe to print on a terminal: control bytes (below 0x20, and 0x7f) as \xNN, so a model's
// names cannot move the cursor, clear the screen or forge lines of output.
std::string Printable(std::string_view text);

}  // namespace porttool::util
