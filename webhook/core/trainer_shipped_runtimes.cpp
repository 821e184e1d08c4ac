#include "webhook/core/trainer_shipped_runtimes.h"

#include <array>
#include <utility>

namespace kubegap {
namespace {

// One replicated job "node", the trainer step, with one container "node": torch, JAX,
// XGBoost (the framework's image; no volumes, no scheduling fields).
#define KUBEGAP_SINGLE_NODE(NAME, IMAGE)                                                                       \
  R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":")" NAME \
  R"("},"spec":{"mlPolicy":{"numNodes":1},"template":{"spec":{"replicatedJobs":[{"name":"node","template":)"   \
  R"({"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":)"    \
  R"({"spec":{"containers":[{"name":"node","image":")" IMAGE R"("}]}}}}}]}}}})"

// MPI with runLauncherAsNode: "launcher" is the trainer step (it runs mpirun); "node" runs
// sshd. DeepSpeed, MLX, and v2.0.0's mpi-distributed.
// LAUNCHER is the launcher container's members after its image: v2.0.0's mpi-distributed
// runs mpi-operator's pi example when the TrainJob gives no command.
#define KUBEGAP_MPI(NAME, IMAGE, LAUNCHER)                                                                     \
  R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":")" NAME \
  R"("},"spec":{"mlPolicy":{"numNodes":1,"mpi":{"runLauncherAsNode":true}},"template":{"spec":)"               \
  R"({"replicatedJobs":[{"name":"launcher","template":{"metadata":{"labels":)"                                 \
  R"({"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":{"spec":{"containers":)"    \
  R"([{"name":"node","image":")" IMAGE R"(")" LAUNCHER                                                         \
  R"(}]}}}}},{"name":"node","template":{"spec":{"template":{"spec":)"                                          \
  R"({"containers":[{"name":"node","image":")" IMAGE R"(","command":["/usr/sbin/sshd","-De"]}]}}}}}]}}}})"

// torchtune: a claim template "initializer" (mounted at /workspace by the initializers and
// the trainer, which asks for 2 GPUs): the model and dataset are there, and torchtune's
// output_dir is under it.
#define KUBEGAP_TORCHTUNE(NAME)                                                                                 \
  R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime","metadata":{"name":")" NAME  \
  R"("},"spec":{"mlPolicy":{"numNodes":1,"torch":{}},"template":{"spec":{"volumeClaimPolicies":[{"templates":)" \
  R"([{"metadata":{"name":"initializer"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":)"     \
  R"({"storage":"20Gi"}}}}]}],"replicatedJobs":[)"                                                              \
  R"({"name":"dataset-initializer","template":{"spec":{"template":{"spec":{"containers":[{"name":)"             \
  R"("dataset-initializer","volumeMounts":[{"name":"initializer","mountPath":"/workspace"}]}]}}}}},)"           \
  R"({"name":"model-initializer","template":{"spec":{"template":{"spec":{"containers":[{"name":)"               \
  R"("model-initializer","volumeMounts":[{"name":"initializer","mountPath":"/workspace"}]}]}}}}},)"             \
  R"({"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":)"          \
  R"("trainer"}},"spec":{"template":{"spec":{"containers":[{"name":"node","resources":{"limits":)"              \
  R"({"nvidia.com/gpu":"2"}},"volumeMounts":[{"name":"initializer","mountPath":"/workspace"}]}]}}}}}]}}}})"

constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kShipped = {{
    {"torch-distributed", KUBEGAP_SINGLE_NODE("torch-distributed", "pytorch/pytorch")},
    {"torch-distributed-with-cache", KUBEGAP_SINGLE_NODE("torch-distributed-with-cache", "pytorch/pytorch")},
    {"jax-distributed", KUBEGAP_SINGLE_NODE("jax-distributed", "jax")},
    {"xgboost-distributed", KUBEGAP_SINGLE_NODE("xgboost-distributed", "xgboost")},
    {"deepspeed-distributed", KUBEGAP_MPI("deepspeed-distributed", "deepspeed-runtime", "")},
    {"mlx-distributed", KUBEGAP_MPI("mlx-distributed", "mlx-runtime", "")},
    {"mpi-distributed", KUBEGAP_MPI("mpi-distributed", "mpi-pi",
                                    R"(,"command":["mpirun","--hostfile","/etc/mpi/hostfile","/home/mpiuser/pi"])")},
    {"torchtune-llama3.2-1b", KUBEGAP_TORCHTUNE("torchtune-llama3.2-1b")},
    {"torchtune-llama3.2-3b", KUBEGAP_TORCHTUNE("torchtune-llama3.2-3b")},
    {"torchtune-qwen2.5-1.5b", KUBEGAP_TORCHTUNE("torchtune-qwen2.5-1.5b")},
}};

#undef KUBEGAP_SINGLE_NODE
#undef KUBEGAP_MPI
#undef KUBEGAP_TORCHTUNE

}  // namespace

const std::string_view* shipped_trainer_runtime(std::string_view name) {
  for (const auto& [shipped, json] : kShipped) {
    if (shipped == name) return &json;
  }
  return nullptr;
}

}  // namespace kubegap
