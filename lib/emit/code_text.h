// Names from a model written into generated code as text, never as code: one escaper per target
// language, in one place, so every generator quotes a name the same way. ONNX is proto2, so an
// op_type, a domain, a node, tensor or attribute name, and a file name may hold any bytes (quotes,
// comment terminators, newlines, trigraphs, NUL, invalid UTF-8); written raw, `Gelu */ int f(void)
// { ... } /*` becomes a function of the generated package. Names used as identifiers go through
// SanitizeCIdentifier (c_names.h) instead; text for a browser through HtmlText (html_text.h).
// Every function here returns printable ASCII only (JSON and Markdown aside, which return valid
// UTF-8), so no output can end a comment, a literal or a line early.
#pragma once

#include <string>
#include <string_view>

namespace porttool::emit {

// `text` inside a C or C++ comment, /* */ or // alike, on the line it was put on: printable ASCII
// kept; "*/" and "/*" split by a space ("* /", "/ *"), as are "??" (trigraphs: "??/" is a
// backslash, which would continue a // comment onto the next line); other bytes (newline, NUL,
// non-ASCII) as the text "\xNN"; a backslash ending the text as "\x5c" (a // comment would take
// the next line). A leading '/' and a trailing '*' or '/' get a space, so the text cannot close
// or open a comment with the template's characters around it.
std::string CommentText(std::string_view text);

// The characters of a C or C++ string literal holding `text`, without the quotes (for templates
// that put a name inside a literal of their own): '"', '\\' and '?' (trigraphs are on in
// -std=c99) backslash-escaped, other printable ASCII as it is, every other byte as three octal
// digits ("\012"), which a following digit cannot extend (unlike "\x").
std::string CStringBody(std::string_view text);

// "\"" + CStringBody(text) + "\"".
std::string CStringLiteral(std::string_view text);

// The characters of a Python str literal holding `text`, without the quotes; valid inside '...',
// "..." and """...""" alike ('\'' and '"' are both escaped). Valid UTF-8 sequences beyond ASCII
// as \uXXXX or \UXXXXXXXX, control bytes as \xNN, each byte of an invalid sequence as \udcNN (its
// surrogateescape code point): text.encode('utf-8', 'surrogateescape') gives the bytes back.
std::string PythonStringBody(std::string_view text);

// "\"" + PythonStringBody(text) + "\"" (double quotes: reads like the JSON porttool writes).
std::string PythonStringLiteral(std::string_view text);

// `text` as a CMake quoted argument, with the quotes: '\\', '"', '$' (variable references "${")
// and '@' (configure_file references) backslash-escaped (';' splits no quoted argument, and "\;"
// would stay two characters), newline, tab and
// carriage return as \n \t \r, other control bytes as '?' (CMake has no byte escape). Bytes past
// ASCII stay as they are: a file name must reach the file system unchanged.
std::string CMakeQuoted(std::string_view text);

// `text` inside a line comment of a shell script, CMake file, Python file or plain-text file
// (the text after "#"): printable ASCII kept, every other byte (newline first) as "\xNN".
std::string LineCommentText(std::string_view text);

// `text` as one POSIX shell word: as it is when it holds only characters no shell treats
// specially, else single-quoted ('\'' for a quote). Bytes other than printable ASCII (newline,
// NUL) cannot be passed on a command line a script keeps readable, so they become '?'.
std::string ShellWord(std::string_view text);

// `path` as the name of an #include "...": C has no escapes there (a '"' or a line break ends the
// directive; '\'', '\\', "//" and "/*" are undefined behaviour, "??" may be a trigraph), so a path
// holding any of them, or a byte other than printable ASCII, throws Error(kUsage) naming `what`
// (the option that chose the path). Returns "\"" + path + "\"".
std::string CIncludeName(std::string_view path, std::string_view what);

// `text` as a JSON string with the quotes (nlohmann's dump; invalid UTF-8 as U+FFFD, the way
// DumpJson writes every document).
std::string JsonString(std::string_view text);

// `text` for Markdown prose or a `code span`: DisplayText (html_text.h: valid UTF-8, controls as
// visible pictures) with backticks as U+2035 (a backtick would end the code span it sits in).
std::string MarkdownText(std::string_view text);

}  // namespace porttool::emit
