#include "policies/classifier.h"

#include <algorithm>

namespace kubegap {
namespace {

bool container_requests_accelerator(const Container& container, const Policy& policy) {
  return std::any_of(container.resources.begin(), container.resources.end(),
                     [&](const std::string& resource) {
                       return std::any_of(policy.accelerator_resources.begin(),
                                          policy.accelerator_resources.end(),
                                          [&](const std::string& pattern) {
                                            return wildcard_match(pattern, resource);
                                          });
                     });
}

bool annotated_training(const StringMap& annotations) {
  const auto it = annotations.find(kTrainingJobAnnotation);
  return it != annotations.end() && it->second == "true";
}

}  // namespace

bool requests_accelerator(const PodSpecView& pod, const Policy& policy) {
  auto requests = [&](const Container& c) { return container_requests_accelerator(c, policy); };
  return std::any_of(pod.containers.begin(), pod.containers.end(), requests) ||
         std::any_of(pod.init_containers.begin(), pod.init_containers.end(), requests);
}

bool is_training_pod(const PodSpecView& pod, const WorkloadView& object, const Policy& policy) {
  if (object.training_kind || requests_accelerator(pod, policy)) return true;
  if (annotated_training(pod.annotations) || annotated_training(object.annotations)) return true;
  return std::any_of(policy.framework_labels.begin(), policy.framework_labels.end(),
                     [&](const std::string& key) { return pod.labels.contains(key); });
}

}  // namespace kubegap
