package wire

// NoticeConv is one conversation of the live channel's notice frame
// (pull-before): what the device should sync, and the counts the list
// shows.
type NoticeConv struct {
	ConvID         string `json:"conv"`
	Epoch          uint64 `json:"epoch"`
	MaxSeq         uint64 `json:"max_seq"`
	DeviceAckedSeq uint64 `json:"device_acked_seq"`
	Unread         uint64 `json:"unread"`
	Mentions       int    `json:"mentions"`
}
