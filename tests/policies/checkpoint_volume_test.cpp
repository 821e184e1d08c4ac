// checkpoint-volume (DESIGN.md): judged on the WRITABLE mounts of the containers that
// train (those requesting an accelerator; every main container when none does). A
// checkpoint-looking path decides by itself; otherwise some writable durable volume (PVC,
// in-tree network volume, inline CSI with a durable driver) must be mounted. An
// undeclared volume is "not evaluated", never "not durable". Serving pods are judged on
// checkpoint-looking paths only.
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

// A pod whose only PVC is mounted by an init container (it restores data, then exits).
PodSpecView init_container_with_pvc() {
  PodSpecView pod = gpu_pod();
  pod.volumes.push_back(pvc("ckpt"));
  pod.init_containers.push_back({.name = "restore", .resources = {"cpu"}, .volume_mounts = {{"ckpt", "/checkpoints"}}});
  return pod;
}

// Two main containers: the GPU trainer has only scratch space, the uploader sidecar mounts
// the PVC. The sidecar's volume says nothing about where the trainer saves.
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

constexpr const char* kGeneric = "no writable durable volume is mounted";
constexpr const char* kCost = "lost when it is replaced";
constexpr const char* kPathCost = "with none of them";

// The commonest real training shape: the dataset on a PVC mounted read-only, checkpoints
// on emptyDir at an ordinary-looking path.
PodSpecView readonly_dataset(bool read_only_mount, bool read_only_claim) {
  PodSpecView pod = gpu_pod();
  Volume data = pvc("dataset");
  data.read_only = read_only_claim;
  pod.volumes.push_back(data);
  pod.containers.front().volume_mounts.push_back({"dataset", "/data", read_only_mount});
  return with_volume(pod, empty_dir("out"), "/output");
}

// A CPU pod (labelled as training) whose two containers are both judged: none requests
// an accelerator, so every main container may be the trainer.
PodSpecView cpu_pair_with_pvc() {
  PodSpecView pod = with_labels(cpu_pod(), {{"volcano.sh/job-name", "j"}});
  pod.volumes.push_back(pvc("ckpt"));
  pod.containers.push_back({.name = "saver", .resources = {}, .volume_mounts = {{"ckpt", "/work"}}});
  return pod;
}

// A model server whose init container copies a checkpoint into emptyDir before it starts.
PodSpecView staged_model_server() {
  PodSpecView pod = with_volume(gpu_pod(), empty_dir("ckpt"), "/mnt/checkpoints");
  pod.init_containers.push_back(
      {.name = "copy-checkpoint", .resources = {}, .volume_mounts = {{"ckpt", "/mnt/checkpoints"}}});
  return pod;
}

const std::vector<CheckRow> kRows = {
    {"PvcMountedByMainContainerPasses", with_volume(gpu_pod(), pvc("ckpt"), "/checkpoints"), Expect::kPasses},
    {"NfsVolumePasses", with_volume(gpu_pod(), volume("shared", "nfs"), "/mnt/shared"), Expect::kPasses},
    {"CephfsVolumePasses", with_volume(gpu_pod(), volume("shared", "cephfs"), "/mnt/shared"), Expect::kPasses},
    {"AzureFileVolumePasses", with_volume(gpu_pod(), volume("share", "azureFile"), "/mnt/share"), Expect::kPasses},
    {"DurableCsiGcsFusePasses", with_volume(gpu_pod(), csi("bucket", "gcsfuse.csi.storage.gke.io"), "/mnt/bucket"),
     Expect::kPasses},
    {"DurableCsiEfsPasses", with_volume(gpu_pod(), csi("efs", "efs.csi.aws.com"), "/ckpt"), Expect::kPasses},
    {"DurableCsiS3MountpointPasses", with_volume(gpu_pod(), csi("s3", "s3.csi.aws.com"), "/mnt/s3"), Expect::kPasses},
    {"NonDurableCsiDriverFires",
     with_volume(gpu_pod(), csi("secrets", "secrets-store.csi.k8s.io"), "/mnt/secrets"),
     Expect::kFires,
     {kGeneric, kCost}},
    {"NonDurableCsiAtCheckpointPathNamesDriver",
     with_volume(gpu_pod(), csi("scratch", "hostpath.csi.k8s.io"), "/checkpoints"),
     Expect::kFires,
     {"checkpoints at /checkpoints", "container trainer", "CSI volume \"scratch\" (driver hostpath.csi.k8s.io)",
      kPathCost}},
    {"CsiVolumeWithEmptyDriverFires", with_volume(gpu_pod(), csi("odd", ""), "/data"), Expect::kFires, {kGeneric}},
    // A FlexVolume driver is judged by the same list (fstab/cifs mounts a CIFS share).
    {"DurableFlexVolumeDriverPasses", with_volume(gpu_pod(), volume("nas", "flexVolume", "fstab/cifs"), "/mnt/nas"),
     Expect::kPasses},
    {"OtherFlexVolumeDriverFires",
     with_volume(gpu_pod(), volume("lvm", "flexVolume", "kubernetes.io/lvm"), "/data"),
     Expect::kFires,
     {kGeneric}},
    {"EmptyDirAtCheckpointPathNamesPath",
     with_volume(gpu_pod(), empty_dir("scratch"), "/workspace/checkpoints"),
     Expect::kFires,
     {"/workspace/checkpoints", "emptyDir \"scratch\"", "a replacement pod starts with none of them",
      "fix: mount a PersistentVolumeClaim (or durable CSI volume) at /workspace/checkpoints"},
     {kGeneric}},
    {"HostPathAtCkptPathNamesPathCaseInsensitively",
     with_volume(gpu_pod(), volume("local", "hostPath"), "/mnt/CKPT"),
     Expect::kFires,
     {"/mnt/CKPT", "hostPath \"local\"", "a pod rescheduled to another node starts with none"}},
    {"GenericEphemeralAtCheckpointPathFires",
     with_volume(gpu_pod(), volume("scratch", "ephemeral"), "/ckpt"),
     Expect::kFires,
     {"/ckpt", "ephemeral \"scratch\"", "a replacement pod starts with none of them"}},
    {"EmptyDirAtOrdinaryPathGivesGenericMessage",
     with_volume(gpu_pod(), empty_dir("shm"), "/dev/shm"),
     Expect::kFires,
     {kGeneric, kCost},
     {"checkpoints at", "/dev/shm"}},
    {"NoVolumesFires", gpu_pod(), Expect::kFires, {kGeneric, kCost}},
    {"InitContainerPvcDoesNotCount", init_container_with_pvc(), Expect::kFires, {kGeneric}},
    {"DeclaredButUnmountedPvcDoesNotCount",
     [] {
       PodSpecView pod = gpu_pod();
       pod.volumes.push_back(pvc("ckpt"));
       return pod;
     }(),
     Expect::kFires,
     {kGeneric}},
    // A volume the pod does not declare may be added by a controller we do not know:
    // "not evaluated", never a claim that it is not durable.
    {"MountOfUndeclaredVolumeAtCheckpointPathIsNotEvaluated",
     with_mount(gpu_pod(), "ckpt", "/checkpoints"),
     Expect::kNotEvaluated,
     {"volume \"ckpt\" mounted at /checkpoints", "is not declared"},
     {"not durable"}},
    {"MountOfUndeclaredVolumeWhilePvcDeclaredUnderOtherNameIsNotEvaluated",
     [] {
       PodSpecView pod = with_mount(gpu_pod(), "ckpt", "/data");
       pod.volumes.push_back(pvc("ckpt-claim"));
       return pod;
     }(),
     Expect::kNotEvaluated,
     {"volume \"ckpt\"", "is not declared"}},
    {"NonDurableCheckpointPathOutranksAnUndeclaredOne",
     with_volume(with_mount(gpu_pod(), "other", "/ckpt-b"), empty_dir("scratch"), "/ckpt-a"),
     Expect::kFires,
     {"/ckpt-a", "emptyDir \"scratch\""}},
    {"ConfigSecretProjectedDownwardApiAreNotDurable", config_only_volumes(), Expect::kFires, {kGeneric}},
    {"SidecarPvcDoesNotCoverTheTrainer", sidecar_with_pvc(), Expect::kFires, {kGeneric}},
    {"CpuPodAnyMainContainerMayHoldTheCheckpoints", cpu_pair_with_pvc(), Expect::kPasses},
    // The checkpoint-looking path decides, whatever else is mounted.
    {"CheckpointPathOnEmptyDirFiresDespiteADataPvc",
     with_volume(with_volume(gpu_pod(), empty_dir("scratch"), "/ckpt"), pvc("data"), "/data"),
     Expect::kFires,
     {"checkpoints at /ckpt", "emptyDir \"scratch\""}},
    {"DurableCheckpointPathPassesDespiteEmptyDirElsewhere",
     with_volume(with_volume(gpu_pod(), empty_dir("scratch"), "/tmp"), pvc("ckpt"), "/ckpt"), Expect::kPasses},
    {"ReadOnlyDatasetMountDoesNotCount", readonly_dataset(true, false), Expect::kFires, {kGeneric}},
    {"ReadOnlyDatasetClaimDoesNotCount", readonly_dataset(false, true), Expect::kFires, {kGeneric}},
    // Writable, but named for input and used by nothing that writes (policy inputVolumes):
    // the job saves somewhere else in the pod.
    {"WritableDatasetPvcIsSetAsideAsInput",
     readonly_dataset(false, false),
     Expect::kFires,
     {"the only writable durable volume, persistentVolumeClaim \"dataset\" at /data, holds what the job reads (by "
      "its name): checkpoints saved elsewhere in the pod are lost when the pod is replaced",
      "named for input, and nothing in the pod writes there",
      "fix: mount a PersistentVolumeClaim where the job saves checkpoints, or have it save under /data or to object "
      "storage"},
     {kGeneric, "and use"}},
    {"TwoInputVolumesAreBothNamed",
     [] {
       PodSpecView pod = with_volume(readonly_dataset(false, false), pvc("hf-cache"), "/cache");
       pod.containers.front().env = {{"HF_HOME", "/cache/hf"}};
       return pod;
     }(),
     Expect::kFires,
     {"the writable durable volumes (persistentVolumeClaim \"dataset\" at /data; persistentVolumeClaim \"hf-cache\" "
      "at /cache) hold what the job reads (by their names and use)"}},
    {"WritableDatasetPvcTheCommandWritesToPasses",
     [] {
       PodSpecView pod = readonly_dataset(false, false);
       pod.containers.front().args = {"--dir", "/data/runs"};
       return pod;
     }(),
     Expect::kPasses},
    {"DatasetPvcBesideAnotherDurableVolumePasses",
     with_volume(readonly_dataset(false, false), pvc("team"), "/mnt/team"), Expect::kPasses},
    {"ReadOnlyMountAtCheckpointPathIsNotWhereCheckpointsGo",
     [] {
       PodSpecView pod = gpu_pod();
       pod.volumes.push_back(empty_dir("base"));
       pod.containers.front().volume_mounts.push_back({"base", "/pretrained-checkpoint", true});
       return with_volume(pod, pvc("out"), "/output");
     }(),
     Expect::kPasses},
    // Serving: only checkpoint-looking paths are judged.
    {"ServingWithoutCheckpointPathPasses",
     with_volume(gpu_pod(), empty_dir("cache"), "/root/.cache"),
     Expect::kPasses,
     {},
     {},
     nullptr,
     "ml",
     WorkloadClass::kServing},
    {"ServingWritingCheckpointsToEmptyDirFires",
     with_volume(gpu_pod(), empty_dir("ckpt"), "/checkpoints"),
     Expect::kFires,
     {"checkpoints at /checkpoints"},
     {},
     nullptr,
     "ml",
     WorkloadClass::kServing},
    {"ServingReadingACheckpointStagedByAnInitContainerPasses",
     staged_model_server(),
     Expect::kPasses,
     {},
     {},
     nullptr,
     "ml",
     WorkloadClass::kServing},
    {"TrainingWithACheckpointStagedByAnInitContainerStillFires",
     staged_model_server(),
     Expect::kFires,
     {"checkpoints at /mnt/checkpoints"}},
    {"UnrecognisedVolumeSourceAtCheckpointPathFires",
     with_volume(gpu_pod(), volume("mystery", ""), "/checkpoint"),
     Expect::kFires,
     {"/checkpoint", "volume \"mystery\""}},
    {"CpuOnlyTrainingPodIsCheckedToo",
     with_labels(cpu_pod(), {{"volcano.sh/job-name", "j"}}),
     Expect::kFires,
     {kGeneric}},
};

class CheckpointVolumeTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(CheckpointVolumeTable, Rule) { verify_row(GetParam(), check_checkpoint_volume); }

INSTANTIATE_TEST_SUITE_P(CheckpointVolume, CheckpointVolumeTable, ::testing::ValuesIn(kRows), row_name);

TEST(CheckpointVolume, ReasonNamesPathAndContainer) {
  const auto gap = run_check(check_checkpoint_volume, with_volume(gpu_pod(), empty_dir("scratch"), "/ckpt"));
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->reason.find("/ckpt"), std::string::npos) << gap->reason;
  EXPECT_NE(gap->reason.find("trainer"), std::string::npos) << gap->reason;
}

// Rook's FlexVolume driver mounts CephFS or RBD: durable by default, as the CIFS drivers are.
TEST(CheckpointVolume, RooksFlexVolumeIsDurable) {
  Volume ceph = volume("datasets", "flexVolume", "ceph.rook.io/rook");
  EXPECT_FALSE(run_check(check_checkpoint_volume, with_volume(gpu_pod(), ceph, "/checkpoints")));
  ceph.driver = "example.com/scratch";
  EXPECT_TRUE(run_check(check_checkpoint_volume, with_volume(gpu_pod(), ceph, "/checkpoints")));
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
