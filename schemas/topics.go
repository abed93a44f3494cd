package schemas

// Topic names. A deployment may prefix them; these are the defaults.
const (
	TopicMessages   = "im.messages"
	TopicSequenced  = "im.sequenced"
	TopicReceipts   = "im.receipts"
	TopicDeadLetter = "im.deadletter"
)

// Header keys set on dead-letter records, next to the original value.
const (
	HeaderDeadReason    = "dead-reason"
	HeaderDeadTopic     = "dead-topic"
	HeaderDeadPartition = "dead-partition"
	HeaderDeadOffset    = "dead-offset"
	// HeaderDeadValueOmitted is set, to the original value's size, on a
	// dead letter whose value the dead-letter topic refused (too large):
	// the original is found by topic, partition and offset.
	HeaderDeadValueOmitted = "dead-value-omitted"
)

// HeaderForwardedFrom is set by fanout, to "<partition>/<offset>", on a
// record of im.messages it read from a partition its conversation does not
// hash to (a producer with another partitioner) and produced again, as it
// was, to the partition it hashes to.
const HeaderForwardedFrom = "forwarded-from"
