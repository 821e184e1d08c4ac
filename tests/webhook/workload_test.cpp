// Workload-kind tests: being written.
