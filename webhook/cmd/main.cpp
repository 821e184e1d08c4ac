// kubegap-webhook: a validating admission webhook, in audit mode, for ML training jobs.
#include "webhook/cmd/cli.h"

int main(int argc, char** argv) {
  return kubegap::run_cli(std::vector<std::string>(argv + 1, argv + argc), argc > 0 ? argv[0] : "kubegap-webhook");
}
