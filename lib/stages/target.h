// Target profiles as the stages use them: a profile (lib/decide/target.h) whose port fields are
// checked too — `rewrites` must be a pipeline of known passes with valid options and
// `default_input_shape` valid NAME:DIMS text — with errors naming the profile file and the JSON
// pointer, as every other profile field's. Also the two things `port` derives from those fields:
// the rewrite steps, and the input pins for a model when the user gives none.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lib/decide/target.h"
#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"
#include "passes/pipeline.h"

namespace porttool::stages {

// decide::LoadTarget, then ValidatePortFields.
decide::TargetProfile LoadTargetProfile(const std::filesystem::path& rules_dir,
                                        const std::string& name_or_path);
// Error(kBadInput) "FILE:LINE: at /rewrites: ..." for an unknown pass or a malformed pipeline,
// the same for /default_input_shape.
void ValidatePortFields(const decide::TargetProfile& target);

// Error(kBadInput) "FILE:LINE: at /remedies/N/pass: ..." for a remedy whose pass is not registered
// (and any other error LoadRemedies finds in the file).
void ValidateRemedyPasses(const std::filesystem::path& remedies_json);

// decide::ValidateRuleFile plus the pass names a file refers to: a target's port fields, and a
// remedies file's "pass" ids (each must be a registered pass). Returns the file's kind.
std::string ValidateRuleFile(const std::filesystem::path& rules_dir,
                             const std::filesystem::path& path);

// The profile's rewrites as pipeline steps (empty when it lists none).
std::vector<passes::PipelineStep> TargetRewrites(const decide::TargetProfile& target);

// The target's default_input_shape applied to `model`'s inputs: a named entry pins that input,
// a "*" entry every input of the same rank whose declared static dims agree. Inputs it does not
// cover are left out (the caller reports what stays dynamic).
shape::InputShapes DefaultInputShapes(const decide::TargetProfile& target, const io::Model& model);

// The values `port` fixes: the profile's input_values for the inputs `model` has (a profile
// serves many models; the others are ignored), then `given` (which wins, and must name inputs of
// the model: ApplyInputValues says so).
shape::InputValues EffectiveInputValues(const decide::TargetProfile& target, const io::Model& model,
                                        const shape::InputValues& given);

}  // namespace porttool::stages
