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
	// HeaderDeadSeq is set by fanout on every dead letter of im.messages:
	// the seq the record was given, "0" when it got none. A record with a
	// seq reached its conversation: its letter is an operator's to replay,
	// never a refusal its sender is told of.
	HeaderDeadSeq = "dead-seq"
	// HeaderDeadCode is set by fanout on the dead letter of a record it
	// refused (no seq): the public code its sender is told
	// (RefusalCodes), the details staying in HeaderDeadReason.
	HeaderDeadCode = "dead-code"
	// HeaderDeadBodyDigest is set by fanout, where bodies are sealed at
	// rest, on a dead letter of im.messages whose copy leaves the body
	// out: "sha256:" and the body's hex digest ("sha256:" and the whole
	// value's, with no value, for a record that does not decode). Such a
	// letter is not replayed from its copy: its producer sends the record
	// again (the digest says it is the same body).
	HeaderDeadBodyDigest = "dead-body-digest"
)

// HeaderForwardedFrom is set by fanout, to "<partition>/<offset>", on a
// record of im.messages it read from a partition its conversation does not
// hash to (a producer with another partitioner) and produced again, as it
// was, to the partition it hashes to.
const HeaderForwardedFrom = "forwarded-from"
