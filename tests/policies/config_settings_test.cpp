// The settings of config files (policies/config_settings.h): YAML, TOML/INI and JSON lines
// read as name/value pairs; lines without a value of their own skipped; a bound kept.
#include "policies/config_settings.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace kubegap {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// pairs: the settings `append` reads from `text`, as (name, value); `script` says whether
// each must be marked as read from a script.
template <typename Append>
Pairs pairs(Append append, std::string_view text, std::size_t max, bool script) {
  std::vector<EnvVar> settings;
  append(text, max, settings);
  Pairs out;
  for (const auto& s : settings) {
    EXPECT_EQ(s.script, script) << s.name;
    out.emplace_back(s.name, s.value);
  }
  return out;
}

Pairs read(std::string_view text, std::size_t max = 64) { return pairs(append_config_settings, text, max, false); }
Pairs read_script(std::string_view text, std::size_t max = 64) {
  return pairs(append_script_settings, text, max, true);
}

// A Python script's string constants: statements, annotated ones and keyword arguments,
// the last assignment first (Python keeps it); nothing computed, compared, commented out
// or inside another string.
TEST(ConfigSettings, APythonScriptsStringConstants) {
  EXPECT_EQ(read_script("OUTPUT_DIR = \"/mnt/out\"   # was: output_dir=\"/tmp/old\"\n"
                        "    cfg.train.save_dir = './ckpt'\n"
                        "trainer = Trainer(args=TrainingArguments(output_dir=\"./results\", save_steps=500))\n"
                        "run = RunConfig(storage_path=r\"s3://bucket/runs\", name='x')\n"
                        "CKPT_DIR: str = \"/mnt/ckpt\"\nlog_dir\t=\t\"/tmp/tb\"\nOUTPUT_DIR = \"/mnt/final\"\n"),
            (Pairs{{"OUTPUT_DIR", "/mnt/final"},
                   {"log_dir", "/tmp/tb"},
                   {"CKPT_DIR", "/mnt/ckpt"},
                   {"name", "x"},
                   {"storage_path", "s3://bucket/runs"},
                   {"output_dir", "./results"},
                   {"save_dir", "./ckpt"},
                   {"OUTPUT_DIR", "/mnt/out"}}));
  // Comparisons, augmented assignments, f-strings (and the `=` inside them), format
  // strings, concatenations, escapes, comments, unclosed literals, a docstring's example,
  // a function's defaults and an SDK call's CapWords parameters say nothing.
  EXPECT_EQ(read_script("# output_dir = \"/x\"\nif mode == \"train\": pass\npath += \"/y\"\n"
                        "cmd = f\"train.py --save_dir='{out}'\"\nlog.info(\"output_dir='%s'\", d)\n"
                        "dst = base + \"/z\"\nwin = \"C:\\\\out\"\na = \"open\n1x = \"/n\"\nok = \"\"\n"
                        "\"\"\"Usage:\n  TrainingArguments(output_dir=\"/tmp/demo\")\n\"\"\"\n"
                        "def save(model, save_dir=\"/tmp/ckpt\"):\n"
                        "s3.download_file(Bucket=\"training-data\", Key=\"x.csv\", Filename=\"/tmp/x.csv\")\n"),
            Pairs{});
  EXPECT_EQ(read_script("a = \"1\"\nb = \"2\"\nc = \"3\"\n", 2).size(), 2u);
}

TEST(ConfigSettings, YamlValuesNotMappingsListsOrBlocks) {
  EXPECT_EQ(read("training:\n  output_dir: /workspace/out  # keep\n  lr: 1.5e-4\n  tags: [a, b]\n"
                 "  script: |\n    echo hi\n  save_strategy: \"no\"\n- name: x\nurl: http://a:1\n"),
            (Pairs{{"output_dir", "/workspace/out"},
                   {"lr", "1.5e-4"},
                   {"save_strategy", "no"},
                   {"name", "x"},
                   {"url", "http://a:1"}}));
  // `a:b` is one plain scalar in YAML, not a setting; comments and blank lines say nothing.
  EXPECT_EQ(read("# output_dir: /x\n\nimage:tag\n"), Pairs{});
}

// A null leaves a setting unset: it is not a setting the rules read.
TEST(ConfigSettings, NullsAreUnset) {
  EXPECT_EQ(read("max_epochs: null\nmax_steps: 30000\nexplicit_log_dir: ~\nlimit: None\n\"lr\": null,\n"),
            (Pairs{{"max_steps", "30000"}}));
  EXPECT_EQ(read("name: \"null\"\n"), (Pairs{{"name", "null"}}));  // a quoted string is a value
}

TEST(ConfigSettings, TomlIniAndJson) {
  EXPECT_EQ(read("[checkpoint]\nfolder = \"/ckpt\"\nenable_checkpoint = true\n"),
            (Pairs{{"folder", "/ckpt"}, {"enable_checkpoint", "true"}}));
  EXPECT_EQ(read("{\n  \"output_dir\": \"/out\",\n  \"num_train_epochs\":3,\n  \"model\": {\n  }\n}\n"),
            (Pairs{{"output_dir", "/out"}, {"num_train_epochs", "3"}}));
}

// A launcher that takes a program's arguments as one JSON env value: its members are
// settings named under the var, on one line or a YAML block's several.
TEST(ConfigSettings, JsonObjectsInEnvValues) {
  const auto read_env = [](std::vector<EnvVar> env, std::size_t max = 64) {
    std::vector<EnvVar> settings;
    append_env_json_settings(env, max, settings);
    Pairs out;
    for (const auto& s : settings) out.emplace_back(s.name, s.value);
    return out;
  };
  EXPECT_EQ(read_env({{"ARGS", R"({"output_dir": "/mnt/output", "save_steps": 250, "bf16": true})"}}),
            (Pairs{{"ARGS.output_dir", "/mnt/output"}, {"ARGS.save_steps", "250"}, {"ARGS.bf16", "true"}}));
  EXPECT_EQ(read_env({{"CFG", "{\n  \"lr\": 0.0002,\n  \"output_dir\": \"/o\"\n}\n"}}),
            (Pairs{{"CFG.lr", "0.0002"}, {"CFG.output_dir", "/o"}}));
  // Not an object: a list, a plain value, an unclosed brace.
  EXPECT_EQ(read_env({{"A", "[1, 2]"}, {"B", "/out"}, {"C", "{\"a\": 1"}}), Pairs{});
  EXPECT_EQ(read_env({{"A", R"({"a": 1, "b": 2, "c": 3})"}}, 2).size(), 2U);
}

TEST(ConfigSettings, AtMostTheBoundAndNoUnclosedQuote) {
  EXPECT_EQ(read("a: 1\nb: 2\nc: 3\n", 2).size(), 2U);
  EXPECT_EQ(read("a: \"open\n\"b\n"), Pairs{});
  EXPECT_EQ(read(std::string(100000, ':')), Pairs{});
}

}  // namespace
}  // namespace kubegap
