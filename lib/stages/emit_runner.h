// EmitRunnerStage: `porttool emit-runner` as one call: the C99 pipeline runner for a split
// (lib/emit/runner.h), and its result's JSON shape, shared by the subcommand and `port`.
#pragma once

#include <nlohmann/json.hpp>

#include "lib/emit/runner.h"

namespace porttool::stages {

emit::RunnerResult EmitRunnerStage(const emit::RunnerRequest& request);

// {"segments", "arena", "int8", "int8_source", "files"}.
nlohmann::json RunnerJson(const emit::RunnerResult& result);

}  // namespace porttool::stages
