// The workload table: the kinds people apply for training and serving, where each keeps
// its pod templates, and what its controller adds. Data (policy.h: default_workload_kinds).
#include <string>
#include <utility>
#include <vector>

#include "policies/policy.h"

namespace kubegap {

// The workload table: data, however long (tests/layout/check_sizes.py exempts a function
// marked as a data table).
std::vector<WorkloadKind> default_workload_kinds() {
  using Labels = std::vector<std::pair<std::string, std::string>>;
  using Paths = std::vector<std::string>;
  constexpr auto kTraining = WorkloadClass::kTraining;
  constexpr auto kServing = WorkloadClass::kServing;
  constexpr auto kAuto = WorkloadClass::kAuto;
  const std::vector<std::string> create_update = {"CREATE", "UPDATE"};
  // Kubeflow training-operator kinds: one map of replica specs each, the same labels
  // (training-operator pkg/controller.v1/common: job-name, replica-type in lower case).
  // `restart_default`: the replica restartPolicy its SetDefaults_<Kind> sets (training-
  // operator v1.9.0); the controller restarts a replica whose policy is in `restarting`
  // and fails the whole job when a replica with any other policy fails.
  const std::vector<std::string> restarts_all = {"OnFailure", "Always", "ExitCode"};
  const auto kubeflow = [&](std::string kind, std::string specs, std::string restart_default = "",
                            std::vector<std::string> restarting = {}) {
    WorkloadKind row{
        "kubeflow.org",
        std::move(kind),
        kTraining,
        create_update,
        {{"spec." + std::move(specs) + ".*.template", "replica {}", {}}},
        Paths{},
        Paths{},
        Labels{{"training.kubeflow.org/job-name", "{name}"}, {"training.kubeflow.org/replica-type", "{lower}"}}};
    if (!restart_default.empty()) {
      row.restart = {"replicas", "spec.runPolicy.backoffLimit", std::nullopt,         "",
                     "",         std::move(restart_default),    std::move(restarting)};
    }
    return row;
  };
  // A batch/v1 Job spec at `prefix`: backoffLimit (default 6; unlimited per index when
  // backoffLimitPerIndex is set) and podFailurePolicy (k8s.io/api batch/v1 v0.36.3).
  const auto job_restart = [](const std::string& prefix) {
    return RestartRow{"job", prefix + "backoffLimit", 6, prefix + "backoffLimitPerIndex",
                      prefix + "podFailurePolicy.rules"};
  };
  const auto with_restart = [](WorkloadKind row, RestartRow restart) {
    row.restart = std::move(restart);
    return row;
  };
  // Other operators that reuse the Kubeflow replica-map shape under their own group (the
  // pod labels they add are not known here, so none are listed).
  const auto replica_map = [&](std::string group, std::string kind, std::string specs) {
    return WorkloadKind{std::move(group),
                        std::move(kind),
                        kTraining,
                        create_update,
                        {{"spec." + std::move(specs) + ".*.template", "replica {}", {}}}};
  };
  // Serving controllers: a part that visibly trains (a launcher, a training script) is
  // training, whatever its kind; DaemonSets are node agents and stay as they are.
  const auto apps = [&](std::string kind, WorkloadClass c, Paths claims = {}, std::vector<std::string> skip = {}) {
    WorkloadKind row{
        "apps",   std::move(kind), c, create_update, {{"spec.template", "", {}}}, std::move(claims), Paths{},
        Labels{}, std::move(skip)};
    row.evidence_promotes = row.skip_checks.empty();
    return row;
  };
  const auto ray_groups = [](const std::string& prefix) {
    return std::vector<PodTemplateLocation>{{prefix + "headGroupSpec.template", "head", {{"ray.io/node-type", "head"}}},
                                            {prefix + "workerGroupSpecs[groupName].template",
                                             "workerGroup {}",
                                             {{"ray.io/node-type", "worker"}, {"ray.io/group", "{}"}}}};
  };
  const auto trainjob = [](WorkloadKind row) {
    row.resolve = "trainerRuntime";
    return row;
  };
  // A coordinator part: it runs the job (mpirun) rather than writing checkpoints.
  const auto coordinated = [](WorkloadKind row, std::string part, std::string writer_when = "") {
    row.roles.push_back({std::move(part), std::move(writer_when)});
    return row;
  };
  const auto tuners = [&](WorkloadKind row) {
    for (const char* part : {"TunerTracker", "TunerServer", "Tuner"}) row = coordinated(std::move(row), part);
    return row;
  };
  // Trainer's runtimes: the MPI runtimes' "launcher" job runs mpirun (a coordinator), and
  // the "dataset-initializer" and "model-initializer" jobs download into the volume the
  // trainer reads before it starts (helpers; trainer pkg/constants): none saves checkpoints.
  const auto trainer_roles = [&](WorkloadKind row) {
    row = coordinated(std::move(row), "launcher");
    for (const char* part : {"dataset-initializer", "model-initializer"}) row.roles.push_back({part, "", false, true});
    return row;
  };
  const auto written_by = [](WorkloadKind row, std::string part) {  // role: writer
    row.roles.push_back({std::move(part), "", true});
    return row;
  };
  // wrapper: a kind that holds whole objects of other kinds at `path`, each judged by its
  // own row (Katib trials, AppWrapper components, KubeDL Cron workloads).
  const auto wrapper = [&](std::string group, std::string kind, std::string path, std::string part,
                           bool without_accelerator = false) {
    WorkloadKind row{std::move(group), std::move(kind), kAuto, create_update, {}};
    row.wraps = {{std::move(path), std::move(part), {}, without_accelerator}};
    return row;
  };
  const auto katib = [](WorkloadKind row) {
    const std::string at = "spec.trialTemplate.";
    row.wraps.push_back({at + "configMap", "trial", {}, true, "yaml", true});
    row.wraps.push_back({at + "goTemplate.rawTemplate", "trial", {}, true, "goTemplate"});
    row.wraps.push_back({at + "goTemplate.templateSpec", "trial", {}, true, "goTemplate", true});
    return row;
  };
  // entrypoint: where a KubeRay job keeps the command it runs (evidence for every part).
  const auto ray = [&](std::string kind, WorkloadClass c, const std::string& prefix, Labels labels,
                       Paths entrypoints = {}) {
    WorkloadKind row{"ray.io",           std::move(kind), c,       create_update,
                     ray_groups(prefix), Paths{},         Paths{}, std::move(labels)};
    row.entrypoints = std::move(entrypoints);
    return row;
  };
  // A JobSet spec at `prefix`: its replicated jobs' pod templates and its shared PVCs
  // (volumeClaimPolicies, mounted by volumeMount name: jobset pkg/controllers, addVolumes).
  // Its failurePolicy.maxRestarts is 0 when unset, and a JobSet without failurePolicy
  // fails on its first failed child Job (jobset v0.12.0, executeFailurePolicy).
  const auto jobset = [&](std::string group, std::string kind, const std::string& prefix, Labels labels) {
    WorkloadKind row{std::move(group),
                     std::move(kind),
                     kTraining,
                     create_update,
                     {{prefix + "replicatedJobs[name].template.spec.template",
                       "replicatedJob {}",
                       {{"jobset.sigs.k8s.io/replicatedjob-name", "{}"}}}},
                     Paths{prefix + "volumeClaimPolicies[].templates[]"},
                     Paths{},
                     std::move(labels)};
    row.restart = {"jobset", prefix + "failurePolicy.maxRestarts", 0, "", prefix + "failurePolicy.rules"};
    return row;
  };
  // A Volcano JobSpec at `prefix`: tasks, and job-level volumes that the controller
  // mounts in every container of every task (pkg/controllers/job, createJobPod).
  const auto volcano = [&](std::string group, std::string kind, const std::string& prefix, Labels labels) {
    // Volcano's MPI example names the task that runs mpirun "mpimaster".
    WorkloadKind row{std::move(group),
                     std::move(kind),
                     kTraining,
                     create_update,
                     {{prefix + "tasks[name].template", "task {}", {{"volcano.sh/task-spec", "{}"}}}},
                     Paths{},
                     Paths{prefix + "volumes[]"},
                     std::move(labels)};
    row.roles = {{"mpimaster", ""}};
    // maxRetry defaults to 3, and Volcano's mutating webhook turns 0 into 3 (volcano
    // v1.15.1, patchDefaultMaxRetry); policies map pod events to actions.
    row.restart = {"volcano", prefix + "maxRetry", 3, "", prefix + "policies"};
    return row;
  };
  return {
      {"", "Pod", kAuto, {"CREATE"}, {{"", "", {}}}},
      with_restart({"batch",
                    "Job",
                    kAuto,
                    create_update,
                    {{"spec.template", "", {}}},
                    Paths{},
                    Paths{},
                    {{"batch.kubernetes.io/job-name", "{name}"}, {"job-name", "{name}"}}},
                   job_restart("spec.")),
      // A CronJob's Jobs get generated names, so their job-name labels are unknown here.
      with_restart({"batch", "CronJob", kAuto, create_update, {{"spec.jobTemplate.spec.template", "", {}}}},
                   job_restart("spec.jobTemplate.spec.")),
      apps("Deployment", kServing),
      apps("StatefulSet", kServing, {"spec.volumeClaimTemplates[]"}),
      apps("ReplicaSet", kServing),
      // The DaemonSet controller gives its pods untimed not-ready/unreachable tolerations
      // (pkg/controller/daemon/util, AddOrUpdateDaemonPodTolerations) and pins each pod to
      // its node with a metadata.name field affinity; kubectl drain skips its pods. None of
      // that is the user's gap.
      apps("DaemonSet", kServing, {}, {"gpu-health-tolerations", "zone-spread", "disruption-budget"}),
      jobset("jobset.x-k8s.io", "JobSet", "spec.", {{"jobset.sigs.k8s.io/jobset-name", "{name}"}}),
      // Kubeflow Trainer v2 runtimes: spec.template is a JobSet template the TrainJobs that
      // reference the runtime are built from (trainer pkg/apis/trainer/v1alpha1).
      trainer_roles(jobset("trainer.kubeflow.org", "TrainingRuntime", "spec.template.spec.", {})),
      trainer_roles(jobset("trainer.kubeflow.org", "ClusterTrainingRuntime", "spec.template.spec.", {})),
      // A TrainJob is judged as the JobSet its runtime and its own fields make (the JobSet
      // is named after the TrainJob): webhook/core/trainjob_resolver.h.
      trainjob(trainer_roles(
          jobset("trainer.kubeflow.org", "TrainJob", "spec.", {{"jobset.sigs.k8s.io/jobset-name", "{name}"}}))),
      // Katib (kubeflow/katib apis/controller/experiments/v1beta1): the trial template is
      // a whole Job, PyTorchJob, MPIJob, ... with ${trialParameters.x} placeholders, or an
      // entry of a ConfigMap (trialTemplate.configMap); in v1alpha3 it is Go template text,
      // itself (goTemplate.rawTemplate) or in a ConfigMap (goTemplate.templateSpec).
      katib(wrapper("kubeflow.org", "Experiment", "spec.trialTemplate.trialSpec", "trial", true)),
      // AppWrapper (project-codeflare/appwrapper api/v1beta2): components hold objects.
      wrapper("workload.codeflare.dev", "AppWrapper", "spec.components[].template", "component {}"),
      // KubeDL Cron (kubedl-io/kubedl apis/apps/v1alpha1, CronTemplateSpec): a training job
      // run on a schedule; its kind is inline in spec.template, the object in `workload`.
      wrapper("apps.kubedl.io", "Cron", "spec.template", "workload"),
      kubeflow("PyTorchJob", "pytorchReplicaSpecs", "OnFailure", restarts_all),
      // TFJob: parameter servers hold variables, evaluators read checkpoints, the Chief
      // (Master) writes them (TensorFlow saves on the chief).
      written_by(written_by(coordinated(coordinated(kubeflow("TFJob", "tfReplicaSpecs", "Never", restarts_all), "PS"),
                                        "Evaluator"),
                            "Chief"),
                 "Master"),
      // XGBoostJob's UpdateJobStatus restarts only ExitCode replicas; any other failure fails it.
      kubeflow("XGBoostJob", "xgbReplicaSpecs", "Never", {"ExitCode"}),
      kubeflow("PaddleJob", "paddleReplicaSpecs", "OnFailure", restarts_all),
      kubeflow("JAXJob", "jaxReplicaSpecs", "Never", restarts_all),
      // MXJob: removed from training-operator in v1.9.0, still installed on some clusters.
      // MXNet's distributed KVStore: the Scheduler coordinates and the Servers hold the
      // parameters in memory; the Workers run the script that saves (MXNet docs,
      // "Distributed Training in MXNet"). In `jobMode: MXTune` the TunerTracker, TunerServer
      // and Tuner replicas run autotvm kernel tuning and train no model
      // (kubeflow/mxnet-operator pkg/apis/mxnet/v1/types.go).
      tuners(coordinated(coordinated(kubeflow("MXJob", "mxReplicaSpecs"), "Scheduler"), "Server")),
      // KubeDL (training.kubedl.io): Kubeflow's shape under its own group.
      coordinated(replica_map("training.kubedl.io", "TFJob", "tfReplicaSpecs"), "PS"),
      replica_map("training.kubedl.io", "PyTorchJob", "pytorchReplicaSpecs"),
      replica_map("training.kubedl.io", "XGBoostJob", "xgbReplicaSpecs"),
      replica_map("training.kubedl.io", "XDLJob", "xdlReplicaSpecs"),
      replica_map("training.kubedl.io", "MarsJob", "marsReplicaSpecs"),
      // ElasticDL's master dispatches data shards to the workers, which train.
      coordinated(replica_map("training.kubedl.io", "ElasticDLJob", "elasticdlReplicaSpecs"), "Master"),
      coordinated(replica_map("training.kubedl.io", "MPIJob", "mpiReplicaSpecs"), "Launcher"),
      // Elastic PyTorch: TorchElastic's controller (deprecated) and DLRover.
      replica_map("elastic.pytorch.org", "ElasticJob", "replicaSpecs"),
      // DLRover's job master schedules and monitors the job; its parameter servers hold
      // variables: neither writes checkpoints (dlrover go/elasticjob api/v1alpha1).
      coordinated(coordinated(replica_map("elastic.iml.github.io", "ElasticJob", "replicaSpecs"), "dlrover-master"),
                  "ps"),
      // mpi-operator v2beta1 labels its pods with the job name and the role.
      // The Launcher runs mpirun and the Workers train, unless the Launcher is a worker too.
      // The launcher is a batch/v1 Job whose backoffLimit is runPolicy.backoffLimit (unset:
      // the Job default, 6) and which has no podFailurePolicy (mpi-operator v0.8.0).
      with_restart(
          coordinated({"kubeflow.org",
                       "MPIJob",
                       kTraining,
                       create_update,
                       {{"spec.mpiReplicaSpecs.*.template", "replica {}", {}},
                        // v1alpha1 (2018-2019): one spec.template for launcher and workers,
                        // its pods labelled mpi_job_name (kubeflow/kubeflow mpi-job prototypes).
                        {"spec.template", "template", {{"mpi_job_name", "{name}"}}}},
                       Paths{},
                       Paths{},
                       {{"training.kubeflow.org/job-name", "{name}"}, {"training.kubeflow.org/job-role", "{lower}"}}},
                      "Launcher", "spec.runLauncherAsWorker"),
          {"job", "spec.runPolicy.backoffLimit", 6}),
      // SageMaker HyperPod: an array of named replica specs (sagemaker-hyperpod-cli,
      // hyperpod_pytorch_job_unified_config.py).
      {"sagemaker.amazonaws.com",
       "HyperPodPyTorchJob",
       kTraining,
       create_update,
       {{"spec.replicaSpecs[name].template", "replica {}", {}}}},
      // A RayJob's cluster gets a generated name, so only the node labels are known.
      // RayJobs run whatever their entrypoint says (batch inference as often as training):
      // auto, decided by the entrypoint and the pods' commands.
      // A RayJob retries with a new RayCluster up to spec.backoffLimit times (default 0;
      // kuberay v1.7.0): a budget with no rule to spare disruptions.
      with_restart(ray("RayJob", kAuto, "spec.rayClusterSpec.", {}, {"spec.entrypoint"}),
                   {"job", "spec.backoffLimit", 0}),
      with_restart(ray("RayCronJob", kAuto, "spec.jobTemplate.rayClusterSpec.", {}, {"spec.jobTemplate.entrypoint"}),
                   {"job", "spec.jobTemplate.backoffLimit", 0}),
      // A RayCluster runs no workload of its own (jobs are submitted to it later): like a
      // bare Pod, it needs evidence in its commands to be judged as training.
      // Its head's command (a driver script) is evidence for the worker groups.
      coordinated(ray("RayCluster", kAuto, "spec.", {{"ray.io/cluster", "{name}"}}), "head"),
      // RayService: Ray Serve applications, i.e. model serving.
      ray("RayService", kServing, "spec.rayClusterConfig.", {}),
      volcano("batch.volcano.sh", "Job", "spec.", {{"volcano.sh/job-name", "{name}"}}),
      volcano("batch.volcano.sh", "CronJob", "spec.jobTemplate.spec.", {}),
      volcano("flow.volcano.sh", "JobTemplate", "spec.", {}),
      // LeaderWorkerSet: in practice multi-host inference (vLLM, SGLang), so serving.
      {"leaderworkerset.x-k8s.io",
       "LeaderWorkerSet",
       kServing,
       create_update,
       {{"spec.leaderWorkerTemplate.leaderTemplate", "leader", {}},
        {"spec.leaderWorkerTemplate.workerTemplate", "worker", {}}},
       Paths{"spec.leaderWorkerTemplate.volumeClaimTemplates[]"},
       Paths{},
       {{"leaderworkerset.sigs.k8s.io/name", "{name}"}},
       {},
       {},
       {},
       {},
       true},
  };
}

}  // namespace kubegap
