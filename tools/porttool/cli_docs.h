// Shell completion and the man page, generated from the same CLI11 definitions that parse the
// command line, so they cannot drift from the options porttool accepts. The build writes them
// (`porttool --bash-completion`, `porttool --man`) and `cmake --install` installs them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace porttool::cli {

// A bash completion script: subcommands, then each subcommand's flags; after a target option
// (type name kTargetTypeName), `target_names` and files; files otherwise.
std::string BashCompletion(const CLI::App& app, const std::vector<std::string>& target_names);
// A man(7) page: synopsis, every subcommand with its options and help text, the shipped target
// profiles, exit codes.
std::string ManPage(const CLI::App& app, const std::string& version_text,
                    const std::vector<std::string>& target_names);

}  // namespace porttool::cli
