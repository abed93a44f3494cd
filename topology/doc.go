// Package topology declares the pipeline's Kafka stages once, as data:
// each stage's consumer group, the topics it reads and writes, and the
// client settings it polls with. The binary (cmd/offlinebox), the fault
// suite (bench/chaos) and the benchmarks (bench/internal/harness) all run
// their stages from these declarations, so a setting changed here changes
// everywhere a stage runs.
//
// A Stage says nothing of the handler: the caller builds the worker and
// hands it to a stream.Runner configured by Stage.RunnerConfig, adding
// what is its own (logger, metrics, session timeout, retry bounds).
package topology
