// Package live is the bus between the push stage and the API nodes that
// hold devices' live connections: the envelopes they exchange and the
// Redis pub/sub they travel on.
//
// Every API node subscribes to its own sharded channel (Keys.NodeChannel)
// and, once, to the channel of each conversation its connections are in
// (Keys.ConvChannel). The push stage publishes a conversation's records
// once on its channel, whatever the member count; only when a membership
// is new to it does it look the members up in the presence registry
// (redisstore.PresenceOf) and send the nodes holding them envelopes by
// name, which make those connections listen. Pub/sub keeps nothing for a
// subscriber not there yet, so Subscription.Add returns only once the
// server confirmed the subscription, and a node that starts listening
// reads from the store what the channel carried before.
//
// A batch travels as JSON or binary (Format); readers take both, and a
// Bus publishes in the one it was made with, JSON unless told otherwise,
// because API nodes of the release before the binary form read only JSON.
//
// The bus only makes delivery early. Everything on it is already stored
// (or, for QoS 0, never will be); a publish that reaches nobody costs
// latency, never a message: the device pulls with sync.
package live
