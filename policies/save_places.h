#pragma once
// Where a container's command and env say a run saves: a local directory (the mount that
// holds it decides) or an object-storage URL (nothing to lose). Names count when a policy
// list holds them (checkpointStorageFlags) or their words say so (savePlaceNames). Pure
// string work.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/command_facts.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

// SavePath: the local directory a checkpoint/output flag names (policy
// checkpointStorageFlags), and the flag as written.
struct SavePath {
  std::string flag;  // "--output_dir"
  std::string path;  // "/workspace/output"
};

// kSavePlaceArgument: SavePath::flag of a path given as a plain argument, not a flag's
// value. It is weaker evidence than a flag: it decides only when a mount holds it.
inline constexpr std::string_view kSavePlaceArgument = "a command argument";

// save_path: the first checkpointStorageFlags flag (or env var) whose value, env references
// expanded, is a local path: an absolute one, or a relative one (`./checkpoints`) when the
// directory it is relative to is known: the last `cd DIR` of the script before the flag,
// else the container's workingDir. Nothing when none is. Without one, the first such
// flag or env var of a name read as a save place by its words (savePlaceNames:
// `--saving_folder`, `MODEL_SAVE_PATH`); without one, where a program of policy
// savesByDefault saves unasked (`keras_mnist.py` in `cd /work && ...`: /work), when the
// place can be resolved; without that, the first absolute path given as a plain argument
// whose last directory is so named (`train_start.sh CODE /job/output/`). `mpirun -wdir
// DIR` sets the directory as `cd DIR` does.
std::optional<SavePath> save_path(const CommandFacts& facts, const std::vector<EnvVar>& env, const Policy& policy,
                                  std::string_view working_dir = {});

// names_program: `word` of a command line is the program a policy pattern names (`*` as in
// benchmarkPrograms): the word itself, or its basename when it has a directory
// (`*/mnist/main.py` matches `/opt/mnist/main.py`, `keras_mnist.py` matches
// `/examples/keras_mnist.py`).
bool names_program(std::string_view pattern, std::string_view word);

// saves_by_default_entry: the policy savesByDefault entry ("PROGRAM=PLACE [FLAG...]") whose
// PROGRAM (a wildcard) matches `word` of a command line, its basename when it has a
// directory, or `script` (the word resolved under the working directory, or empty); null
// when none does. A flag or `name=value` word is no program.
const std::string* saves_by_default_entry(std::string_view word, std::string_view script, const Policy& policy);

// resolve_path: `path` relative to the directory `base` ("/app" and "./ckpt/../out" give
// "/app/out"); an absolute `path` as it is. Empty when neither is absolute.
std::string resolve_path(std::string_view base, std::string_view path);

// checkpoint_destination: an object-storage URL (or bucket) that a checkpoint/output flag
// or env var of the policy's `checkpointStorageFlags` names, e.g. "gs://runs/ckpt"; or,
// starting with `$`, a reference to a var whose value the object does not show, and
// where it is set: "$(OUTPUT_DIR) (set from ConfigMap rl-config)".
std::optional<std::string> checkpoint_destination(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                                  const Policy& policy);

}  // namespace kubegap
