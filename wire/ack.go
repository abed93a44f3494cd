package wire

// AckItem is one item of an ack or read batch: a device stored (or a
// user read) conv_id up to seq.
type AckItem struct {
	ConvID string `json:"conv_id"`
	Seq    uint64 `json:"seq"`
	// Epoch, when given (not 0), must be the conversation's (409
	// otherwise).
	Epoch uint64 `json:"epoch,omitempty"`
}

// AckResponse answers an ack, by POST /v1/ack or an ack frame on the
// live channel.
type AckResponse struct {
	DeviceID string `json:"device_id"`
	Acked    int    `json:"acked"`
	// Resync: this device had been evicted (more than the allowed devices
	// were in use); its cursors were lost and it must sync in full.
	Resync bool `json:"resync"`
	// EvictedDevices were pushed out by this ack (least recently used).
	EvictedDevices []string `json:"evicted_devices"`
}
