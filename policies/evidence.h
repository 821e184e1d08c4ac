#pragma once
// Evidence from what a container runs (command, args, env): does it train, does it only
// run accelerator diagnostics or placeholders, where does it save checkpoints. Pure
// string work over the policy's hint lists (DESIGN.md, "Training vs serving").
//
//   const CommandFacts facts = command_facts(container.command, container.args);
//   if (auto why = training_evidence(facts, container.env, policy)) ...   // "launcher torchrun"
//
// How a command line is read into CommandFacts: policies/command_facts.h; where it saves:
// policies/save_places.h.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/command_facts.h"
#include "policies/pod_view.h"
#include "policies/policy.h"
#include "policies/save_places.h"

namespace kubegap {

// training_evidence: why the command or env shows training ("launcher torchrun", "flag
// --max_steps", "script finetune.py", "checkpoint path /ckpt"), or nothing. A
// checkpoint-looking path is weak evidence: a program named like evaluation, conversion,
// inference or download (nonTrainingHints) reads checkpoints rather than writes them.
// `entrypoint_image`: the image of a container that gives no command (entrypoint_image_of):
// its name stands for the program (an `inference-checkpoint` image's arguments are no
// evidence of training).
std::optional<std::string> training_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy, std::string_view entrypoint_image = {});

// strong_training_evidence: `why` (from training_evidence) names a launcher, a training
// flag or env var, or a training script; a checkpoint-looking path alone is weak.
bool strong_training_evidence(std::string_view why);

// reads_checkpoints: the command names a program that reads checkpoints rather than
// writing them (trainingHints.nonTraining: evaluation, conversion, inference, ...), or,
// for a container with no command, its image's name does.
bool reads_checkpoints(const CommandFacts& facts, const Policy& policy, std::string_view entrypoint_image = {});

// looks_like_checkpoint_path: the policy's checkpointPathHints, case-insensitively.
bool looks_like_checkpoint_path(std::string_view path, const Policy& policy);

// runs_only_daemons: the command starts a cluster node that waits for work (clusterDaemons:
// sshd, `ray start`), with nothing but placeholders around it (`mkdir -p /run/sshd`).
bool runs_only_daemons(const CommandFacts& facts, const Policy& policy);

// serving_evidence: "inference server vllm serve" when the command starts an inference
// server (servingPrograms, matched like clusterDaemons), or nothing. `entrypoint_image`:
// the image of a container that gives no command (its args, if any, go to the image's
// entrypoint): then the image decides (servingImages). Callers: entrypoint_image_of.
std::optional<std::string> serving_evidence(const CommandFacts& facts, std::string_view entrypoint_image,
                                            const Policy& policy);

// entrypoint_image_of: the image, when the container runs its entrypoint (no command).
inline std::string_view entrypoint_image_of(const Container& c) {
  return c.command.empty() ? std::string_view(c.image) : std::string_view();
}

// diagnostic_evidence: why the command only runs accelerator diagnostics, benchmarks or
// placeholders ("diagnostic nvidia-smi", "placeholder sleep"), or nothing. Training
// evidence in the same command wins; a caller that has already looked passes `trains`
// so the command is not read twice on the review path.
std::optional<std::string> diagnostic_evidence(const CommandFacts& facts, const std::string& image,
                                               const std::vector<EnvVar>& env, const Policy& policy,
                                               std::optional<bool> trains = std::nullopt);

// checkpointing_off: the flag or env value that switches checkpoint saving off
// (policy checkpointingOff), as written ("--save_strategy no"), or a program that saves
// only when told and was not (saves_only_when_told), or nothing.
std::optional<std::string> checkpointing_off(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy);

// saves_only_when_told: "mnist.py, which saves only with --save_model (not given)" when
// the command runs a program of policy savesOnlyWith ("PROGRAM=flag") without its flag
// and with no checkpointStorageFlags flag either; nothing otherwise.
std::optional<std::string> saves_only_when_told(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                                const Policy& policy);

// short_run: the flag or env value that limits the run to a few steps (policy
// shortRunFlags, at most shortRunMaxSteps): "--max_steps 50", "max_duration=12ba".
std::optional<std::string> short_run(const CommandFacts& facts, const std::vector<EnvVar>& env, const Policy& policy);

// benchmark_evidence: why the command is a synthetic-data throughput benchmark
// ("benchmark flag --use_fake_data", "benchmark program tf_cnn_benchmarks.py", "short
// run --max_steps 50 (at most 100 steps)"), or nothing. Unlike other diagnostics it outranks training evidence: a
// benchmark runs training steps on purpose and keeps nothing.
std::optional<std::string> benchmark_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                              const Policy& policy);

}  // namespace kubegap
