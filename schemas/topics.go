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
)
