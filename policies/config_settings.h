#pragma once
// The settings of a training program's config file (YAML, TOML, INI or JSON) kept in a
// ConfigMap the container mounts: many programs take their step count, learning rate and
// output directory from such a file rather than from flags (Hugging Face recipes, OmegaConf
// and Hydra configs, torchtitan's TOML). Read line by line as `name: value` /
// `name = value` / `"name": value`, nesting ignored: the rules compare setting names the
// way they compare flag names, so a nested `training.output_dir` and a flag
// `--output_dir` say the same. Pure string work.

#include <cstddef>
#include <string_view>
#include <vector>

#include "policies/pod_view.h"

namespace kubegap {

// append_config_settings: the `name: value` settings of `text` appended to `out` (as env
// vars without a source), at most `max_settings` in `out` in all. Lines without a value of
// their own (a mapping's key, a list, a block scalar, comments, section headers) are skipped.
void append_config_settings(std::string_view text, std::size_t max_settings, std::vector<EnvVar>& out);

// append_script_settings: the string constants a Python script sets, as settings: a
// statement `OUTPUT_DIR = "/mnt/out"` or a keyword argument `RunConfig(storage_path=
// "s3://ckpt/")`, `TrainingArguments(output_dir="./results")` (a name, one `=`, a quoted
// string), at most `max_settings` in `out` in all. Nothing is evaluated: an f-string, a
// concatenation or a variable is no value here.
void append_script_settings(std::string_view text, std::size_t max_settings, std::vector<EnvVar>& out);

// append_env_json_settings: the settings of env values that hold a JSON object on one line
// (`TRL_TRAINING_ARGS={"output_dir": "/mnt/output", "save_steps": 250}`: launchers pass a
// program's arguments so), read like a config file's, at most `max_settings` in `out`,
// each named under its var (`TRL_TRAINING_ARGS.output_dir`).
void append_env_json_settings(const std::vector<EnvVar>& env, std::size_t max_settings, std::vector<EnvVar>& out);

}  // namespace kubegap
