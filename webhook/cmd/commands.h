#pragma once
// The commands of kubegap-webhook and their flags, as data (flags.h says what reads it).
//
//   const CommandSpec* spec = find_command("check");

#include <string>
#include <string_view>
#include <vector>

#include "webhook/cmd/flags.h"

namespace kubegap {

// command_specs: every command, in the order the main help lists them ("help" last).
const std::vector<CommandSpec>& command_specs();

// find_command: the command named `name`, or nullptr.
const CommandSpec* find_command(std::string_view name);

// main_help: the text of `kubegap-webhook --help`.
std::string main_help();

}  // namespace kubegap
