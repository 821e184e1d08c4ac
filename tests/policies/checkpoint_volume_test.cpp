// checkpoint-volume: passes when a MAIN container mounts a durable volume (PVC, in-tree
// network volume, inline CSI with a durable driver); names checkpoint-looking paths that
// sit on a non-durable volume.
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

// A pod whose only PVC is mounted by an init container (it restores data, then exits).
PodSpecView init_container_with_pvc() {
  PodSpecView pod = gpu_pod();
  pod.volumes.push_back(pvc("ckpt"));
  pod.init_containers.push_back(
      {.name = "restore", .resources = {"cpu"}, .volume_mounts = {{"ckpt", "/checkpoints"}}});
  return pod;
}

// Two main containers: the trainer has only scratch space, the uploader sidecar mounts the PVC.
PodSpecView sidecar_with_pvc() {
  PodSpecView pod = with_volume(gpu_pod(), empty_dir("scratch"), "/scratch");
  pod.volumes.push_back(pvc("ckpt"));
  pod.containers.push_back({.name = "uploader", .resources = {}, .volume_mounts = {{"ckpt", "/ckpt"}}});
  return pod;
}

PodSpecView config_only_volumes() {
  PodSpecView pod = gpu_pod();
  pod = with_volume(pod, volume("config", "configMap"), "/etc/trainer");
  pod = with_volume(pod, volume("creds", "secret"), "/var/run/secrets/creds");
  pod = with_volume(pod, volume("token", "projected"), "/var/run/secrets/token");
  pod = with_volume(pod, volume("podinfo", "downwardAPI"), "/etc/podinfo");
  return pod;
}

constexpr const char* kGeneric = "no durable volume (PVC, network or durable CSI)";
constexpr const char* kCost = "a restart loses all progress since the last save";

const std::vector<CheckRow> kRows = {
    {"PvcMountedByMainContainerPasses",
     with_volume(gpu_pod(), pvc("ckpt"), "/checkpoints"), Expect::kPasses},
    {"NfsVolumePasses", with_volume(gpu_pod(), volume("shared", "nfs"), "/data"),
     Expect::kPasses},
    {"CephfsVolumePasses", with_volume(gpu_pod(), volume("shared", "cephfs"), "/data"),
     Expect::kPasses},
    {"AzureFileVolumePasses", with_volume(gpu_pod(), volume("share", "azureFile"), "/mnt/share"),
     Expect::kPasses},
    {"DurableCsiGcsFusePasses",
     with_volume(gpu_pod(), csi("bucket", "gcsfuse.csi.storage.gke.io"), "/mnt/bucket"),
     Expect::kPasses},
    {"DurableCsiEfsPasses", with_volume(gpu_pod(), csi("efs", "efs.csi.aws.com"), "/ckpt"),
     Expect::kPasses},
    {"DurableCsiS3MountpointPasses", with_volume(gpu_pod(), csi("s3", "s3.csi.aws.com"), "/data"),
     Expect::kPasses},
    {"NonDurableCsiDriverFires",
     with_volume(gpu_pod(), csi("secrets", "secrets-store.csi.k8s.io"), "/mnt/secrets"),
     Expect::kFires, {kGeneric, kCost}},
    {"NonDurableCsiAtCheckpointPathNamesDriver",
     with_volume(gpu_pod(), csi("scratch", "hostpath.csi.k8s.io"), "/checkpoints"),
     Expect::kFires,
     {"checkpoints at /checkpoints", "container trainer",
      "CSI volume \"scratch\" (driver hostpath.csi.k8s.io)", kCost}},
    {"CsiVolumeWithEmptyDriverFires", with_volume(gpu_pod(), csi("odd", ""), "/data"),
     Expect::kFires, {kGeneric}},
    {"EmptyDirAtCheckpointPathNamesPath",
     with_volume(gpu_pod(), empty_dir("scratch"), "/workspace/checkpoints"), Expect::kFires,
     {"/workspace/checkpoints", "emptyDir \"scratch\"",
      "deleted when the pod leaves its node", kCost},
     {kGeneric}},
    {"HostPathAtCkptPathNamesPathCaseInsensitively",
     with_volume(gpu_pod(), volume("local", "hostPath"), "/mnt/CKPT"), Expect::kFires,
     {"/mnt/CKPT", "hostPath \"local\"", "left behind on one node"}},
    {"GenericEphemeralAtCheckpointPathFires",
     with_volume(gpu_pod(), volume("scratch", "ephemeral"), "/ckpt"), Expect::kFires,
     {"/ckpt", "ephemeral \"scratch\"", "deleted with the pod"}},
    {"EmptyDirAtOrdinaryPathGivesGenericMessage",
     with_volume(gpu_pod(), empty_dir("shm"), "/dev/shm"), Expect::kFires, {kGeneric, kCost},
     {"checkpoints at", "/dev/shm"}},
    {"NoVolumesFires", gpu_pod(), Expect::kFires, {kGeneric, kCost}},
    {"InitContainerPvcDoesNotCount", init_container_with_pvc(), Expect::kFires, {kGeneric}},
    {"DeclaredButUnmountedPvcDoesNotCount",
     [] {
       PodSpecView pod = gpu_pod();
       pod.volumes.push_back(pvc("ckpt"));
       return pod;
     }(),
     Expect::kFires, {kGeneric}},
    {"MountOfUndeclaredVolumeAtCheckpointPathFires",
     with_mount(gpu_pod(), "ckpt", "/checkpoints"), Expect::kFires,
     {"/checkpoints", "an undeclared volume"}},
    {"MountOfUndeclaredVolumeWhilePvcDeclaredUnderOtherNameFires",
     [] {
       PodSpecView pod = with_mount(gpu_pod(), "ckpt", "/data");
       pod.volumes.push_back(pvc("ckpt-claim"));
       return pod;
     }(),
     Expect::kFires, {kGeneric}},
    {"ConfigSecretProjectedDownwardApiAreNotDurable", config_only_volumes(), Expect::kFires,
     {kGeneric}},
    {"SidecarMountingPvcPasses", sidecar_with_pvc(), Expect::kPasses},
    {"DurableMountOutweighsEmptyDirCheckpointPath",
     with_volume(with_volume(gpu_pod(), empty_dir("scratch"), "/ckpt"), pvc("data"), "/data"),
     Expect::kPasses},
    {"UnrecognisedVolumeSourceAtCheckpointPathFires",
     with_volume(gpu_pod(), volume("mystery", ""), "/checkpoint"), Expect::kFires,
     {"/checkpoint", "volume \"mystery\""}},
    {"CpuOnlyTrainingPodIsCheckedToo", with_labels(cpu_pod(), {{"volcano.sh/job-name", "j"}}),
     Expect::kFires, {kGeneric}},
};

class CheckpointVolumeTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(CheckpointVolumeTable, Rule) { verify_row(GetParam(), check_checkpoint_volume); }

INSTANTIATE_TEST_SUITE_P(CheckpointVolume, CheckpointVolumeTable, ::testing::ValuesIn(kRows),
                         row_name);

TEST(CheckpointVolume, ReasonNamesPathAndContainer) {
  const auto gap = run_check(check_checkpoint_volume,
                             with_volume(gpu_pod(), empty_dir("scratch"), "/ckpt"));
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->reason.find("/ckpt"), std::string::npos) << gap->reason;
  EXPECT_NE(gap->reason.find("trainer"), std::string::npos) << gap->reason;
}

TEST(CheckpointVolume, DurableCsiDriversComeFromPolicy) {
  const PodSpecView pod = with_volume(gpu_pod(), csi("lustre", "fsx.csi.aws.com"), "/fsx");
  EXPECT_TRUE(run_check(check_checkpoint_volume, pod)) << "not durable by default";
  Policy policy = default_policy();
  policy.durable_csi_drivers.push_back("fsx.csi.aws.com");
  EXPECT_FALSE(run_check(check_checkpoint_volume, pod, nullptr, "ml", policy));
}

TEST(CheckpointVolume, CheckpointPathHintsComeFromPolicy) {
  const PodSpecView pod = with_volume(gpu_pod(), empty_dir("scratch"), "/snapshots");
  auto gap = run_check(check_checkpoint_volume, pod);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->message.find("/snapshots"), std::string::npos) << gap->message;
  Policy policy = default_policy();
  policy.checkpoint_path_hints.push_back("snapshot");
  gap = run_check(check_checkpoint_volume, pod, nullptr, "ml", policy);
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->message.find("/snapshots"), std::string::npos) << gap->message;
}

}  // namespace
}  // namespace kgtest
