#pragma once
// The cluster view from a file (--cluster-state FILE): a YAML or JSON `List`, or a
// multi-document file, of policy/v1 PodDisruptionBudgets and v1 Nodes. Other kinds are
// ignored, so `kubectl get pdb,nodes -A -o yaml` output can be used as is.

#include <memory>
#include <string>
#include <string_view>

#include "policies/cluster_view.h"
#include "webhook/core/object_loader.h"

namespace kubegap {

std::shared_ptr<const ClusterSnapshot> parse_cluster_state(std::string_view text, const std::string& source);
std::shared_ptr<const ClusterSnapshot> load_cluster_state_file(const std::string& path);

}  // namespace kubegap
